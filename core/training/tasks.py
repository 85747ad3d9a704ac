"""Synthetic long-range tasks for the "Alice … she" page: one fact early in a sequence, a question about it late.

`recall`: a name ("Alice") among fillers, then `d` steps later the query ("she"), whose target is the name.
`mqar`: multi-query associative recall (Arora et al. 2023, Zoology): key–value pairs, filler, then the keys again;
several facts cross the gap at once, so a fixed-size state must hold them all.
`selective_copy` (Gu & Dao 2023, Mamba §3.1): data tokens at random positions among blanks, then as many markers;
only a gate that reads the input, not a fixed decay or kernel, knows what to keep.

Every task returns `(tokens, targets)`, both (batch, seq_len) int64, `targets` IGNORE except at the queries.
Chance accuracy is 1 / n_keys for both tasks.
"""

from __future__ import annotations

import dataclasses

import torch

IGNORE = -100  # cross_entropy's ignore_index: positions without a question
N_FILLER = 16  # distinct filler "words"

# What each token id means, for showing a sequence to a learner (the models only see ids).
NAMES = (
    "Alice",
    "Beth",
    "Cara",
    "Dana",
    "Emma",
    "Fay",
    "Gina",
    "Hana",
    "Iris",
    "Jane",
    "Kate",
    "Lily",
    "Mia",
    "Nora",
    "Olga",
    "Pia",
    "Rosa",
    "Sara",
    "Tina",
    "Uma",
    "Vera",
    "Wren",
    "Xia",
    "Yara",
    "Zoe",
    "Ada",
    "Bea",
    "Cleo",
    "Dora",
    "Eve",
    "Flo",
    "Gail",
)
FILLERS = ("the", "a", "cat", "sat", "on", "mat", "and", "then", "it", "was", "very", "far", "ran", "big", "old", "day")
MAX_KEYS = len(NAMES)


def recall_vocab(n_keys: int) -> int:
    """Token ids: names 0..K-1, the query K, fillers K+1..K+16."""
    return n_keys + 1 + N_FILLER


def recall_sequence(name: int, distance: int, seq_len: int, n_keys: int, fillers: list[int]) -> tuple[list, list]:
    """One recall example from chosen parts; `fillers` (ids 0..15) fill every other position, in order.

    The query sits at the last position, the name `distance` positions before it.

    >>> tokens, targets = recall_sequence(name=2, distance=4, seq_len=7, n_keys=4, fillers=[0, 1, 2, 3, 4])
    >>> tokens   # filler filler [name 2] filler filler filler [query]
    [5, 6, 2, 7, 8, 9, 4]
    >>> targets  # only the query position asks a question; its answer is the name
    [-100, -100, -100, -100, -100, -100, 2]
    >>> ' '.join(show_tokens(tokens, n_keys=4))
    'the a Cara cat sat on she'
    """
    if not 1 <= distance < seq_len:
        raise ValueError(f"distance: {distance} must be between 1 and seq_len - 1 ({seq_len - 1})")
    key_pos = seq_len - 1 - distance
    filler_ids = iter(fillers)
    tokens = [
        name if t == key_pos else n_keys if t == seq_len - 1 else n_keys + 1 + next(filler_ids) for t in range(seq_len)
    ]
    targets = [IGNORE] * (seq_len - 1) + [name]
    return tokens, targets


def recall_batch(
    batch_size: int, seq_len: int, distance: int, n_keys: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`batch_size` random recall examples at one distance: random name, random fillers (see recall_sequence)."""
    if not 1 <= distance < seq_len:
        raise ValueError(f"distance: {distance} must be between 1 and seq_len - 1 ({seq_len - 1})")
    B, T = batch_size, seq_len
    tokens = n_keys + 1 + torch.randint(N_FILLER, (B, T), generator=generator)  # fillers everywhere
    names = torch.randint(n_keys, (B,), generator=generator)
    tokens[:, T - 1 - distance] = names
    tokens[:, T - 1] = n_keys
    targets = torch.full((B, T), IGNORE, dtype=torch.long)
    targets[:, T - 1] = names
    return tokens, targets


def mqar_vocab(n_keys: int) -> int:
    """Token ids: keys 0..K-1, values K..2K-1, fillers 2K..2K+15."""
    return 2 * n_keys + N_FILLER


def mqar_sequence(
    keys: list[int], values: list[int], order: list[int], distance: int, seq_len: int, n_keys: int, fillers: list[int]
) -> tuple[list, list]:
    """One MQAR example: pairs (key, value) … `distance` … then the keys again in `order`; targets are values.

    The P queries fill the last P positions; the last value sits `distance` positions before the first query.
    Keys are ids 0..K-1, value v is id K+v, filler f is id 2K+f.

    >>> tokens, targets = mqar_sequence(keys=[3, 1], values=[0, 2], order=[1, 0], distance=3, seq_len=9,
    ...                                 n_keys=4, fillers=[0, 1, 2])
    >>> tokens   # filler [k3 v0] [k1 v2] filler filler [k1? k3?]
    [8, 3, 4, 1, 6, 9, 10, 1, 3]
    >>> targets  # at query k1 the answer is v2 (id 6); at query k3 it is v0 (id 4)
    [-100, -100, -100, -100, -100, -100, -100, 6, 4]
    """
    P = len(keys)
    first_query = seq_len - P
    last_value = first_query - distance
    start = last_value - 2 * P + 1
    if distance < 1 or start < 0:
        raise ValueError(f"distance: {distance} leaves no room for {P} pairs and {P} queries in seq_len {seq_len}")
    tokens, targets = [], [IGNORE] * seq_len
    filler_ids = iter(fillers)
    for t in range(seq_len):
        if start <= t <= last_value:
            i, is_value = divmod(t - start, 2)
            tokens.append(n_keys + values[i] if is_value else keys[i])
        elif t >= first_query:
            i = order[t - first_query]
            tokens.append(keys[i])
            targets[t] = n_keys + values[i]
        else:
            tokens.append(2 * n_keys + next(filler_ids))
    return tokens, targets


def mqar_max_distance(seq_len: int, n_pairs: int, n_queries: int | None = None) -> int:
    """The longest gap that leaves room for the pairs and the queries: seq_len − 2·pairs − queries + 1."""
    return seq_len - 2 * n_pairs - (n_pairs if n_queries is None else n_queries) + 1


def mqar_batch(
    batch_size: int,
    seq_len: int,
    distance: int,
    n_keys: int,
    n_pairs: int,
    generator: torch.Generator,
    n_queries: int | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """`batch_size` random MQAR examples: distinct keys, random values, queries in random order (see mqar_sequence).
    `n_queries` (default: one per pair) end each sequence, every key asked once per round, so few pairs still teach."""
    Q = n_pairs if n_queries is None else n_queries
    if n_pairs > n_keys:
        raise ValueError(f"n_pairs: {n_pairs} pairs need at least as many distinct keys (n_keys={n_keys})")
    if Q < 1:
        raise ValueError(f"n_queries: {Q} must be at least 1")
    longest = mqar_max_distance(seq_len, n_pairs, Q)
    if not 1 <= distance <= longest:
        raise ValueError(
            f"distance: {distance} leaves no room for {n_pairs} pairs and {Q} queries in seq_len {seq_len} "
            f"(at most {longest})"
        )
    B, T, P = batch_size, seq_len, n_pairs
    keys = torch.rand(B, n_keys, generator=generator).argsort(dim=1)[:, :P]  # (B, P) distinct keys per row
    values = torch.randint(n_keys, (B, P), generator=generator)  # (B, P)
    rounds = [torch.rand(B, P, generator=generator).argsort(dim=1) for _ in range(-(-Q // P))]
    order = torch.cat(rounds, dim=1)[:, :Q]  # (B, Q) query order: each key once per round
    tokens = 2 * n_keys + torch.randint(N_FILLER, (B, T), generator=generator)
    start = T - Q - distance - 2 * P + 1
    tokens[:, start : start + 2 * P : 2] = keys
    tokens[:, start + 1 : start + 2 * P : 2] = n_keys + values
    tokens[:, T - Q :] = keys.gather(1, order)
    targets = torch.full((B, T), IGNORE, dtype=torch.long)
    targets[:, T - Q :] = n_keys + values.gather(1, order)
    return tokens, targets


def copy_vocab(n_keys: int) -> int:
    """Token ids: data tokens 0..K-1, the blank K, the marker K+1."""
    return n_keys + 2


def copy_sequence(data: list[int], positions: list[int], seq_len: int, n_keys: int) -> tuple[list, list]:
    """One selective-copying example: `data` at `positions` (increasing, before the markers), blanks elsewhere, then
    len(data) markers; the i-th marker's target is data[i].

    >>> tokens, targets = copy_sequence(data=[3, 0], positions=[1, 4], seq_len=8, n_keys=4)
    >>> tokens   # blank [d3] blank blank [d0] blank [marker marker]
    [4, 3, 4, 4, 0, 4, 5, 5]
    >>> targets  # the data tokens, in the order they came
    [-100, -100, -100, -100, -100, -100, 3, 0]
    >>> ' '.join(show_tokens(tokens, n_keys=4, task="selective_copy"))
    '· d3 · · d0 · ? ?'
    """
    M = len(data)
    region = seq_len - M
    if not all(0 <= p < region for p in positions) or sorted(set(positions)) != list(positions):
        raise ValueError(f"positions: {positions} must be distinct, increasing and before the markers (< {region})")
    tokens = [n_keys] * region + [n_keys + 1] * M
    for p, d in zip(positions, data):
        tokens[p] = d
    return tokens, [IGNORE] * region + list(data)


def copy_batch(
    batch_size: int, seq_len: int, n_tokens: int, n_keys: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`batch_size` random selective-copying examples: n_tokens random data tokens at random distinct positions
    (see copy_sequence)."""
    region = seq_len - n_tokens
    if not 1 <= n_tokens <= region:
        raise ValueError(f"n_pairs: {n_tokens} tokens to copy need a sequence of at least {2 * n_tokens} (seq_len)")
    B, M = batch_size, n_tokens
    positions = torch.rand(B, region, generator=generator).argsort(dim=1)[:, :M].sort(dim=1).values
    data = torch.randint(n_keys, (B, M), generator=generator)
    tokens = torch.full((B, seq_len), n_keys, dtype=torch.long)
    tokens.scatter_(1, positions, data)
    tokens[:, region:] = n_keys + 1
    targets = torch.full((B, seq_len), IGNORE, dtype=torch.long)
    targets[:, region:] = data
    return tokens, targets


TASKS = ("recall", "mqar")  # the long-range page's tasks
ALL_TASKS = (*TASKS, "selective_copy")


@dataclasses.dataclass(frozen=True)
class Layout:
    """One task's sequences: the one interface the training loops use. Recall reads no n_pairs; selective copying
    copies n_pairs tokens and reads no distance (its positions are random); n_queries is MQAR's."""

    task: str
    seq_len: int
    n_keys: int
    distance: int = 1
    n_pairs: int = 1
    n_queries: int | None = None

    def __post_init__(self):
        if self.task not in ALL_TASKS:
            raise ValueError(f"task: {self.task!r} is not one of {', '.join(ALL_TASKS)}")

    @property
    def vocab(self) -> int:
        return {"recall": recall_vocab, "mqar": mqar_vocab, "selective_copy": copy_vocab}[self.task](self.n_keys)

    def batch(self, size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        T, K = self.seq_len, self.n_keys
        if self.task == "recall":
            return recall_batch(size, T, self.distance, K, generator)
        if self.task == "mqar":
            return mqar_batch(size, T, self.distance, K, self.n_pairs, generator, self.n_queries)
        return copy_batch(size, T, self.n_pairs, K, generator)


def show_tokens(tokens, n_keys: int, task: str = "recall") -> list[str]:
    """Words for token ids, for display: names, 'she' for the recall query, k·/v· for MQAR, filler words; for
    selective copying d· for data, · for a blank and ? for a marker."""
    out = []
    for t in (int(x) for x in tokens):
        if task == "selective_copy":
            out.append(f"d{t}" if t < n_keys else "·" if t == n_keys else "?")
        elif task == "recall":
            out.append(NAMES[t] if t < n_keys else "she" if t == n_keys else FILLERS[t - n_keys - 1])
        else:
            out.append(f"k{t}" if t < n_keys else f"v{t - n_keys}" if t < 2 * n_keys else FILLERS[t - 2 * n_keys])
    return out
