"""The depth page's sentences: gradients at initialisation, then training outcomes, each computed from the rows
shown (core.findings.depth reads them)."""

from __future__ import annotations

import math

import pandas as pd

from core.findings import listing
from core.findings.depth import init_profile, lstm_contrast, number, roles, summarize, to_frame


def _failed(s: pd.DataFrame) -> tuple[int, int]:
    ran = s[s["outcome"].isin(["trained", "stalled", "diverged"])]
    return int((ran["outcome"] != "trained").sum()), len(ran)


def _shape(ratio: float) -> str:
    return "up" if ratio > 2 else "down" if ratio < 0.5 else "flat"


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
        values = {k: c[k] if k in ("d0", "d1") else number(c[k]) for k in ("d0", "d1", "g0", "g1", "factor", "top")}
        if values["g1"] == "0":  # an exact 0 is float32 underflow, not "no gradient" (the home page says so too)
            values["g1"] = tr("home.find.underflow")
        out.append(tr(key, **values))
        if math.isfinite(c["res_g"]):
            out.append(tr("depth.take.res_init", d1=c["d1"], g=number(c["res_g"]), top=number(c["res_top"])))
    if R.no_skip in first.index.get_level_values(0):
        g = first[R.no_skip].sort_index()
        if len(g) >= 2 and (R.pre, int(g.index[-1])) in first.index:
            d0, d1 = int(g.index[0]), int(g.index[-1])
            g0, g1, pre = (number(x) for x in (g.iloc[0], g.iloc[-1], first[(R.pre, d1)]))
            out.append(tr("depth.take.nores_init", d0=d0, d1=d1, g0=g0, g1=g1, pre=pre))
    has = set(first.index) & set(last.index)  # (model, depth) stacks with both ends measured
    both = sorted(L for L in set(first.index.get_level_values(1)) if L >= 4 and {(R.post, L), (R.pre, L)} <= has)
    if both:
        L = both[-1]
        r_post, r_pre = last[(R.post, L)] / first[(R.post, L)], last[(R.pre, L)] / first[(R.pre, L)]
        shape_post, shape_pre = _shape(r_post), _shape(r_pre)
        matches = (shape_post == "up") + (shape_pre == "flat")
        verdict = tr(("depth.verdict.match", "depth.verdict.partial", "depth.verdict.nomatch")[2 - matches])
        shapes = {"shape_post": tr(f"depth.shape.{shape_post}"), "shape_pre": tr(f"depth.shape.{shape_pre}")}
        out.append(tr("depth.take.xiong", L=L, r_post=number(r_post), r_pre=number(r_pre), verdict=verdict, **shapes))
    return out


def _at(s: pd.DataFrame, L: int) -> pd.DataFrame:
    return s[s["n_layers"] == L]


def _rate(s: pd.DataFrame) -> float:
    f, n = _failed(s)
    return f / n if n else math.nan


def _per_depth(s: pd.DataFrame, tr) -> str:
    """'1/3 at 2 layers, 3/3 at 8 layers' — failed of run, per depth (all rows of `s` pooled per depth)."""
    return tr("depth.take.sep").join(
        tr("depth.take.item", f=f, n=n, L=int(L)) for L, g in s.groupby("n_layers") for f, n in [_failed(g)]
    )


def _layers(depths, tr) -> str:
    """'8, 16, 32' / '8、16、32': a list of numbers, not of clauses."""
    return listing([str(int(L)) for L in depths], tr)


def _warmup_takeaways(ran: pd.DataFrame, tr) -> list[str]:
    """Post-LN vs Pre-LN without warm-up, per depth; then Post-LN with the longest warm-up against without."""
    R = roles()
    post, pre = ran[ran["model"] == R.post], ran[ran["model"] == R.pre]
    post0, pre0 = post[post["warmup_steps"] == 0], pre[pre["warmup_steps"] == 0]
    depths = sorted(set(post0["n_layers"]) & set(pre0["n_layers"]))
    if not depths:
        return []
    post0, pre0 = post0[post0["n_layers"].isin(depths)], pre0[pre0["n_layers"].isin(depths)]
    shown = [L for L in depths if _rate(_at(post0, L)) > _rate(_at(pre0, L))]
    lr = number(float(ran["lr"].iloc[0]))
    key = "depth.take.warmup_shown" if shown else "depth.take.warmup_not_shown"
    out = [tr(key, lr=lr, post=_per_depth(post0, tr), pre=_per_depth(pre0, tr), shown=_layers(shown, tr))]
    warm = post[(post["warmup_steps"] > 0) & post["n_layers"].isin(depths)]
    if len(warm):
        w = int(warm["warmup_steps"].max())
        warm = warm[warm["warmup_steps"] == w]
        rescued = [L for L in depths if _rate(_at(warm, L)) < _rate(_at(post0, L))]
        still = [L for L in depths if _failed(_at(warm, L))[0] > 0]
        key = "depth.take.warmup_partly" if still else "depth.take.warmup_helped"
        key = key if rescued else "depth.take.warmup_no_help"
        said = {"rescued": _layers(rescued, tr), "still": _layers(still, tr)}
        out.append(tr(key, w=w, warm=_per_depth(warm, tr), cold=_per_depth(post0, tr), **said))
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
    if len(_at(nores, D)) and len(_at(pre, D)):
        shown = _rate(_at(nores, D)) > _rate(_at(pre, D))
        key = "depth.take.nores_shown" if shown else "depth.take.nores_not_shown"
        out.append(tr(key, nores=_per_depth(nores, tr), pre=_per_depth(pre, tr), d=D))
    plain, res = ran[ran["model"] == R.plain], ran[ran["model"] == R.residual]
    if len(_at(plain, D)) and len(_at(res, D)):

        def gap(s):
            return tr("depth.take.sep").join(
                tr("depth.take.gap_item", p=f"{100 * g['gap_closed'].mean() + 0:.0f}".replace("-0", "0"), L=int(L))
                for L, g in s.groupby("n_layers")
            )

        p, q = (100 * _at(s, D)["gap_closed"].mean() for s in (plain, res))
        key = "depth.take.lstm_train_shown" if p < q - 10 else "depth.take.lstm_train_not_shown"
        out.append(tr(key, plain=gap(plain), res=gap(res), d=D, fp=_per_depth(plain, tr), fq=_per_depth(res, tr)))
    div = summ[summ["outcome"] == "diverged"]
    if len(div):
        runs = []
        for r in div.itertuples():
            said = {"model": tr(f"depth.model.{r.model}"), "L": int(r.n_layers), "seed": int(r.seed)}
            runs.append(tr("depth.take.diverged_item", **said, step=int(r.diverged_step)))
        out.append(tr("depth.take.diverged", n=len(div), total=len(ran), runs=tr("depth.take.sep").join(runs)))
    clip = ran[ran["clip"] > 0]
    if len(clip):
        share = clip.groupby("model")["clipped_share"].mean()
        pct, pm = f"{100 * clip['clipped_share'].mean():.0f}", f"{100 * share.max():.0f}"
        model = tr(f"depth.model.{share.idxmax()}")
        out.append(tr("depth.take.clipping", clip=number(float(clip["clip"].iloc[0])), pct=pct, model=model, pm=pm))
    return out


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Sentences computed from the rows of one run: gradients at initialisation, then training outcomes."""
    if df is None or not len(df) or "phase" not in df:
        return []
    df = to_frame(df)
    return _init_takeaways(df, tr) + _train_takeaways(df, tr)
