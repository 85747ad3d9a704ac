"""The home page's precomputed summary (data/reference/home.json) says what the scoreboard computes from the shipped
reference now, goes unused once the CSVs or the sentences change, and the page draws the same cards either way."""

import json
import shutil

import pytest
from conftest import app_test

from core.home import summary as home_summary
from core.store import results

REGENERATE = "stale: regenerate it with `python -m core.home.summary` (written by code, never by hand)"


def test_the_shipped_summary_is_what_the_scoreboard_computes_from_the_reference_now():
    shipped = json.loads((home_summary.REFERENCE_DIR / home_summary.FILE).read_text(encoding="utf-8"))
    now = json.loads(json.dumps(home_summary.compute()))  # the same JSON round trip as the file
    assert shipped["sources"] == now["sources"], REGENERATE
    assert shipped == now, REGENERATE
    assert home_summary.REFERENCE_DIR == results.REFERENCE_DIR
    for kind in home_summary.KINDS:
        for lang in ("en", "zh"):
            assert home_summary.read(kind, lang) is not None


@pytest.fixture
def folder(tmp_path):
    """A copy of the shipped reference and its summary."""
    for path in home_summary.REFERENCE_DIR.glob("*"):
        if path.suffix in (".csv", ".json"):
            shutil.copy(path, tmp_path / path.name)
    return tmp_path


def test_a_changed_reference_csv_or_sentence_makes_the_summary_unused(folder, monkeypatch):
    assert home_summary.read("cpu", "en", folder) is not None
    serial = next(folder.glob("serial-*.csv"))
    serial.write_text(serial.read_text() + serial.read_text().splitlines()[-1] + "\n")  # one row more
    assert home_summary.read("cpu", "en", folder) is None
    home_summary.write(folder)
    assert home_summary.read("cpu", "en", folder) is not None
    (folder / "depth-cuda-some-gpu.csv").write_text("device,status\ncuda · Some GPU,ok\n")  # a GPU reference added
    assert home_summary.read("cpu", "en", folder) is None
    home_summary.write(folder)
    real = home_summary.catalogue

    def reworded(lang):
        return {**real(lang), "home.find.attention": "reworded {naive} {sdpa} {n}"}

    monkeypatch.setattr(home_summary, "catalogue", reworded)
    assert home_summary.read("cpu", "en", folder) is None  # a sentence it used was reworded
    monkeypatch.setattr(home_summary, "catalogue", real)
    (folder / home_summary.FILE).write_text("{not json")
    assert home_summary.read("cpu", "en", folder) is None


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_home_page_draws_the_same_with_and_without_the_summary(lang, monkeypatch):
    def home(read):
        monkeypatch.setattr(home_summary, "read", read)
        at = app_test()
        at.query_params["lang"] = lang
        at.run()
        assert not at.exception
        return [str(m.value) for m in at.markdown], [t.value.to_dict() for t in at.table], [c.value for c in at.caption]

    used = []
    real = home_summary.read
    with_summary = home(lambda *a, **k: used.append(1) or real(*a, **k))
    assert used and real(*_kind_lang(lang)) is not None
    computed = home(lambda *a, **k: None)
    assert with_summary == computed


def _kind_lang(lang):
    from core.harness.device import light_facts

    return light_facts()["type"], lang
