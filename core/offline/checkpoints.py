"""Small trained models shipped with the lab, so the "she looks at Alice" map shows without training.

`python -m core checkpoints` trains a Transformer and a parameter-matched LSTM on recall (a new distance per batch)
and writes data/checkpoints/{transformer,lstm}_recall.pt, plain dicts read with `weights_only=True`. From a loaded
pair it computes the page's map: the Transformer's attention from the query beside the LSTM's gradient saliency.
"""

from __future__ import annotations

import datetime as _dt
import random
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from core.config import shown
from core.experiments.long_range import (
    LongRangeConfig,
    accuracy,
    build_model,
    query_loss,
    torch_threads,
)
from core.models.layers import n_params
from core.store import files
from core.store.results import DATA_DIR
from core.terms import status
from core.training import loop as train_loop
from core.training import tasks

CHECKPOINT_DIR = DATA_DIR / "checkpoints"
MODELS = ("transformer", "lstm")
# what the shipped pair was trained with: small enough for one CPU thread
SPEC = {
    "seq_len": 24,
    "n_keys": 8,
    "d_model": 32,
    "n_layers": 2,
    "steps": 1500,
    "batch_size": 64,
    "lr": 3e-3,
    "forget_bias": 1.0,
    "seed": 0,
}


def path_for(name: str, folder: Path | None = None) -> Path:
    return Path(folder or CHECKPOINT_DIR) / f"{name}_recall.pt"


def _config(spec: dict) -> LongRangeConfig:
    shared = ("seq_len", "n_keys", "d_model", "n_layers", "lr", "forget_bias", "seed")  # the fields SPEC sets too
    return LongRangeConfig(**{k: spec[k] for k in shared}, distances=(1,), device="cpu")


def accuracy_by_distance(model: torch.nn.Module, spec: dict, n: int = 256) -> list[float]:
    """Held-out recall accuracy at every distance 1..seq_len−1 (index 0 is distance 1)."""
    g = torch.Generator().manual_seed(spec["seed"] + 1)
    return [
        accuracy(model, *tasks.recall_batch(n, spec["seq_len"], d, spec["n_keys"], g))
        for d in range(1, spec["seq_len"])
    ]


def train(name: str, spec: dict = SPEC, log=None) -> tuple[torch.nn.Module, dict]:
    """Train one model on recall with a random distance per batch; return it and its metadata."""
    cfg = _config(spec)
    V = tasks.recall_vocab(spec["n_keys"])
    model = build_model(name, cfg, V)
    g = torch.Generator().manual_seed(spec["seed"])
    pick = random.Random(spec["seed"])

    def batch():
        distance = pick.randint(1, spec["seq_len"] - 1)
        return tasks.recall_batch(spec["batch_size"], spec["seq_len"], distance, spec["n_keys"], g)

    def on_step(s: train_loop.Step):
        if log is not None and s.step % 250 == 0:
            log(f"{name}: step {s.step}/{spec['steps']} loss {s.loss:.3f}")

    t0 = time.perf_counter()
    plan = train_loop.TrainSpec(
        spec["steps"],
        spec["lr"],
        optimizer="adamw",
        clip=1.0,
        max_loss=train_loop.loss_bound(V),
        chunk_steps=spec["steps"],
    )
    out = train_loop.train(model, batch, query_loss, plan, on_step)
    if out.status != status.OK:
        raise RuntimeError(f"{name}: training diverged ({out.note}); nothing was written")
    meta = {
        "model": name,
        "task": "recall",
        "vocab_size": V,
        "params": n_params(model),
        "train_s": time.perf_counter() - t0,
        "accuracy_by_distance": accuracy_by_distance(model, spec),
        "torch_version": str(torch.__version__),
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        **spec,
    }
    meta["width"] = model.embed.embedding_dim
    return model, meta


def save(model: torch.nn.Module, meta: dict, path: Path) -> Path:
    """Write {'state_dict', 'meta'} atomically; meta holds only numbers, strings and lists (weights_only-safe)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".pt.tmp")
    torch.save({"state_dict": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()}, "meta": meta}, tmp)
    tmp.replace(path)
    return path


# What `load` needs of a checkpoint's meta, and the type each must have (bool is not taken for a number)
META_TYPES = {
    "seq_len": int,
    "n_keys": int,
    "d_model": int,
    "n_layers": int,
    "vocab_size": int,
    "params": int,
    "steps": int,
    "seed": int,
    "lr": float,
    "forget_bias": float,
    "accuracy_by_distance": list,
}


def _accuracies_problem(meta: dict) -> str | None:
    acc = meta["accuracy_by_distance"]
    if not acc or not all(isinstance(a, (int, float)) and 0 <= a <= 1 for a in acc):
        return "meta 'accuracy_by_distance' is not a list of accuracies"
    return None


def load(name: str, folder: Path | None = None) -> tuple[torch.nn.Module, dict]:
    """A shipped model, in eval mode, on the CPU; the Transformer uses explicit attention so its maps can be read.
    Raises core.store.files.DamagedFile (a ValueError) for a missing, damaged or mismatched file."""
    path = path_for(name, folder)
    meta, state = files.load_checkpoint(path, META_TYPES, _accuracies_problem)
    model = build_model(name, _config(meta), meta["vocab_size"], impl="naive")
    try:
        model.load_state_dict(state)
    except RuntimeError as err:  # missing or unexpected keys, or shapes that differ
        detail = str(err).splitlines()[-1].strip()[:120]
        raise files.DamagedFile(files.FileProblem(path.name, "wrong_kind", detail)) from None
    return model.eval(), meta


def available(folder: Path | None = None) -> bool:
    return all(path_for(m, folder).exists() for m in MODELS)


def attention_from_query(model: torch.nn.Module, tokens: list[int]) -> torch.Tensor:
    """(layers, heads, T): the attention probabilities of the last position (the query) over every position."""
    with torch.no_grad():
        model(torch.tensor([tokens]))
    return torch.stack([block.attn.last_probs[0, :, -1, :] for block in model.layers])


def saliency(model: torch.nn.Module, tokens: list[int], target: int | None = None) -> torch.Tensor:
    """(T,): ‖∂ logit_target(query) / ∂ embedding_t‖ for every position t (target: the model's own answer if None)."""
    x = torch.tensor([tokens])
    emb = model.embed(x).detach().requires_grad_(True)  # (1, T, width)
    logits = model.head(model.body(emb))[0, -1]  # (V,) at the query
    target = int(logits.argmax()) if target is None else target
    logits[target].backward()
    return emb.grad[0].norm(dim=-1)


def predict(model: torch.nn.Module, tokens: list[int]) -> tuple[int, float]:
    """(answer token, its probability) at the query position."""
    with torch.no_grad():
        p = model(torch.tensor([tokens]))[0, -1].softmax(-1)
    return int(p.argmax()), float(p.max())


def map_frame(
    tokens: list[int], transformer: torch.nn.Module, lstm: torch.nn.Module, n_keys: int, labels: dict | None = None
) -> pd.DataFrame:
    """Tidy rows (row, kind, position, word, share) for the heat map: one row per attention head, one for the LSTM.
    Each row sums to 1: attention as it is, the saliency divided by its sum."""
    labels = labels or {}
    words = tasks.show_tokens(tokens, n_keys)
    att = attention_from_query(transformer, tokens)
    sal = saliency(lstm, tokens)
    sal = sal / sal.sum() if float(sal.sum()) > 0 else sal
    L, H, T = att.shape
    series = []  # (row, kind, share at each position)
    for layer in range(L):
        for head in range(H):
            name = labels.get("head", "Transformer attention · layer {layer}").format(layer=layer + 1)
            series.append((name + (f" · head {head + 1}" if H > 1 else ""), "head", att[layer, head]))
    series.append((labels.get("saliency", "LSTM gradient saliency"), "saliency", sal))
    df = pd.DataFrame(
        {"row": name, "kind": kind, "position": t, "word": words[t], "share": float(shares[t])}
        for name, kind, shares in series
        for t in range(T)
    )
    df["label"] = df["position"].map(lambda t: f"{t + 1}·{words[t]}")
    return df


def random_example(seq_len: int, distance: int, n_keys: int, seed: int, name: int | None = None) -> list[int]:
    """A recall sequence with random fillers and `name` (random if None), reproducible from `seed`."""
    g = torch.Generator().manual_seed(seed)
    tokens = tasks.recall_batch(1, seq_len, distance, n_keys, g)[0][0].tolist()
    if name is not None:
        tokens[seq_len - 1 - distance] = name
    return tokens


def parse_example(text: str, n_keys: int, max_len: int = 64) -> list[int]:
    """Words → token ids for a typed example; 'she' is appended if it is not last. ValueError names the field."""
    vocab = {w.lower(): i for i, w in enumerate(tasks.NAMES[:n_keys])}
    vocab["she"] = n_keys
    vocab.update({w: n_keys + 1 + i for i, w in enumerate(tasks.FILLERS)})
    words = text.replace(",", " ").split()
    unknown = [w for w in words if w.lower() not in vocab]
    if unknown:
        raise ValueError(
            f"example: unknown word(s) {', '.join(shown(w) for w in unknown[:5])}; use the names "
            f"{', '.join(tasks.NAMES[:n_keys])}, the fillers {', '.join(tasks.FILLERS)} and 'she'"
        )
    ids = [vocab[w.lower()] for w in words]
    if not ids or ids[-1] != n_keys:
        ids.append(n_keys)
    if not 2 <= len(ids) <= max_len:
        raise ValueError(f"example: {len(ids)} words; give between 1 and {max_len - 1} words before 'she'")
    return ids


def write_all(folder: Path | None = None, spec: dict = SPEC, log=print) -> list[Path]:
    """Train and save both models (one torch thread: tiny models train fastest so)."""
    paths = []
    with torch_threads(1):
        for name in MODELS:
            model, meta = train(name, spec, log)
            path = save(model, meta, path_for(name, folder))
            acc = meta["accuracy_by_distance"]
            log(
                f"{name}: {meta['params']:,} parameters, {meta['train_s']:.0f} s; held-out accuracy at distance "
                f"1 / {len(acc) // 2} / {len(acc)}: {acc[0]:.0%} / {acc[len(acc) // 2 - 1]:.0%} / {acc[-1]:.0%}; "
                f"{path.stat().st_size / 1024:.0f} KiB → {path}"
            )
            paths.append(path)
    return paths


def cli(args) -> int:
    """`python -m core checkpoints [--out-dir DIR] [--steps N]`."""
    spec = dict(SPEC)
    if args.steps is not None:
        if not str(args.steps).isdigit() or int(args.steps) < 1:
            raise ValueError(f"--steps: {args.steps!r} must be a positive integer")
        spec["steps"] = int(args.steps)
    write_all(Path(args.out_dir) if args.out_dir else None, spec, log=lambda m: print(m, file=sys.stderr))
    return 0


def map_takeaways(frame: pd.DataFrame, tokens: list[int], transformer, lstm, n_keys: int, tr) -> list[str]:
    """Sentences read off the map just drawn: where the last layer looks, the saliency's share, both answers."""
    names = [t for t, tok in enumerate(tokens) if tok < n_keys]
    words = tasks.show_tokens(tokens, n_keys)
    out = []
    if len(names) != 1:
        out.append(tr("long_range.map.take.no_name", n=len(names)))
    att = frame[frame["kind"] == "head"]
    last_row = list(dict.fromkeys(att["row"]))[-1]
    last = att[att["row"] == last_row].set_index("position")["share"]
    sal = frame[frame["kind"] == "saliency"].set_index("position")["share"]
    for model, key in ((transformer, "transformer"), (lstm, "lstm")):
        answer, p = predict(model, tokens)
        out.append(
            tr(f"long_range.map.take.answer_{key}", answer=tasks.show_tokens([answer], n_keys)[0], p=f"{100 * p:.0f}")
        )
    if len(names) == 1:
        pos = names[0]
        top = int(sal.idxmax())
        out.append(
            tr(
                "long_range.map.take.attention",
                row=last_row,
                share=f"{100 * last[pos]:.0f}",
                word=words[pos],
                pos=pos + 1,
                d=len(tokens) - 1 - pos,
            )
        )
        out.append(
            tr(
                "long_range.map.take.saliency",
                share=f"{100 * sal[pos]:.0f}",
                word=words[pos],
                uniform=f"{100 / len(tokens):.0f}",
                n_other=len(tokens) - 1,
                rest=f"{100 * (sal.sum() - sal[pos]):.0f}",
                top_word=words[top],
                top_pos=top + 1,
                top_share=f"{100 * sal[top]:.0f}",
            )
        )
    return out
