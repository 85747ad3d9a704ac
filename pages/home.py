"""Home: the chapter's story, Vaswani et al.'s Table 1 beside this machine's measurements, one finding per page."""

import streamlit as st

from core.harness.device import light_facts
from core.home import records as home
from core.home import summary as home_summary
from ui import common as ui

tr = ui.page_ui("home")
with st.container(border=True):  # the first thing to do, and how every page works
    st.markdown(tr("home.start"))
    st.page_link(ui.PAGES[0][1], label=tr(f"home.card.{ui.PAGES[0][0]}.title"), icon=":material/arrow_forward:")
st.markdown(tr("home.story"))

# Without a live run in this session the page shows the shipped reference, whose numbers core.home.summary keeps
# precomputed: a cold start draws the cards without importing pandas or the scoreboard (~1 s on 2 cores). A live run,
# or a summary that no longer matches the records (core.home.records), the reference CSVs or the sentences, is computed from
# the rows as before: each record's finding on its page's card, its cells in Table 1.
live = any((st.session_state.get(f"live:{name}") or {}).get("rows") for name in home.experiments())
lang = st.session_state.get("lang") or ui.current_lang()
summary = None if live else home_summary.read(light_facts()["type"], lang)  # the kind ui.latest_rows picks
if summary is None:
    from core.home import scoreboard

    frames = {name: ui.latest_rows(name) for name in home.experiments()}
    findings = home.findings(frames, tr)
else:
    findings = summary["findings"]
cols = st.columns(2)
for i, (key, page) in enumerate(ui.PAGES):
    with cols[i % 2].container(border=True):
        st.page_link(page, label=tr(f"home.card.{key}.title"), icon=":material/arrow_forward:")
        st.markdown(tr(f"home.card.{key}.text"))
        mine = [r for r in home.RECORDS.values() if r.page == key]
        said = [findings[r.key] for r in mine if r.key in findings and ui.answered(r.asks)]
        if said:  # a finding answers its page's question: it waits until the learner has answered it
            for text in said:
                st.markdown("**" + tr("home.finding") + "** " + text)
        elif any(r.key in findings for r in mine):
            st.caption(tr("home.find.locked"))
        else:
            st.caption(tr("home.find.none"))

st.subheader(tr("home.tally.title"))
tally = ui.tally_rows(tr)
if not tally:
    st.caption(tr("home.tally.none"))
else:
    st.caption(tr("home.tally.intro"))
    agree = {True: tr("home.tally.yes"), False: tr("home.tally.no"), None: tr("home.tally.na")}
    nav = {key: tr(f"nav.{key}") for key, _ in ui.PAGES}
    cells = {
        "page": [nav.get(r["page"].split(".")[0], r["page"]) for r in tally],
        **{c: [r[c] for r in tally] for c in ("question", "predicted", "measured")},
        "agree": [agree[r["agree"]] for r in tally],
    }
    st.table(ui.labelled(tr, "home.tally", cells))
    back = st.container(horizontal=True)
    for key, page in ui.PAGES:
        if any(r["page"].split(".")[0] == key for r in tally):
            back.page_link(page, label=nav[key], icon=":material/arrow_back:")

st.subheader(tr("home.t1.title"))
st.caption(tr("home.t1.caption"))
if summary is None:
    gpu = {name: ui.gpu_reference_rows(name, frames[name]) for name in home.experiments()}
    table1 = home.table1(frames, tr, gpu)
else:
    table1 = ui.pd.DataFrame(summary["table1"]["rows"], columns=summary["table1"]["columns"])
st.table(table1.set_index(tr("home.t1.layer")))
links = st.container(horizontal=True)
for key, page in ui.PAGES:
    links.page_link(page, label=tr(f"nav.{key}"))

facts = ui.device_card_ui(tr, where=st.container(border=True))
peak = (
    scoreboard.serial_facts(frames["serial"]).get("peak_flops_per_s")
    if summary is None
    else summary["peak_flops_per_s"]
)
if peak is not None:
    st.caption(tr("home.peak", gflops=f"{peak / 1e9:.0f}"))

ui.warm_up_torch()  # after the page is drawn: the next page will not wait for `import torch`
