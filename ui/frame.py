"""What frame does every page share? The language (URL, sidebar, browser locale), user text shown literally, the
sidebar's device card, the background warm-up of torch and friends, the list of pages and the method expander
(ui.common.page_ui draws the title, claim and sidebar from these). The lowest ui module: it imports no other.
"""

from __future__ import annotations

import re

import streamlit as st

from core.terms.i18n import LANGS, catalogue, normalize_lang

LANG_NAMES = {"en": "English", "zh": "中文"}

# (key, file) of every bottleneck page in the chapter's order: dashboard.py builds the navigation from it and the
# home page links to each. A page's title is the catalogue key nav.<key>.
PAGES = [(key, f"pages/{key}.py") for key in ("serial", "long_range", "depth", "attention_cost", "answers")]


# ---- language -------------------------------------------------------------------------------------------------
def current_lang() -> str:
    """?lang= in the URL, else the sidebar choice, else the browser's locale, else English."""
    if "lang" in st.query_params:
        st.session_state["lang"] = normalize_lang(st.query_params["lang"])
    if "lang" not in st.session_state:
        st.session_state["lang"] = normalize_lang(getattr(st.context, "locale", None))
    return st.session_state["lang"]


LITERAL_LIMIT = 200  # characters of a user-supplied text shown back; the rest is cut
_AUTOLINK = re.compile(r"(?i)(https?|ftp|mailto|xmpp|www|@)([:.]|(?<=@))")


def literal(text, limit: int = LITERAL_LIMIT) -> str:
    """`text` (which may hold what a link or a learner typed) as Markdown that renders exactly those characters.

    Every ASCII punctuation mark is backslash-escaped (CommonMark allows it for each one), so no link, image,
    emphasis, heading or HTML can form; "http://", "www." and "@" get a zero-width space so that no auto-link can
    form either. Long text is cut to `limit` characters.
    """
    text = " ".join(str(text).split())  # a newline could start a Markdown block of its own
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    # The renderer's literal-URL rule (GitHub-flavoured Markdown) still links "http://…", "www.…" and "a@b.c" through
    # backslash escapes (seen in the browser), so a zero-width space breaks each of those patterns first.
    text = _AUTOLINK.sub(lambda m: m.group(1) + "\u200b" + m.group(2), text)
    return "".join("\\" + ch if ch.isascii() and not ch.isalnum() and not ch.isspace() else ch for ch in text)


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
    from core.harness.device import light_facts

    return light_facts()  # the server never sets torch's threads: a run's worker does (core.server.jobs)


def device_facts() -> dict:
    """Checked facts once torch is loaded (any measuring page); torch-free, detected facts before that."""
    import sys

    from core.harness.device import light_facts

    return _checked_device_facts() if "torch" in sys.modules else light_facts()


WARM_UP_MODULES = ("torch", "pandas", "altair", "core.experiments", "core.charts.serial", "core.charts.mechanism")


def warm_up_torch() -> None:
    """Import what the measuring pages need (torch ~2 s, pandas, altair, the experiments) in a background thread,
    once per process, so the first measuring page opens without that wait; then freeze what they built."""
    import threading

    global _WARMING
    if not _WARMING:
        _WARMING = True
        threading.Thread(target=_warm_up, daemon=True, name="warm-up").start()


def _warm_up() -> None:
    """The imports, then gc.freeze(): Streamlit collects garbage after every run (runner.postScriptGC), a fragment's
    included, and a full collection walks every object the imports made, which live as long as the process; frozen,
    they are skipped, so an instant view's slider is not kept waiting by them."""
    import gc
    import importlib

    for module in WARM_UP_MODULES:
        importlib.import_module(module)
    gc.collect()
    gc.freeze()


_WARMING = False


def device_card_ui(tr, where=None) -> dict:
    from core.harness.device import physical_cores
    from core.harness.memory_formulas import format_bytes
    from core.terms.i18n import threads_words

    facts = device_facts()
    box = where or st.sidebar
    said = {k: facts[k] for k in ("type", "name", "torch")}  # as detected; memory and threads in words
    memory, threads = format_bytes(facts["memory"]), threads_words(facts["threads"], tr, physical_cores())
    box.markdown(tr("ui.device_card", **said, memory=memory, threads=threads))
    return facts


# ---- the page's fixed parts -----------------------------------------------------------------------------------
def heading_ui(tr, part: str) -> None:
    """A part of a page: its subheader (`<part>_header`) and the paragraph under it (`<part>_intro`)."""
    st.subheader(tr(f"{part}_header"))
    st.markdown(tr(f"{part}_intro"))


def method_ui(tr, page: str, inline: bool = False) -> None:
    """The method: in an expander of its own, or `inline` (inside a section's Details, which cannot nest one)."""
    if inline:
        st.markdown(f"**{tr('ui.method')}**")
        st.markdown(tr(f"{page}.method"))
        return
    with st.expander(tr("ui.method")):
        st.markdown(tr(f"{page}.method"))
