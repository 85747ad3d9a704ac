"""Predict, observe, confront: a page's question hides the measurements until the learner commits to an answer
(or asks to just see them), then sets the prediction against what this device measured.

Order matters more than the question (Crouch et al. 2004: watching a demonstration teaches little; predicting it
first does), so the results stay hidden until then: `predict_ui` opens a *gate* that the helpers drawing results
(`chart_ui`, `takeaways_ui`, `table_ui`, `status_ui`, `caption_source_ui`) consult, so no chart, takeaway or
table drawn after a question shows before it is answered; the explanations and the controls stay. A page with two
questions (serial: its own, then "more cores") opens a gate per question: each covers what is drawn after it.
The answer is kept in the session and in the URL (`?predict.<page>=2`, or `=show`), so a shared link opens
revealed. The verdict (`verdict_ui`) comes from `core.findings.verdicts`: computed from the rows shown.
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from ui.frame import has_key

SHOW = "show"  # the URL's value for "just show me"
_GATE = "_predict_gate"  # session key: is what the page draws now revealed?


@dataclasses.dataclass
class Prediction:
    page: str  # the question's catalogue prefix, e.g. 'serial' or 'serial.scaling'
    choice: int | None  # the option picked (0-based), None if none
    revealed: bool  # an option picked, or "just show me"
    slot: object  # the container in the question's box where the verdict goes


def revealed_now() -> bool:
    """Whether results drawn at this point of the script may show (True on a page without a question)."""
    return st.session_state.get(_GATE, True)


def open_gate() -> None:
    """A page starts with no question asked: everything it draws shows (page_ui calls this)."""
    st.session_state[_GATE] = True


def close_gate(revealed: bool) -> None:
    """Set the gate back to `revealed` (what it was before a view that opened it)."""
    st.session_state[_GATE] = revealed


def _param(page: str) -> str:
    return f"predict.{page}"


def predict_ui(tr, page: str, n_options: int) -> Prediction:
    """The question with its options and a "just show me"; returns the learner's state. Until an option is picked
    or "just show me" pressed, results drawn after this call are hidden (the gate)."""
    key, shown_key = f"predict:{page}", f"predict_show:{page}"
    if key not in st.session_state:  # first visit in this session: a shared link may carry the answer
        value = st.query_params.get(_param(page))
        if value == SHOW:
            st.session_state[shown_key] = True
        elif value in {str(i) for i in range(1, n_options + 1)}:  # compared as text: a value of any length is safe
            st.session_state[key] = int(value) - 1

    def remember():
        choice = st.session_state.get(key)
        if choice is not None:
            st.query_params[_param(page)] = str(choice + 1)

    def show():
        st.session_state[shown_key] = True
        if st.session_state.get(key) is None:
            st.query_params[_param(page)] = SHOW

    with st.container(border=True):
        # index=None only before the session holds an answer: passing it beside a value set from the link would
        # draw Streamlit's "default value and Session State" warning
        start = {} if key in st.session_state else {"index": None}
        choice = st.radio(
            tr(f"{page}.predict.q"),
            list(range(n_options)),
            format_func=lambda i: tr(f"{page}.predict.o{i + 1}"),
            key=key,
            on_change=remember,
            **start,
        )
        revealed = choice is not None or bool(st.session_state.get(shown_key))
        if not revealed:
            row = st.container(horizontal=True, vertical_alignment="center")
            row.caption(tr("ui.predict_hint"))
            row.button(tr("ui.just_show"), key=f"predict_show_button:{page}", on_click=show, type="tertiary")
        slot = st.container()
    st.session_state[_GATE] = revealed
    return Prediction(page, choice, revealed, slot)


def where_words(tr, primary) -> str:
    """Where the rows a verdict reads come from, in words: 'Measured here' only for this session's run on this
    machine; 'Reference, measured on <device>' for shipped rows; 'Uploaded: <file>' for a visitor's file."""
    from core.terms.i18n import device_words
    from ui.frame import literal

    if primary is None or not len(primary) or "source" not in primary:
        return tr("ui.verdict.where.here")
    source = primary["source"].iloc[0]
    device = literal(device_words(str(primary["device"].iloc[0]), tr)) if "device" in primary else ""
    if source == "live":
        return tr("ui.verdict.where.here")
    if source == "reference":
        return tr("ui.verdict.where.reference", device=device)
    name = str(primary["file"].iloc[0]) if "file" in primary else device
    return tr("ui.verdict.where.uploaded", file=literal(name))


def verdict_ui(tr, prediction: Prediction, verdict, why: list[str], gpu=None, primary=None, beside=None) -> None:
    """Under the question, once revealed, two sentences: what was measured (the verdict's sentence, led by where
    the rows come from), and how it meets the learner's prediction. `beside`: (the reference's verdict, its rows)
    when the rows shown are a live run: both measurements are said, each with its device and threads and the option
    it supports, and why they may differ when they do. `gpu`: the same question's verdict from a shipped GPU
    reference when the run shown is not on a GPU, or the model's word on what another device would answer, as a
    further line. `why` is drawn by the section among its takeaways, not here."""
    tally = st.session_state.setdefault("predict_tally", {})
    tally[prediction.page] = {
        "choice": prediction.choice,
        "option": None if verdict is None else verdict.option,
        "answered": prediction.revealed,
    }
    if not prediction.revealed:
        return
    page = prediction.page

    def option(i):
        return tr(f"{page}.predict.o{i + 1}")

    from core.findings import verdicts
    from core.terms.i18n import device_words
    from ui.frame import literal

    with prediction.slot:
        if verdict is None:
            st.caption(tr("ui.verdict.none"))
            return
        lines = [verdicts.sentence(verdict, tr, where_text=where_words(tr, primary))]
        if beside is not None and beside[0] is not None:
            lines = _beside(tr, page, verdict, primary, *beside)
        if verdict.option is None:
            lines.append(tr("ui.verdict.unclear"))
        elif prediction.choice is None:
            lines.append(tr("ui.verdict.supports", answer=option(verdict.option)))
        elif prediction.choice == verdict.option:
            lines.append(tr("ui.verdict.agree", choice=option(prediction.choice)))
        else:
            lines.append(tr("ui.verdict.disagree", choice=option(prediction.choice), answer=option(verdict.option)))
        if gpu is not None:  # a shipped GPU reference beside the run shown: what it measured, with its number
            answer = option(gpu.option) if gpu.option is not None else tr("ui.verdict.gpu_unclear")
            lines.append(tr("ui.verdict.gpu", answer=answer))
            device = gpu.values.get("device")
            where = tr("ui.verdict.where.gpu") + (f", {literal(device_words(device, tr))}" if device else "")
            lines.append(verdicts.sentence(gpu, tr, where_text=where))
        elif verdict.other_device:
            lines.append(tr(verdict.other_device))
        with st.container(border=True):  # not an alert: a verdict is a result, not a warning about the page
            st.markdown("  \n".join(lines))


def _beside(tr, page: str, verdict, primary, reference, ref_rows) -> list[str]:
    """Your run's sentence and the reference's, each led by its device and threads and followed by the option it
    supports; where the two support different options, what differs between the runs."""
    from core.findings import verdicts

    def said(v, rows, who: str) -> str:
        where = tr(f"ui.verdict.beside.{who}", device=_device_of(tr, rows))
        option = tr(f"{page}.predict.o{v.option + 1}") if v.option is not None else tr("ui.verdict.gpu_unclear")
        return verdicts.sentence(v, tr, where_text=where) + tr("ui.verdict.beside.supports", answer=option)

    lines = [said(verdict, primary, "live"), said(reference, ref_rows, "reference")]
    if verdict.option != reference.option:
        lines.append(tr("ui.verdict.beside.differ", live=_device_of(tr, primary), ref=_device_of(tr, ref_rows)))
        own = f"{page}.verdict.differ"
        if has_key(own, "en"):
            lines.append(tr(own))
    return lines


def _device_of(tr, rows) -> str:
    from core.terms.i18n import device_words
    from ui.frame import literal

    return literal(device_words(str(rows["device"].iloc[0]), tr)) if "device" in rows and len(rows) else ""


def answered(question: str) -> bool:
    """Has the learner answered `question` (or asked to just see it) in this session, or opened a link that did?"""
    if st.session_state.get("predict_tally", {}).get(question, {}).get("answered"):
        return True
    return st.query_params.get(_param(question)) in {SHOW, *map(str, range(1, 10))}


def tally_rows(tr) -> list[dict]:
    """This session's predictions, one per question answered, for the home page: asked, predicted, measured."""
    rows = []
    for page, t in st.session_state.get("predict_tally", {}).items():
        if not t["answered"]:
            continue
        choice, option = t["choice"], t["option"]
        rows.append(
            {
                "page": page,
                "question": tr(f"{page}.predict.q"),
                "predicted": tr(f"{page}.predict.o{choice + 1}") if choice is not None else tr("ui.tally.no_guess"),
                "measured": tr(f"{page}.predict.o{option + 1}") if option is not None else tr("ui.tally.unclear"),
                "agree": None if choice is None or option is None else choice == option,
            }
        )
    return rows
