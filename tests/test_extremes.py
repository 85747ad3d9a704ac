"""The consistency pass: every control at the edge of its range gives a result or one clear error, never an exception.

Config level: each field of every experiment at its lowest and highest allowed value either validates or raises
ValueError naming a field. Page level: every numeric control of every page's form at its minimum, each list of lengths (distances, depths) its
smallest allowed value alone, then Run.
"""

import os

import pytest
from conftest import app_test

from core.config import field_info, make_config
from core.experiments import EXPERIMENTS
from core.terms.i18n import translator
from ui.common import PAGES

APP = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dashboard.py")


def _edge_values(info):
    if info.get("choices"):
        return [info["choices"][:1], info["choices"]] if info["sequence"] else [info["choices"][0], info["choices"][-1]]
    edges = [v for v in (info.get("lo"), info.get("hi")) if v is not None]
    return [(v,) for v in edges] if info["sequence"] else edges


@pytest.mark.parametrize("name", list(EXPERIMENTS))
def test_every_field_at_its_edges_validates_or_names_a_field(name):
    exp = EXPERIMENTS[name]
    names = [i["name"] for i in field_info(exp.config_cls)]
    for info in field_info(exp.config_cls):
        for value in _edge_values(info):
            try:
                make_config(exp.config_cls, {info["name"]: value}, base=exp.config("quick"))
            except ValueError as err:
                assert str(err).split(":")[0] in names, f"{name}.{info['name']}={value!r}: {err}"


# field → its lowest allowed value, for the list fields a form shows as text (where experiments differ, the highest
# of their lows: allowed in each)
SEQUENCE_LO: dict[str, int] = {}
for _exp in EXPERIMENTS.values():
    for _info in field_info(_exp.config_cls):
        if _info["sequence"] and not _info.get("choices") and _info.get("lo") is not None:
            SEQUENCE_LO[_info["name"]] = max(SEQUENCE_LO.get(_info["name"], _info["lo"]), _info["lo"])


@pytest.mark.slow
@pytest.mark.parametrize("page_key, path", PAGES)
def test_form_controls_at_their_minimum_run_or_explain(page_key, path):
    at = app_test(default_timeout=120).run()
    at.switch_page(path).run()
    form = [w for w in at.number_input if str(w.key).startswith(f"w:{page_key}:")]
    assert form, "the page's form has numeric controls"
    for w in form:
        if w.min is not None:
            w.set_value(w.min)
    for w in at.text_input:  # a list of lengths, distances or depths: its smallest allowed value, alone
        lo = SEQUENCE_LO.get(str(w.key).removeprefix(f"w:{page_key}:"))
        if lo is not None:
            w.set_value(str(lo))
    at.button(key=f"FormSubmitter:form:{page_key}-Run").click().run()
    assert not at.exception, at.exception
    assert not _crashed(at), _crashed(at)


FAILED = translator("en")("ui.run_failed", error="\x00").split("\x00")[0]  # the page's words for a crash inside core


def _crashed(at) -> list[str]:
    """The errors that say a run ended in an exception (a bad value's 'Cannot run: …' is an answer, not a crash)."""
    return [e.value for e in at.error if str(e.value).startswith(FAILED)]


@pytest.mark.slow
def test_a_crash_inside_core_is_caught_by_this_test(monkeypatch):
    """The check above can fail: a run that raises inside core (in the worker process that measures it, through the
    command line's test hook) shows the page's crash message, and _crashed sees it."""
    import ui.live

    monkeypatch.setenv("LAB_INJECT", "serial=error")  # the worker raises after its first rows
    ui.live.job_queue().shutdown()  # a spare started before the hook was set would not see it
    ui.live.job_queue.clear()
    try:
        at = app_test(default_timeout=120).run()
        at.switch_page("pages/serial.py").run()
        at.text_input(key="w:serial:seq_lens").set_value("16")
        at.button(key="FormSubmitter:form:serial-Run").click().run()
        assert not at.exception and _crashed(at) and "injected failure" in _crashed(at)[0]
    finally:
        ui.live.job_queue().shutdown()
        ui.live.job_queue.clear()  # the next test's queue starts its workers without the hook
