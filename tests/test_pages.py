"""Every page through Streamlit's AppTest, in both languages: no exception, no untranslated key on screen."""

import os

import pytest
from conftest import app_test, unescaped

from ui.common import PAGES

APP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dashboard.py")
PAGE_FILES = ["pages/home.py"] + [path for _, path in PAGES]


def _texts(at) -> list[str]:
    out = []
    for kind in ("markdown", "caption", "title", "subheader", "header", "info", "warning", "error", "success"):
        out += [str(e.value) for e in getattr(at, kind)]
    return out


# English in the fast tier; 中文 too in the full suite (the browser test opens every page in both as well)
@pytest.mark.parametrize("lang", ["en", pytest.param("zh", marks=pytest.mark.slow)])
@pytest.mark.parametrize("page", PAGE_FILES)
def test_page_opens_without_exception(page, lang):
    at = app_test(default_timeout=60)
    at.query_params["lang"] = lang
    at.run()
    if page != "pages/home.py":
        at.switch_page(page).run()
    assert not at.exception, at.exception
    shown = _texts(at)
    assert not [t for t in shown if "«" in t], "untranslated keys on the page"
    assert at.title and at.title[0].value


@pytest.mark.slow
def test_serial_page_runs_live_and_reports_bad_input():
    at = app_test(default_timeout=120).run()
    at.switch_page("pages/serial.py").run()
    at.multiselect(key="w:serial:models").set_value(["lstm", "transformer"])
    at.text_input(key="w:serial:seq_lens").set_value("16, 32")
    at.number_input(key="w:serial:d_model").set_value(16)
    at.button(key="FormSubmitter:form:serial-Run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("fastest training step" in m.value for m in at.markdown)
    assert at.query_params["seq_lens"] == "16,32"  # the URL now reproduces the run
    at.text_input(key="w:serial:seq_lens").set_value("16, 999999")
    at.button(key="FormSubmitter:form:serial-Run").click().run()
    assert not at.exception
    assert [unescaped(e.value) for e in at.error] == ["Cannot run: seq_lens: 999999 is out of range; allowed 2..65535"]


@pytest.mark.slow
def test_page_restores_its_controls_from_the_url():
    at = app_test(default_timeout=60)
    at.query_params["seq_lens"] = "8,24"
    at.query_params["d_model"] = "48"
    at.run()
    at.switch_page("pages/serial.py").run()
    assert at.text_input(key="w:serial:seq_lens").value == "8, 24"
    assert at.number_input(key="w:serial:d_model").value == 48


@pytest.mark.slow
@pytest.mark.parametrize("key, path", PAGES)
def test_every_page_restores_its_form_from_the_url(key, path):
    """A copied link reopens a page with the same controls: one numeric control per page, set through the URL."""
    at = app_test(default_timeout=60).run()
    at.switch_page(path).run()
    main_form = [w for w in at.number_input if str(w.key).startswith(f"w:{key}:") and str(w.key).count(":") == 2]
    numeric = [w for w in main_form if w.min is not None]
    assert numeric
    w = numeric[0]
    target = w.min if w.value != w.min else (w.max if w.max is not None else w.min + 1)
    if float(target).is_integer() and w.step >= 1:
        target = int(target)
    field = str(w.key).split(":")[2]  # w:<page>:<field>
    at2 = app_test(default_timeout=60)
    at2.query_params[field] = str(target)
    at2.run()
    at2.switch_page(path).run()
    assert not at2.exception
    assert at2.number_input(key=w.key).value == target
