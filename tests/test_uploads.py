"""Results from another machine: every shipped file and a CLI run are accepted, each malformed kind is refused with
its own message, and an accepted file is drawn on its page beside the reference, in both languages."""

import json
import subprocess
import sys

import pandas as pd
import pytest
from conftest import ROOT, app_test

from core.server import uploads
from core.store.results import REFERENCE_DIR, load_reference

PAGE_EXPERIMENT = {"serial": "serial", "long_range": "long_range", "depth": "depth", "attention_cost": "attention_cost"}
TINY = {  # a few seconds each on 2 cores
    "serial": ["models=lstm,transformer", "seq_lens=16,32", "d_model=16", "repeats=3"],
    "long_range": ["models=lstm,transformer", "distances=2,4", "seq_len=8", "steps=20", "eval_every=10"],
    "depth": ["models=lstm,pre_ln", "depths=1,2", "init_depths=1,2", "steps=10", "warmup_steps=0", "seeds=1"],
    "attention_cost": ["impls=naive,sdpa", "seq_lens=64,128", "repeats=3"],
}
OTHER = "cuda · Test GPU (relabelled)"


@pytest.mark.parametrize("path", sorted(REFERENCE_DIR.glob("*.csv")), ids=lambda p: p.name)
def test_every_shipped_reference_is_accepted_by_its_name_or_its_columns(path):
    data = path.read_bytes()
    outcome = uploads.check(data, path.name)
    assert not isinstance(outcome, uploads.Rejected), outcome
    assert path.name.startswith(outcome[0] + "-")
    anonymous = uploads.check(data, "results.csv")  # told by its columns, unless a twin experiment writes the same
    if isinstance(anonymous, uploads.Rejected):
        assert anonymous.kind == "unknown_experiment"
        schemas = uploads._schemas()
        musts = {n: set(uploads.required(n, k.columns, load_reference(n)[0])) for n, k in schemas.items()}
        assert [n for n, m in musts.items() if m == musts[outcome[0]]] != [outcome[0]], "not a twin, yet not told"
    else:
        assert anonymous[0] == outcome[0]


@pytest.fixture(scope="module")
def cli_csvs(tmp_path_factory):
    """One CSV per measuring page's experiment, written by the CLI on this CPU, relabelled as another device."""
    folder = tmp_path_factory.mktemp("cli")
    runs = {name: ["run", name, "--device", "cpu", "--out", str(folder / f"{name}-other.csv")]
            + [a for s in sets for a in ("--set", s)] for name, sets in TINY.items()}  # fmt: skip
    # the four runs through the command line's main in one process: each would mostly be a process importing torch
    code = f"from core.cli import main\nfor args in {list(runs.values())!r}:\n    assert main(args) == 0, args"
    r = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = {}
    for name in runs:
        path = folder / f"{name}-other.csv"
        df = pd.read_csv(path)
        df["device"], df["device_type"] = OTHER, "cuda"
        df.to_csv(path, index=False)
        out[name] = path
    return out


def _serial_bytes() -> bytes:
    return next(REFERENCE_DIR.glob("serial-*.csv")).read_bytes()


def _edit(change) -> bytes:
    import io

    df = pd.read_csv(io.BytesIO(_serial_bytes()))
    change(df)
    return df.to_csv(index=False).encode()


MALFORMED = {
    "empty": (b"", "empty"),
    "header only": (b"model,seq_len\n", "empty"),
    "too large": (b"a,b\n" + b"1,2\n" * (uploads.MAX_BYTES // 4 + 1), "too_large"),
    "binary junk": (b"\x00\xff\xfe" * 1000, "unreadable"),
    "another kind of table": (b"name,age\nada,36\n", "unknown_experiment"),
    "a column missing": (_edit(lambda df: df.pop("train_ms")), "missing_columns"),
    "text where numbers belong": (_edit(lambda df: df.__setitem__("train_ms", "fast")), "wrong_type"),
    "a negative time": (_edit(lambda df: df.__setitem__("train_ms", -1.0)), "absurd"),
    "a share above 1": (_edit(lambda df: df.__setitem__("utilization", 1.7)), "absurd"),
    "an unknown status": (_edit(lambda df: df.__setitem__("status", "exploded")), "bad_status"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_each_malformed_kind_is_refused_with_its_own_reason(case):
    data, kind = MALFORMED[case]
    outcome = uploads.check(data, "serial-x.csv" if kind != "unknown_experiment" else "table.csv")
    assert isinstance(outcome, uploads.Rejected) and outcome.kind == kind, outcome


def test_every_reason_has_a_sentence_in_both_languages():
    from core.terms.i18n import catalogue

    kinds = {kind for _, kind in MALFORMED.values()}
    for lang in ("en", "zh"):
        assert all(f"upload.{k}" in catalogue(lang) for k in kinds)


def _said(spec: dict) -> str:
    """A chart's spec as text, with its title's and subtitle's lines read as one (a device's name may wrap)."""
    t = spec.get("title") or {}
    lines = [x for k in ("text", "subtitle") for x in ([t.get(k)] if isinstance(t.get(k), str) else t.get(k) or [])]
    return json.dumps(spec, ensure_ascii=False) + " " + " ".join(lines)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("key", list(PAGE_EXPERIMENT))
def test_an_accepted_file_is_drawn_beside_the_reference(cli_csvs, key, lang):
    name = PAGE_EXPERIMENT[key]
    outcome = uploads.check(cli_csvs[name].read_bytes(), cli_csvs[name].name)
    assert not isinstance(outcome, uploads.Rejected), outcome
    experiment, frame = outcome
    at = app_test(default_timeout=120)
    at.query_params["lang"] = lang
    at.session_state["uploaded"] = {experiment: {cli_csvs[name].name: frame}}
    at.run()
    at.switch_page(f"pages/{key}.py").run()
    assert not at.exception, at.exception
    specs = [_said(json.loads(c.proto.spec)) for c in at.get("vega_lite_chart")]
    shipped = str(pd.read_csv(next(REFERENCE_DIR.glob(f"{name}-*.csv")))["device"].iloc[0]).split(" · ")[1]
    drawn = [s for s in specs if "Test GPU (relabelled)" in s]
    assert drawn, "the uploaded rows are in no chart"
    assert any(shipped in s for s in drawn), "not beside the reference"  # one chart names both devices


def test_a_malformed_upload_leaves_the_page_working():
    at = app_test(default_timeout=120)
    at.session_state["uploaded"] = {}
    at.run()
    at.switch_page("pages/serial.py").run()
    assert not at.exception and len(at.get("vega_lite_chart")) >= 1


def test_each_experiment_declares_which_of_its_columns_hold_words():
    """Beside its COLUMNS, each experiment names its columns of words (TEXT) and of yes/no (FLAGS): a shipped
    reference's non-numeric columns are among them, and nothing else is."""
    for name, kinds in uploads._schemas().items():
        assert kinds.text | kinds.flags <= set(kinds.columns) | set(uploads.ROW_TEXT), name
        df, _ = load_reference(name)
        if df is None or not len(df):
            continue
        words = {c for c in kinds.columns if c in df and df[c].notna().any() and df[c].dtype == object}
        assert words <= kinds.text | kinds.flags | {"source"}, (name, words - kinds.text - kinds.flags)
