"""Real text (#45): the per-position and cut-off arithmetic on a model whose every answer is known by hand, the recall
rule on hand-made strings, the findings on hand-made rows, and bad input (a junk checkpoint, a folder that is missing,
empty or binary, a window longer than the checkpoints') refused with one line naming the field, before any work."""

import math
import re

import numpy as np
import pandas as pd
import pytest
import torch

from core.cli import main
from core.experiments import real_text, text_race
from core.findings import real_text as findings
from core.findings import verdicts
from core.terms.i18n import translator
from core.terms.rules import CONTEXT_WITHIN, COPY_ASKED_AT, COPY_GAIN_BITS
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
    """Copy rows at one distance: control = 3, repeat = 3 − gain, and a first copy of 2 (cheaper than either: it sits
    earlier in the window, where this made-up model pays less) for each (model, seed)."""
    cost = {"first": lambda g: 2.0, "repeat": lambda g: 3.0 - g, "control": lambda g: 3.0}
    return pd.DataFrame([{"model": m, "seed": s, "measure": "copy", "x": d, "status": "ok", "split": split,
                          "bits_per_byte": f(g)}
                         for (m, s), g in gains.items() for split, f in cost.items()])  # fmt: skip


def test_the_copy_verdict_reads_control_minus_repeat_at_the_asked_distance():
    df = _copy_rows({("transformer", 0): 1.0, ("transformer", 1): 0.6, ("lstm", 0): 0.0, ("lstm", 1): 0.01})
    far = _copy_rows({("transformer", 0): 0.0, ("transformer", 1): 0.0, ("lstm", 0): 2.0, ("lstm", 1): 2.0}, d=384)
    g = findings.copy_gain(df).set_index(["model", "seed"])["gain"]
    assert g["transformer", 0] == pytest.approx(1.0) and g["lstm", 1] == pytest.approx(0.01)
    v = verdicts.long_range_text(pd.concat([df, far]))  # the question asks about 128 bytes: 384's rows do not count
    assert v.option == 0 and v.values["att"] == "+1.00 / +0.60" and v.values["distance"] == 128
    assert "(2 seeds;" in verdicts.sentence(v, tr)  # a count of seeds, not a seed's number
    one = verdicts.long_range_text(_copy_rows({("transformer", 0): 1.0, ("lstm", 0): 0.0}))
    assert "(1 seed;" in verdicts.sentence(one, tr)
    no_control = df[df["split"] != "control"]  # an older probe's rows: no gain can be read from them
    assert verdicts.long_range_text(no_control) is None
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


class Late:
    """A bits function that cannot copy, whose cost rises along the window: byte t costs 1 + t / 100 bits whatever
    came before it (as a model whose loss rises late in the window)."""

    def __call__(self, windows):
        return np.tile(1 + np.arange(1, windows.shape[1]) / 100, (len(windows), 1))


def test_the_control_reads_a_copier_gaining_and_a_non_copier_not():
    from core.training import ngram

    _, held = text.stdlib_split()
    windows = text.offset_windows(held, 256, 4, seed=3)
    assert text_lm.copy_distances(256) == [64, 128]
    for d in (64, 128):
        first, repeat = text_lm.copy_bits(Copier(), windows, d)
        control = text_lm.control_bits(Copier(), windows)
        # to a copier the repeat is nearly free: it pays only while its 8-byte context still reaches before the span
        assert float(repeat.mean()) < 1.5 and float(first.mean()) > 5 and float((control - repeat).min()) > 3
    unigram = ngram.NGram(1).fit([bytes(range(256)) * 4, b"hello world"])
    first, repeat = text_lm.copy_bits(unigram.bits, windows, 128)
    assert torch.allclose(first, repeat)  # the same bytes, no context used: the same cost
    assert torch.equal(text_lm.control_bits(unigram.bits, windows), repeat)  # gain exactly 0
    # a model that cannot copy but pays more late in the window: first → repeat reads as copying *worse*, the control
    # at the same place reads no gain at all (the reason the probe has one)
    first, repeat = text_lm.copy_bits(Late(), windows, 128)
    control = text_lm.control_bits(Late(), windows)
    assert float((first - repeat).mean()) == pytest.approx(-1.28) and torch.equal(control, repeat)
    with pytest.raises(ValueError, match="^distance"):
        text_lm.copy_windows(windows, 200)


def test_the_control_is_the_same_window_with_only_the_second_copy():
    windows = np.arange(3 * 257, dtype=np.int64).reshape(3, 257).astype(np.uint8)
    both, control = text_lm.copy_windows(windows, 64), text_lm.copy_windows(windows, None)
    span = windows[[2, 0, 1], 192:256]  # each window's span: the previous window's last 64 bytes read
    assert (both[:, 192:256] == span).all() and (both[:, 128:192] == span).all()
    assert (control[:, 192:256] == span).all() and (control[:, :192] == windows[:, :192]).all()
    assert (control[:, 256] == windows[:, 256]).all() and (both[:, :128] == windows[:, :128]).all()


def test_counting_that_copies_by_hand():
    from core.training import ngram

    data = b"abcdefghX" + b"0123456789" + b"abcdefghX"
    s = ngram.last_match(np.frombuffer(data, dtype=np.uint8))
    hits = {t + 1: int(v) for t, v in enumerate(s) if v >= 0}
    assert hits == {len(data) - 1: 8}  # the second X: its 8 bytes before last seen ending at byte 7, then X
    assert ngram.last_match(np.frombuffer(b" " * 11, dtype=np.uint8)).tolist() == [-1] * 8 + [8, 9]  # a run overlaps
    counts = ngram.NGram(1).fit([bytes(range(256))])  # every byte 1/256
    p = ngram.CopyNGram(counts).probs(data)
    assert p[-1] == pytest.approx(0.5 + 0.5 / 256) and p[0] == pytest.approx(1 / 256)
    miss = ngram.CopyNGram(counts).probs(data[:-1] + b"Y")  # the rule predicts X; Y keeps the counts' half
    assert miss[-1] == pytest.approx(0.5 / 256)
    # a counter that copies gains on the probe at every distance it can see; counting alone gains exactly nothing
    _, held = text.stdlib_split()
    windows = text.offset_windows(held, 256, 8, seed=5)
    fitted = ngram.NGram(3).fit([b"".join(held[:20])])
    for d in text_lm.copy_distances(256):
        _, repeat = text_lm.copy_bits(ngram.CopyNGram(fitted).bits, windows, d)
        assert float((text_lm.control_bits(ngram.CopyNGram(fitted).bits, windows) - repeat).mean()) > 1
        _, repeat = text_lm.copy_bits(fitted.bits, windows, d)
        gain = text_lm.control_bits(fitted.bits, windows) - repeat
        # exactly 0 once the copies are apart; at d = span they touch, and a byte or two reads the first copy's end
        assert float(gain.abs().max()) == 0 if d > text_lm.COPY_SPAN else abs(float(gain.mean())) < 0.1


def test_evaluation_windows_are_never_file_heads():
    texts = [bytes([65 + i]) + bytes(range(97, 123)) * 40 for i in range(5)]  # each file's head byte is unique
    windows = text.offset_windows(texts, 64, 200, seed=0)
    assert windows.shape == (200, 65) and not np.isin(windows[:, 0], list(range(65, 70))).any()
    assert (text.offset_windows(texts, 64, 200, seed=0) == windows).all()  # the same for the same seed


def _context_rows(curves: dict) -> pd.DataFrame:
    return pd.DataFrame([{"model": m, "seed": 0, "measure": "context", "x": x, "bits_per_byte": v, "status": "ok"}
                         for m, losses in curves.items() for x, v in losses.items()])  # fmt: skip


def test_the_effective_context_is_the_shortest_within_one_percent():
    losses = {0: 3.0, 8: 2.5, 16: 2.02, 32: 2.01, 64: 2.0}
    eff = findings.effective_context(_context_rows({"lstm": losses})).iloc[0]
    assert eff["x_eff"] == 16 and eff["full"] == 2.0 and eff["longest"] == 64  # 2.02 ≤ 2.0 × 1.01 < 2.5
    assert not eff["rises"] and text_lm.effective_context(losses, 0.01) == 16
    wobble = {0: 3.0, 8: 2.01, 16: 2.5, 32: 2.01, 64: 2.0}  # within at 8, out again at 16: it stays within from 32
    assert findings.effective_context(_context_rows({"lstm": wobble})).iloc[0]["x_eff"] == 32
    assert text_lm.effective_context(wobble, 0.01) == 32


def test_a_u_shaped_context_curve_is_said_as_one():
    u = {0: 1.92, 8: 1.82, 16: 1.78, 32: 1.74, 64: 1.73, 128: 1.73, 256: 1.75, 448: 1.77}  # linear attention's shape
    flat = {0: 1.9, 8: 1.8, 16: 1.78, 32: 1.775, 64: 1.767, 128: 1.766, 256: 1.765, 448: 1.765}
    df = _context_rows({"linear_attention": u, "lstm": flat})
    eff = findings.effective_context(df).set_index("model")
    assert eff.loc["linear_attention", "rises"] and eff.loc["linear_attention", "x_low"] == 64
    assert not eff.loc["lstm", "rises"] and eff.loc["lstm", "x_eff"] == 16
    (line,) = findings.takeaways(df, tr)
    assert "linear attention's loss is lowest at 64 bytes (1.73 bits per byte) and rises again to 1.77" in line
    assert "LSTM (fused) comes within 1% of its whole-window loss at 16 bytes" in line


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
    assert len(findings.effective_context(df)) == 4 and len(findings.recall_split(df)) == 4  # and the baselines
    assert set(df[df["measure"] == "copy"]["split"]) == {"first", "repeat", "control"}
    assert set(df["model"]) == {"lstm", "transformer", real_text.NGRAM, real_text.NGRAM_COPY}


# ---- every sentence of the section, read against the shipped reference rows ---------------------------------------
NUM = r"[−+]?\d[\d,]*\.?\d*"
SPAN = rf"{NUM}(?:–{NUM}| – {NUM})?"
LABEL = {tr(f"model.{m}"): m for m in (*text_lm.models(), findings.NGRAM, findings.NGRAM_COPY)}


@pytest.fixture(scope="module")
def shipped():
    from core.store.results import load_reference

    ref, problems = load_reference("real_text")
    assert not problems and len(ref)
    return ref[ref["status"] == "ok"]


def _said(values, fmt="{:.2f}") -> str:
    """What the section prints for values over the seeds, computed here without the findings' helpers."""
    lo, hi = (fmt.format(v).replace("-", "−") for v in (min(values), max(values)))
    return lo if lo == hi else f"{lo} – {hi}" if min(values) < 0 else f"{lo}–{hi}"


def _signed(values) -> str:
    return " / ".join(f"{v:+.2f}".replace("-", "−") for v in values)


def _of(rows, measure):
    return rows[rows["measure"] == measure]


def _gains(rows, d) -> dict:
    """(model, seed) → (control, repeat) at distance d, from the raw copy rows."""
    cp = _of(rows, "copy")
    cp = cp[cp["x"] == d].set_index(["model", "seed", "split"])["bits_per_byte"]
    return {(m, s): (cp[m, s, "control"], cp[m, s, "repeat"]) for m, s, _ in cp.index}


def test_the_baselines_sentence_holds_in_the_rows(shipped):
    line = findings.takeaways(shipped, tr)[0]
    pos = _of(shipped, "position").groupby(["model", "seed"])["bits_per_byte"].mean()
    base, copy = pos[findings.NGRAM].mean(), pos[findings.NGRAM_COPY].mean()
    assert abs(copy - 1.699) < 0.002  # counting with the copy rule on the section's 256 windows: the measured anchor
    models = [m for m in text_lm.models() if m in pos.index.get_level_values(0)]
    if line.startswith("Every model beats"):
        assert f"{tr('model.ngram')}, which pays {base:.2f} bits" in line and all((pos[m] < base).all() for m in models)
    else:  # "… still beats X": exactly the models that lose to counting in some seed
        losers = re.search(r"still beats (.*?): ", line)[1]
        assert f"{tr('model.ngram')} pays {base:.2f} bits" in line
        assert all(((pos[m] >= base).any()) == (tr(f"model.{m}") in losers) for m in models)
    for m in models:
        assert f"{tr(f'model.{m}')} {_said(pos[m])}" in line
    head = re.search(
        rf"Counting that copies \(.*?\) pays ({NUM}): less than (.*?), so a copy rule.*Only 1 model is lower, (.*?), the one",
        line,
    )
    assert head and head[1] == f"{copy:.3f}"
    above = [label for label in LABEL if label in head[2]]
    assert above and all((pos[LABEL[label]] > copy).all() for label in above)  # "less than": in every seed
    below = [label for label in LABEL if label in head[3]]
    assert below == [tr("model.transformer")] and (pos["transformer"] < copy).all()
    g = _gains(shipped, COPY_ASKED_AT)  # "the one model that copies in the probe above"
    copiers = {m for m in models if all(c - r >= COPY_GAIN_BITS for (mm, _), (c, r) in g.items() if mm == m)}
    assert copiers == {"transformer"}


def test_the_copy_sentences_hold_in_the_rows(shipped):
    lines = [line for line in findings.takeaways(shipped, tr) if "control → second copy" in line]
    distances = sorted(_of(shipped, "copy")["x"].unique())
    assert len(distances) >= 4 and len(lines) == 2
    for line, d in zip(lines, (COPY_ASKED_AT, max(distances))):
        assert f" {int(d)} bytes" in line and line.endswith("(2 seeds).")
        g = _gains(shipped, d)
        parts = re.findall(rf"([^:;]+?) ({SPAN}) → ({SPAN}) \(([^)]*)\)", line.split(": ", 1)[1])
        assert {LABEL[p[0].strip()] for p in parts} == {m for m, _ in g} - {findings.NGRAM}
        for label, control, repeat, gains in parts:
            m = LABEL[label.strip()]
            seeds = sorted(s for mm, s in g if mm == m)
            assert control == _said([g[m, s][0] for s in seeds]) and repeat == _said([g[m, s][1] for s in seeds])
            assert gains == _signed([g[m, s][0] - g[m, s][1] for s in seeds])
    # the rows hold all three splits for three models, two seeds, every distance; counting cannot gain
    cp = _of(shipped, "copy")
    for m in text_lm.models():
        assert set(cp[cp["model"] == m].groupby(["seed", "x"])["split"].apply(frozenset)) == {
            frozenset({"first", "repeat", "control"})
        } and cp[cp["model"] == m].groupby(["seed", "x"]).ngroups == 2 * len(distances)
    for d in distances:
        c, r = _gains(shipped, d)[findings.NGRAM, 0]
        assert (c == r) if d > text_lm.COPY_SPAN else abs(c - r) < 0.05


def test_the_verdict_reads_the_gain_against_the_control(shipped):
    v = verdicts.long_range_text(shipped)
    g = _gains(shipped, COPY_ASKED_AT)
    assert v.option == 0 and v.values["n"] == 2
    assert v.values["att"] == _signed([g["transformer", s][0] - g["transformer", s][1] for s in (0, 1)])
    assert all(g["transformer", s][0] - g["transformer", s][1] >= COPY_GAIN_BITS for s in (0, 1))
    assert all(g["lstm", s][0] - g["lstm", s][1] < COPY_GAIN_BITS for s in (0, 1))


def test_the_context_sentence_matches_each_curves_shape(shipped):
    (line,) = [line for line in findings.takeaways(shipped, tr) if line.startswith("Context given")]
    ctx = _of(shipped, "context")
    parts = line.split(": ", 1)[1].rstrip(".").split("; ")
    assert len(parts) == len(text_lm.models())
    for part in parts:
        label = next(lb for lb in LABEL if part.startswith(lb))
        curves = {
            s: g.set_index("x")["bits_per_byte"].sort_index()
            for s, g in ctx[ctx["model"] == LABEL[label]].groupby("seed")
        }
        if u := re.search(rf"lowest at ({SPAN}) bytes \(({SPAN}) bits per byte\) and rises again to ({SPAN})", part):
            for c in curves.values():  # a U: lowest inside, more than the margin below the whole window's loss
                assert c.index[-1] > c.idxmin() > c.index[0] and c.iloc[-1] > c.min() * (1 + CONTEXT_WITHIN)
            assert u[1] == _said([c.idxmin() for c in curves.values()], "{:,.0f}")
            assert u[2] == _said([c.min() for c in curves.values()]) and u[3] == _said(
                [c.iloc[-1] for c in curves.values()]
            )
        else:
            x = re.search(rf"within 1% of its whole-window loss at ({SPAN}) bytes and stays there", part)
            assert x, part
            for c in curves.values():  # within the margin from x on, outside it just before, never a U
                full = c.iloc[-1]
                first = next(i for i in range(len(c)) if (c.iloc[i:] <= full * (1 + CONTEXT_WITHIN)).all())
                assert f"{c.index[first]:,.0f}" in x[1] and c.min() * (1 + CONTEXT_WITHIN) >= full


def test_the_training_sentences_and_charts_hold_in_the_rows(shipped):
    from core.charts import text_training as charts

    lines = findings.takeaways(shipped, tr)
    tc = _of(shipped, "train_curve")
    held = tc[tc["split"] == "heldout"]
    # equal time: each seed at its fastest model's whole run, the leader lowest in every seed
    (said,) = [line for line in lines if line.startswith("At equal training time")]
    leader = LABEL[re.search(r": the (.+?) leads\.", said)[1]]
    totals = held.groupby(["seed", "model"])["seconds"].max()
    for seed in (0, 1):
        at = totals[seed].min()
        upto = held[(held["seed"] == seed) & (held["seconds"] <= at)].sort_values("seconds").groupby("model").last()
        assert (
            upto["bits_per_byte"].idxmin() == leader
            and f", the {tr(f'model.{totals[seed].idxmin()}')}'s whole run," in said
        )
    mean = totals.groupby("model").mean()
    assert f"took {mean.max() / mean.min():.1f}× the" in said
    # how training ended: every "fell by" holds in the rows; the last move is said as measured, nothing beyond it
    (said,) = [line for line in lines if line.startswith("Over the last")]
    for (m, s), g in held.groupby(["model", "seed"]):
        g = g.sort_values("x")
        before = g[g["x"] <= 0.8 * g["x"].max()]["bits_per_byte"].iloc[-1]
        assert before > g["bits_per_byte"].iloc[-1]
    moves = [g.sort_values("x")["bits_per_byte"].diff().iloc[-1] for _, g in held.groupby(["model", "seed"])]
    assert f"moved by {_said(moves, '{:+.3f}')} bits per byte" in said and "would" not in said
    # the curves' caption: both copies above the solid line at every reading, the probe's distance as logged
    wide = tc.pivot_table(index=["model", "seed", "x"], columns="split", values="bits_per_byte").dropna()
    assert ((wide["copy_first"] > wide["heldout"]) & (wide["copy_repeat"] > wide["heldout"])).all()
    probe = int(tc["probe"].dropna().unique().item())
    assert f"{probe} bytes apart" in " ".join(charts.curves_chart(shipped, tr).to_dict()["title"]["subtitle"])
    drawn = charts.curves_chart(shipped, tr).to_dict()
    assert {e["range"] and len(e["range"]) for e in [drawn["spec"]["encoding"]["strokeDash"]["scale"]]} == {3}
    time_sub = " ".join(charts.time_chart(shipped, tr).to_dict()["title"]["subtitle"])
    assert f"where the {tr(f'model.{totals.groupby(level=0).idxmin().iloc[0][1]}')} finished" in time_sub


def test_the_recall_and_chart_captions_hold_in_the_rows(shipped):
    from core.charts import real_text as charts

    (said,) = [line for line in findings.takeaways(shipped, tr) if "recall bytes" in line]
    rs = _of(shipped, "recall_split").set_index(["model", "seed", "split"])["bits_per_byte"]
    leads = {k: [rs["lstm", s, k] - rs["transformer", s, k] for s in (0, 1)] for k in ("recall", "other")}
    assert all(v > 0 for vs in leads.values() for v in vs) and said.startswith("The LSTM (fused)'s loss is higher")
    assert f"by {_said(leads['recall'])} bits per byte on recall bytes and by {_said(leads['other'])}" in said
    copy_sub = " ".join(charts.copy_chart(shipped, tr).to_dict()["title"]["subtitle"])
    windows = int(_of(shipped, "position")["n_bytes"].max())
    assert f"{windows:,} windows" in copy_sub and windows == 256
    spec = charts.copy_chart(shipped, tr).to_dict()
    drawn = pd.DataFrame(spec["datasets"][spec["layer"][1]["data"]["name"]])
    g = findings.copy_gain(shipped)
    assert np.allclose(sorted(drawn["gain"]), sorted(g["control"] - g["repeat"]))  # the chart draws what it says
    ctx = charts.context_chart(shipped, tr).to_dict()
    dots = pd.DataFrame(ctx["datasets"][ctx["layer"][1]["data"]["name"]])
    for _, dot in dots.iterrows():  # a circle on a curve that rises again, a diamond on one that does not
        c = _of(shipped, "context")
        c = c[(c["model"] == dot["model"]) & (c["seed"] == dot["seed"])].set_index("x")["bits_per_byte"]
        rises = c.loc[c.index.max()] > c.min() * (1 + CONTEXT_WITHIN)
        assert dot["label"] == tr("long_range.text.lowest" if rises else "long_range.text.eff")
