"""One record per section (ui.section): a toy section and its toy experiment, registered with their catalogue keys at
test time, are drawn by the page the section names — header, intro, its question, its live form, and (once its
question is answered) its charts with its experiment's reference rows — and its home record (core.home.records,
under the same key) puts its finding on its page's card of the home page. The experiment, its reference rows, its
question, section and home record are this file's own lines: nothing shipped is edited (CONTRIBUTING, "Recipes")."""

import dataclasses

import pandas as pd
import pytest
from conftest import app_test

from core.config import Experiment, spec
from core.experiments import EXPERIMENTS
from core.findings import verdicts
from core.harness.device import environment, resolve_device
from core.home import records as home
from core.store import results
from core.terms import status
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

# ---------------------------------------------------------------- the toy experiment: config, run, columns, record

COLUMNS = ("step", "square", "status", "seed")  # what uploads read of it (core.server.uploads), as of any experiment
TEXT = ()
FLAGS = ()


@dataclasses.dataclass(frozen=True)
class ToyConfig:
    steps: int = spec(5, lo=1, hi=64, help="rows the toy writes")
    seed: int = spec(0, lo=0, hi=2**31 - 1)


def run(cfg: ToyConfig, on_progress=None) -> pd.DataFrame:
    """One row per step: its square."""
    env = environment(resolve_device("cpu"))
    rows = [{"step": i, "square": i * i, "status": status.OK, "seed": cfg.seed, **env} for i in range(cfg.steps)]
    return pd.DataFrame(rows)


TOY = Experiment("toy", ToyConfig, run, {"quick": {}, "tiny": {"steps": 2}}, "each step's square")


def toy_cell(both, primary, tr):
    """A chart cell that draws what it was handed: the rows of the toy's experiment."""
    import streamlit as st

    st.markdown(f"toy cell: {len(both)} rows, {len(primary)} of them the run shown")


@pytest.fixture
def toy(monkeypatch, tmp_path):
    for lang in ("en", "zh"):
        for key, text in TEXTS.items():
            monkeypatch.setitem(catalogue(lang), key, text)
    monkeypatch.setitem(EXPERIMENTS, TOY.name, TOY)
    # its reference, run here, beside the shipped ones
    folder = tmp_path / "reference"
    folder.mkdir()
    for shipped in results.REFERENCE_DIR.glob("*.csv"):
        (folder / shipped.name).symlink_to(shipped)
    monkeypatch.setattr(results, "REFERENCE_DIR", folder)
    rows = run(TOY.config("quick"))
    results.save_csv(rows, results.reference_path(TOY.name, rows["device"][0], rows["device_type"][0]))
    monkeypatch.setitem(verdicts.QUESTIONS, "toy", verdicts.Question(TOY.name, lambda primary: None))
    record = section.Section(
        "depth:toy",
        TOY,
        ("steps", "seed"),
        text="toy",
        question="toy",
        charts=((toy_cell,),),
        legend="toy.legend",
    )
    monkeypatch.setitem(section.SECTIONS, record.key, record)
    finding = home.Home(
        record.key, (TOY.name,), lambda frames, tr: tr("toy.home", n=len(frames[TOY.name])), question="toy"
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
    assert cells == ["toy cell: 5 rows, 5 of them the run shown"], cells  # its own reference's rows
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
    assert len(toy) == 1 and toy[0].endswith("the toy read 5 rows."), toy  # its own reference's rows
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


def test_a_section_whose_question_has_no_verdict_or_reads_another_experiment_is_refused(toy, monkeypatch):
    monkeypatch.setattr(section, "SECTIONS", {})  # nothing registered stays
    with pytest.raises(ValueError, match="question: 'nope' has no verdict"):
        section.register(dataclasses.replace(toy, question="nope"))
    with pytest.raises(ValueError, match="question: 'serial' reads serial, not toy"):
        section.register(dataclasses.replace(toy, question="serial"))
    assert section.SECTIONS == {}
