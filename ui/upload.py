"""Results from another machine, added in the sidebar: CSVs the CLI wrote on any device, checked by core.server.uploads,
kept for this session only and drawn beside the reference and the live run with their device label.

Uploaded rows are not in the URL (a link cannot carry a file): share the CSV itself. Nothing from a rejected file
is drawn, and a rejected file costs nothing else on the page.
"""

from __future__ import annotations

import streamlit as st

from core.findings import bracketed, listing
from ui.frame import literal

_KEY = "uploaded"  # session state: experiment → {file name: frame}


def uploaded(name: str):
    """This session's accepted uploaded rows of experiment `name` (a frame), or None."""
    files = st.session_state.get(_KEY, {}).get(name, {})
    if not files:
        return None
    import pandas as pd

    return pd.concat(list(files.values()), ignore_index=True)


def upload_ui(tr) -> None:
    """The sidebar's 'Add results from another machine': accepts CSVs, one message per rejected file."""
    with st.sidebar.expander(tr("ui.upload.title")):
        st.caption(tr("ui.upload.help"))
        files = st.file_uploader(
            tr("ui.upload.label"),
            type=["csv"],
            accept_multiple_files=True,
            key="upload_files",
            help=tr("ui.upload.tip"),
        )
        _take(tr, files or [])


def _take(tr, files) -> None:
    """Check each file once (its outcome is kept while it stays in the uploader, not re-parsed on every rerun), keep
    the accepted ones within the session's bounds (core.server.uploads.MAX_FILES, MAX_SESSION_BYTES), say what became of each."""
    from core.harness.memory_formulas import format_bytes
    from core.server import uploads

    store = st.session_state.setdefault(_KEY, {})
    checked = st.session_state.setdefault("upload_checked", {})  # file id → (size, outcome)
    ids = {getattr(f, "file_id", None) or f"{f.name}:{f.size}": f for f in files}
    for gone in set(checked) - set(ids):  # removed from the uploader: off the page too
        del checked[gone]
    names = {f.name for f in files}
    gone = st.session_state.get("upload_names", set()) - names
    st.session_state["upload_names"] = names
    for experiment in store:
        for file_name in gone & set(store[experiment]):
            del store[experiment][file_name]
    for file_id, f in ids.items():
        if file_id not in checked:
            kept = [size for size, outcome in checked.values() if not isinstance(outcome, uploads.Rejected)]
            if len(kept) >= uploads.MAX_FILES or sum(kept) + f.size > uploads.MAX_SESSION_BYTES:
                why = tr(
                    "upload.too_many",
                    n=len(kept),
                    size=format_bytes(sum(kept)),
                    most_n=uploads.MAX_FILES,
                    most_size=format_bytes(uploads.MAX_SESSION_BYTES),
                )
                st.error(tr("ui.upload.rejected", file=literal(f.name), why=why, detail=""))
                continue  # not remembered: once another file is removed, this one is checked
            checked[file_id] = (f.size, uploads.check(f.getvalue(), f.name))
        outcome = checked[file_id][1]
        if isinstance(outcome, uploads.Rejected):
            detail = bracketed(literal(outcome.detail), tr) if outcome.detail else ""  # （…） in a Chinese sentence
            st.error(tr("ui.upload.rejected", file=literal(f.name), why=tr(f"upload.{outcome.kind}"), detail=detail))
            continue
        experiment, frame = outcome
        store.setdefault(experiment, {})[f.name] = frame
        devices = listing(list(dict.fromkeys(map(str, frame["device"]))), tr)
        st.success(
            tr(
                "ui.upload.accepted",
                file=literal(f.name),
                n=len(frame),
                experiment=experiment,
                devices=literal(devices),
            )
        )
