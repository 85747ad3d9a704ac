"""ui/ stays split by job: no module grows back into a drawer, and ui.common still offers every name pages use."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_no_ui_module_is_over_300_lines():
    long = {p.name: n for p in (ROOT / "ui").glob("*.py") if (n := len(p.read_text().splitlines())) > 300}
    assert not long, long


def test_ui_common_exposes_every_name_the_pages_use():
    from ui import common

    sources = [*(ROOT / "pages").glob("*.py"), ROOT / "dashboard.py"]
    # `ui.name` as code, not inside a catalogue key such as tr("ui.no_data")
    used = {m for p in sources for m in re.findall(r"(?<![\"'\w.])ui\.([A-Za-z_]\w*)", p.read_text())}
    assert {"page_ui", "PAGES", "NAVIGATION_READY", "pd"} <= used
    missing = sorted(name for name in used if getattr(common, name, None) is None)
    assert not missing, missing


def test_page_ui_reads_the_navigation_flag_dashboard_sets_on_ui_common(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from ui import common, frame

    def script():
        from ui import common as ui

        ui.page_ui("serial")

    assert not hasattr(frame, "NAVIGATION_READY")  # one flag, on the module dashboard.py assigns to
    monkeypatch.setattr(common, "NAVIGATION_READY", True)  # as dashboard.py's `ui.NAVIGATION_READY = True`
    at = AppTest.from_function(script, default_timeout=30).run()
    assert not at.exception, at.exception
    assert at.title and at.title[0].value  # the page drew itself instead of rerunning through dashboard.py
