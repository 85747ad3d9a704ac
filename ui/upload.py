"""Results from another machine, added in the sidebar: CSVs the CLI wrote on any device, checked by core.uploads,
kept for this session only and drawn beside the reference and the live run with their device label.

Uploaded rows are not in the URL (a link cannot carry a file): share the CSV itself. Nothing from a rejected file
is drawn, and a rejected file costs nothing else on the page.
"""

from __future__ import annotations

import streamlit as st

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
    from core import uploads

    with st.sidebar.expander(tr("ui.upload.title")):
        st.caption(tr("ui.upload.help"))
        files = st.file_uploader(
            tr("ui.upload.label"),
            type=["csv"],
            accept_multiple_files=True,
            key="upload_files",
            help=tr("ui.upload.tip"),
        )
        store = st.session_state.setdefault(_KEY, {})
        for f in files or []:
            data = f.getvalue()
            outcome = uploads.check(data, f.name)
            if isinstance(outcome, uploads.Rejected):
                detail = f" ({literal(outcome.detail)})" if outcome.detail else ""
                st.error(
                    tr("ui.upload.rejected", file=literal(f.name), why=tr(f"upload.{outcome.kind}"), detail=detail)
                )
                continue
            experiment, frame = outcome
            store.setdefault(experiment, {})[f.name] = frame
            devices = ", ".join(dict.fromkeys(map(str, frame["device"])))
            st.success(tr("ui.upload.accepted", file=literal(f.name), n=len(frame), experiment=experiment,
                          devices=literal(devices)))  # fmt: skip
        names = {f.name for f in files or []}
        gone = st.session_state.get("upload_names", set()) - names  # removed from the uploader: off the page too
        st.session_state["upload_names"] = names
        for experiment in store:
            for file_name in gone & set(store[experiment]):
                del store[experiment][file_name]
