"""Live runs in worker processes, in a real browser (conftest's shared server and Chromium): the measuring happens
in a child process of the server; Stop in the middle of a point that would last minutes (its lengths typed into the
form, as a learner does) ends that process and keeps and draws what was measured; a worker killed from outside is a
message, not an exception, and the next Run works; seven sessions that press Run while an eighth measures queue in
the order they asked, each told its place, and once the eighth is stopped every one of them runs to its end."""

import os
import re
import signal
import time
import urllib.parse

import pytest
from conftest import REVEALED, open_form, press_run
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from test_browser import _settle

from core.terms.i18n import translator

pytestmark = pytest.mark.slow  # a real browser and server: the full suite only

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHOWN = urllib.parse.urlencode(REVEALED)
LONG = "models=lstm_loop&seq_lens=16,65535"  # the step loop at 65,535 tokens: a point of minutes on 2 cores


def _workers(server_pid: int) -> list[int]:
    """The processes that run the server's jobs: its children that run `python -m core worker`, or (on Linux) the
    children of its zygote (`python -m core worker --zygote`), each a fork of it."""
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(") ", 1)[1].split()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().split(b"\0")
        except OSError:
            continue
        if fields[0] != "Z" and b"worker" in cmd and b"core" in cmd:
            procs[int(entry)] = (int(fields[1]), b"--zygote" in cmd)
    zygotes = {pid for pid, (parent, zygote) in procs.items() if parent == server_pid and zygote}
    return [
        pid for pid, (parent, zygote) in procs.items() if parent in zygotes or (parent == server_pid and not zygote)
    ]


def _measuring(server_pid: int, before: set[int]) -> int:
    """The worker that took this run: the one child that was not waiting as the spare before it."""
    for _ in range(300):
        new = [p for p in _workers(server_pid) if p not in before]
        busy = [p for p in _workers(server_pid) if _cpu_ticks(p) > 0]
        if new or busy:
            return (new or busy)[0]
        time.sleep(0.1)
    raise AssertionError("no worker process measured the run")


def _cpu_ticks(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(") ", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except OSError:
        return 0


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(") ", 1)[1].startswith("Z")
    except OSError:
        return True


def _open(chromium, url: str, path: str):
    page = chromium.new_page()
    page.goto(f"{url}/{path}")
    _settle(page)
    return page


def _type_lengths(page, text: str) -> None:
    """Type the sequence lengths into the main form, as a learner does."""
    box = page.get_by_role("textbox", name="Sequence lengths").first  # the main form comes first
    open_form(page)  # the form waits, collapsed, under "measure it yourself"
    for _ in range(5):  # a rerun of a fresh server's first page can redraw the form and drop what was typed
        box.fill(text)
        page.wait_for_timeout(500)
        if box.input_value() == text:
            return
    raise AssertionError(f"the form kept dropping {text!r}")


def _wait(page, selector: str, timeout_s: float) -> None:
    """Until `selector` shows; on a timeout the failure quotes the page (a queue, an error or a lost click says which)."""
    try:
        page.wait_for_selector(selector, timeout=timeout_s * 1000)
    except PlaywrightTimeout:
        raise AssertionError(f"{selector} not shown in {timeout_s} s; the page read:\n{page.inner_text('body')[:2000]}")


def _no_exception(page) -> None:
    errors = page.query_selector_all("[data-testid='stException']")
    assert not errors, errors[0].inner_text()[:1500]


def test_the_run_measures_in_a_child_process_and_stop_ends_it_in_the_middle_of_a_point(served, browser):
    url, server_pid = served
    page = _open(browser, url, f"serial?{SHOWN}&models=lstm_loop")
    _type_lengths(page, "16, 65535")  # LONG, typed: a point of minutes
    spare = set(_workers(server_pid))
    press_run(page)
    _wait(page, "text=/1 of 2 done/", 240)  # n = 16 measured; now inside n = 65,535
    worker = _measuring(server_pid, set())
    assert worker in _workers(server_pid) and worker != server_pid  # a child of the server measures
    assert spare <= {worker} | set(_workers(server_pid))
    page.wait_for_timeout(3000)
    page.get_by_test_id("stButton").get_by_role("button", name="Stop").click()
    for _ in range(200):  # gone (SIGKILL after core.server.jobs.GRACE_S; scripts/bench_worker.py times it)
        if _gone(worker):
            break
        time.sleep(0.05)
    assert _gone(worker)
    _wait(page, "text=/Stopped after 1 of 2 steps of work/", 60)
    _settle(page)
    assert "your run" in page.inner_text("body")  # the point measured before the Stop is drawn
    _no_exception(page)
    page.close()


def test_a_worker_killed_from_outside_is_a_message_and_the_next_run_completes(served, browser):
    url, server_pid = served
    page = _open(browser, url, f"serial?{SHOWN}&{LONG}")
    press_run(page)
    _wait(page, "text=/1 of 2 done/", 240)
    os.kill(_measuring(server_pid, set()), signal.SIGKILL)
    _wait(page, "text=/ended before it finished/", 60)
    _settle(page)
    body = page.inner_text("body")
    assert "SIGKILL" in body and "your run" in body  # what happened, and the row measured before it
    _no_exception(page)
    _type_lengths(page, "16, 32")
    press_run(page)
    page.wait_for_timeout(1500)
    _settle(page, 120)
    body = page.inner_text("body")
    assert "ended before it finished" not in body and "Stopped after" not in body and "your run" in body
    _no_exception(page)
    page.close()


EIGHT = [  # eight sessions, five pages (the fields a page's link may set)
    f"serial?{LONG}",  # the first: minutes, so every other waits behind it until it is stopped
    "serial?models=lstm,transformer&seq_lens=16,32&d_model=16",  # the others: short
    "serial?models=lstm,transformer&seq_lens=16,32&d_model=32",
    "long_range?distances=4&steps=20",
    # no warm-up: the quick preset's 20-step warm-up is refused with 10 steps, and a refused link runs the defaults
    "depth?depths=2&steps=10&seeds=1&warmup_steps=0",
    "attention_cost?seq_lens=64,128",
    "answers?mixers=min_gru,lstm,transformer&seq_lens=16,32&d_model=16",  # 3 of the 10 mixers: half the CPU time
    "serial?models=gru&seq_lens=16&d_model=24",
]
REFUSED_LINK = translator("en")("ui.bad_url", error="\x00").split("\x00")[0]  # "The link's settings were not valid"


def _place(page) -> int:
    _wait(page, "text=/in the queue/", 60)
    return int(re.search(r"number (\d+) in the queue", page.inner_text("body")).group(1))


def test_eight_sessions_pressing_run_together_queue_each_told_its_place_and_all_complete(served, browser):
    url, _ = served
    pages = []
    for path in EIGHT:  # unanswered questions: the form without the reference's charts, light for 2 cores
        pages.append(_open(browser, url, path))
        assert REFUSED_LINK not in pages[-1].inner_text("body"), path  # each run is the link's, not the defaults
    first, *others = pages
    press_run(first)
    _wait(first, "text=/[0-9] of 2 done/", 120)  # measuring, and minutes from its end
    places = []
    for page in others:  # Run on every other page while the first measures
        press_run(page)
        places.append(_place(page))
    assert places == list(range(places[0], places[0] + len(others))), places  # in the order asked, one after another
    first.get_by_test_id("stButton").get_by_role("button", name="Stop").click()
    _wait(first, "text=/Stopped (after|before)/", 60)
    for page in others:  # each one's run in turn, the last ones after every run before them
        page.wait_for_timeout(500)
        _settle(page, 240)
        for _ in range(240):
            if "in the queue" not in page.inner_text("body") and not page.query_selector(
                "[data-testid='stStatusWidget']"
            ):
                break
            page.wait_for_timeout(1000)
        body = page.inner_text("body")
        assert "in the queue" not in body and "ended before it finished" not in body, body[:2000]
        assert "Stopped after" not in body and "The run stopped with an error" not in body
        assert not page.query_selector("[data-testid='stProgress']")  # its run ended, complete
        _no_exception(page)
    _no_exception(first)
    for page in pages:
        page.close()
