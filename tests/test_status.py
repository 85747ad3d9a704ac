"""One status vocabulary: every status a row can carry is defined once, named and explained in both languages."""

import glob

import pandas as pd
import pytest

from core import status
from core.i18n import LANGS, catalogue
from core.results import load_csv


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
