"""Checkpointed BPTT: the same function, exactly the kept states the formula says, √n growth, paired timing."""

import math

import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from core.experiments import checkpoint as experiment
from core.findings import checkpoint as findings
from core.findings import verdicts
from core.harness import bench
from core.models import registry
from core.models.checkpointed import SegmentCheckpointed, kept_state_bytes, n_segments, segment_for
from core.terms.i18n import translator


@pytest.mark.parametrize("name", registry.names("checkpoint"))
@pytest.mark.parametrize("layers, T, segment", [(1, 50, 0), (2, 37, 5), (2, 8, 64)])
def test_checkpointed_training_computes_the_same_loss_and_gradients(name, layers, T, segment):
    torch.manual_seed(0)
    model = registry.get(name).build(40, 12, layers).double()
    wrapped = SegmentCheckpointed(model, segment)
    tokens, targets = torch.randint(40, (3, T)), torch.randint(40, (3, T))
    grads = []
    for m in (model, wrapped):
        loss = F.cross_entropy(m(tokens).flatten(0, 1), targets.flatten())
        grads.append((loss.detach(), torch.autograd.grad(loss, list(model.parameters()))))
    torch.testing.assert_close(grads[0][0], grads[1][0])
    for a, b in zip(grads[0][1], grads[1][1]):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("name, states", [("lstm", 2), ("gru", 1)])
def test_the_layers_keep_exactly_the_segment_states_and_they_grow_as_the_square_root(name, states):
    torch.manual_seed(0)
    B, d, L = 4, 8, 2
    model = SegmentCheckpointed(registry.get(name).build(16, d, L))
    kept = {}
    for T in (64, 256, 1024):  # perfect squares: ⌈√n⌉ segments of ⌈√n⌉ tokens
        tokens = torch.randint(16, (B, T))
        kept[T] = bench.saved_activation_bytes(lambda x=tokens: model.features(x).sum(),
                                               exclude=(*model.parameters(), tokens))  # fmt: skip
        assert kept[T] == kept_state_bytes(T, 0, B, d, states * L) == math.isqrt(T) * states * L * B * d * 4
    assert kept[1024] / kept[256] == kept[256] / kept[64] == 2  # 4× the tokens, 2× the memory: exponent 0.5


def test_segments_cover_the_sequence():
    assert [segment_for(n) for n in (1, 2, 4, 5, 16, 17)] == [1, 2, 2, 3, 4, 5]
    assert n_segments(17) == 4 and n_segments(16, 5) == 4 and n_segments(3, 64) == 1


def test_only_a_stack_of_fused_recurrent_layers_can_be_checkpointed():
    with pytest.raises(ValueError, match="model"):
        SegmentCheckpointed(registry.get("transformer").build(16, 32, 1))


@pytest.mark.slow
def test_a_tiny_run_pairs_both_forms_and_splits_the_saved_bytes():
    cfg = experiment.EXPERIMENT.config("tiny", {"models": ("lstm", "gru"), "seq_lens": (16, 64), "device": "cpu"})
    df = experiment.run(cfg)
    assert len(df) == 8 and set(df["status"]) == {"ok"}
    for (model, T), g in df.groupby(["model", "seq_len"]):
        g = g.set_index("bptt")
        plain, ck = g.loc["plain"], g.loc["checkpointed"]
        assert plain["seq_steps"] == ck["seq_steps"] == T  # the chain of states is untouched
        assert ck["layer_saved_bytes"] == ck["predicted_layer_bytes"] < plain["layer_saved_bytes"]
        assert plain["head_saved_bytes"] == ck["head_saved_bytes"] > 0  # the head is the same in both
        assert ck["time_ratio_q25"] <= ck["time_ratio"] <= ck["time_ratio_q75"] and pd.isna(plain["time_ratio"])


def _rows(growth: float, ratio: tuple[float, float, float]) -> pd.DataFrame:
    rows = []
    for T in (256, 1024, 4096):
        for form, b in (("plain", 1.0), ("checkpointed", growth)):
            r = {"model": "lstm", "bptt": form, "seq_len": T, "status": "ok", "layer_saved_bytes": 1e3 * T**b,
                 "saved_bytes": 1e3 * T**b + 5e3 * T, "head_saved_bytes": 5e3 * T, "seq_steps": T,
                 "time_ratio": math.nan, "time_ratio_q25": math.nan, "time_ratio_q75": math.nan}  # fmt: skip
            if form == "checkpointed":
                r.update(time_ratio=ratio[1], time_ratio_q25=ratio[0], time_ratio_q75=ratio[2])
            rows.append(r)
    return pd.DataFrame(rows)


@pytest.mark.parametrize("growth, option", [(0.5, 1), (1.0, 0), (0.05, 2)])
def test_the_verdict_reads_the_fitted_growth(growth, option):
    v = verdicts.checkpoint(_rows(growth, (1.2, 1.3, 1.4)))
    assert v.option == option and v.values["x"] == f"{4**growth:.1f}"


def test_takeaways_say_the_cut_the_price_and_the_untouched_chain():
    tr = translator("en")
    lines = findings.takeaways(_rows(0.5, (1.25, 1.31, 1.4)), tr)
    assert "1/64" in lines[0] and "0.50" in lines[0] and "1.00" in lines[0]  # 4096 / √4096 = 64
    assert "1.31×" in lines[1] and "1.25–1.40×" in lines[1] and "1.33×" in lines[1]
    assert "4,096" in lines[2]
    same = findings.takeaways(_rows(0.5, (0.9, 1.05, 1.2)), tr)[1]
    assert "did not change measurably" in same and "both sides of 1" in same


def test_a_timing_that_mapped_fresh_memory_every_call_is_said_to_include_it():
    """The rows carry each timing's fresh memory per call (Timing.fresh_bytes), and the takeaway names the timings
    whose every call had the OS map fresh pages: in a page's script thread, glibc maps a plain BPTT step's ~270 MiB
    afresh each call, while the checkpointed step keeps ~1 MiB. The byte counts are set here (what the real heap
    maps depends on its history: scripts/bench_fresh_memory.py measures it, main thread against another)."""
    cfg = experiment.EXPERIMENT.config("quick", {"device": "cpu", "seq_lens": "64", "repeats": 3})
    rows = experiment.EXPERIMENT.run(cfg)
    assert "fresh_bytes" in rows
    rows["fresh_bytes"] = rows["bptt"].map({"plain": 270 << 20, "checkpointed": 1 << 20})
    said = [s for s in findings.takeaways(rows, translator("en")) if "afresh" in s]
    assert (
        len(said) == 1
        and "LSTM (fused) · plain BPTT at n = 64" in said[0]
        and said[0].startswith("1 of these 2 timings")
    )
