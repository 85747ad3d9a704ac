"""Home: what the lab is, the four bottlenecks, and where each is measured."""
import streamlit as st

from ui import common as ui

tr = ui.page_ui("home")
st.markdown(tr("home.story"))
for key, page in ui.PAGES:
    with st.container(border=True):
        st.page_link(page, label=tr(f"home.card.{key}.title"))
        st.markdown(tr(f"home.card.{key}.text"))

ui.warm_up_torch()  # after the page is drawn: the next page will not wait for `import torch`
