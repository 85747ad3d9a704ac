"""Transformer Bottleneck Lab — entry point: `streamlit run dashboard.py`."""

import streamlit as st

from core.terms.i18n import translator
from ui import common as ui

st.set_page_config(page_title="Transformer Bottleneck Lab", page_icon="🔬", layout="wide")
lang = ui.language_ui()
tr = translator(lang)

home = st.Page("pages/home.py", title=tr("nav.home"), icon="🏠", default=True)
pages = [st.Page(path, title=tr(f"nav.{key}"), url_path=key) for key, path in ui.PAGES]
nav = st.navigation([home, *pages])
ui.NAVIGATION_READY = True
nav.run()
