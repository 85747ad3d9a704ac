"""What data does a page show, and how? The shipped reference results merged with this session's live rows, the
run the takeaways speak of, and their presentation: source caption, status banner, takeaways, the results table with
its CSV download, and charts with PNG/SVG export.
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import math
from typing import TYPE_CHECKING

import streamlit as st

from core.terms.i18n import device_words, translator  # device_words: 'cpu · 2 线程' in the page's language
from ui.frame import device_facts, literal
from ui.predict import revealed_now
from ui.spec import json_safe, tooltip_titles

if TYPE_CHECKING:
    import pandas as pd


@st.cache_data(show_spinner=False)
def reference_ui_data(name: str) -> tuple[pd.DataFrame, list[str]]:
    from core.store.results import load_reference

    return load_reference(name)


def shown_data(tr, name: str, live: pd.DataFrame | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(everything to chart: reference + rows uploaded from other machines + live, and the one run the takeaways
    speak of: live, else the reference of this kind of device)."""
    import pandas as pd

    from ui.upload import uploaded

    ref, problems = reference_ui_data(name)
    for p in problems:
        file_problem_ui(tr, p)
    frames = [f for f in (ref, uploaded(name), live) if f is not None and len(f)]
    if not frames:
        return pd.DataFrame(), pd.DataFrame()
    both = pd.concat(frames, ignore_index=True)
    # each distinct source and device is worded once (a depth run's reference has ~13,000 rows and two devices)
    pairs = both[["source", "device"]].drop_duplicates().itertuples(index=False)
    label = {(s, d): tr("ui.run_label", source=tr(f"ui.source.{s}"), device=device_words(_short_device(d), tr))
             for s, d in pairs}  # fmt: skip
    both["run"] = [label[k] for k in zip(both["source"], both["device"])]
    # The takeaways and verdicts speak of one run: live, else the reference; uploaded rows are drawn, never that run
    if live is not None and len(live):
        primary = both[both["source"] == "live"]
    elif len(ref):
        primary = both[(both["source"] == "reference") & (both["device"] == _reference_device(ref))]
    else:
        primary = both.iloc[:0]
    return both, primary


def reference_rows(both: pd.DataFrame) -> pd.DataFrame:
    """The shipped rows a live run is set beside: the reference of this kind of device, as `shown_data` picks it."""
    ref = both[both["source"] == "reference"] if len(both) and "source" in both else both.iloc[:0]
    return ref[ref["device"] == _reference_device(ref)] if len(ref) else ref


def file_problem_ui(tr, problem) -> None:
    """One translated warning for a damaged shipped file (core.store.files.FileProblem): which file, what is wrong."""
    from core.findings import bracketed

    detail = bracketed(literal(problem.detail), tr) if problem.detail else ""  # （…） in a Chinese sentence
    key = "ui.file_cut_row" if problem.kind == "cut_row" else "ui.bad_file"
    st.warning(tr(key, file=literal(problem.file), why=tr(f"file.{problem.kind}"), detail=detail))


def _short_device(label) -> str:
    """'cpu · AMD EPYC · 2 threads' → 'cpu · 2 threads' for legends (the full name is in each chart's subtitle)."""
    parts = str(label).split(" · ")
    return f"{parts[0]} · {parts[-1]}" if parts[0] == "cpu" and len(parts) == 3 else str(label)


def _reference_device(ref: pd.DataFrame) -> str:
    """The reference device the takeaways speak of: the fullest run of this machine's kind (CPU, CUDA…) if shipped."""
    from core.store.results import reference_device

    return reference_device(ref, device_facts()["type"])


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
    if len(primary) and revealed_now():
        st.caption(
            tr(
                "ui.showing",
                source=tr(f"ui.source.{primary['source'].iloc[0]}"),
                device=literal(device_words(primary["device"].iloc[0], tr)),
                date=literal(str(primary["date"].iloc[0])[:10] if "date" in primary else ""),
            )
        )


def status_ui(tr, df: pd.DataFrame, shown_notes: int = 2) -> None:
    """A banner per status other than ok (refused by the guard, out of memory, diverged, unsupported…)."""
    import pandas as pd

    from core.findings import clauses
    from core.findings.notes import notes_text, refusals_text
    from core.terms import status as statuses

    if "status" not in df or not revealed_now():
        return
    df = statuses.normalize(df)
    for status in statuses.BANNERED:
        bad = df[df["status"] == status]
        if len(bad):
            # the raw notes stay in the table; a refusal's sentence names the point it refused
            if status in (statuses.SKIPPED_MEMORY, statuses.SKIPPED_TIME):
                notes = refusals_text(bad, tr, literal)
            else:
                notes = notes_text(bad.get("note", pd.Series(dtype=str)), tr, literal)
            text = clauses(notes[:shown_notes], tr) + (
                tr("ui.more_notes", n=len(notes) - shown_notes) if len(notes) > shown_notes else ""
            )
            st.warning(tr(f"status.{status}.banner", n=len(bad), notes=text))


def yes_no(tr, value) -> str:
    """A boolean in a table the learner reads: yes / no (– where unknown), never Python's True/False."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return tr("ui.bool.na")
    return tr("ui.bool.true") if bool(value) else tr("ui.bool.false")


def labelled(tr, prefix: str, columns: dict) -> pd.DataFrame:
    """A table the learner reads: each column named from the catalogue (`<prefix>.<column>`), in the given order."""
    import pandas as pd

    return pd.DataFrame({tr(f"{prefix}.{name}"): values for name, values in columns.items()})


def takeaways_ui(tr, lines: list[str]) -> None:
    if lines and revealed_now():
        with st.container(border=True):
            st.markdown("**" + tr("ui.takeaways") + "**")
            st.markdown("\n".join(f"- {line}" for line in lines))


def _readable(tr, df: pd.DataFrame) -> pd.DataFrame:
    """The results table as a learner reads it: statuses in words and booleans as yes / no, in the page's language;
    the columns keep the CSV's field names (the download is the raw CSV)."""
    out = df.copy()
    if "status" in out:
        from core.terms.status import STATUSES

        out["status"] = [tr(f"status.{s}") if s in STATUSES else s for s in out["status"]]
    for c in out.columns:
        if out[c].dtype == bool or (out[c].dtype == object and out[c].map(lambda v: isinstance(v, bool)).any()):
            out[c] = [yes_no(tr, v) for v in out[c]]
    return out


def table_ui(tr, df: pd.DataFrame, name: str, inline: bool = False) -> None:
    """The results table and its CSV download (what was shown, environment columns included); the table in an
    expander of its own, or `inline` (inside a section's Details)."""
    if df is None or not len(df) or not revealed_now():
        return
    if inline:
        st.markdown(f"**{tr('ui.table')}**")
        st.dataframe(_readable(tr, df.drop(columns=["run"], errors="ignore")), hide_index=True, height=240)
    else:
        with st.expander(tr("ui.table"), expanded=False):
            st.dataframe(_readable(tr, df.drop(columns=["run"], errors="ignore")), hide_index=True)
    from core.store.spreadsheet import csv_text

    st.download_button(
        tr("ui.download_csv"),
        csv_text(df.drop(columns=["run"], errors="ignore")),  # no cell a spreadsheet would run as a formula
        file_name=f"{name}.csv",
        mime="text/csv",
        key=f"dl:{name}",
    )


def _export(spec: str, fmt: str):
    """Render a Vega-Lite spec to PNG or SVG on demand (vl-convert runs Vega itself; no browser needed)."""
    import vl_convert as vlc

    return vlc.vegalite_to_png(spec, scale=2) if fmt == "png" else vlc.vegalite_to_svg(spec)


DOWNLOADS = contextvars.ContextVar("downloads", default=True)  # False: charts drawn without their PNG/SVG buttons


def chart_ui(chart) -> None:
    """Draw an Altair chart with PNG and SVG downloads beneath it (rendered only when clicked); nothing while the
    page's question is unanswered (ui.predict). `chart` may be a function that builds it: then it is built only when
    shown, and a chart that cannot be built or drawn becomes one warning instead of an exception, so the rest of the
    page (the results table and its download) still appears. A dict is taken as the chart's finished spec (an
    instant view's, built without Altair's schema check, which the tests run)."""
    if not revealed_now():
        return
    tr = translator(st.session_state.get("lang", "en"))
    try:
        built = chart() if callable(chart) else chart
        spec_dict = tooltip_titles(
            built if isinstance(built, dict) else built.to_dict(), tr, st.session_state.get("lang", "en")
        )
    except Exception as err:  # noqa: BLE001 - one chart's failure is said, and costs nothing else on the page
        st.warning(tr("ui.chart_failed", error=literal(f"{type(err).__name__}: {err}", limit=160)))
        return
    st.vega_lite_chart(spec=spec_dict, width="stretch")
    if not DOWNLOADS.get():  # a chart drawn while a run measures: drawn again and again, its buttons once at the end
        return
    try:  # vl-convert reads strict JSON: no NaN
        spec = json.dumps(spec_dict, allow_nan=False)
    except ValueError:
        spec = json.dumps(json_safe(spec_dict), allow_nan=False)
    key = hashlib.sha1(spec.encode()).hexdigest()[:12]
    title = spec_dict.get("title", {})  # the file is named after the chart's title
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


def gpu_reference(both: pd.DataFrame, primary: pd.DataFrame | None) -> pd.DataFrame:
    """The shipped reference rows of one GPU (the first CUDA device among them) when the run the page speaks of is
    not on a GPU: the measurement the chapter's GPU claims are about, for a second verdict line. Empty otherwise;
    never uploaded rows (a file from elsewhere is drawn, not concluded from)."""
    if not len(both) or "device_type" not in both or "source" not in both:
        return both.iloc[:0]
    primary = primary if primary is not None and "device_type" in primary else both.iloc[:0]
    if len(primary) and str(primary["device_type"].iloc[0]) == "cuda":
        return both.iloc[:0]
    gpu = both[(both["source"] == "reference") & (both["device_type"].astype(str) == "cuda")]
    return gpu[gpu["device"] == gpu["device"].iloc[0]] if len(gpu) else gpu


def gpu_reference_rows(name: str, shown: pd.DataFrame | None) -> pd.DataFrame | None:
    """Experiment `name`'s shipped rows of one GPU when `shown` is not from a GPU, else None: what the home page's
    Table 1 reads beside the rows it shows."""
    gpu = gpu_reference(reference_ui_data(name)[0], shown)
    return gpu if len(gpu) else None
