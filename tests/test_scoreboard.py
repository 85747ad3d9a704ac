"""The home page's scoreboard is computed from result rows; its cold start reads the shipped summary, torch-free."""

import subprocess
import sys

import numpy as np
import pandas as pd

from core.findings import depth_sentences
from core.home import records as home
from core.terms.i18n import translator

tr = translator("en")


def serial_rows(tf_ms):
    rows = []
    for T in (64, 128, 256):
        rows.append(
            {
                "model": "lstm",
                "seq_len": T,
                "train_ms": 0.1 * T,
                "seq_steps": T,
                "status": "ok",
                "peak_flops_per_s": 5e10,
            }
        )
        rows.append(
            {
                "model": "transformer",
                "seq_len": T,
                "train_ms": tf_ms(T),
                "seq_steps": 1,
                "status": "ok",
                "peak_flops_per_s": 5e10,
            }
        )
    return pd.DataFrame(rows)


def test_serial_finding_follows_the_data():
    slow = home.findings({"serial": serial_rows(lambda T: 1e-3 * T * T)}, tr)["serial"]
    assert "took 2.6×" in slow and "256 dependent steps" in slow  # 65.5 ms vs the LSTM's 25.6 ms
    fast = home.findings({"serial": serial_rows(lambda T: 0.01 * T)}, tr)["serial"]
    assert "10× faster" in fast


def test_table1_measured_cells_carry_fitted_exponents_and_step_counts():
    frames = {
        "serial": serial_rows(lambda T: 1e-4 * T * T),
        "attention_cost": pd.DataFrame(
            {
                "impl": ["naive"] * 3 + ["sdpa"] * 3,
                "seq_len": [256, 512, 1024] * 2,
                "requested_backend": ["-"] * 3 + ["auto"] * 3,
                "backend": ["-"] * 3 + ["flash"] * 3,
                "time_ms": [1, 4, 16, 1, 2, 4],
                "saved_bytes": [1, 4, 16, 1, 2, 4],  # the exact count the page states, not the peak
                "peak_bytes": np.nan,
                "status": "ok",
            }
        ),
    }
    t = home.table1(frames, tr).set_index("Layer type")
    assert t.loc["Self-attention", "Measured: cost vs n"] == "naive attention: time ∝ n^2.00 ± 0.00"
    assert t.loc["Recurrent", "Measured: cost vs n"] == "LSTM: time ∝ n^1.00 ± 0.00"
    assert t.loc["Recurrent", "Measured: dependent steps"] == "256 at n = 256"
    assert t.loc["Self-attention", "Measured: dependent steps"] == "1 at n = 256"
    assert t.loc["Convolutional", "Measured: cost vs n"] == "no result yet"  # page 5 measures it; not in these frames
    assert "n^2.00" in home.findings(frames, tr)["attention_cost"]


def test_reach_and_depth_facts():
    k = np.arange(50)
    grad = pd.concat(
        [
            pd.DataFrame(
                {
                    "model": "lstm",
                    "distance": k,
                    "grad_norm": 10.0 ** (-k / 5),
                    "reach": 15.0,
                    "seq_len": 50,
                    "status": "ok",
                }
            ),
            pd.DataFrame(
                {"model": "attention", "distance": k, "grad_norm": 0.08, "reach": np.nan, "seq_len": 50, "status": "ok"}
            ),
        ]
    )
    cells = home.cells({"gradient_reach": grad}, tr)
    assert cells["recurrent"][2] == "falls below 1/1,000 within 15 tokens"
    assert cells["self_attention"][2] == "1× at 49 tokens back vs 1 back"
    depth = pd.DataFrame(
        {
            "model": ["lstm"] * 6 + ["lstm_residual"] * 4,
            "n_layers": [2, 2, 4, 4, 4, 4, 4, 4, 4, 4],
            "layer": [1, 2, 1, 2, 3, 4, 1, 2, 3, 4],
            "phase": "init",
            "step": 0,
            "grad_norm": [0.1, 1.0, 0.001, 0.01, 0.1, 1.0, 0.5, 0.6, 0.8, 1.0],
            "status": "ok",
        }
    )
    found = home.findings({"depth": depth}, tr)["depth"]
    assert "4-layer" in found and "0.001" in found and "while its last layer got 1" in found and "0.5" in found
    lines = depth_sentences.takeaways(depth, tr)
    assert "0.001" in lines[0] and "**1/10 as much for every layer added**" in lines[0]  # (0.1 / 0.001)^(1/2)
    assert "0.5" in lines[1]


def test_ui_and_the_home_summary_import_no_torch():
    """The home page's cold start: the shipped summary, read without pandas or torch. (The scoreboard, which reads
    the model records and so their layers' modules, is needed only where the summary is not.)"""
    code2 = "import sys, ui.common; assert 'torch' not in sys.modules and 'pandas' not in sys.modules"
    # the home page's cold start: the shipped summary is read without pandas (nor torch)
    code3 = (
        "import sys, core.home.summary as h; assert h.read('cpu', 'en')['findings']['serial']; "
        "assert 'torch' not in sys.modules and 'pandas' not in sys.modules"
    )
    for c in (code2, code3):
        assert subprocess.run([sys.executable, "-c", c], check=False, capture_output=True).returncode == 0


def test_the_home_page_draws_without_importing_torch():
    """The whole home page (device card, cards, Table 1) in a fresh process imports no torch: only the warm-up
    thread it starts once drawn does (switched off here). The device card once imported torch through core.harness.guard."""
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    code = (
        "import sys, ui.frame\n"
        "ui.frame.warm_up_torch = lambda: None\n"
        "from streamlit.testing.v1 import AppTest\n"
        f"at = AppTest.from_file({os.path.join(root, 'dashboard.py')!r}, default_timeout=60).run()\n"
        "assert not at.exception, at.exception\n"
        "assert at.table, 'no Table 1'\n"
        "assert 'torch' not in sys.modules, 'the home page imported torch'\n"
    )
    r = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=root)
    assert r.returncode == 0, r.stderr[-2000:]
