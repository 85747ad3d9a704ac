"""How does an experiment's config become a form, and back? One widget per chosen field (labels and allowed
ranges from the catalogue), values validated by core.config, and a round trip through the URL's query string so a
copied link reopens the same controls.
"""

from __future__ import annotations

import functools

import streamlit as st

from core.config import describe_range, field_info, make_config
from ui.frame import has_key, literal


def _label(tr, page: str, name: str) -> str:
    lang = st.session_state.get("lang", "en")
    for key in (f"{page}.field.{name}", f"field.{name}"):
        if has_key(key, lang):
            return tr(key)
    return name


def choice_label(tr, page: str, name: str):
    """How a field's choices read: a model's name (`model.<id>`), else the page's word for it (`answers.form.scan`
    for the field `forms`, `long_range.task.recall` for `tasks`), else the id itself. A page's main form names a model
    as the page's own charts do (`depth.model.lstm`, 'LSTM stack'), before its name elsewhere."""
    lang = st.session_state.get("lang", "en")
    base, singular = page.split(":", 1)[0], name.removesuffix("s")
    own = (f"{base}.{singular}.{{}}", f"{base}.{name}.{{}}")
    keys = own + ("model.{}",) if ":" not in page else ("model.{}",) + own

    def label(choice) -> str:
        for key in (k.format(choice) for k in keys):
            if has_key(key, lang) or has_key(key, "en"):
                return tr(key)
        return str(choice)

    return label


def _query_name(page: str, name: str) -> str:
    """A field's name in the URL: plain for a page's main form, 'reach.seq_len' for a second form 'long_range:reach'."""
    return f"{page.split(':', 1)[1]}.{name}" if ":" in page else name


URL_VALUE_CHARS = 300  # a field's value in a link at most (the longest list a form takes is well under 100)


def _query_overrides(page: str, names: list[str]) -> dict:
    """The form's fields given in the URL; ValueError naming the first whose value is longer than URL_VALUE_CHARS
    (parsed, a value of thousands of digits reaches Python's limit on converting long numbers)."""
    given = {n: st.query_params[_query_name(page, n)] for n in names if _query_name(page, n) in st.query_params}
    for name, value in given.items():
        if len(value) > URL_VALUE_CHARS:
            raise ValueError(f"{name}: the link's value is {len(value):,} characters long; at most {URL_VALUE_CHARS}")
    return given


def config_form_ui(tr, experiment, page: str, fields: list[str], preset: str = "quick"):
    """A form over `fields` of the experiment's config (others keep the preset's values): the validated config when
    Run was pressed, else None (a bad value: one st.error naming the field)."""
    base = experiment.config(preset)
    infos = {i["name"]: i for i in field_info(experiment.config_cls)}
    try:
        # Only what the form shows (and the seed) comes from a link: a field the learner cannot see, such as
        # `repeats` or `max_point_s`, could otherwise make one point run for minutes behind an idle-looking page.
        from_url = [n for n in infos if n in fields or n == "seed"]
        start = make_config(experiment.config_cls, _query_overrides(page, from_url), base=base)
    except ValueError as err:
        st.error(tr("ui.bad_url", error=literal(str(err))))
        start = base
    values = {}
    with st.form(f"form:{page}"):
        cols = st.columns(2)
        for i, name in enumerate(fields):
            info, current, col = infos[name], getattr(start, name), cols[i % 2]
            label = _label(tr, page, name)
            kw = {"key": f"w:{page}:{name}", "help": tr("ui.allowed", range=describe_range(info))}
            if info.get("choices"):
                kw["format_func"] = choice_label(tr, page, name)
            if info["sequence"] and info.get("choices"):
                values[name] = col.multiselect(label, info["choices"], default=list(current), **kw)
            elif info["sequence"]:
                values[name] = col.text_input(label, ", ".join(map(str, current)), **kw)
            elif info.get("choices"):
                values[name] = col.selectbox(label, info["choices"], index=info["choices"].index(current), **kw)
            elif info["type"] is bool:
                values[name] = col.checkbox(label, value=current, **kw)
            elif info["type"] is int:  # number_input(label, min, max, value, step)
                values[name] = col.number_input(label, info.get("lo"), info.get("hi"), int(current), 1, **kw)
            else:
                values[name] = col.number_input(
                    label, info.get("lo"), info.get("hi"), float(current), format="%g", **kw
                )
        submitted = st.form_submit_button(tr("ui.run"), type="primary")
    if not submitted:
        return None
    try:
        cfg = make_config(experiment.config_cls, values, base=start)
    except ValueError as err:
        st.error(tr("ui.bad_input", error=literal(str(err))))
        return None
    for name in fields:  # shareable: the URL now holds the controls
        v = getattr(cfg, name)
        st.query_params[_query_name(page, name)] = ",".join(map(str, v)) if isinstance(v, tuple) else str(v)
    return cfg


def pick_ui(
    tr, label: str, values, key: str, *, at_most: int | None = None, value_label: tuple[str, str] | None = None
):
    """A selectbox over the whole numbers present in `values`; the largest (up to `at_most`) by default.
    `value_label` = (catalogue key, placeholder) names each value. The widget keeps its format function for the
    session's life, so it is built here: a function defined in a page script would keep that script's every
    table alive with the session (tests/test_drawn_pages.py)."""
    options = sorted({int(v) for v in values})
    fitting = [i for i, v in enumerate(options) if at_most is None or v <= at_most]
    fmt = str if value_label is None else functools.partial(_value_label, tr, *value_label)
    return st.selectbox(label, options, index=fitting[-1] if fitting else len(options) - 1, format_func=fmt, key=key)


def _value_label(tr, catalogue_key: str, placeholder: str, value) -> str:
    return tr(catalogue_key, **{placeholder: value})
