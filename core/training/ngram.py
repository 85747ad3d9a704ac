"""The count baseline for real text: an interpolated byte n-gram (Witten & Bell 1991), counted on training files.

A language model that a frequency table beats has not learned the language yet, so every real-text chart draws
this one beside the neural models. Order n reads the n − 1 bytes before a byte. With c(h, w) the times byte w
followed context h, c(h) = Σ_w c(h, w) and u(h) the number of distinct bytes seen after h:

    p(w | h) = (c(h, w) + u(h) · p(w | h′)) / (c(h) + u(h))    h′ = h without its oldest byte

and p(w | h) = p(w | h′) for a context never seen; below the unigram, p = 1/256. Counts never cross a file's end.
Torch-free: numpy alone.

Worked example, order 2, trained on b"abab": after "a" came "b" twice, so c(a) = 2, u(a) = 1; the unigram counts
a:2, b:2 (N = 4, u = 2), p(b) = (2 + 2/256) / 6; then p(b | a) = (2 + 1 · p(b)) / 3.

`CopyNGram` is the same counts with one copy rule on top: where the MATCH bytes before a byte occurred earlier in
what is read, the byte that followed their most recent occurrence is predicted, mixed in at COPY_WEIGHT (not tuned):
p(w) = (1 − COPY_WEIGHT) · p_ngram(w) + COPY_WEIGHT · [w = that byte]. On b"abcdefghX…abcdefgh" with MATCH = 8 the
rule puts half the probability on "X".
"""

from __future__ import annotations

import math

import numpy as np

VOCAB = 256
ORDER = 6  # the shipped baseline: 5 bytes of context (the best order on the held-out files)
MATCH = 8  # the copy rule's match: this many bytes before a byte, seen earlier in the text read
COPY_WEIGHT = 0.5  # the copy rule's share of the probability where it predicts (a round number, not tuned)


def _contexts(a: np.ndarray, k: int) -> np.ndarray:
    """(len(a) − k,) int64: the k bytes before each position p ≥ k, read as one base-256 number."""
    out = np.zeros(len(a) - k, dtype=np.int64)
    for i in range(k):
        out = out * VOCAB + a[i : len(a) - k + i]
    return out


class NGram:
    """An order-n byte model with Witten–Bell interpolation; `fit` counts, `bits` scores."""

    def __init__(self, order: int = ORDER):
        if not 1 <= order <= 7:
            raise ValueError(f"order: {order} must be between 1 and 7 (bytes of context + 1)")
        self.order = order
        self.tables: list[tuple] = []  # per context length k: (keys, counts, contexts, totals, distinct)

    def fit(self, texts: list[bytes]) -> NGram:
        arrays = [np.frombuffer(t, dtype=np.uint8).astype(np.int64) for t in texts]
        self.tables = []
        for k in range(self.order):
            keys = np.concatenate([_contexts(a, k) * VOCAB + a[k:] for a in arrays if len(a) > k])
            keys, counts = np.unique(keys, return_counts=True)
            ctx, first = np.unique(keys // VOCAB, return_index=True)
            totals = np.add.reduceat(counts, first)
            distinct = np.diff(np.append(first, len(keys)))
            self.tables.append((keys, counts, ctx, totals, distinct))
        return self

    @staticmethod
    def _lookup(sorted_keys: np.ndarray, values: np.ndarray, query: np.ndarray) -> np.ndarray:
        i = np.searchsorted(sorted_keys, query).clip(max=len(sorted_keys) - 1)
        return np.where(sorted_keys[i] == query, values[i], 0)

    def probs(self, data: bytes | np.ndarray) -> np.ndarray:
        """(len(data) − 1,) p(b[t] | the bytes before it, within `data`) for t = 1 … len − 1."""
        a = np.asarray(np.frombuffer(bytes(data), dtype=np.uint8) if isinstance(data, bytes) else data)
        a = a.astype(np.int64)
        target = a[1:]
        p = np.full(len(target), 1.0 / VOCAB)
        for k, (keys, counts, ctx, totals, distinct) in enumerate(self.tables):
            # target t = j + 1 has min(k, t) bytes of context; with fewer than k the lower order stands
            have = np.arange(1, len(a)) >= k
            h = np.zeros(len(target), dtype=np.int64)
            if k:
                h[have] = _contexts(a, k)
            c_hw = self._lookup(keys, counts, h * VOCAB + target)
            c_h = self._lookup(ctx, totals, h)
            u_h = self._lookup(ctx, distinct, h)
            seen = have & (c_h > 0)
            p = np.where(seen, (c_hw + u_h * p) / np.maximum(c_h + u_h, 1), p)
        return p

    def bits(self, windows: np.ndarray) -> np.ndarray:
        """(N, L − 1) bits each target byte costs for (N, L) windows, each read on its own as a model reads it."""
        return np.stack([-np.log2(self.probs(w)) for w in windows]) if len(windows) else np.zeros((0, 0))


def last_match(a: np.ndarray, match: int = MATCH) -> np.ndarray:
    """(len(a) − 1,) int64 over the targets (target j is byte t = j + 1): the position s < t of the byte that followed
    the most recent earlier occurrence of the `match` bytes before t (a[s − match : s] == a[t − match : t]), or −1."""
    a = np.asarray(a, dtype=np.uint8)
    out = np.full(max(len(a) - 1, 0), -1, dtype=np.int64)
    if len(a) <= match:
        return out
    keys = np.lib.stride_tricks.sliding_window_view(a, match)[: len(a) - match]  # keys[i]: a[i : i + match]
    keys = np.ascontiguousarray(keys).view(f"V{match}").ravel()  # one opaque value per run of `match` bytes
    order = np.argsort(keys, kind="stable")  # equal runs in position order
    same = keys[order[1:]] == keys[order[:-1]]
    earlier = np.full(len(keys), -1, dtype=np.int64)
    earlier[order[1:][same]] = order[:-1][same]  # the previous occurrence of each run
    t = np.arange(match, len(a))  # the byte after run i = t − match
    s = np.where(earlier >= 0, earlier + match, -1)
    out[t - 1] = s
    return out


class CopyNGram:
    """An NGram with the copy rule of the module's docstring: a counter that copies."""

    def __init__(self, counts: NGram, match: int = MATCH, weight: float = COPY_WEIGHT):
        if match < 1:
            raise ValueError(f"match: {match} must be at least 1 byte")
        self.counts, self.match, self.weight = counts, match, weight

    def probs(self, data: bytes | np.ndarray) -> np.ndarray:
        """(len(data) − 1,) p(b[t] | the bytes before it, within `data`) for t = 1 … len − 1."""
        a = np.asarray(np.frombuffer(bytes(data), dtype=np.uint8) if isinstance(data, bytes) else data)
        p = self.counts.probs(a)
        s = last_match(a, self.match)
        hit = s >= 0
        said = np.zeros(len(p))
        said[hit] = a[s[hit]] == a[1:][hit]
        return np.where(hit, (1 - self.weight) * p + self.weight * said, p)

    def bits(self, windows: np.ndarray) -> np.ndarray:
        """(N, L − 1) bits each target byte costs for (N, L) windows, each read on its own as a model reads it."""
        return np.stack([-np.log2(self.probs(w)) for w in windows]) if len(windows) else np.zeros((0, 0))


def bits_per_byte(model: NGram, windows: np.ndarray) -> float:
    b = model.bits(windows)
    return float(b.mean()) if b.size else math.nan
