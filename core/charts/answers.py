"""Charts of page 5: training time, speed-up over the loop (with Feng et al.'s GPU points), dependent steps, bytes
saved for backward, decoding memory (with the KV-cache formula) and time per token, and gradient reach."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.charts.common import (
    GREY,
    RUN_LEGEND,
    Chart,
    dash_legend,
    device_subtitle,
    log_x,
    log_y,
    ok_rows,
    run_style,
    tips,
    titled,
)
from core.findings.answers import FENG, FENG_N, amdahl
from core.harness.memory_formulas import kv_cache_bytes
from core.models import registry
from core.models.registry import ANSWERS, FORMS, n_heads_for

DASHES = [[6, 4], [1, 0], [2, 2], [1, 0]]  # loop dashed, scan solid, chunked dotted, a library kernel solid
REACH_FLOOR = 1e-12  # the reach chart's lowest gridline: a recurrence's decay runs on far below it
# ten mixers and four forms beside a half-width plot: small entries, so the legends fit the chart's height
LEGEND = alt.Legend(orient="right", labelLimit=160, labelFontSize=10, titleFontSize=10, symbolSize=40, rowPadding=0)
DASH_LEGEND = dash_legend(orient="right", labelLimit=160, labelFontSize=10, titleFontSize=10, rowPadding=0)
TALL = 340  # the charts whose legend lists all ten mixers need this height beside it


def _detail(d: pd.DataFrame) -> dict:
    """One line per run (live beside reference) where the rows say which run they are: your run bold, the reference
    thin (dashes say the form here)."""
    style = run_style(d)
    if style.pop("strokeDash", None) is not None:  # several runs: named by their points' shape, below the plot
        style["shape"] = alt.Shape("run:N", title=None, legend=alt.Legend(**RUN_LEGEND))
    return style


def _named(df: pd.DataFrame, tr, col: str = "mixer") -> pd.DataFrame:
    """The rows with a translated name per mixer (and per form), colours from the mixers' records."""
    known = df[df[col].isin(registry.names(ANSWERS))] if len(df) else df
    out = known.assign(name=[tr(f"model.{m}") for m in known[col]])
    if "form" in out:
        out = out.assign(form_name=[tr(f"answers.form.{f}") for f in out["form"]])
    return out


def mixer_color(mixers, tr, focus=None) -> alt.Color:
    """The `name` column coloured by each mixer's record, in the order of `mixers` (ids), with page 5's legend;
    with `focus` (ids), those first in their colours and every other mixer grey."""
    domain, colours = registry.colors(mixers)
    if focus is not None:
        first = [i for i, m in enumerate(domain) if m in focus] + [i for i, m in enumerate(domain) if m not in focus]
        domain = [domain[i] for i in first]
        colours = [colours[i] if domain[k] in focus else GREY for k, i in enumerate(first)]
    return alt.Color(
        "name:N",
        title=tr("answers.axis.mixer"),
        legend=LEGEND,
        scale=alt.Scale(domain=[tr(f"model.{m}") for m in domain], range=colours),
    )


def _color(df: pd.DataFrame, tr, col: str = "mixer", focus=None) -> alt.Color:
    return mixer_color(list(dict.fromkeys(df[col])), tr, focus)


def feng_pair(df: pd.DataFrame) -> set:
    """The mixers Feng et al. set against a traditional RNN (minGRU, minLSTM): the question's, in colour."""
    return (
        {m for m in dict.fromkeys(df["mixer"]) if m in registry.MODELS and registry.get(m).traditional}
        if len(df)
        else set()
    )


def _line(d: pd.DataFrame, tr, x, y, tooltip, color=None, **enc) -> alt.Chart:
    """A line with points per mixer (and run); grey while there are no rows to colour, unless `color` says."""
    color = color if color is not None else _color(d, tr) if len(d) else alt.value("#888")
    return Chart(d).mark_line(point=True).encode(x=x, y=y, color=color, **_detail(d), tooltip=tips(d, tooltip), **enc)


def _by_length(d: pd.DataFrame, tr, y: str, chart: str, subtitle: str, tooltip, axis: str = "") -> alt.Chart:
    """Lines coloured by mixer and dashed by form against the length; a second run (live beside reference) gets its
    own point shape."""
    dash = alt.StrokeDash(
        "form_name:N",
        title=tr("answers.axis.form"),
        legend=None,  # the subtitle says it: dashed = loop, dotted = chunked (no room for a second legend)
        scale=alt.Scale(domain=[tr(f"answers.form.{f}") for f in FORMS], range=DASHES),
    )
    x, y = log_x("seq_len", tr("answers.axis.seq_len")), log_y(y, tr(f"answers.axis.{axis or y}"))
    c = _line(d, tr, x, y, tooltip, _color(d, tr), strokeDash=dash)
    subtitle = [s for s in (subtitle, tr("answers.chart.form_dashes")) if s]
    return titled(c, tr(f"answers.chart.{chart}"), subtitle, height=TALL)


def time_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _named(ok_rows(df), tr)
    tooltip = ["name", "form_name", "seq_len", "train_ms", "train_iqr_ms", "run"]
    return _by_length(d, tr, "train_ms", "time", device_subtitle(d, tr), tooltip)


def speedup_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Each parallel form's speed-up over its own loop (solid, with the paired quartiles) and, for minGRU/minLSTM,
    over the traditional GRU/LSTM (dashed), with Feng et al.'s T4 points at n = 512 for that second ratio."""
    ok = _named(ok_rows(df), tr)
    own = ok[ok["speedup_vs_loop"].notna()] if len(ok) and "speedup_vs_loop" in ok else ok.iloc[:0]
    own = own.assign(speedup=own["speedup_vs_loop"], against=tr("answers.against.loop"))
    trad = ok[ok["vs_traditional"].notna()] if len(ok) and "vs_traditional" in ok else ok.iloc[:0]
    trad = trad.assign(speedup=trad["vs_traditional"], against=tr("answers.against.traditional"))
    d = pd.concat([own, trad], ignore_index=True)
    focus = feng_pair(d)  # the question's mixers in colour, drawn last: over the grey ones
    d = d.sort_values("mixer", key=lambda m: m.isin(focus), kind="stable") if len(d) else d
    x, y = log_x("seq_len", tr("answers.axis.seq_len")), log_y("speedup", tr("answers.axis.speedup"))
    against = [tr("answers.against.loop"), tr("answers.against.traditional")]  # solid, dashed: in every language
    scale = alt.Scale(domain=against, range=[[1, 0], [6, 4]])
    dash = alt.StrokeDash("against:N", title=tr("answers.axis.against"), legend=DASH_LEGEND, scale=scale)
    tooltip = ["name", "form_name", "against", "seq_len", "speedup", "speedup_q25", "speedup_q75", "run"]
    color = _color(d, tr, focus=focus or None) if len(d) else None
    lines = _line(d, tr, x, y, tooltip, color, strokeDash=dash)
    bars = Chart(own).mark_rule().encode(x=x, y="speedup_q25:Q", y2="speedup_q75:Q", color=color or _color(own, tr))
    feng = pd.DataFrame(
        {
            "seq_len": FENG_N,
            "speedup": list(FENG.values()),
            "name": [tr(f"model.{m}") for m in FENG],
            "source": tr("answers.against.feng"),
        }
    )
    points = (
        Chart(feng)
        .mark_point(shape="diamond", size=110, filled=True, color="#333")
        .encode(x=x, y=y, tooltip=["source", "name", "seq_len", "speedup"])
    )
    feng["label"] = [f"{n} {v:.0f}×" for n, v in zip(feng["name"], feng["speedup"])]
    labels = [
        Chart(feng.iloc[[i]])
        .mark_text(align="left", dx=9, dy=dy, fontSize=11, color="#333")
        .encode(x=x, y=y, text="label:N")
        for i, dy in enumerate((8, -8))
    ]
    chart = alt.layer(lines, bars, _one(), points, *labels)
    return titled(chart, tr("answers.chart.speedup"), tr("answers.chart.speedup_sub"), height=TALL)


def _one() -> alt.Chart:
    """A speed-up of 1 (no faster) as a dotted rule."""
    return Chart(pd.DataFrame({"speedup": [1.0]})).mark_rule(strokeDash=[2, 2], color="#555").encode(y="speedup:Q")


def amdahl_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Per parallel form timed alone: speed-up of the recurrence (dashed), of the whole step (solid), and
    Amdahl's ceiling, 1 ÷ the recurrence's share of the loop's step (dotted)."""
    a = amdahl(df)
    a = a[a["mixer"].isin(registry.names(ANSWERS))]
    what = {k: tr(f"answers.amdahl.{k}") for k in ("rec", "whole", "ceiling")}
    d = a.melt(
        id_vars=["mixer", "form", "seq_len", "share"], value_vars=list(what), var_name="measure", value_name="speedup"
    )
    d = d[d["speedup"].notna()]
    d = d.assign(
        name=[tr(f"model.{m}") for m in d["mixer"]],
        what=[what[k] for k in d["measure"]],
        share_pct=(100 * d["share"]).round(1),
    )
    x, y = log_x("seq_len", tr("answers.axis.seq_len")), log_y("speedup", tr("answers.axis.speedup"))
    dash = alt.StrokeDash(
        "what:N",
        title=tr("answers.axis.amdahl"),
        legend=DASH_LEGEND,
        scale=alt.Scale(domain=list(what.values()), range=[[6, 4], [1, 0], [2, 2]]),
    )
    c = _line(d, tr, x, y, ["name", "what", "seq_len", "speedup", "share_pct"], strokeDash=dash)
    sub = " · ".join(x for x in (tr("answers.chart.amdahl_sub"), device_subtitle(ok_rows(df), tr)) if x)
    return titled(c + _one(), tr("answers.chart.amdahl"), sub)


def steps_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _named(ok_rows(df), tr).drop_duplicates(["mixer", "form", "seq_len"])
    tooltip = ["name", "form_name", "seq_len", "seq_steps"]
    return _by_length(d, tr, "seq_steps", "steps", tr("answers.chart.steps_sub"), tooltip, axis="steps")


def memory_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _named(ok_rows(df), tr)
    d = d.assign(saved_mib=d["saved_bytes"] / 2**20) if len(d) else d.assign(saved_mib=[])
    tooltip = ["name", "form_name", "seq_len", "saved_mib", "run"]
    return _by_length(d, tr, "saved_mib", "memory", tr("answers.chart.memory_sub"), tooltip)


def decode_memory_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """Bytes kept per sequence vs the context, with the KV-cache formula for one layer of this width dashed."""
    d = _named(ok_rows(df), tr)
    x, y = log_x("context_len", tr("answers.axis.context")), log_y("state_bytes", tr("answers.axis.state_bytes"))
    base = _line(d, tr, x, y, ["name", "context_len", "state_bytes", "predicted_bytes", "run"])
    if not len(d):
        return titled(base, tr("answers.chart.decode_memory"))
    width = int(d["d_model"].iloc[0])
    heads = n_heads_for(width)
    ns = sorted(set(d["context_len"]))
    formula = pd.DataFrame(
        {
            "context_len": ns,
            "state_bytes": [kv_cache_bytes(1, heads, width // heads, n, 1, 4) for n in ns],
            "what": tr("answers.formula"),
        }
    )
    line = (
        Chart(formula)
        .mark_line(strokeDash=[6, 4], color="#1f77b4", opacity=0.6)
        .encode(x=x, y=y, tooltip=["what", "context_len", "state_bytes"])
    )
    text = (
        line.mark_text(align="right", dy=-8, color="#1f77b4")
        .encode(text="what:N")
        .transform_filter(alt.datum.context_len == ns[-1])
    )
    return titled(base + line + text, tr("answers.chart.decode_memory"), device_subtitle(d, tr))


def decode_time_chart(df: pd.DataFrame, tr) -> alt.Chart:
    d = _named(ok_rows(df), tr)
    x, y = log_x("context_len", tr("answers.axis.context")), log_y("ms_per_token", tr("answers.axis.ms_per_token"))
    c = _line(d, tr, x, y, ["name", "context_len", "ms_per_token", "ms_iqr", "run"])
    return titled(c, tr("answers.chart.decode_time"), device_subtitle(d, tr))


def reach_chart(df: pd.DataFrame, tr) -> alt.Chart:
    """‖∂y_T/∂x_(T−k)‖ per layer on a log axis down to REACH_FLOOR: a decaying line leaves it at the bottom, and
    exact zeros (beyond a window or a receptive field) cannot be drawn, so those lines end."""
    ok = ok_rows(df)
    d = ok[ok["grad_norm"] >= REACH_FLOOR] if len(ok) else ok
    d = d.assign(name=[tr(f"model.{m}") for m in d["model"]])
    scale = alt.Scale(type="log", domain=[REACH_FLOOR, float(d["grad_norm"].max()) if len(d) else 1], clamp=True)
    x = alt.X("distance:Q", title=tr("answers.axis.distance"))
    y = alt.Y("grad_norm:Q", title=tr("answers.axis.grad_norm"), scale=scale)
    tooltip = tips(d, ["name", "distance", "grad_norm", "run"])
    c = Chart(d).mark_line(clip=True).encode(x=x, y=y, color=_color(d, tr, "model"), **_detail(d), tooltip=tooltip)
    return titled(c, tr("answers.chart.reach"), tr("answers.chart.reach_sub"))
