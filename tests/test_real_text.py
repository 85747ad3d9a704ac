"""Real text (#45): the per-position and cut-off arithmetic on a model whose every answer is known by hand, the recall
rule on hand-made strings, the findings on hand-made rows, and bad input (a junk checkpoint, a folder that is missing,
empty or binary, a window longer than the checkpoints') refused with one line naming the field, before any work."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from core.cli import main
from core.experiments import real_text, text_race
from core.findings import real_text as findings
from core.findings import verdicts
from core.terms.i18n import translator
from core.training import loop, text
from core.workloads import text_lm

tr = translator("en")
V = text.VOCAB


class Echo(torch.nn.Module):
    """Predicts 'the next byte repeats this one' with logit t + 1 at input position t (0-based), 0 for every other
    byte: on a run of one byte value, the byte after t + 1 bytes of context costs f(t + 1) bits, f(L) = −log₂ of
    e^L / (e^L + 255)."""

    def forward(self, x):
        logits = torch.zeros(*x.shape, V)
        pos = torch.arange(1, x.shape[1] + 1, dtype=torch.float32).expand(x.shape)
        return logits.scatter(2, x.unsqueeze(-1), pos.unsqueeze(-1))


# float32 cross-entropy at logits up to ~40: its log-sum-exp rounds at ~ε₃₂ × 40 / ln 2 ≈ 7e-6 bits
TOL = {"rel": 1e-4, "abs": 2e-5}


def f(L: float) -> float:
    return -math.log2(math.exp(L) / (math.exp(L) + V - 1))


def test_each_position_costs_what_the_hand_computes():
    windows = text_lm.as_tokens(np.full((3, 33), ord("a"), dtype=np.uint8))
    bits = text_lm.byte_bits(Echo(), windows, batch_size=2)
    assert bits.shape == (3, 32)
    rows = real_text.position_rows(bits)
    assert [r["x"] for r in rows] == list(range(1, 33))
    for r in rows:
        assert r["bits_per_byte"] == pytest.approx(f(r["x"]), **TOL) and r["n_bytes"] == 3


def test_a_cut_off_context_starts_the_positions_again():
    W, tail = 40, 4
    windows = np.full((2, W + 1), ord("z"), dtype=np.uint8)
    echo = text_lm.model_bits(Echo())
    for x in (0, 8, 16, W - tail):
        got = text_lm.tail_bits(echo, windows, x, tail)
        want = np.mean([f(x + j) for j in range(1, tail + 1)])  # the tail's targets follow x + 1 … x + tail bytes
        assert got.shape == (2,) and float(got[0]) == pytest.approx(want, **TOL)
    with pytest.raises(ValueError, match="^context"):
        text_lm.tail_bits(echo, windows, W - tail + 1, tail)
    assert text_lm.context_lengths(W, tail) == [0, 8, 16, 32, 36]


def test_the_recall_rule_on_hand_made_strings():
    filler = bytes(range(100, 170))  # 70 bytes, no 8-byte span repeats
    far = b"ABCDEFGHZ" + filler + b"ABCDEFGHZ"
    mask = text.recall_mask(far)
    assert mask.sum() == 1 and mask[len(far) - 2]  # the second Z: its 8-byte context last seen 79 bytes back
    near = b"ABCDEFGHZ" + filler[:40] + b"ABCDEFGHZ"
    assert not text.recall_mask(near).any()  # 49 bytes back: a copy of near context predicts it
    other = b"ABCDEFGHZ" + filler + b"ABCDEFGHY" + b"ABCDEFGHZ"  # a nearer match of the context, followed by Y
    assert not text.recall_mask(other)[-1]
    assert not text.recall_mask(b"ABCDEFGHZ" + filler + b"ABCDEFGHQ").any()  # the far match predicts another byte


def _copy_rows(gains: dict, d: int = 128) -> pd.DataFrame:
    """Copy rows at one distance: first = 3, repeat = 3 − gain for each (model, seed)."""
    return pd.DataFrame([{"model": m, "seed": s, "measure": "copy", "x": d, "status": "ok", "split": split,
                          "bits_per_byte": 3.0 - (g if split == "repeat" else 0.0)}
                         for (m, s), g in gains.items() for split in ("first", "repeat")])  # fmt: skip


def test_the_copy_verdict_reads_first_minus_repeat_at_the_longest_distance():
    df = _copy_rows({("transformer", 0): 1.0, ("transformer", 1): 0.6, ("lstm", 0): 0.0, ("lstm", 1): 0.01})
    far = _copy_rows({("transformer", 0): 0.0, ("transformer", 1): 0.0, ("lstm", 0): 2.0, ("lstm", 1): 2.0}, d=384)
    g = findings.copy_gain(df).set_index(["model", "seed"])["gain"]
    assert g["transformer", 0] == pytest.approx(1.0) and g["lstm", 1] == pytest.approx(0.01)
    v = verdicts.long_range_text(pd.concat([df, far]))  # the question asks about 128 bytes: 384's rows do not count
    assert v.option == 0 and v.values["att"] == "3.00 → 2.00–2.40" and v.values["distance"] == 128
    both = _copy_rows({("transformer", 0): 1.0, ("transformer", 1): 0.6, ("lstm", 0): 0.3, ("lstm", 1): 0.5})
    assert verdicts.long_range_text(both).option == 2
    split = _copy_rows({("transformer", 0): 1.0, ("transformer", 1): 0.1, ("lstm", 0): 0.0, ("lstm", 1): 0.0})
    assert verdicts.long_range_text(split).option is None  # the seeds disagree
    neither = _copy_rows({("transformer", 0): 0.0, ("lstm", 0): 0.0})
    assert verdicts.long_range_text(neither).option is None


def test_the_baseline_sentence_names_who_counting_beats():
    pos = pd.DataFrame([{"model": m, "seed": 0, "measure": "position", "x": x, "status": "ok", "bits_per_byte": b}
                        for m, b in (("ngram", 1.8), ("lstm", 1.7), ("transformer", 1.9)) for x in (1, 2)])  # fmt: skip
    vs = findings.against_baseline(pos).set_index("model")
    assert vs.loc["lstm", "beats"] and not vs.loc["transformer", "beats"] and vs.loc["lstm", "baseline"] == 1.8
    assert "still beats Transformer" in findings.takeaways(pos, tr)[0]


def test_the_ngram_counts_by_hand():
    from core.training import ngram

    m = ngram.NGram(2).fit([b"abab"])
    p_b = (2 + 2 / 256) / (4 + 2)  # unigram: c(b) = 2 of N = 4, two distinct bytes, under a uniform floor
    p_a = (2 + 2 / 256) / (4 + 2)
    assert m.probs(b"ab")[0] == pytest.approx((2 + 1 * p_b) / (2 + 1))  # after 'a': 'b' twice, one distinct
    assert m.probs(b"ba")[0] == pytest.approx((1 + 1 * p_a) / (1 + 1))  # after 'b': 'a' once (the end cuts one)
    assert m.probs(b"zb")[0] == pytest.approx(p_b)  # an unseen context: the unigram stands
    assert m.probs(b"a")[0:0].shape == (0,)
    whole = [ngram.NGram(3).fit([b"abracadabra"]).probs(b"ab" + bytes([c]))[-1] for c in range(256)]
    assert sum(whole) == pytest.approx(1.0)  # a distribution over the next byte
    two = ngram.NGram(2).fit([b"xyz", b"abc"])
    assert two.probs(b"za")[0] == pytest.approx((1 + 6 / 256) / (6 + 6))  # nothing follows 'z' across a file's end


class Copier:
    """A bits function that copies by construction: a byte that the 8 bytes before it predict from an earlier match
    costs −log₂ 0.999; anything else costs 8 bits."""

    def __call__(self, windows):
        out = np.full((len(windows), windows.shape[1] - 1), 8.0)
        for i, w in enumerate(windows):
            b = bytes(w)
            for t in range(8, len(b)):
                s = b.rfind(b[t - 8 : t], 0, t - 1)
                if s >= 0 and b[s + 8] == b[t]:
                    out[i, t - 1] = -math.log2(0.999)
        return out


def test_the_copy_probe_on_a_copier_and_on_counting():
    from core.training import ngram

    _, held = text.stdlib_split()
    windows = text.offset_windows(held, 256, 4, seed=3)
    assert text_lm.copy_distances(256) == [64, 128]
    first, repeat = text_lm.copy_bits(Copier(), windows, 128)
    # the repeat is nearly free to a copier: it pays only while its 8-byte context still reaches before the span
    assert float(repeat.mean()) < 1.5 and float(first.mean()) > 5
    unigram = ngram.NGram(1).fit([bytes(range(256)) * 4, b"hello world"])
    first, repeat = text_lm.copy_bits(unigram.bits, windows, 128)
    assert torch.allclose(first, repeat)  # the same bytes, no context used: the same cost
    with pytest.raises(ValueError, match="^distance"):
        text_lm.copy_windows(windows, 200)


def test_evaluation_windows_are_never_file_heads():
    texts = [bytes([65 + i]) + bytes(range(97, 123)) * 40 for i in range(5)]  # each file's head byte is unique
    windows = text.offset_windows(texts, 64, 200, seed=0)
    assert windows.shape == (200, 65) and not np.isin(windows[:, 0], list(range(65, 70))).any()
    assert (text.offset_windows(texts, 64, 200, seed=0) == windows).all()  # the same for the same seed


def test_the_effective_context_is_the_shortest_within_one_percent():
    losses = {0: 3.0, 8: 2.5, 16: 2.02, 32: 2.01, 64: 2.0}
    df = pd.DataFrame([{"model": "lstm", "seed": 0, "measure": "context", "x": x, "bits_per_byte": v, "status": "ok"}
                       for x, v in losses.items()])  # fmt: skip
    eff = findings.effective_context(df).iloc[0]
    assert eff["x_eff"] == 16 and eff["full"] == 2.0 and eff["longest"] == 64  # 2.02 ≤ 2.0 × 1.01 < 2.5
    assert text_lm.effective_context(losses, 0.01) == 16


def test_the_recall_split_counts_each_byte_once():
    bits = torch.tensor([[1.0, 2.0, 3.0, 4.0]])
    mask = np.array([[False, True, False, True]])
    rec, other = real_text.recall_rows(bits, mask)
    assert (rec["bits_per_byte"], rec["n_bytes"], other["bits_per_byte"], other["n_bytes"]) == (3.0, 2, 2.0, 2)


def test_a_junk_checkpoint_is_refused_naming_the_folder(tmp_path, capsys):
    (tmp_path / "text_lstm_seed0.pt").write_bytes(b"not a checkpoint at all" * 10)
    with pytest.raises(ValueError, match="^checkpoint_dir: text_lstm_seed0.pt"):
        real_text.EXPERIMENT.config("tiny", {"models": "lstm", "checkpoint_dir": str(tmp_path)})
    assert main(["run", "real_text", "--preset", "tiny", "--set", "models=lstm", "--set",
                 f"checkpoint_dir={tmp_path}"]) == 2  # fmt: skip
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: checkpoint_dir:"), err


def test_a_checkpoint_of_other_shapes_is_refused(tmp_path):
    model, meta = text_lm.load("lstm", 0)
    meta = {**meta, "d_model": meta["d_model"] // 2}  # weights of width 192 under a record of width 96
    text_lm.save(model, meta, tmp_path / "text_lstm_seed0.pt")
    with pytest.raises(ValueError, match="text_lstm_seed0.pt"):
        text_lm.load("lstm", 0, tmp_path)


@pytest.mark.parametrize("kind", ["missing", "empty", "binary"])
def test_a_text_folder_that_cannot_be_read_exits_2_naming_it(kind, tmp_path, capsys):
    folder = tmp_path / "src"
    if kind != "missing":
        folder.mkdir()
    if kind == "binary":
        (folder / "blob.bin").write_bytes(bytes(range(256)) * 20)
    with pytest.raises(ValueError, match="^text_dir:"):
        real_text.EXPERIMENT.config("tiny", {"text_dir": str(folder)})
    assert main(["run", "real_text", "--preset", "tiny", "--set", f"text_dir={folder}"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: text_dir:"), err


def test_a_window_longer_than_the_checkpoints_exits_2(capsys):
    trained = text_lm.load_meta("lstm", 0)["window"]
    with pytest.raises(ValueError, match=f"^window: .*{trained:,}"):
        real_text.EXPERIMENT.config("tiny", {"window": trained + 1})
    assert main(["run", "real_text", "--preset", "tiny", "--set", f"window={trained * 2}"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: window:")


def test_a_pasted_text_is_read_per_byte_and_bounded():
    own = real_text.own_text(b"aaaa\xc3\xa9", ("lstm",))
    assert list(own["char"]) == ["a", "a", "a", "a", "é", "·"] and math.isnan(own["lstm"].iloc[0])
    assert own["lstm"].iloc[1:].notna().all() and (own["lstm"].iloc[1:] >= 0).all()
    with pytest.raises(ValueError, match=f"^text: {real_text.OWN_MAX_BYTES + 1:,} bytes"):
        real_text.own_text(b"x" * (real_text.OWN_MAX_BYTES + 1), ("lstm",))
    with pytest.raises(ValueError, match="^text: empty"):
        real_text.own_text(b"", ("lstm",))


def test_the_cosine_decay_ends_at_its_floor():
    lr, warm, steps, floor = 1.0, 10, 110, 0.1
    assert loop.lr_at(5, lr, warm, steps, floor) == pytest.approx(0.5)
    assert loop.lr_at(10, lr, warm, steps, floor) == pytest.approx(1.0)
    assert loop.lr_at(60, lr, warm, steps, floor) == pytest.approx(floor + (1 - floor) / 2)
    assert loop.lr_at(110, lr, warm, steps, floor) == pytest.approx(floor)
    assert loop.lr_at(110, lr, warm, steps) == 1.0  # no decay asked: constant after the warm-up


def test_the_shipped_models_are_matched_in_size_and_bytes():
    metas = [text_lm.load_meta(m, s) for m in text_lm.models() for s in text_lm.SEEDS]
    assert {m["d_model"] for m in metas} == {text_lm.TRAIN["d_model"]}
    spec = text_lm.TRAIN
    assert {m["bytes_trained"] for m in metas} == {spec["steps"] * spec["batch_size"] * spec["window"]}
    assert spec["steps"] * spec["batch_size"] * spec["window"] >= 16_000_000
    params = [m["params"] for m in metas]
    assert max(params) / min(params) < 1.05 and abs(np.mean(params) - text_lm.PARAM_BUDGET) < 0.05e6


def test_the_race_takeaway_says_who_is_ahead_after_the_same_seconds():
    rows = [{"model": m, "step": st, "bytes": st * 2048, "seconds": st / (10 if m == "lstm" else 5), "heldout_bits": b, "status": "ok"}
            for m, pts in {"lstm": [(0, 8.0), (100, 4.0)], "transformer": [(0, 8.0), (50, 3.5)]}.items()
            for st, b in pts]  # fmt: skip
    lines = text_race.EXPERIMENT.takeaways(pd.DataFrame(rows), tr)
    assert "ahead by 0.50 bits per byte" in lines[-1] and "2.00 times as many bytes a second" in lines[-1]


class Clock:
    """A clock that moves 0.25 s at every reading: a step of the race (two readings around it) takes 0.5 s."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self) -> float:
        self.now += 0.25
        return self.now


@pytest.mark.slow
def test_a_tiny_race_gives_each_model_its_seconds_in_turns(monkeypatch):
    monkeypatch.setattr(text_race, "time", Clock())  # each step 0.25 s as counted (t0 read after the batch)
    cfg = text_race.EXPERIMENT.config("tiny", {"device": "cpu", "seconds": 1.0, "turn_s": 0.5})
    df = text_race.run(cfg)
    assert list(df["model"]) == ["lstm", "transformer"] * 3 and (df["status"] == "ok").all()
    assert list(df["step"]) == [0, 0, 2, 2, 4, 4]  # two steps a turn, two turns each: the same seconds each
    assert list(df["seconds"]) == [0.0, 0.0, 0.5, 0.5, 1.0, 1.0] and df["heldout_bits"].notna().all()


@pytest.mark.slow
def test_the_tiny_preset_reads_every_measure():
    df = real_text.run(real_text.EXPERIMENT.config("tiny", {"models": "lstm,transformer", "device": "cpu"}))
    assert set(df["measure"]) == set(real_text.MEASURES) and (df["status"] == "ok").all()
    pos = df[df["measure"] == "position"]
    assert sorted(pos["x"].unique()) == list(range(1, 257))
    assert len(findings.effective_context(df)) == 3 and len(findings.recall_split(df)) == 3  # and the baseline
    assert set(df[df["measure"] == "copy"]["split"]) == {"first", "repeat"}
