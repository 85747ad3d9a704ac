"""What the depth page and the home page conclude from depth rows: outcomes, gradient profiles, takeaways.

Torch-free. The variants compared (plain vs residual LSTM stack, Post-LN vs Pre-LN, Pre-LN without its skip
connection) are found by their records' facts in the model registry, not by their names.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import pandas as pd

from core.models import registry
from core.models.registry import ATTENTION, RECURRENT
from core.rules import FINAL_FRACTION, LEARNED_FRACTION, UNDERFLOW

COLUMNS = (
    "model",
    "n_layers",
    "layer",
    "step",
    "phase",
    "grad_norm",
    "loss",
    "lr",
    "lr_now",
    "warmup_steps",
    "clip",
    "clipped",
    "seed",
    "d_model",
    "vocab_size",
    "noise",
    "seq_len",
    "batch_size",
    "status",
    "note",
    "predicted_bytes",
)


class Roles(NamedTuple):
    """The depth page's variants by what they are, each a registered kind's name (None if none is registered)."""

    plain: str | None  # an LSTM stack without skip connections
    residual: str | None  # the same with GNMT's residual connections
    post: str | None  # Transformer, LayerNorm after each residual sum (2017)
    pre: str | None  # Transformer, LayerNorm inside each branch (GPT-2)
    no_skip: str | None  # Pre-LN blocks with the skip connection removed


def roles() -> Roles:
    among = registry.names("depth")
    return Roles(
        registry.find(among, family=RECURRENT, residual=False),
        registry.find(among, family=RECURRENT, residual=True),
        registry.find(among, family=ATTENTION, norm="post", residual=True),
        registry.find(among, family=ATTENTION, norm="pre", residual=True),
        registry.find(among, family=ATTENTION, residual=False),
    )


def chain_entropy(vocab_size: int, noise: float) -> float:
    """The best achievable loss (nats): entropy of the next token given the current one."""
    p_hit = 1 - noise + noise / vocab_size
    p_other = noise / vocab_size
    h = -p_hit * math.log(p_hit)
    if p_other > 0:
        h -= (vocab_size - 1) * p_other * math.log(p_other)
    return h


def to_frame(rows) -> pd.DataFrame:
    """The result frame: every column of COLUMNS present (NaN where absent), `layer` as a nullable integer.

    Accepts row dicts or a frame, so a page's partial live rows read the same as a finished run.
    """
    df = pd.DataFrame(rows).copy()
    for c in COLUMNS:
        if c not in df.columns:
            df[c] = math.nan
    df = df[list(COLUMNS) + [c for c in df.columns if c not in COLUMNS]]
    df["layer"] = df["layer"].astype("Int64")  # empty for whole-model rows
    return df


def loss_bounds(df: pd.DataFrame) -> tuple[float, float]:
    """(ceiling, floor) of the loss, both formulas: log(vocab) for a uniform guess, the chain's entropy."""
    V, noise = int(df["vocab_size"].iloc[0]), float(df["noise"].iloc[0])
    return math.log(V), chain_entropy(V, noise)


RUN_KEYS = ("model", "n_layers", "warmup_steps", "seed", "lr", "clip")


def _source_keys(df: pd.DataFrame) -> list[str]:
    return [c for c in ("source", "device") if c in df.columns]


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """One row per training run: final loss, share of the learnable gap closed, outcome, divergence, clipping.

    outcome: 'trained' (closed at least LEARNED_FRACTION of the gap between log V and the chain's entropy),
    'stalled' (did not, including runs that learned and then collapsed), 'diverged' (NaN/inf), or the guard's
    'skipped'/'oom'.
    """
    cols = [
        *RUN_KEYS,
        *_source_keys(df),
        "status",
        "final_loss",
        "gap_closed",
        "outcome",
        "diverged_step",
        "clipped_share",
        "logged_steps",
    ]
    if df is None or not len(df) or "phase" not in df:
        return pd.DataFrame(columns=cols)
    df = to_frame(df)
    runs = df[(df["phase"] == "train") & df["layer"].isna()]
    if not len(runs):
        return pd.DataFrame(columns=cols)
    out = []
    for key, g in runs.groupby([*RUN_KEYS, *_source_keys(df)], sort=False, dropna=False):
        ceiling, floor = loss_bounds(g)
        ok = g[g["status"] == "ok"].sort_values("step")
        bad = g[g["status"] != "ok"]
        status = "diverged" if (bad["status"] == "diverged").any() else (bad["status"].iloc[0] if len(bad) else "ok")
        final = float(ok["loss"].tail(max(1, math.ceil(FINAL_FRACTION * len(ok)))).mean()) if len(ok) else math.nan
        gap = (ceiling - final) / (ceiling - floor) if len(ok) else math.nan
        if status == "ok":
            outcome = "trained" if gap >= LEARNED_FRACTION else "stalled"
        else:
            outcome = status
        clipped = ok["clipped"].astype(bool) if len(ok) else pd.Series(dtype=bool)
        out.append(
            {
                **dict(zip([*RUN_KEYS, *_source_keys(df)], key)),
                "status": status,
                "final_loss": final,
                "gap_closed": gap,
                "outcome": outcome,
                "diverged_step": float(bad["step"].min()) if status == "diverged" else math.nan,
                "clipped_share": float(clipped.mean()) if len(clipped) else math.nan,
                "logged_steps": len(ok),
            }
        )
    return pd.DataFrame(out, columns=cols)


def init_profile(df: pd.DataFrame) -> pd.DataFrame:
    """Per-layer gradient norm at initialisation, geometric mean over seeds: model, n_layers, layer, grad_norm."""
    init = to_frame(df) if len(df) and "phase" in df else pd.DataFrame()
    init = init[(init["phase"] == "init") & (init["status"] == "ok") & init["layer"].notna()] if len(init) else init
    if not len(init):
        return pd.DataFrame(columns=["model", "n_layers", "layer", "grad_norm"])
    logs = init.assign(log_g=lambda x: x["grad_norm"].astype(float).clip(lower=1e-300).map(math.log))
    g = logs.groupby(["model", "n_layers", "layer"], sort=False)["log_g"].mean().map(math.exp)
    return g.rename("grad_norm").reset_index()


def _num(x: float) -> str:
    """Two significant digits; a geometric mean that hit the 1e-300 floor was an exact 0 (float underflow)."""
    if not math.isfinite(x):
        return "–"
    return "0" if x <= 1e-299 else f"{x:.2g}"


def _failed(s: pd.DataFrame) -> tuple[int, int]:
    ran = s[s["outcome"].isin(["trained", "stalled", "diverged"])]
    return int((ran["outcome"] != "trained").sum()), len(ran)


def _shape(ratio: float) -> str:
    return "up" if ratio > 2 else "down" if ratio < 0.5 else "flat"


def lstm_contrast(df: pd.DataFrame) -> dict | None:
    """At initialisation, the plain LSTM stack's first-layer gradient with the fewest (d0) and the most (d1)
    layers, its last layer's at d1, the loss factor per added layer, and the residual stack's first and last layer
    at d1 (NaN if not run): what the depth page and the home page both state."""
    R = roles()
    prof = init_profile(df)
    if not len(prof):
        return None
    first = prof[prof["layer"] == 1].set_index(["model", "n_layers"])["grad_norm"]
    last = prof[prof["layer"] == prof["n_layers"]].set_index(["model", "n_layers"])["grad_norm"]
    if R.plain not in first.index.get_level_values(0):
        return None
    g = first[R.plain].sort_index()
    if len(g) < 2:
        return None
    d0, d1 = int(g.index[0]), int(g.index[-1])
    # per-layer loss over the depths whose gradient is still well above float underflow
    usable = g[g > UNDERFLOW]
    dd = int(usable.index[-1]) if len(usable) >= 2 else d1
    factor = (g.iloc[0] / g[dd]) ** (1 / (dd - d0)) if g[dd] > 0 and dd > d0 else math.inf
    return {"d0": d0, "d1": d1, "g0": float(g.iloc[0]), "g1": float(g.iloc[-1]), "factor": float(factor),
            "top": float(last.get((R.plain, d1), math.nan)), "residual": R.residual,
            "res_g": float(first.get((R.residual, d1), math.nan)), "res_top": float(last.get((R.residual, d1), math.nan))}  # fmt: skip


def number(x: float) -> str:
    """How the depth page writes a gradient (the home page writes it the same way)."""
    return _num(x)


def _init_takeaways(df: pd.DataFrame, tr) -> list[str]:
    R = roles()
    prof = init_profile(df)
    if not len(prof):
        return []
    out = []
    first = prof[prof["layer"] == 1].set_index(["model", "n_layers"])["grad_norm"]
    last = prof[prof["layer"] == prof["n_layers"]].set_index(["model", "n_layers"])["grad_norm"]
    c = lstm_contrast(df)
    if c is not None:
        key = "depth.take.lstm_init" if c["factor"] >= 1.5 else "depth.take.lstm_init_flat"
        out.append(
            tr(key, **{k: c[k] if k in ("d0", "d1") else _num(c[k]) for k in ("d0", "d1", "g0", "g1", "factor", "top")})
        )
        if math.isfinite(c["res_g"]):
            out.append(tr("depth.take.res_init", d1=c["d1"], g=_num(c["res_g"]), top=_num(c["res_top"])))
    if R.no_skip in first.index.get_level_values(0):
        g = first[R.no_skip].sort_index()
        if len(g) >= 2 and (R.pre, int(g.index[-1])) in first.index:
            d0, d1 = int(g.index[0]), int(g.index[-1])
            out.append(
                tr(
                    "depth.take.nores_init",
                    d0=d0,
                    d1=d1,
                    g0=_num(g.iloc[0]),
                    g1=_num(g.iloc[-1]),
                    pre=_num(first[(R.pre, d1)]),
                )
            )
    both = [
        L
        for L in sorted(set(first.index.get_level_values(1)))
        if L >= 4 and all((m, L) in first.index and (m, L) in last.index for m in (R.post, R.pre))
    ]
    if both:
        L = both[-1]
        r_post, r_pre = last[(R.post, L)] / first[(R.post, L)], last[(R.pre, L)] / first[(R.pre, L)]
        matches = (_shape(r_post) == "up") + (_shape(r_pre) == "flat")
        verdict = ("depth.verdict.match", "depth.verdict.partial", "depth.verdict.nomatch")[2 - matches]
        out.append(
            tr(
                "depth.take.xiong",
                L=L,
                r_post=_num(r_post),
                r_pre=_num(r_pre),
                shape_post=tr(f"depth.shape.{_shape(r_post)}"),
                shape_pre=tr(f"depth.shape.{_shape(r_pre)}"),
                verdict=tr(verdict),
            )
        )
    return out


def _rate(s: pd.DataFrame) -> float:
    f, n = _failed(s)
    return f / n if n else math.nan


def _per_depth(s: pd.DataFrame, tr) -> str:
    """'1/3 at 2 layers, 3/3 at 8 layers' — failed of run, per depth (all rows of `s` pooled per depth)."""
    return tr("depth.take.sep").join(
        tr("depth.take.item", f=f, n=n, L=int(L)) for L, g in s.groupby("n_layers") for f, n in [_failed(g)]
    )


def _layers(depths, tr) -> str:
    return tr("depth.take.sep").join(str(int(L)) for L in depths)


def _warmup_takeaways(ran: pd.DataFrame, tr) -> list[str]:
    """Post-LN vs Pre-LN without warm-up, per depth; then Post-LN with the longest warm-up against without."""
    R = roles()
    post, pre = ran[ran["model"] == R.post], ran[ran["model"] == R.pre]
    post0, pre0 = post[post["warmup_steps"] == 0], pre[pre["warmup_steps"] == 0]
    depths = sorted(set(post0["n_layers"]) & set(pre0["n_layers"]))
    if not depths:
        return []
    post0, pre0 = post0[post0["n_layers"].isin(depths)], pre0[pre0["n_layers"].isin(depths)]
    shown = [L for L in depths if _rate(post0[post0["n_layers"] == L]) > _rate(pre0[pre0["n_layers"] == L])]
    lr = _num(float(ran["lr"].iloc[0]))
    key = "depth.take.warmup_shown" if shown else "depth.take.warmup_not_shown"
    out = [tr(key, lr=lr, post=_per_depth(post0, tr), pre=_per_depth(pre0, tr), shown=_layers(shown, tr))]
    warm = post[(post["warmup_steps"] > 0) & post["n_layers"].isin(depths)]
    if len(warm):
        w = int(warm["warmup_steps"].max())
        warm = warm[warm["warmup_steps"] == w]
        rescued = [L for L in depths if _rate(warm[warm["n_layers"] == L]) < _rate(post0[post0["n_layers"] == L])]
        still = [L for L in depths if _failed(warm[warm["n_layers"] == L])[0] > 0]
        key = (
            "depth.take.warmup_no_help"
            if not rescued
            else "depth.take.warmup_partly"
            if still
            else "depth.take.warmup_helped"
        )
        out.append(
            tr(
                key,
                w=w,
                warm=_per_depth(warm, tr),
                cold=_per_depth(post0, tr),
                rescued=_layers(rescued, tr),
                still=_layers(still, tr),
            )
        )
    return out


def _train_takeaways(df: pd.DataFrame, tr) -> list[str]:
    R = roles()
    summ = summarize(df)
    ran = summ[summ["outcome"].isin(["trained", "stalled", "diverged"])]
    if not len(ran):
        return [tr("depth.take.no_training")]
    out = _warmup_takeaways(ran, tr)
    D = int(ran["n_layers"].max())
    nores, pre = ran[ran["model"] == R.no_skip], ran[ran["model"] == R.pre]
    if len(nores[nores["n_layers"] == D]) and len(pre[pre["n_layers"] == D]):
        shown = _rate(nores[nores["n_layers"] == D]) > _rate(pre[pre["n_layers"] == D])
        key = "depth.take.nores_shown" if shown else "depth.take.nores_not_shown"
        out.append(tr(key, nores=_per_depth(nores, tr), pre=_per_depth(pre, tr), d=D))
    plain, res = ran[ran["model"] == R.plain], ran[ran["model"] == R.residual]
    if len(plain[plain["n_layers"] == D]) and len(res[res["n_layers"] == D]):

        def gap(s):
            return tr("depth.take.sep").join(
                tr("depth.take.gap_item", p=f"{100 * g['gap_closed'].mean() + 0:.0f}".replace("-0", "0"), L=int(L))
                for L, g in s.groupby("n_layers")
            )

        p, q = (100 * s[s["n_layers"] == D]["gap_closed"].mean() for s in (plain, res))
        key = "depth.take.lstm_train_shown" if p < q - 10 else "depth.take.lstm_train_not_shown"
        out.append(tr(key, plain=gap(plain), res=gap(res), d=D, fp=_per_depth(plain, tr), fq=_per_depth(res, tr)))
    div = summ[summ["outcome"] == "diverged"]
    if len(div):
        runs = tr("depth.take.sep").join(
            tr(
                "depth.take.diverged_item",
                model=tr(f"depth.model.{r.model}"),
                L=int(r.n_layers),
                seed=int(r.seed),
                step=int(r.diverged_step),
            )
            for r in div.itertuples()
        )
        out.append(tr("depth.take.diverged", n=len(div), total=len(ran), runs=runs))
    clip = ran[ran["clip"] > 0]
    if len(clip):
        share = clip.groupby("model")["clipped_share"].mean()
        out.append(
            tr(
                "depth.take.clipping",
                clip=_num(float(clip["clip"].iloc[0])),
                pct=f"{100 * clip['clipped_share'].mean():.0f}",
                model=tr(f"depth.model.{share.idxmax()}"),
                pm=f"{100 * share.max():.0f}",
            )
        )
    return out


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Sentences computed from the rows of one run: gradients at initialisation, then training outcomes."""
    if df is None or not len(df) or "phase" not in df:
        return []
    df = to_frame(df)
    return _init_takeaways(df, tr) + _train_takeaways(df, tr)
