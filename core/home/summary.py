"""The home page's sentences and Table 1, computed once from the shipped reference and kept beside it as
`data/reference/home.json`, so a cold start draws the home page without importing pandas or computing anything.

`write(folder)` runs the home page's records (core.home.records) on the reference CSVs in `folder` (every kind of device a
visitor's machine may be, both languages) and records what it read: the records' keys, each CSV's SHA-256 and the
catalogue text of every key it used. `read(kind, lang)` hands the stored texts back only while all of that is
unchanged (a record or CSV added, replaced or edited, a sentence reworded: None, and the page computes from the CSVs
as before). `tests/test_home_summary.py` checks that the shipped file matches what the records compute now;
regenerate it with `python -m core.home.summary` (it is written by code, never by hand). Reading is torch- and
pandas-free; writing imports the scoreboard.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from core.home import records as home
from core.terms.i18n import LANGS, catalogue, t

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "data" / "reference"  # = core.store.results.REFERENCE_DIR
FILE = "home.json"
KINDS = (
    "cpu",
    "cuda",
    "mps",
)  # the kinds of machine a visitor's page may run on (core.harness.device.light_facts' type)
VERSION = 1


_hashed: dict[tuple, str] = {}


def _sources(folder: Path) -> dict[str, str]:
    """Every reference CSV the scoreboard reads from `folder`, by name, with its SHA-256 (cached per size and mtime)."""
    out = {}
    for name in home.experiments():
        for path in sorted(folder.glob(f"{name}-*.csv")):
            st = path.stat()
            key = (str(path), st.st_size, st.st_mtime_ns)
            if key not in _hashed:
                _hashed[key] = hashlib.sha256(path.read_bytes()).hexdigest()
            out[path.name] = _hashed[key]
    return out


def _texts_hash(keys, lang: str) -> str:
    cat = catalogue(lang)
    return hashlib.sha256(json.dumps([[k, cat.get(k)] for k in sorted(keys)], ensure_ascii=False).encode()).hexdigest()


def reference_frames(folder: Path, kind: str, strict: bool = False) -> dict:
    """What the home page reads from the reference on a machine of `kind` (ui.data.latest_rows without live rows):
    per experiment, the rows of its fullest reference device of that kind, else (unless `strict`) of any kind."""
    from core.store.results import load_reference, reference_device

    frames = {}
    for name in home.experiments():
        ref, _ = load_reference(name, folder=folder)
        pick = reference_device(ref, kind, strict)
        frames[name] = ref[ref["device"] == pick] if pick else None
    return frames


def compute(folder: Path | None = None) -> dict:
    """The summary of the reference in `folder`: findings, Table 1 and the serial page's peak FLOP/s per kind and
    language, with what they were computed from."""
    from core.home import scoreboard

    folder = Path(folder or REFERENCE_DIR)  # read when called: a test may point it elsewhere
    kinds = {}
    for kind in KINDS:
        frames = reference_frames(folder, kind)
        gpu = None if kind == "cuda" else reference_frames(folder, "cuda", strict=True)  # Table 1's GPU column
        serial = scoreboard.serial_facts(frames["serial"])
        kinds[kind] = {"peak_flops_per_s": serial.get("peak_flops_per_s")}
        for lang in LANGS:
            used: set[str] = set()

            def tr(key: str, _lang=lang, _used=used, **values) -> str:
                _used.add(key)
                return t(key, lang=_lang, **values)

            table = home.table1(frames, tr, gpu)
            kinds[kind][lang] = {
                "findings": home.findings(frames, tr),
                "table1": {"columns": list(table.columns), "rows": table.astype(str).values.tolist()},
                "texts": _texts_hash(used, lang),
                "keys": sorted(used),
            }
    return {"version": VERSION, "records": list(home.RECORDS), "sources": _sources(folder), "kinds": kinds}


def write(folder: Path | None = None) -> Path:
    """Compute the summary of `folder`'s reference and write it there as home.json (atomically)."""
    folder = Path(folder or REFERENCE_DIR)  # read when called: a test may point it elsewhere
    path = folder / FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(compute(folder), ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


def read(kind: str, lang: str, folder: Path | None = None) -> dict | None:
    """{'findings', 'table1', 'peak_flops_per_s'} for a machine of `kind` in `lang`, or None when the summary is
    missing, damaged, or no longer matches the records, the reference CSVs or the catalogue's sentences."""
    folder = Path(folder or REFERENCE_DIR)  # read when called: a test may point it elsewhere
    try:
        data = json.loads((folder / FILE).read_text(encoding="utf-8"))
        entry = data["kinds"][kind]
        texts = entry[lang]
        fresh = (
            data.get("version") == VERSION
            and data["records"] == list(home.RECORDS)
            and data["sources"] == _sources(folder)
            and texts["texts"] == _texts_hash(texts["keys"], lang)
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not fresh:
        return None
    return {"findings": texts["findings"], "table1": texts["table1"], "peak_flops_per_s": entry["peak_flops_per_s"]}


if __name__ == "__main__":
    print(write(Path(sys.argv[1]) if len(sys.argv) > 1 else REFERENCE_DIR))
