"""Charts of the depth page: per-layer gradients at initialisation, the first layer's gradient against depth, the
layer × step heat map of gradient norms, loss curves, the global gradient norm with clipping, run outcomes."""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from core.charts.common import (
    PADDING,
    Chart,
    dash_legend,
    dash_scale,
    decades_y,
    device_subtitle,
    log_x,
    run_legend_px,
    run_style,
    thin,
    title,
)
from core.findings.depth import UNDERFLOW, init_profile, loss_bounds, summarize, to_frame
from core.findings.notes import note_text

# the runs that never trained (refused by the guard, out of time or memory) share one grey
OUTCOME_COLORS = {"trained": "#2ca02c", "stalled": "#ff7f0e", "diverged": "#d62728"} | dict.fromkeys(
    ("skipped_memory", "skipped_time", "oom"), "#7f7f7f"
)


RUN_KEYS = ("run", "variant", "n_layers", "warmup", "seed")  # the rows of one training run: one line
HEATMAP_STEPS = 200  # columns of the layer × step heat map at most (its panel is 520 px wide)


def _title(tr, key: str, df: pd.DataFrame, **values) -> alt.TitleParams:
    return title(tr(f"depth.chart.{key}", **values), tr(f"depth.chart.{key}_sub", device=device_subtitle(df, tr)))


def _named(df: pd.DataFrame, tr) -> pd.DataFrame:
    """Add the learner-facing variant name and warm-up label."""
    # each distinct value worded once, not once per row (thousands of logged steps)
    out = df.assign(variant=df["model"].map({m: tr(f"depth.model.{m}") for m in df["model"].unique()}))
    if "warmup_steps" in out:
        labels = {w: tr("depth.warmup_label", w=int(w)) for w in out["warmup_steps"].dropna().unique()}
        out["warmup"] = out["warmup_steps"].map(labels).fillna("")
    return out


def _order(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["variant"]))


def _runs(df: pd.DataFrame) -> pd.DataFrame:
    """Whole-model training rows (one per recorded step and run)."""
    df = to_frame(df)
    return df[(df["phase"] == "train") & df["layer"].isna()] if len(df) else df


def _by_source(df: pd.DataFrame, fn) -> pd.DataFrame:
    """Apply `fn` per data source (reference / live) and keep the `run` label and its source, so both can be drawn
    together, your run bold."""
    if "run" not in df.columns:
        return fn(df)
    keys = ["run", "source"] if "source" in df.columns else ["run"]
    parts = [fn(g).assign(**dict(zip(keys, k))) for k, g in df.groupby(keys, sort=False)]
    return pd.concat(parts, ignore_index=True) if parts else fn(df)


def init_layers_chart(df: pd.DataFrame, tr, n_layers: int | None = None) -> alt.Chart:
    """Per-layer gradient norm at initialisation, one line per variant, for one depth (default: the deepest)."""
    prof = _by_source(df, init_profile)
    if n_layers is None and len(prof):
        n_layers = int(prof["n_layers"].max())
    d = _named(prof[(prof["n_layers"] == n_layers) & (prof["grad_norm"] > UNDERFLOW)], tr)  # 0 has no log
    x = alt.X("layer:Q", title=tr("depth.axis.layer"), axis=alt.Axis(tickMinStep=1))
    return _init_chart(d, tr, x, "layer", _title(tr, "init_layers", df, L=n_layers))


def first_layer_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """The gradient reaching layer 1 at initialisation against the number of layers (log–log)."""
    prof = _by_source(df, init_profile)
    d = _named(prof[(prof["layer"] == 1) & (prof["grad_norm"] > UNDERFLOW)], tr)  # underflowed: exactly 0
    x = log_x("n_layers", tr("depth.axis.n_layers")).scale(type="log", base=2)
    return _init_chart(d, tr, x, "n_layers", _title(tr, "first_layer", df))


def _init_chart(d: pd.DataFrame, tr, x: alt.X, field: str, title: alt.TitleParams) -> alt.Chart:
    """Gradient norms at initialisation (log y) against `x`, a line per variant, a dash per run where there are two."""
    enc = {
        "x": x,
        "y": decades_y("grad_norm", tr("depth.axis.grad_norm"), d["grad_norm"]),
        "color": alt.Color("variant:N", title=tr("depth.axis.variant"), sort=_order(d)),
        "tooltip": ["variant", field, alt.Tooltip("grad_norm:Q", format=".3g")],
    }
    chart = Chart(d).mark_line(point=True).encode(**enc, **run_style(d))  # your run bold, its legend below
    return chart.properties(title=title, height=320 + run_legend_px(chart), padding=PADDING)


def grad_heatmap_chart(df: pd.DataFrame, tr) -> alt.FacetChart:
    """Layer × step heat map of per-layer gradient norms, one panel per variant, for one depth, warm-up and seed
    (of rows of several settings, the first's)."""
    d = to_frame(df)
    d = d[(d["phase"] == "train") & d["layer"].notna() & (d["status"] == "ok")]
    setting = ["n_layers", "warmup_steps", "seed"]
    d = d[(d[setting] == d.iloc[0][setting]).all(axis=1)] if len(d) else d
    d = thin(d, ["model", "layer"], per_series=HEATMAP_STEPS)  # every layer keeps the same steps
    d = _named(d[d["grad_norm"] > 0], tr)  # a log colour scale cannot show 0; blank is honest
    L = int(d["n_layers"].max()) if len(d) else 0
    cell = max(8, min(18, 160 // max(1, L)))
    viridis = alt.Scale(type="log", scheme="viridis")
    chart = (
        Chart(d)
        .mark_rect()
        .encode(
            x=alt.X("step:O", title=tr("depth.axis.step"), axis=alt.Axis(labelOverlap=True, labelAngle=0)),
            y=alt.Y("layer:O", title=tr("depth.axis.layer_short"), sort="descending", axis=alt.Axis(labelOverlap=True)),
            color=alt.Color(
                "grad_norm:Q", title=tr("depth.axis.grad_norm"), scale=viridis, legend=alt.Legend(format=".0e")
            ),
            tooltip=["variant", "layer", "step", alt.Tooltip("grad_norm:Q", format=".3g")],
        )
        .properties(height=cell * max(1, L), width=400)
    )
    warmup, seed = (d["warmup"].iloc[0], int(d["seed"].iloc[0])) if len(d) else ("", "")
    title = _title(tr, "heatmap", df, L=L, warmup=warmup, seed=seed)
    header = alt.Header(labelAngle=0, labelAlign="left", labelFontWeight="bold")
    row = alt.Row("variant:N", title=None, sort=_order(d) if len(d) else None, header=header)
    return chart.facet(row=row, title=title).resolve_scale(color="shared").properties(padding=PADDING)


def loss_chart(df: pd.DataFrame, tr) -> alt.FacetChart:
    """Loss per recorded step, one line per run, a panel per depth; log V and the chain's entropy as rules."""
    d = _named(_runs(df), tr)
    ceiling, floor = loss_bounds(d) if len(d) else (math.nan, math.nan)
    last = d[d["status"] == "ok"].groupby(["variant", "n_layers", "warmup", "seed"])["loss"].last()
    cross = [
        last.get((r.variant, r.n_layers, r.warmup, r.seed), ceiling) if r.status == "diverged" else math.nan
        for r in d.itertuples()
    ]
    d = d.assign(ceiling=ceiling, floor=floor, cross=cross)
    d = thin(d, RUN_KEYS)  # after `cross`: a run's last loss is its last measured one
    if "note" in d:  # a divergence's note, said in the learner's language (the CSV keeps the raw one)
        d = d.assign(note=[note_text(n, tr) for n in d["note"]])
    base = Chart()
    y = alt.Y("loss:Q", title=tr("depth.axis.loss"))
    lines = _run_lines(base.transform_filter("datum.status == 'ok'").mark_line(opacity=0.85), d, tr, y, "loss", ".3f")
    top = base.mark_rule(color="gray", strokeDash=[6, 4]).encode(y="mean(ceiling):Q")
    bottom = base.mark_rule(color="gray", strokeDash=[2, 2]).encode(y="mean(floor):Q")
    note = alt.Tooltip("note:N", title=tr("tip.note"))
    cross = (
        base.transform_filter("isValid(datum.cross)")
        .mark_point(shape="cross", size=160, color="#d62728", filled=True)
        .encode(x="step:Q", y="cross:Q", tooltip=["variant", "warmup", "seed", "step", note])
    )
    return _per_depth(alt.layer(lines, top, bottom, cross, data=d), tr, _title(tr, "loss", df))


def _color(d: pd.DataFrame, tr, **legend) -> alt.Color:
    sort = _order(d) if len(d) else None
    return alt.Color("variant:N", title=tr("depth.axis.variant"), sort=sort, legend=alt.Legend(**legend))


def _run_lines(mark: alt.Chart, d: pd.DataFrame, tr, y, field: str, fmt: str, *tooltip) -> alt.Chart:
    """A line per training run against the step: a colour per variant, a dash per warm-up, a line per seed."""
    return mark.encode(
        x=alt.X("step:Q", title=tr("depth.axis.step")),
        y=y,
        color=_color(d, tr, orient="bottom", columns=2, labelLimit=240),  # below the panels, which fill the column
        strokeDash=alt.StrokeDash(
            "warmup:N",
            title=tr("depth.axis.warmup"),
            legend=dash_legend(orient="bottom", direction="vertical"),
            scale=dash_scale(d.sort_values("warmup_steps")["warmup"] if "warmup_steps" in d else d.get("warmup", [])),
        ),
        detail="seed:N",
        tooltip=["variant", "warmup", "seed", "step", alt.Tooltip(f"{field}:Q", format=fmt), *tooltip],
    )


def grad_norm_chart(df: pd.DataFrame, tr) -> alt.FacetChart:
    """Global gradient norm (before clipping) per recorded step, clipping events as filled points."""
    d = _named(_runs(df), tr)
    d = d[(d["status"] == "ok") & (d["grad_norm"] > 0)].assign(clipped=lambda x: x["clipped"].astype(bool))
    d = thin(d, RUN_KEYS)
    base = Chart()
    y = decades_y("grad_norm", tr("depth.axis.grad_norm"), d["grad_norm"])
    lines = _run_lines(base.mark_line(opacity=0.8), d, tr, y, "grad_norm", ".3g", "clipped")
    events = (
        base.transform_filter("datum.clipped")
        .mark_point(filled=True, size=35)
        .encode(x="step:Q", y="grad_norm:Q", color=_color(d, tr))
    )
    layers = [lines, events]
    if len(d) and (d["clip"] > 0).any():
        layers.append(base.transform_filter("datum.clip > 0").mark_rule(color="#d62728").encode(y="mean(clip):Q"))
    return _per_depth(alt.layer(*layers, data=d), tr, _title(tr, "grad_norm", df))


def _per_depth(chart: alt.LayerChart, tr, title: alt.TitleParams) -> alt.FacetChart:
    """A panel per depth, two to a row."""
    depth = alt.Facet("n_layers:O", title=tr("depth.axis.n_layers"))
    return (
        chart.properties(height=240, width=300).facet(facet=depth, columns=2, title=title).properties(padding=PADDING)
    )


def outcomes_chart(df: pd.DataFrame, tr) -> alt.FacetChart:
    """How many runs of each variant trained, stalled or diverged, per depth and warm-up."""
    s = summarize(df)
    s = _named(s, tr).assign(outcome_label=lambda x: x["outcome"].map(lambda o: tr(f"depth.outcome.{o}")))
    scale = alt.Scale(domain=[tr(f"depth.outcome.{o}") for o in OUTCOME_COLORS], range=list(OUTCOME_COLORS.values()))
    color = alt.Color("outcome_label:N", title=tr("depth.axis.outcome"), scale=scale, legend=alt.Legend(labelLimit=300))
    bars = (
        Chart(s)
        .mark_bar()
        .encode(
            x=alt.X("count():Q", title=tr("depth.axis.runs"), axis=alt.Axis(tickMinStep=1)),
            y=alt.Y("variant:N", title=None, sort=_order(s) if len(s) else None, axis=alt.Axis(labelLimit=260)),
            color=color,
            tooltip=["variant", "n_layers", "warmup", "outcome_label", "count()"],
        )
        .properties(width=140)
    )
    return bars.facet(
        column=alt.Column("n_layers:O", title=tr("depth.axis.n_layers")),
        row=alt.Row("warmup:N", title=None),
        title=_title(tr, "outcomes", df),
    ).properties(padding=PADDING)
