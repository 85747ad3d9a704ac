"""Both catalogues hold the same keys with the same placeholders, and every literal key in the code exists."""

import re
import string
from pathlib import Path

import pytest

from core.i18n import LANGS, catalogue, normalize_lang, t

ROOT = Path(__file__).resolve().parent.parent


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_catalogues_have_the_same_keys():
    en, zh = set(catalogue("en")), set(catalogue("zh"))
    assert not en - zh, f"missing in zh: {sorted(en - zh)[:20]}"
    assert not zh - en, f"missing in en: {sorted(zh - en)[:20]}"


@pytest.mark.parametrize("lang", LANGS)
def test_placeholders_match_english(lang):
    en = catalogue("en")
    bad = [k for k, v in catalogue(lang).items() if placeholders(v) != placeholders(en[k])]
    assert not bad, f"placeholders differ from English in {lang}: {bad[:20]}"


def test_every_literal_key_used_in_the_code_exists():
    literal = re.compile(r"""\btr\(\s*["']([a-z_]+\.[a-zA-Z0-9_.]*[a-zA-Z0-9_])["']\s*[,)]""")
    used = set()
    for path in [*ROOT.glob("core/**/*.py"), *ROOT.glob("pages/*.py"), *ROOT.glob("ui/*.py"), ROOT / "dashboard.py"]:
        used |= set(literal.findall(path.read_text(encoding="utf-8")))
    missing = sorted(k for k in used if k not in catalogue("en"))
    assert not missing, f"keys used but not in the catalogue: {missing}"
    assert len(used) > 100


def test_lookup_falls_back_and_marks_missing_keys():
    assert normalize_lang("zh-CN") == "zh" and normalize_lang("fr-FR") == "en" and normalize_lang(None) == "en"
    assert t("ui.run", "zh") == "运行" and t("ui.run", "en") == "Run"
    assert t("no.such.key", "zh") == "«no.such.key»"
    assert t("ui.progress", "en", done=1, total=2, what="x") == "1 of 2 done — x"
