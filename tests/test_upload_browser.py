"""Issue #32 in a real browser: a GPU file whose device label and note hold Markdown images and links, uploaded in
the sidebar, is shown as text on the serial page; the browser fetches nothing from the address they name and no
link to it forms."""

import os

import pytest
from test_browser import CHART, SHOWN, _settle
from test_upload_pages import EVIL_NOTE, GPU, _csv, _reference

pytestmark = pytest.mark.slow  # a real browser and server: the full suite only

if os.environ.get("LAB_SKIP_BROWSER") == "1":
    pytest.skip("LAB_SKIP_BROWSER=1", allow_module_level=True)


def test_an_uploaded_files_markup_stays_text_in_the_browser(app_url, browser, tmp_path):
    serial = _reference("serial")
    serial["device"], serial["device_type"] = GPU, "cuda"
    serial.loc[serial.index[-1], ["status", "note"]] = ["skipped_memory", EVIL_NOTE]
    serial.loc[serial.index[-1], ["train_ms", "tokens_per_s", "achieved_flops_per_s", "utilization"]] = None
    path = tmp_path / "serial-gpu.csv"
    path.write_bytes(_csv(serial))

    page = browser.new_page()
    fetched = []
    page.on("request", lambda r: fetched.append(r.url) if "127.0.0.1:9/" in r.url else None)
    page.goto(f"{app_url}/serial?lang=en&{SHOWN}")
    _settle(page)
    page.get_by_text("Add results from another machine").click()
    page.locator("[data-testid='stSidebar'] input[type='file']").set_input_files(str(path))
    page.wait_for_selector("[data-testid='stSidebar'] [data-testid='stAlertContentSuccess']", timeout=60000)
    _settle(page)
    page.wait_for_selector(CHART, timeout=30000)
    page.locator("[data-testid='stExpander'] summary").filter(has_text="Details").first.click()  # banners, captions
    _settle(page)
    body = page.inner_text("[data-testid='stMain']").replace("\u200b", "")
    assert "![img](http://127.0.0.1:9/x.png)" in body  # the device's name, as text
    assert "would need [link](http://127.0.0.1:9/a)" in body  # the status banner, as text
    assert not page.query_selector_all("img[src*='127.0.0.1:9'], a[href*='127.0.0.1:9']")
    assert not fetched, fetched
    assert not page.query_selector_all("[data-testid='stException']")
