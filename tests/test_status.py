"""One status vocabulary: every status a row can carry is defined once, named and explained in both languages."""

import glob

import pandas as pd
import pytest

from core.store.results import load_csv
from core.terms import status
from core.terms.i18n import LANGS, catalogue


@pytest.mark.parametrize("lang", LANGS)
def test_every_status_has_a_name_and_a_banner_in_every_language(lang):
    cat = catalogue(lang)
    for s in status.STATUSES:
        assert f"status.{s}" in cat, (lang, s)
    for s in status.BANNERED:
        assert "{n}" in cat[f"status.{s}.banner"] and "{notes}" in cat[f"status.{s}.banner"], (lang, s)


def test_every_shipped_row_uses_the_vocabulary():
    for path in glob.glob("data/reference/*.csv"):
        df, why = load_csv(path)
        assert why is None, why
        assert not status.unknown(df["status"]), (path, status.unknown(df["status"]))


def test_an_unknown_status_is_caught():
    assert status.unknown(["ok", "exploded"]) == ["exploded"]


def test_an_older_files_skipped_rows_are_read_as_one_of_the_two_kinds():
    old = pd.DataFrame({"status": ["ok", "skipped", "skipped"],
                        "note": ["", "would need 3.0 GiB; budget 1.0 GiB", "would take ~90 s (…); limit 45 s"]})  # fmt: skip
    assert list(status.normalize(old)["status"]) == ["ok", "skipped_memory", "skipped_time"]


def test_a_refusal_names_the_point_it_refused_in_both_languages():
    from core.findings.notes import refusals_text
    from core.terms.i18n import translator
    from ui.frame import literal

    rows = pd.DataFrame([
        {"mixer": "selective_ssm", "form": "scan", "seq_len": 8192, "note": "would need 24.3 GiB; budget 11.1 GiB"},
        {"mixer": "selective_ssm", "form": "scan", "seq_len": 8192, "note": "would need 24.3 GiB; budget 11.1 GiB"},
        {"model": "lstm_loop", "seq_len": 4096, "note": "would take ~90 s (extrapolated from n=2048); limit 45 s"},
        {"model": "post_ln", "n_layers": 32, "note": "would need 3.0 GiB; budget 1.0 GiB"},
        {"model": "[x](http://127.0.0.1:9/)", "seq_len": "many", "note": "would need 1.0 GiB; budget 0.5 GiB"},
    ])  # fmt: skip
    en = refusals_text(rows, translator("en"))
    assert en[:3] == [
        "selective SSM (S6-style) (scan), n = 8,192: would need 24.3 GiB against a budget of 11.1 GiB",
        "LSTM step loop, n = 4,096: would take about 90 s (extrapolated from n = 2,048); limit 45 s",
        "Transformer Post-LN, 32 layers: would need 3.0 GiB against a budget of 1.0 GiB",
    ]  # one sentence per point: the two rows of one point say it once
    assert len(en) == 4 and en[3].startswith(
        "[x](http://127.0.0.1:9/): would need"
    )  # a name it does not know, as written
    shown = refusals_text(rows, translator("en"), literal)[3]
    assert "](" not in shown and "\\[x\\]" in shown  # drawn as Markdown, the name is text, never a link
    zh = refusals_text(rows.iloc[:1], translator("zh"))
    assert zh == ["选择性 SSM（S6 式）（扫描），n = 8,192：预计需要 24.3 GiB，预算为 11.1 GiB"]
