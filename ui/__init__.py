"""Streamlit helpers shared by every page (the only package besides pages/ and dashboard.py that imports streamlit)."""
