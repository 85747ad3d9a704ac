"""One record per section (ui.section): a toy section, registered with its catalogue keys at test time, is drawn by
the page it names — header, intro, its question, its live form, and (once its question is answered) its charts with
the reference rows of its experiment — and its home record (core.home.records, under the same key) puts its finding on its
page's card of the home page. Its question, section and home record are its own lines: nothing shipped is
edited."""

import pytest
from conftest import app_test

from core.experiments import answers_reach
from core.findings import verdicts
from core.home import records as home
from core.terms.i18n import catalogue
from ui import section

TEXTS = {
    "toy.header": "Toy section header",
    "toy.intro": "What the toy section measures.",
    "toy.predict.q": "Which toy wins?",
    "toy.predict.o1": "the first",
    "toy.predict.o2": "the second",
    "toy.predict.o3": "neither",
    "toy.legend": "The toy's legend.",
    "toy.home": "the toy read {n} rows.",
}


def toy_cell(both, primary, tr):
    """A chart cell that draws what it was handed: the rows of the toy's experiment."""
    import streamlit as st

    st.markdown(f"toy cell: {len(both)} rows, {len(primary)} of them the run shown")


@pytest.fixture
def toy(monkeypatch):
    for lang in ("en", "zh"):
        for key, text in TEXTS.items():
            monkeypatch.setitem(catalogue(lang), key, text)
    monkeypatch.setitem(verdicts.QUESTIONS, "toy", verdicts.Question("answers_reach", lambda primary: None))
    record = section.Section(
        "depth:toy",
        answers_reach.EXPERIMENT,
        ("seq_len", "seed"),
        text="toy",
        question="toy",
        charts=((toy_cell,),),
        legend="toy.legend",
    )
    monkeypatch.setitem(section.SECTIONS, record.key, record)
    finding = home.Home(
        record.key,
        ("answers_reach",),
        lambda frames, tr: tr("toy.home", n=len(frames["answers_reach"])),
        question="toy",
    )
    monkeypatch.setitem(home.RECORDS, record.key, finding)
    return record


def _depth_page(**params):
    at = app_test(default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.switch_page("pages/depth.py").run()
    assert not at.exception, at.exception
    return at


def _texts(at):
    return [e.value for kind in ("subheader", "markdown", "caption") for e in at.get(kind)]


def test_a_registered_section_is_drawn_on_its_page_behind_its_question(toy):
    at = _depth_page()
    texts = _texts(at)
    assert "Toy section header" in texts and "What the toy section measures." in texts
    assert "Measure it yourself on this machine" in [e.label for e in at.expander]  # the form, collapsed
    assert any(r.label == "Which toy wins?" for r in at.radio)
    assert not any(t.startswith("toy cell") for t in texts)  # its results wait for an answer
    assert "The toy's legend." not in texts
    assert "depth:toy" in [s.key for s in section.SECTIONS.values()]


def test_a_registered_section_draws_its_charts_once_its_question_is_answered(toy):
    at = _depth_page(**{"predict.toy": "show"})
    texts = _texts(at)
    cells = [t for t in texts if t.startswith("toy cell")]
    assert len(cells) == 1 and not cells[0].startswith("toy cell: 0 rows"), cells
    assert "The toy's legend." in texts


def test_the_depth_page_draws_no_toy_once_it_is_gone():
    at = _depth_page(**{"predict.toy": "show"})
    assert "Toy section header" not in _texts(at)


def _findings(at):
    return [m.value for m in at.markdown if m.value.startswith("**Finding:**")]


def test_a_registered_sections_home_finding_is_on_the_home_page(toy):
    at = app_test(default_timeout=120)
    at.query_params["predict.toy"] = "show"  # its finding waits for its question, as every finding does
    at.run()
    assert not at.exception, at.exception
    findings = _findings(at)
    toy = [f for f in findings if "the toy read" in f]
    assert len(toy) == 1 and not toy[0].endswith(" 0 rows."), toy  # the shipped reference's answers_reach rows
    depth = next(
        i for i, f in enumerate(findings) if "-layer" in f
    )  # the depth page's own finding stays, then the toy's
    assert findings[depth + 1] == toy[0]
    assert len(findings) == 7  # five pages, the real-text section and the toy


def test_the_home_page_has_no_toy_finding_once_it_is_gone():
    at = app_test(default_timeout=120).run()
    assert not at.exception, at.exception
    findings = _findings(at)
    assert len(findings) == 6 and not any("the toy read" in f for f in findings)


def test_the_home_page_keeps_each_finding_until_its_question_is_answered():
    at = app_test(default_timeout=120, revealed=False).run()
    assert not at.exception, at.exception
    assert _findings(at) == []  # no page's answer before the learner commits
    locked = [c.value for c in at.caption if "Answer this page's question" in c.value]
    assert len(locked) == 5
    at = app_test(default_timeout=120, revealed=False)
    at.query_params["predict.serial"] = "2"
    at.run()
    assert [f for f in _findings(at) if "dependent steps" in f] and len(_findings(at)) == 1
