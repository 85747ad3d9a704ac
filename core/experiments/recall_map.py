"""The recall map, read live off the shipped pair (core.offline.checkpoints): the Transformer's attention from the
query beside the LSTM's gradient saliency, an example to draw it for, and the sentences read off it."""

from __future__ import annotations

import pandas as pd
import torch

from core.config import shown
from core.training import tasks


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
