"""What a GPU session brings back reaches every page: with a CUDA reference CSV beside the CPU one for every
experiment scripts/gpu_reference.sh runs, each page draws the GPU rows in its time and memory charts, the serial
and page-5 verdicts add what the GPU rows measured (instead of the roofline's or the paper's word on a GPU), and the
home page's Table 1 gains the GPU's measured cost.

The CUDA rows are synthetic (this suite runs without a GPU): the shipped CPU rows relabelled, with the times of the
step loops scaled up and of the Transformer's step scaled down by factors chosen so that each verdict's answer on the
"GPU" differs from the CPU's. They test the wiring, not the physics."""

import json
import shutil

import pandas as pd
import pytest
from conftest import app_test

import core.home.summary
import core.store.results
from ui import common
from ui.frame import PAGES

GPU = "cuda · NVIDIA H200 (synthetic test rows)"
PLAN = ("serial", "attention_cost", "answers_speed", "answers_decode", "checkpoint", "kv_cache", "gradient_reach",
        "long_range", "depth", "recall_frontier")  # fmt: skip


def _as_gpu(name: str, df: pd.DataFrame) -> pd.DataFrame:
    df = df.assign(device=GPU, device_type="cuda", cudnn_version="91000")
    if name == "serial":  # the Transformer ~8x faster than on the CPU, the recurrences as they were
        att = df["model"] == "transformer"
        df.loc[att, ["train_ms", "train_iqr_ms"]] /= 8.0
        df["ratio_to_recurrent"] = df["ratio_to_recurrent"] / 8.0
        for c in ("ratio_q25", "ratio_q75"):
            df.loc[att, c] = df.loc[att, c] / 8.0
    if name == "answers_speed":  # every loop 20x slower: the scans tens of times faster than their loops
        for c in ("speedup_vs_loop", "speedup_q25", "speedup_q75"):
            df[c] = df[c] * 20.0
        loop = df["form"] == "loop"
        df.loc[loop, ["train_ms", "train_iqr_ms"]] *= 20.0
    return df


@pytest.fixture(scope="module")
def with_gpu_reference(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reference")
    for src in core.store.results.REFERENCE_DIR.glob("*"):
        shutil.copy(src, folder)
    for name in PLAN:
        # the fullest CPU file: long_range ships a run of one distance beside its grid
        src = max(core.store.results.REFERENCE_DIR.glob(f"{name}-cpu-*.csv"), key=lambda p: p.stat().st_size)
        _as_gpu(name, pd.read_csv(src, low_memory=False)).to_csv(folder / f"{name}-cuda-nvidia-h200.csv", index=False)
    mp = pytest.MonkeyPatch()
    mp.setattr(core.store.results, "REFERENCE_DIR", folder)
    mp.setattr(core.home.summary, "REFERENCE_DIR", folder)
    common.reference_ui_data.clear()
    at = app_test(default_timeout=120).run()
    yield at
    mp.undo()
    common.reference_ui_data.clear()


def _charts(at) -> dict[str, bool]:
    """Each chart's title → whether its data hold the GPU rows."""
    out = {}
    for c in at.get("vega_lite_chart"):
        spec = json.loads(c.proto.spec)
        title = spec.get("title", {})
        title = title.get("text") if isinstance(title, dict) else title
        data = c.proto.spec + "".join(str(d) for d in c.proto.datasets)
        out[str(title)] = "H200" in data
    return out


@pytest.mark.slow
@pytest.mark.parametrize("key, path", PAGES)
def test_every_page_draws_the_gpu_rows_beside_the_cpu_reference(with_gpu_reference, key, path):
    at = with_gpu_reference
    at.switch_page(path).run()
    assert not at.exception, at.exception
    charts = _charts(at)
    timed = [t for t in charts if any(w in t for w in ("time", "Time", "memory", "Memory", "accuracy", "Gradient"))]
    assert timed and any(charts[t] for t in timed), charts
    if key in ("serial", "attention_cost", "answers"):  # every time-against-n chart holds both devices
        assert all(charts[t] for t in charts if " time " in f" {t} ".replace("-", " ").lower()), charts


def _verdict(at) -> str:
    return "\n".join(m.value for m in at.markdown if "points to" in m.value or "agrees" in m.value)


@pytest.mark.slow
def test_the_serial_verdict_names_what_the_gpu_rows_measured(with_gpu_reference):
    at = with_gpu_reference
    at.switch_page("pages/serial.py").run()
    text = _verdict(at)
    assert "**Reference, measured on cpu" in text  # the CPU reference still answers the question …
    assert "On a GPU, the same measurement points to:** The Transformer" in text  # … and the GPU rows beside it
    assert "**Measured on a GPU (shipped reference), cuda · NVIDIA H200" in text
    assert "Roofline model (an estimate" not in text  # a measurement replaces the model's prediction


@pytest.mark.slow
def test_the_page5_verdict_names_what_the_gpu_rows_measured(with_gpu_reference):
    at = with_gpu_reference
    at.switch_page("pages/answers.py").run()
    text = _verdict(at)
    assert "**Reference, measured on cpu" in text
    assert "On a GPU, the same measurement points to:** Tens of times" in text
    assert "**Measured on a GPU (shipped reference), cuda · NVIDIA H200" in text


@pytest.mark.slow
def test_table1_gains_the_gpus_measured_cost(with_gpu_reference):
    at = with_gpu_reference
    at.switch_page("pages/home.py").run()
    assert not at.exception, at.exception
    (table,) = [t for t in at.table if t.value.index.name == "Layer type"]
    columns = [str(c) for c in table.value.columns]
    assert "Measured on a GPU (cuda · NVIDIA H200 (synthetic test rows)): cost vs n" in columns, columns
    gpu, cpu = table.value[columns[-1]], table.value["Measured: cost vs n"]
    assert gpu["Recurrent"].startswith("LSTM: time ∝ n^") and gpu["Recurrent"] == cpu["Recurrent"]  # times as on CPU
    assert gpu["Self-attention"].startswith("naive attention: time ∝ n^")
