"""Shared test setup: a fixed thread count and seeds, the repo root on sys.path, and the one Streamlit server and
Chromium that every browser test module shares (session fixtures: each costs seconds to start on 2 cores)."""

import contextlib
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from core.findings import verdicts

# The fast tier (`pytest -m "not slow"`) leaves out tests marked `slow`: a browser, a subprocess that imports torch,
# training or measuring beyond a second, an AppTest that presses Run. A test says so itself (@pytest.mark.slow, or
# `pytestmark` for a whole file); these files' tests are marked here, by name (None: every test of the file).
SLOW_ELSEWHERE = {
    "test_gpu_reference.py": None,  # runs scripts/gpu_reference.sh end to end: every experiment, in subprocesses
    "test_upload_pages.py": None,  # uploads checked through whole pages (AppTests with real files)
    "test_gpu_pages.py": {"test_every_page_draws_the_gpu_rows_beside_the_cpu_reference"},
    "test_uploads.py": {
        "test_an_accepted_file_is_drawn_beside_the_reference",
        "test_a_malformed_upload_leaves_the_page_working",
    },
    "test_upload_safety.py": {
        "test_uploads_per_session_are_bounded_in_count_and_size",
        "test_an_upload_is_checked_once_not_on_every_rerun",
        "test_a_form_value_of_thousands_of_characters_in_the_url_is_one_message_naming_the_field",
        "test_an_upload_under_the_references_label_does_not_change_the_verdict",
        "test_the_pages_download_quotes_an_uploads_formulas",
        "test_the_shipped_references_reuploaded_unchanged_draw_as_uploaded",
        "test_a_depth_run_of_10000_logged_steps_draws_thinned",
        "test_the_depth_page_with_a_long_live_run_shows_charts_table_and_download",
        "test_a_prediction_of_thousands_of_digits_in_the_url_is_ignored",
        "test_every_file_the_cli_writes_is_accepted",
        "test_a_cli_file_with_status_rows_draws_on_its_page",
        "test_a_chart_that_cannot_be_drawn_is_a_warning_and_the_rest_still_shows",
    },
}


def pytest_collection_modifyitems(items):
    for item in items:
        names = SLOW_ELSEWHERE.get(item.path.name, ())
        if names is None or getattr(item, "originalname", None) in names:
            item.add_marker(pytest.mark.slow)
    # The longest work first (the oldest rule of scheduling): the browser tests' one scope, then each file sharing
    # a module fixture, then single tests; the two workers take scopes in this order, so neither starts minutes of
    # browser tests while the other is nearly done. A stable sort: within each group, the files' own order.
    items.sort(key=lambda item: _rank(item.nodeid))


# scripts/test.sh runs the suite in two pytest-xdist workers. A fixture several tests share is built once only if
# those tests run in one worker: the browser tests share one Streamlit server and Chromium (conftest's session
# fixtures), and a file with a module-scoped fixture (a whole gpu_reference.sh run, a trained model) shares it among
# its tests; each of those goes to one worker whole, and every other test wherever a worker is free. (xdist's own
# `xdist_group` marks do not group under pytest 9, whose test ids no longer take xdist's suffix.)
BROWSER_FILES = {"test_browser.py", "test_browser_worker.py", "test_upload_browser.py"}
MODULE_FIXTURE_FILES = {
    path.name for path in pathlib.Path(__file__).parent.glob("test_*.py") if 'scope="module"' in path.read_text()
}


def _scope(nodeid: str) -> str:
    file = os.path.basename(nodeid.split("::")[0])
    return "browser" if file in BROWSER_FILES else file if file in MODULE_FIXTURE_FILES else nodeid


def _rank(nodeid: str) -> int:
    scope = _scope(nodeid)
    return 0 if scope == "browser" else 1 if scope != nodeid else 2


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist, there when it is
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class Shared(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            return _scope(nodeid)

    config.option.loadscopereorder = False  # the collection's order (above), not the number of tests in a scope
    return Shared(config, log)


def pytest_configure(config):
    # two xdist workers on two cores: one torch thread each, or their thread pools spin against each other (a test
    # that needs more threads sets them itself; subprocesses keep torch's default)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)
    yield


def unescaped(markdown: str) -> str:
    """The characters a Markdown source renders after ui.literal's backslash escapes (what a learner reads)."""
    import re

    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", str(markdown))


APP = os.path.join(ROOT, "dashboard.py")
# Every page's predict-first question; a test that looks at results opens the app as a shared, revealed link does.
QUESTIONS = tuple(verdicts.QUESTIONS)
REVEALED = {f"predict.{q}": "show" for q in QUESTIONS}


FORM = re.compile("Measure it yourself|亲手测一测")  # a section's collapsed form (ui.measure_yourself)


def open_form(page) -> None:
    """In a real browser: open the page's first "measure it yourself" unless it is open (a click would close it)."""
    form = page.locator("[data-testid='stExpander'] details").filter(has=page.locator("summary", has_text=FORM)).first
    if form.get_attribute("open") is None:
        form.locator("summary").first.click()


def press_run(page, label: str = "Run") -> None:
    """In a real browser: open the page's first "measure it yourself", then press Run until the page's script takes
    it. A press that lands before the form's lazily loaded button is wired up (slow on a busy host) leaves the page as
    it was, and a learner would press again."""
    for _ in range(3):
        open_form(page)
        page.get_by_role("button", name=label, exact=True).first.click(timeout=60000)
        for _ in range(100):
            state = page.get_attribute("[data-testid='stApp']", "data-test-script-state")
            if state == "running" or page.query_selector("[data-testid='stProgress']"):
                return
            page.wait_for_timeout(200)
    raise AssertionError(f"three presses of {label} started no run")


def app_test(default_timeout: float = 60, revealed: bool = True):
    """The whole app (dashboard.py) under AppTest; `revealed`: every question answered 'just show me' by the URL."""
    from streamlit.testing.v1 import AppTest

    import ui.live

    # A live run's worker waits START_SETTLE_S (1.5 s) before measuring, while a browser redraws the page for the
    # rerun that Run began. AppTest has no browser and asserts no timing: the wait only added 1.5 s to every Run of
    # every AppTest. The browser tests' server keeps it.
    ui.live.START_SETTLE_S = 0.0
    at = AppTest.from_file(APP, default_timeout=default_timeout)
    if revealed:
        for k, v in REVEALED.items():
            at.query_params[k] = v
    return at


# ---------------------------------------------------------------- the browser tests' server and Chromium

CHROMIUM = os.environ.get("LAB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(env: dict | None = None):
    """`streamlit run dashboard.py` on a free port until the block ends: (its URL, the server's pid); `env`: added
    to its environment."""
    assert os.path.exists(CHROMIUM), f"no browser at {CHROMIUM}: install Debian's chromium (scripts/test.sh does)"
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "dashboard.py", "--server.headless", "true", "--server.port",
         str(port)],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read().strip() == b"ok":
                        break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("streamlit did not become healthy in 60 s")
        yield url, proc.pid
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)


@pytest.fixture(scope="session")
def served():
    """One server for every browser test module (test_browser, test_browser_worker, test_upload_browser): (its URL,
    its pid). Each test opens its own browser page, so its own Streamlit session."""
    with serve() as (url, pid):
        yield url, pid


@pytest.fixture(scope="session")
def app_url(served):
    return served[0]


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium (Debian's, via Playwright) for every browser test module, and in it one profile (a
    browser context, 1400 × 1000) whose pages each test opens: each page is its own Streamlit session, and the pages
    share the profile's cache, so Streamlit's JavaScript is fetched and compiled once, not once a page
    (a context per page cost ~0.7 s more CPU each of ~40 visits)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        context = b.new_context(viewport={"width": 1400, "height": 1000})
        yield context
        context.close()
        b.close()
