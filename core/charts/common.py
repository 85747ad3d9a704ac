"""Pieces every chart shares: log axes, the colour of a model, the run (live or reference, and device) as dash."""

from __future__ import annotations

import re
import unicodedata

import altair as alt
import numpy as np
import pandas as pd

from core.terms.i18n import device_words

# Rows one chart draws at most: Altair refuses more than 5,000 (MaxRowsError)
MAX_ROWS = 4_000
# Chart.encode's keywords and their channels' classes
CHANNELS = {
    "x": alt.X,
    "y": alt.Y,
    "x2": alt.X2,
    "y2": alt.Y2,
    "color": alt.Color,
    "shape": alt.Shape,
    "size": alt.Size,
    "opacity": alt.Opacity,
    "strokeDash": alt.StrokeDash,
    "detail": alt.Detail,
    "tooltip": alt.Tooltip,
    "text": alt.Text,
    "order": alt.Order,
}


class Chart(alt.Chart):
    """alt.Chart that wraps each shorthand encoding string ('step:Q') in its channel class; the spec is the same.
    Altair looks a string up in a table of its whole schema, rebuilt each time (timing: docs/BENCHMARKS.md)."""

    def encode(self, *args, **encodings):
        def wrap(name, value):
            if isinstance(value, list | tuple):
                return [wrap(name, v) for v in value]
            return CHANNELS[name](value) if isinstance(value, str) and name in CHANNELS else value

        return super().encode(*args, **{name: wrap(name, value) for name, value in encodings.items()})


DASHES = ([1, 0], [6, 4], [2, 2], [8, 2, 2, 2], [4, 4])  # solid first: a chart's dashes in the order its rows give


def dash_scale(values) -> alt.Scale:
    """Dashes for `values` in the order given (the rows' order, the same in every language), not in the order of
    their translated names: a style means the same thing in English and in 中文."""
    values = list(dict.fromkeys(values))
    return alt.Scale(domain=values, range=[DASHES[i % len(DASHES)] for i in range(len(values))])


def dash_legend(**kw) -> alt.Legend:
    """A legend whose entries show their line's dash as a filled, opaque stroke symbol.
    Vega draws a dash-only entry of mark_line(point=True) as the point's symbol, with no colour."""
    return alt.Legend(
        symbolType="stroke",
        symbolStrokeWidth=2,
        symbolStrokeColor="#555",
        symbolFillColor="#555",
        symbolOpacity=1,
        symbolSize=300,
        **kw,
    )


def thin(df: pd.DataFrame, keys, x: str = "step", most: int = MAX_ROWS, per_series: int | None = None) -> pd.DataFrame:
    """At most about `most` rows (`per_series` per series of `keys`), evenly spaced along `x`, for drawing.
    Each series keeps its first and last rows and every row not 'ok'; nothing is averaged."""
    keys = [k for k in keys if k in df.columns]
    if not len(df) or x not in df.columns:
        return df
    groups = list(df.groupby(keys, sort=False, dropna=False)) if keys else [((), df)]
    cap = max(2, min(most // max(1, len(groups)), per_series or most))
    if all(len(g) <= cap for _, g in groups):
        return df
    kept = []
    for _, g in groups:
        g = g.sort_values(x, kind="stable")
        if len(g) > cap:
            picks = np.zeros(len(g), dtype=bool)
            picks[np.unique(np.linspace(0, len(g) - 1, cap).round().astype(int))] = True
            if "status" in g.columns:
                picks |= (g["status"] != "ok").to_numpy()
            g = g[picks]
        kept.append(g)
    return pd.concat(kept).sort_index()


def filled_points() -> alt.OverlayMarkDef:
    """The points a line of measured values is drawn through where they stand out (filled, larger)."""
    return alt.OverlayMarkDef(filled=True, size=60)


def log_x(field: str, title: str) -> alt.X:
    return alt.X(f"{field}:Q", scale=alt.Scale(type="log"), title=title)


def log_y(field: str, title: str) -> alt.Y:
    return alt.Y(f"{field}:Q", scale=alt.Scale(type="log"), title=title)


def _superscript(expr: str) -> str:
    """A Vega expression: the whole number `expr` written in superscript digits ('-8' → '⁻⁸')."""
    for plain, sup in zip("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"):
        expr = f"replace({expr}, regexp('{plain}', 'g'), '{sup}')"
    return expr


POWER_OF_TEN = "'10' + " + _superscript("'' + round(log(datum.value) / LN10)")  # a tick at 1e-8 reads 10⁻⁸


def decades_y(field: str, title: str, values) -> alt.Y:
    """A log y axis from the power of ten below `values` to the one above, with a tick and a grid line at every
    power of ten between, each labelled alike (10⁻⁸, 10⁻⁴, 10⁰): one grid step is a factor of ten, and 0.000001
    never stands beside 1e-8."""
    v = pd.Series(values, dtype=float)
    v = v[v > 0]
    lo, hi = (int(np.floor(np.log10(v.min()))), int(np.ceil(np.log10(v.max())))) if len(v) else (0, 1)
    hi = max(hi, lo + 1)
    # Vega ticks every power of ten when asked for as many ticks as the domain spans decades (no more)
    axis = alt.Axis(labelExpr=POWER_OF_TEN, tickCount=hi - lo, labelOverlap="parity")
    return alt.Y(f"{field}:Q", scale=alt.Scale(type="log", domain=[10.0**lo, 10.0**hi]), title=title, axis=axis)


SOURCE_WIDTH = {"live": 3.0, "uploaded": 2.0, "reference": 1.2}  # line widths: this session's run stands out
# dashes by source: your run solid, the reference dashed, an upload dotted; a second run of a source its next one
RUN_DASHES = {"live": ([1, 0], [8, 2]), "uploaded": ([2, 2], [1, 3]), "reference": ([6, 3], [3, 3], [8, 2, 2, 2])}
SOURCE_ORDER = ("live", "uploaded", "reference")  # the run legend's order: yours first
GREY = "#b8b8b8"  # the series beside the question's pair
RUN_LEGEND = {"orient": "bottom", "direction": "vertical", "labelLimit": 600}  # below the plot: room for devices


def run_style(d: pd.DataFrame, legend: bool = True, legend_orient: str = "bottom") -> dict:
    """Encodings that tell the runs drawn apart (a run: its source and device, the `run` column): your run solid and
    bold, the reference thin and dashed, an upload dotted, named in a legend below the plot where a long device name
    has room. One run: only a line per run (`detail`)."""
    if "run" not in d or not len(d):
        return {}
    if d["run"].nunique() < 2:
        return {"detail": "run:N"}
    firsts = d.drop_duplicates("run")
    if "source" in firsts:
        firsts = firsts.sort_values("source", key=lambda s: s.map(SOURCE_ORDER.index), kind="stable")
    sources = list(firsts["source"]) if "source" in firsts else ["reference"] * len(firsts)
    dashes = [RUN_DASHES[s][sources[:i].count(s) % len(RUN_DASHES[s])] for i, s in enumerate(sources)]
    scale = alt.Scale(domain=list(firsts["run"]), range=dashes)
    enc = {
        "detail": "run:N",
        "strokeDash": alt.StrokeDash(
            "run:N",
            title=None,
            scale=scale,
            legend=dash_legend(**{**RUN_LEGEND, "orient": legend_orient}) if legend else None,
        ),
    }
    if "source" in d and d["source"].nunique() > 1:
        scale = alt.Scale(domain=list(SOURCE_WIDTH), range=list(SOURCE_WIDTH.values()))
        enc["strokeWidth"] = alt.StrokeWidth("source:N", legend=None, scale=scale)
    return enc


RUN_LEGEND_ROW_PX = 20  # one entry of the run legend below the plot


def run_legend_px(chart) -> int:
    """The height the run legend below `chart`'s plot takes (run_style), so a chart fitted to its height keeps its
    plot's size; 0 without one."""
    layers = getattr(chart, "layer", alt.Undefined)
    if layers is not alt.Undefined:
        return max((run_legend_px(layer) for layer in layers), default=0)
    encoding = getattr(chart, "encoding", alt.Undefined)
    for channel in ("strokeDash", "shape"):
        enc = getattr(encoding, channel, alt.Undefined) if encoding is not alt.Undefined else alt.Undefined
        enc = enc.to_dict(validate=False) if hasattr(enc, "to_dict") else {}
        if isinstance(enc, dict) and (enc.get("legend") or {}).get("orient") == "bottom":
            runs = len(enc.get("scale", {}).get("domain", ())) or 2
            return RUN_LEGEND_ROW_PX * runs + 10
    return 0


def focus_color(d: pd.DataFrame, field: str, title: str, focus: dict | None, **legend) -> alt.Color:
    """Colour by `field`: the values in `focus` (value → colour, the question's pair) in theirs, every other value
    grey, the focus first in the legend; `focus` None: every value in the default scheme."""
    legend = {"labelLimit": 280, **legend}  # a long model name is read whole, not cut at Vega's 160 px
    if not focus:
        return alt.Color(f"{field}:N", title=title, legend=alt.Legend(**legend))
    shown = [v for v in focus if v in set(d[field])] if field in d else list(focus)
    others = [v for v in dict.fromkeys(d[field]) if v not in focus] if field in d else []
    scale = alt.Scale(domain=shown + others, range=[focus[v] for v in shown] + [GREY] * len(others))
    return alt.Color(f"{field}:N", title=title, scale=scale, legend=alt.Legend(**legend))


def lines(
    df: pd.DataFrame, x, y, color: str, color_title: str, dash: str = "run", tooltip=(), focus: dict | None = None
) -> alt.Chart:
    """Lines with points, one per (colour, run): `focus` (value → colour) in colour and the rest grey; your run solid
    and bold beside the reference (run_style)."""
    if focus and color in df:  # the question's pair drawn last: over the grey lines, not under them
        df = df.sort_values(color, key=lambda c: c.isin(list(focus)), kind="stable")
    enc = {"x": x, "y": y, "color": focus_color(df, color, color_title, focus)}
    enc["tooltip"] = list(tooltip) or [color, dash]
    if dash == "run":
        enc.update(run_style(df))
    elif dash in df.columns and df[dash].nunique() > 1:
        scale = dash_scale(df[dash])
        enc["strokeDash"] = alt.StrokeDash(f"{dash}:N", title=None, legend=dash_legend(**RUN_LEGEND), scale=scale)
    return Chart(df).mark_line(point=True).encode(**enc)


UNDER_WIDTH = 8  # px: a line another line covers is drawn this wide and pale beneath it, a band around the other


def covered(
    d: pd.DataFrame, x: str, y: str, by: list[str], tol: float, log: bool = False, panel: tuple[str, ...] = ()
) -> pd.Series:
    """Each row: whether its line (a group of `by`) is covered by a line drawn after it (later in the rows' order)
    in the same `panel`, which at each of its points has a point at the same x within `tol` in y (in decades if
    `log`)."""
    out = pd.Series(False, index=d.index)
    panel = tuple(p for p in panel if p in d)
    keys = [*panel, *(k for k in by if k in d and k not in panel)]
    if len(keys) == len(panel) or not len(d):
        return out
    v = d[[*keys, x, y]].dropna()
    v = v.assign(_y=np.log10(v[y].where(v[y] > 0)) if log else v[y]).dropna()
    groups = [(k, g) for k, g in v.groupby(keys, sort=False)]
    for i, (key, g) in enumerate(groups):
        mine = g.groupby(x)["_y"].mean()
        for other, later in groups[i + 1 :]:
            if other[: len(panel)] != key[: len(panel)]:
                continue
            theirs = later.groupby(x)["_y"].mean().reindex(mine.index)
            if theirs.notna().all() and ((mine - theirs).abs() <= tol).all():
                out[g.index] = True
                break
    return out


def under_band(chart: alt.Chart, **encoding) -> alt.Chart:
    """`chart`'s rows with `covered` true as a wide pale line, layered under the lines: a line another covers is seen
    as a band around the one drawn over it."""
    band = chart.transform_filter("datum.covered").mark_line(strokeWidth=UNDER_WIDTH, opacity=0.45, strokeCap="round")
    color = encoding.get("color")
    if isinstance(color, alt.Color):  # the legend both layers share keeps its symbols opaque, not the band's pale
        legend = color.to_dict().get("legend", {})
        if legend is not None:
            encoding["color"] = color.legend(**{**legend, "symbolOpacity": 1})
    return band.encode(**encoding)


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The measured rows (status 'ok'); rows that carry no status, all of them."""
    return df[df["status"] == "ok"] if "status" in df and len(df) else df


def tips(d: pd.DataFrame, fields) -> list[str]:
    """The tooltip fields the rows have (a frame without a `run` column comes from the CLI, not a page)."""
    return [f for f in fields if f in d]


SUBTITLE_WIDTH = 72  # Latin characters per subtitle line of a half-width chart (CJK counts two)
TITLE_WIDTH = 54  # the same for the title's larger, bold letters
TITLE_LINE_PX, SUBTITLE_LINE_PX = 20, 14  # the house title's and subtitle's line heights
# room above the title: a guide's label above the plot ("∝ n^2") would push the title's top off
PADDING = {"left": 0, "right": 0, "top": 14, "bottom": 0}


def _width(text: str) -> int:
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _wrap(text: str, width: int) -> list[str]:
    """`text` in lines of at most `width` (_width), broken between words, or between any two CJK characters."""
    lines, line = [], ""
    for token in re.findall(r"[\u2e80-\u9fff\uff00-\uffef]|[^\s\u2e80-\u9fff\uff00-\uffef]+|\s+", text):
        if line and not token.isspace() and _width(line + token) > width:
            lines.append(line.rstrip())
            line = ""
        line += "" if token.isspace() and not line else token
    return [*lines, line.rstrip()] if line.strip() else lines


def subtitle_lines(subtitle) -> list[str]:
    """A subtitle as lines that fit, broken preferably between devices (' | '), else at spaces."""
    out = []
    for given in [subtitle] if isinstance(subtitle, str) else subtitle:
        line = ""
        for part in given.split(" | "):
            joined = f"{line} | {part}" if line else part
            if _width(joined) <= SUBTITLE_WIDTH:
                line = joined
                continue
            if line:
                out.append(line + " |")
            *full, line = _wrap(part, SUBTITLE_WIDTH) or [""]
            out += full
        out.append(line)
    return out


def title(text: str, subtitle="") -> alt.TitleParams:
    """The house title, anchored left, with its subtitle; both wrapped to fit a half-width chart."""
    wrapped = (
        {"text": _wrap(text, TITLE_WIDTH), "lineHeight": TITLE_LINE_PX}
        if _width(text) > TITLE_WIDTH
        else {"text": text}
    )
    return alt.TitleParams(anchor="start", **wrapped, **({"subtitle": subtitle_lines(subtitle)} if subtitle else {}))


def titled(chart: alt.Chart, text: str, subtitle="", height: int = 300) -> alt.Chart:
    """`chart` with the house title and `height` pixels for a one-line title and subtitle.
    Each extra wrapped title line is added to the height, so the plot keeps its size."""
    head = title(text, subtitle)
    lines = head.to_dict()
    extra = TITLE_LINE_PX * (len(lines["text"]) - 1 if isinstance(lines["text"], list) else 0)
    extra += SUBTITLE_LINE_PX * max(len(lines.get("subtitle", [])) - 1, 0)
    extra += run_legend_px(chart)
    return chart.properties(title=head, height=height + extra + PADDING["top"], padding=PADDING)


def chance_rule(d: pd.DataFrame, tip: str, axis: str = "y") -> alt.Chart:
    """Chance (the rows' `chance_pct`) as a dashed grey rule across the plot."""
    mean = alt.Tooltip("mean(chance_pct):Q", title=tip)
    return Chart(d).mark_rule(strokeDash=[4, 4], color="gray").encode(**{axis: "mean(chance_pct):Q"}, tooltip=[mean])


def device_subtitle(df: pd.DataFrame, tr=None) -> str:
    """The devices of a chart's rows, their thread counts in the page's language when `tr` is given (core writes
    'cpu · Intel Xeon · 2 threads' in English; the CSV keeps it so)."""
    if "device" not in df.columns or not len(df):
        return ""
    labels = dict.fromkeys(df["device"].astype(str))
    return " | ".join(labels if tr is None else dict.fromkeys(device_words(x, tr) for x in labels))
