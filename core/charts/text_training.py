"""Charts of training on the long-range page's real-text tab: the shipped models' training logs against bytes (with
the logs' copy probe) and against seconds, and a live race beside the shipped curves."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.charts.common import PADDING, Chart, dash_legend, dash_scale, device_subtitle, ok_rows, tips, title, titled
from core.charts.real_text import dashed_lines, measure_rows, model_color, seed_detail
from core.findings import text_training as findings

CURVES = ("heldout", "copy_first", "copy_repeat")  # the training curves drawn, solid, dashed, dotted
CURVES_FROM = 0.25  # the y range fits the curves from this share of training on; the first fall runs off the top


def _late_range(d: pd.DataFrame, along: str) -> alt.Scale:
    """A y scale that fits the curves from CURVES_FROM of the way along `along` on: the first fall runs off the top."""
    late = d[d[along] >= CURVES_FROM * d[along].max()]["bits_per_byte"]
    top = float(late.max()) + 0.2 if len(late) else float(d["bits_per_byte"].max())
    return alt.Scale(domain=[float(d["bits_per_byte"].min()) - 0.1, top], nice=False)


def curves_chart(df: pd.DataFrame, tr) -> alt.Chart | None:
    """The shipped models' held-out bits per byte against bytes trained on (solid) and the copy probe of their
    training logs, its first copy (dashed) and its second (dotted): a panel per model, a line per (seed, what)."""
    d = measure_rows(df, "train_curve")
    d = d[d["split"].isin(CURVES)] if len(d) else d
    if not len(d):
        return None
    order = [tr(f"long_range.text.curve.{k}") for k in CURVES]
    d = d.assign(what=d["split"].map(dict(zip(CURVES, order))), panel=d["model"].map(lambda m: tr(f"model.{m}")))
    x = alt.X("x:Q", title=tr("long_range.text.axis.bytes"), axis=alt.Axis(format="~s", tickCount=4))
    y = alt.Y("bits_per_byte:Q", scale=_late_range(d, "x"), title=tr("long_range.text.axis.bits"))
    tooltip = ["model", "seed", "what", "x", "seconds", "bits_per_byte"]
    line = dashed_lines(d, x, y, "what", order, [[1, 0], [6, 4], [2, 2]], tooltip, tr).mark_line(
        strokeWidth=1.5, clip=True
    )
    line = line.encode(color=model_color(d["model"], tr).legend(None))  # each panel is headed by its model
    panels = list(dict.fromkeys(d["panel"]))
    chart = line.properties(width=200, height=220).facet(
        column=alt.Column("panel:N", title=None, sort=panels, header=alt.Header(labelFontSize=12))
    )
    probe = int(d["probe"].dropna().iloc[0]) if "probe" in d and d["probe"].notna().any() else None
    sub = tr("long_range.text.chart.curves_sub", probe=f"{probe:,}" if probe else "?")
    return chart.properties(title=title(tr("long_range.text.chart.curves"), sub), padding=PADDING)


def time_chart(df: pd.DataFrame, tr) -> alt.Chart | None:
    """The shipped models' held-out bits per byte against their seconds of training, a line per (model, seed); a grey
    rule where each seed's fastest model ended, and a dot on each model's last reading by then
    (findings.equal_time)."""
    d = measure_rows(df, "train_curve")
    d = d[(d["split"] == "heldout") & d["seconds"].notna()] if len(d) else d
    if not len(d):
        return None
    x = alt.X(
        "seconds:Q",
        title=tr("long_range.text.axis.seconds"),
        axis=alt.Axis(format=",d"),
        scale=alt.Scale(domain=[0, float(d["seconds"].max())], nice=False),
    )
    y = alt.Y("bits_per_byte:Q", scale=_late_range(d, "seconds"), title=tr("long_range.text.axis.bits"))
    color = model_color(d["model"], tr)
    tooltip = tips(d, ["model", "seed", "seconds", "x", "bits_per_byte", "run"])
    layers = [
        Chart(d)
        .mark_line(strokeWidth=1.5, clip=True)
        .encode(x=x, y=y, color=color, detail=seed_detail(d), tooltip=tooltip)
    ]
    eq = findings.equal_time(d)
    fastest = ""
    if len(eq):
        fastest = tr(f"model.{eq['fastest'].iloc[0]}")
        ends = eq.drop_duplicates("seed")[["seed", "at"]].assign(label=tr("long_range.text.equal_time"))
        layers.append(
            Chart(ends).mark_rule(color="#888", strokeDash=[4, 3]).encode(x="at:Q", tooltip=["label", "seed", "at"])
        )
        layers.append(
            Chart(eq)
            .mark_point(size=70, filled=True, opacity=0.95)
            .encode(x="when:Q", y="bits:Q", color=color, tooltip=["model", "seed", "when", "bits", "total", "final"])
        )
    # no device line: the rows' device read the logs; the seconds are the training machine's (the caption says so)
    sub = tr("long_range.text.chart.time_sub", fastest=fastest)
    return titled(alt.layer(*layers), tr("long_range.text.chart.time"), sub, height=380)


def race_chart(race: pd.DataFrame, shipped: pd.DataFrame, tr) -> alt.Chart | None:
    """Held-out bits per byte against seconds of training: this race's models (solid) and, dashed, the shipped
    models' curves (the same models' first seed) over the same seconds."""
    r = ok_rows(race)
    r = r[r["heldout_bits"].notna()] if len(r) else r
    if not len(r):
        return None
    models = list(dict.fromkeys(r["model"]))
    parts = [
        pd.DataFrame(
            {
                "model": r["model"],
                "seconds": r["seconds"],
                "bits": r["heldout_bits"],
                "line": tr("long_range.race.run_race") + (" · " + r["run"] if "run" in r else ""),
                "step": r["step"],
            }
        )
    ]
    s = measure_rows(shipped, "train_curve") if shipped is not None and len(shipped) else pd.DataFrame()
    if len(s):
        s = s[(s["split"] == "heldout") & s["model"].isin(models) & (s["seed"] == s["seed"].min())]
        s = s[s["seconds"] <= max(r["seconds"].max() * 1.5, s["seconds"].min() + 1)]
        parts.append(
            pd.DataFrame(
                {
                    "model": s["model"],
                    "seconds": s["seconds"],
                    "bits": s["bits_per_byte"],
                    "line": tr("long_range.race.run_shipped"),
                    "step": None,
                }
            )
        )
    d = pd.concat(parts, ignore_index=True)
    x = alt.X("seconds:Q", title=tr("long_range.text.axis.seconds"))
    y = alt.Y("bits:Q", scale=alt.Scale(zero=False), title=tr("long_range.text.axis.bits"))
    dash = alt.StrokeDash(
        "line:N", title=None, legend=dash_legend(orient="bottom", labelLimit=400), scale=dash_scale(d["line"])
    )
    line = (
        Chart(d)
        .mark_line(point=True, strokeWidth=1.8)
        .encode(
            x=x,
            y=y,
            color=model_color(d["model"], tr),
            strokeDash=dash,
            detail="line:N",
            tooltip=[
                "model",
                "line",
                alt.Tooltip("seconds:Q", format=".1f"),
                alt.Tooltip("bits:Q", format=".3f"),
                "step",
            ],
        )
    )
    window = int(race["window"].iloc[0]) if "window" in race and len(race) else 0
    sub = [tr("long_range.race.chart_sub", window=f"{window:,}"), device_subtitle(r, tr)]
    return titled(line, tr("long_range.race.chart"), sub)
