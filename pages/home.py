"""Home: the chapter's story, Vaswani et al.'s Table 1 beside this machine's measurements, one finding per page."""

import streamlit as st

from core import scoreboard
from ui import common as ui

tr = ui.page_ui("home")
st.markdown(tr("home.story"))

frames = {name: ui.latest_rows(name) for name in scoreboard.EXPERIMENTS}
findings = scoreboard.findings(frames, tr)
cols = st.columns(2)
for i, (key, page) in enumerate(ui.PAGES):
    with cols[i % 2].container(border=True):
        st.page_link(page, label=tr(f"home.card.{key}.title"), icon=":material/arrow_forward:")
        st.markdown(tr(f"home.card.{key}.text"))
        st.markdown("**" + tr("home.finding") + "** " + findings.get(key, tr("home.find.none")))

st.subheader(tr("home.tally.title"))
tally = ui.tally_rows(tr)
if not tally:
    st.caption(tr("home.tally.none"))
else:
    st.caption(tr("home.tally.intro"))
    agree = {True: tr("home.tally.yes"), False: tr("home.tally.no"), None: tr("home.tally.na")}
    nav = {key: tr(f"nav.{key}") for key, _ in ui.PAGES}
    st.table(
        ui.pd.DataFrame(
            {
                tr("home.tally.page"): [nav.get(r["page"].split(".")[0], r["page"]) for r in tally],
                tr("home.tally.question"): [r["question"] for r in tally],
                tr("home.tally.predicted"): [r["predicted"] for r in tally],
                tr("home.tally.measured"): [r["measured"] for r in tally],
                tr("home.tally.agree"): [agree[r["agree"]] for r in tally],
            }
        )
    )
    back = st.container(horizontal=True)
    for key, page in ui.PAGES:
        if any(r["page"].split(".")[0] == key for r in tally):
            back.page_link(page, label=nav[key], icon=":material/arrow_back:")

st.subheader(tr("home.t1.title"))
st.caption(tr("home.t1.caption"))
st.table(scoreboard.table1(frames, tr).set_index(tr("home.t1.layer")))
links = st.container(horizontal=True)
for key, page in ui.PAGES:
    links.page_link(page, label=tr(f"nav.{key}"))

facts = ui.device_card_ui(tr, where=st.container(border=True))
serial = scoreboard.serial_facts(frames["serial"])
if "peak_flops_per_s" in serial:
    st.caption(tr("home.peak", gflops=f"{serial['peak_flops_per_s'] / 1e9:.0f}"))
st.markdown(tr("home.after"))

ui.warm_up_torch()  # after the page is drawn: the next page will not wait for `import torch`
