"""The parts every page shares: language, device card, the form built from a config, the live run with progress
and Stop, reference data, takeaways, the method expander and the results table.

A page reads: claim → predict first → reference results at once → Run (live) → takeaways → method → table.
Helpers that draw widgets end in `_ui`; all computation lives in `core`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import streamlit as st

from core.config import describe_range, field_info, make_config
from core.i18n import LANGS, catalogue, normalize_lang, translator

if TYPE_CHECKING:
    import pandas as pd

LANG_NAMES = {"en": "English", "zh": "中文"}

# (key, file) of every bottleneck page in the chapter's order: dashboard.py builds the navigation from it and the
# home page links to each. A page's title is the catalogue key nav.<key>.
PAGES = [
    ("serial", "pages/serial.py"),
    ("long_range", "pages/long_range.py"),
    ("depth", "pages/depth.py"),
    ("attention_cost", "pages/attention_cost.py"),
]


# Set by dashboard.py once it has built the navigation. Until some session has run dashboard.py, Streamlit serves
# a deep link (/serial) from the pages/ folder directly (its old multipage mode), skipping the language switch and
# our navigation; a page that finds this flag unset reruns, and the rerun goes through dashboard.py.
NAVIGATION_READY = False


# ---- language -------------------------------------------------------------------------------------------------
def current_lang() -> str:
    """?lang= in the URL, else the sidebar choice, else the browser's locale, else English."""
    if "lang" in st.query_params:
        st.session_state["lang"] = normalize_lang(st.query_params["lang"])
    if "lang" not in st.session_state:
        st.session_state["lang"] = normalize_lang(getattr(st.context, "locale", None))
    return st.session_state["lang"]


def has_key(key: str, lang: str) -> bool:
    return key in catalogue(lang) or key in catalogue("en")


def language_ui() -> str:
    lang = current_lang()

    def changed():
        st.session_state["lang"] = st.session_state["_lang_choice"]
        st.query_params["lang"] = st.session_state["lang"]

    st.sidebar.selectbox(
        "Language · 语言",
        LANGS,
        index=LANGS.index(lang),
        format_func=LANG_NAMES.get,
        key="_lang_choice",
        on_change=changed,
    )
    return st.session_state["lang"]


# ---- device ---------------------------------------------------------------------------------------------------
@st.cache_resource(show_spinner=False)
def _checked_device_facts() -> dict:
    from core.device import configure_threads, light_facts

    configure_threads()
    return light_facts()


def _device_facts() -> dict:
    """Checked facts once torch is loaded (any measuring page); torch-free, detected facts before that."""
    import sys

    from core.device import light_facts

    return _checked_device_facts() if "torch" in sys.modules else light_facts()


WARM_UP_MODULES = ("torch", "pandas", "altair", "core.experiments", "core.charts.serial")


def warm_up_torch() -> None:
    """Import what the measuring pages need (torch ~2 s, pandas, altair, the experiments) in a background thread,
    once per process, so the first measuring page opens without that wait."""
    import importlib
    import threading

    global _WARMING
    if not _WARMING:
        _WARMING = True
        threading.Thread(
            target=lambda: [importlib.import_module(m) for m in WARM_UP_MODULES], daemon=True, name="warm-up"
        ).start()


_WARMING = False


def device_card_ui(tr, where=None) -> dict:
    from core.guard import format_bytes

    facts = _device_facts()
    box = where or st.sidebar
    box.markdown(
        tr(
            "ui.device_card",
            type=facts["type"],
            name=facts["name"],
            memory=format_bytes(facts["memory"]),
            torch=facts["torch"],
            threads=facts["threads"],
        )
    )
    return facts


# ---- the page frame -------------------------------------------------------------------------------------------
def page_ui(page: str):
    """Title, claim, and the sidebar's device card; returns the page's translator."""
    if not NAVIGATION_READY:
        # Calling st.navigation switches Streamlit out of its old pages/-folder mode for the whole server;
        # the rerun then goes through dashboard.py and lands on this same page by its URL.
        # (A page's identity is its URL path; home must be the default so /serial keeps its own.)
        st.navigation(
            [st.Page("pages/home.py", default=True)] + [st.Page(path, url_path=key) for key, path in PAGES],
            position="hidden",
        )
        st.rerun()
    tr = translator(st.session_state.get("lang") or current_lang())
    st.title(tr(f"{page}.title"))
    st.markdown(tr(f"{page}.claim"))
    device_card_ui(tr)
    return tr


def predict_ui(tr, page: str, n_options: int) -> None:
    """A 'predict first' question: the learner commits to a guess before the data below is read."""
    with st.container(border=True):
        choice = st.radio(
            tr(f"{page}.predict.q"),
            list(range(n_options)),
            index=None,
            format_func=lambda i: tr(f"{page}.predict.o{i + 1}"),
            key=f"predict:{page}",
        )
        if choice is None:
            st.caption(tr("ui.predict_hint"))
        else:
            st.caption(tr("ui.predict_saved", choice=tr(f"{page}.predict.o{choice + 1}")))


# ---- controls -------------------------------------------------------------------------------------------------
def _label(tr, page: str, name: str) -> str:
    lang = st.session_state.get("lang", "en")
    for key in (f"{page}.field.{name}", f"field.{name}"):
        if has_key(key, lang):
            return tr(key)
    return name


def _query_name(page: str, name: str) -> str:
    """A field's name in the URL: plain for a page's main form, 'reach.seq_len' for a second form 'long_range:reach'."""
    return f"{page.split(':', 1)[1]}.{name}" if ":" in page else name


def _query_overrides(page: str, names: list[str]) -> dict:
    return {n: st.query_params[_query_name(page, n)] for n in names if _query_name(page, n) in st.query_params}


def config_form_ui(tr, experiment, page: str, fields: list[str], preset: str = "quick"):
    """A form over `fields` of the experiment's config (others keep the preset's values).

    Returns the validated config when Run was pressed, else None. Values round-trip through the URL's query
    string so a copied link reopens the same controls. Bad values get one st.error naming the field.
    """
    base = experiment.config(preset)
    infos = {i["name"]: i for i in field_info(experiment.config_cls)}
    try:
        start = make_config(experiment.config_cls, _query_overrides(page, list(infos)), base=base)
    except ValueError as err:
        st.error(tr("ui.bad_url", error=str(err)))
        start = base
    values = {}
    with st.form(f"form:{page}"):
        cols = st.columns(2)
        for i, name in enumerate(fields):
            info, current = infos[name], getattr(start, name)
            label = _label(tr, page, name)
            help_text = tr("ui.allowed", range=describe_range(info))
            col = cols[i % 2]
            key = f"w:{page}:{name}"
            if info["sequence"] and info.get("choices"):
                fmt = lambda m, _p=page: tr(f"model.{m}") if has_key(f"model.{m}", "en") else m
                values[name] = col.multiselect(
                    label, info["choices"], default=list(current), format_func=fmt, key=key, help=help_text
                )
            elif info["sequence"]:
                values[name] = col.text_input(label, ", ".join(map(str, current)), key=key, help=help_text)
            elif info.get("choices"):
                values[name] = col.selectbox(
                    label, info["choices"], index=info["choices"].index(current), key=key, help=help_text
                )
            elif info["type"] is bool:
                values[name] = col.checkbox(label, value=current, key=key, help=help_text)
            elif info["type"] is int:
                values[name] = col.number_input(
                    label,
                    min_value=info.get("lo"),
                    max_value=info.get("hi"),
                    value=int(current),
                    step=1,
                    key=key,
                    help=help_text,
                )
            else:
                values[name] = col.number_input(
                    label,
                    min_value=info.get("lo"),
                    max_value=info.get("hi"),
                    value=float(current),
                    key=key,
                    help=help_text,
                    format="%g",
                )
        submitted = st.form_submit_button(tr("ui.run"), type="primary")
    if not submitted:
        return None
    try:
        cfg = make_config(experiment.config_cls, values, base=start)
    except ValueError as err:
        st.error(tr("ui.bad_input", error=str(err)))
        return None
    for name in fields:  # shareable: the URL now holds the controls
        v = getattr(cfg, name)
        st.query_params[_query_name(page, name)] = ",".join(map(str, v)) if isinstance(v, tuple) else str(v)
    return cfg


# ---- running --------------------------------------------------------------------------------------------------
def _live_state(page: str) -> dict:
    return st.session_state.setdefault(
        f"live:{page}", {"rows": [], "done": 0, "total": 0, "finished": False, "error": None}
    )


class _Superseded(Exception):
    """Raised inside an experiment's progress callback to end a run that was stopped or replaced."""


def run_ui(tr, experiment, cfg, page: str) -> pd.DataFrame | None:
    """Run `cfg` live (when given) with a moving progress bar and a Stop button; return this session's live rows.

    Rows are kept in session state as they arrive, so a Stop (or any rerun) loses nothing already measured. Each
    run owns the state through a token: Streamlit starts the next script run at once (a Stop, or Enter in the form
    and then Run), while the old run's thread may still be inside a measurement; when it reports, it sees it was
    stopped or replaced and ends, without touching the new run's rows.
    """
    from core.device import configure_threads, measuring

    state = _live_state(page)
    if cfg is not None:
        token = object()
        state.update(rows=[], done=0, total=0, finished=False, error=None, token=token, stop=False)
        configure_threads()
        stop = st.empty()  # the Stop button exists only while the run does
        stop.button(
            tr("ui.stop"),
            key=f"stop:{page}",
            help=tr("ui.stop_help"),
            on_click=lambda: state.update(stop=True) if state.get("token") is token else None,
        )
        bar = st.progress(0.0, text=tr("ui.starting"))

        def on_progress(p):
            if state.get("token") is not token:
                raise _Superseded
            state["rows"].extend(p.rows)
            state["done"], state["total"] = p.done, p.total
            if state.get("stop"):
                raise _Superseded
            bar.progress(
                min(1.0, p.done / max(1, p.total)), text=tr("ui.progress", done=p.done, total=p.total, what=p.message)
            )

        def on_wait():
            if state.get("token") is not token or state.get("stop"):
                raise _Superseded
            bar.progress(0.0, text=tr("ui.waiting"))

        try:
            with measuring(on_wait):
                experiment.run(cfg, on_progress=on_progress)
            state["finished"] = True
        except _Superseded:
            pass
        except ValueError as err:
            state["error"] = str(err)
        except Exception as err:  # noqa: BLE001 - shown as a result, not a traceback; measured rows are kept
            state["error"] = f"{type(err).__name__}: {err}"
        if state.get("token") is not token:
            return None  # a newer run of this page draws the results
        bar.empty()
        stop.empty()
    if state["error"]:
        st.error(tr("ui.run_failed", error=state["error"]))
    if not state["rows"]:
        if state.get("stop"):
            st.info(tr("ui.stopped_empty"))
        return None
    import pandas as pd

    if not state["finished"] and not state["error"]:
        st.warning(tr("ui.stopped", done=state["done"], total=state["total"]))
    return pd.DataFrame(list(state["rows"])).assign(source="live")  # a copy: see the docstring


def live_run_ui(tr, experiment, page: str, fields: list[str]) -> pd.DataFrame | None:
    """The 'measure it yourself' section every page has: heading, the form over `fields`, and the live run."""
    st.subheader(tr("ui.live_header"))
    st.caption(tr("ui.live_intro"))
    cfg = config_form_ui(tr, experiment, page, fields)
    return run_ui(tr, experiment, cfg, page)


@st.cache_data(show_spinner=False)
def reference_ui_data(name: str) -> tuple[pd.DataFrame, list[str]]:
    from core.results import load_reference

    return load_reference(name)


def shown_data(tr, name: str, live: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(everything to chart: reference + live, the one run the takeaways speak of: live, else CPU reference)."""
    import pandas as pd

    ref, problems = reference_ui_data(name)
    for p in problems:
        st.warning(tr("ui.bad_reference", problem=p))
    frames = [f for f in (ref, live) if f is not None and len(f)]
    if not frames:
        return pd.DataFrame(), pd.DataFrame()
    both = pd.concat(frames, ignore_index=True)
    both["run"] = both["source"].map(lambda s: tr(f"ui.source.{s}")) + " · " + both["device"].map(_short_device)
    if live is not None and len(live):
        primary = both[both["source"] == "live"]
    else:
        primary = both[both["device"] == _reference_device(ref)]
    return both, primary


def _short_device(label) -> str:
    """'cpu · AMD EPYC · 2 threads' → 'cpu · 2 threads' for legends (the full name is in each chart's subtitle)."""
    parts = str(label).split(" · ")
    return f"{parts[0]} · {parts[-1]}" if parts[0] == "cpu" and len(parts) == 3 else str(label)


def _reference_device(ref: pd.DataFrame) -> str:
    """The reference device the takeaways speak of: one of this machine's kind (CPU, CUDA…) if shipped."""
    devices = list(dict.fromkeys(ref["device"]))
    here = _device_facts()["type"]
    same = [d for d in devices if str(d).startswith(here)]
    return (same or devices)[0]


def latest_rows(name: str) -> pd.DataFrame | None:
    """This session's live rows of experiment `name` if it ran, else its reference rows for this kind of device."""
    import pandas as pd

    state = st.session_state.get(f"live:{name}")
    if state and state["rows"]:
        return pd.DataFrame(state["rows"]).assign(source="live")
    ref, _ = reference_ui_data(name)
    if not len(ref):
        return None
    return ref[ref["device"] == _reference_device(ref)]


def caption_source_ui(tr, primary: pd.DataFrame) -> None:
    import pandas as pd

    if len(primary):
        st.caption(
            tr(
                "ui.showing",
                source=tr(f"ui.source.{primary['source'].iloc[0]}"),
                device=primary["device"].iloc[0],
                date=str(primary.get("date", pd.Series([""])).iloc[0])[:10],
            )
        )


def status_ui(tr, df: pd.DataFrame, shown_notes: int = 2) -> None:
    """A banner for points that did not run normally (skipped by the guard, out of memory, diverged)."""
    import pandas as pd

    if "status" not in df:
        return
    for status in ("skipped", "oom", "diverged", "error"):
        bad = df[df["status"] == status]
        if len(bad):
            notes = list(dict.fromkeys(str(n) for n in bad.get("note", pd.Series(dtype=str)).fillna("") if n))
            text = "; ".join(notes[:shown_notes]) + (
                tr("ui.more_notes", n=len(notes) - shown_notes) if len(notes) > shown_notes else ""
            )
            st.warning(tr(f"ui.status.{status}", n=len(bad), notes=text))


def takeaways_ui(tr, lines: list[str]) -> None:
    if lines:
        with st.container(border=True):
            st.markdown("**" + tr("ui.takeaways") + "**")
            st.markdown("\n".join(f"- {line}" for line in lines))


def method_ui(tr, page: str) -> None:
    with st.expander(tr("ui.method")):
        st.markdown(tr(f"{page}.method"))


def table_ui(tr, df: pd.DataFrame, name: str) -> None:
    """The results table and its CSV download (what was shown, environment columns included)."""
    if df is None or not len(df):
        return
    with st.expander(tr("ui.table"), expanded=False):
        st.dataframe(df.drop(columns=["run"], errors="ignore"), hide_index=True)
    st.download_button(
        tr("ui.download_csv"),
        df.drop(columns=["run"], errors="ignore").to_csv(index=False),
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"dl:{name}",
    )


def _export(spec: str, fmt: str):
    """Render a Vega-Lite spec to PNG or SVG on demand (vl-convert runs Vega itself; no browser needed)."""
    import vl_convert as vlc

    return vlc.vegalite_to_png(spec, scale=2) if fmt == "png" else vlc.vegalite_to_svg(spec)


def chart_ui(chart, name: str | None = None) -> None:
    """Draw an Altair chart with PNG and SVG downloads beneath it (rendered only when clicked)."""
    import hashlib

    st.altair_chart(chart, width="stretch")
    spec = chart.to_json()
    key = hashlib.sha1(spec.encode()).hexdigest()[:12]
    if name is None:
        title = chart.to_dict().get("title", {})
        name = title.get("text", "chart") if isinstance(title, dict) else str(title)
    file = "".join(ch if ch.isalnum() else "-" for ch in str(name))[:60].strip("-").lower() or "chart"
    row = st.container(horizontal=True, gap="small")
    for fmt, mime in (("png", "image/png"), ("svg", "image/svg+xml")):
        row.download_button(
            fmt.upper(),
            data=lambda f=fmt: _export(spec, f),
            file_name=f"{file}.{fmt}",
            mime=mime,
            key=f"{fmt}:{key}",
            on_click="ignore",
            type="tertiary",
            icon=":material/download:",
        )


def fmt(x: float, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}g}"


def __getattr__(name: str):
    """`ui.pd` for pages, imported on first use: pandas costs ~0.5 s, which the home page's cold start skips."""
    if name == "pd":
        import pandas

        return pandas
    raise AttributeError(name)
