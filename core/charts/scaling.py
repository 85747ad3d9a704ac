"""The serial page's thread-scaling chart: speed-up over 1 thread against threads (log₂), one line per model, the
paired quartiles as bars, the ideal line, and Amdahl's law fitted to each model dashed."""

from __future__ import annotations

import altair as alt
import pandas as pd

from core.charts.common import Chart, dash_legend, device_subtitle, filled_points, titled
from core.findings import bracketed
from core.findings import scaling as findings
from core.models.registry import colors

LINE_STYLES = {"measured": [1, 0], "fit": [6, 4], "ideal": [2, 2]}  # each style's dash, in the legend's order


def speedup_chart(df: pd.DataFrame, tr, seq_len: int | None = None) -> alt.Chart:
    """Speed-ups at one length (default: the longest measured); a run column, when present, sets the point shape."""
    d = findings.measured(df)
    if len(d):
        seq_len = int(d["seq_len"].max()) if seq_len is None else seq_len
        d = d[d["seq_len"] == seq_len]
    by = ["run"] if "run" in d.columns and d["run"].nunique() > 1 else []  # a shape per run only when there are two
    fitted = findings.curves(d)
    top = float(max(fitted["threads"].max() if len(fitted) else 1, d["threads"].max() if len(d) else 1, 2))
    ideal = pd.DataFrame({"threads": [1.0, top], "speedup": [1.0, top]})
    domain, palette = colors(d["model"]) if len(d) else ([], [])
    # the legend and tooltips name each model as every other chart does ('LSTM (fused)', not 'lstm'); colours by id
    domain = [findings.name(m, tr) for m in domain]
    d, fitted = (f.assign(model=[findings.name(m, tr) for m in f["model"]]) if len(f) else f for f in (d, fitted))
    x = alt.X("threads:Q", scale=alt.Scale(type="log", base=2), title=tr("serial.scaling.axis.threads"))
    y = alt.Y("speedup:Q", scale=alt.Scale(type="log", base=2), title=tr("serial.scaling.axis.speedup"))
    color = alt.Color("model:N", title=tr("serial.axis.model"), scale=alt.Scale(domain=domain, range=palette))
    shape = alt.Shape("run:N", title=None, legend=alt.Legend(orient="right", labelLimit=240)) if by else alt.Undefined
    runs = [f"{c}:N" for c in by]
    tips = [
        "model:N",
        "seq_len:Q",
        "threads:Q",
        "threads_requested:Q",
        "speedup:Q",
        "speedup_q25:Q",
        "speedup_q75:Q",
        "efficiency:Q",
        "train_ms:Q",
        *runs,
    ]
    # what each line style is, named in a legend of its own: measured solid, the fit dashed, the ideal dotted
    styles = {k: tr(f"serial.scaling.style.{k}", threads=f"{top:g}") for k in LINE_STYLES}
    d, fitted, ideal = (f.assign(style=styles[k]) for f, k in ((d, "measured"), (fitted, "fit"), (ideal, "ideal")))
    legend = dash_legend(title=None, orient="bottom", direction="vertical", labelLimit=400)  # the models' go right
    scale = alt.Scale(domain=list(styles.values()), range=list(LINE_STYLES.values()))
    dash = alt.StrokeDash("style:N", scale=scale, legend=legend)
    line = (
        Chart(ideal)
        .mark_line(color="gray")
        .encode(x=x, y=y, strokeDash=dash, tooltip=[alt.Tooltip("threads:Q", title=tr("serial.scaling.ideal"))])
    )
    points = Chart(d).mark_line(point=filled_points())
    points = points.encode(
        x=x, y=y, color=color, shape=shape, strokeDash=dash, detail=runs or alt.Undefined, tooltip=tips
    )
    bars = Chart(d).mark_rule().encode(x=x, y=alt.Y("speedup_q25:Q"), y2="speedup_q75:Q", color=color)
    tip = ["model:N", alt.Tooltip("speedup:Q", format=".2f"), alt.Tooltip("threads:Q", format=".3g"), *runs]
    curve = Chart(fitted).mark_line(opacity=0.8)
    curve = curve.encode(x=x, y=y, color=color, strokeDash=dash, detail=runs or alt.Undefined, tooltip=tip)
    title = tr("serial.scaling.chart.title", T=seq_len if seq_len is not None else "–")
    return titled(line + curve + bars + points, title, device_subtitle(d, tr))


def fits_table(df: pd.DataFrame, tr) -> pd.DataFrame:
    """The fits as the page shows them: fraction with its error or range, and the GPU extrapolation, labelled."""
    f = findings.fits(df)
    keep = [c for c in ("run",) if c in f.columns]
    gpu = [
        "–"
        if pd.isna(r["gpu_speedup_extrapolated"])
        else f"{r['gpu_speedup_extrapolated']:.3g}×"
        + bracketed(f"{r['gpu_speedup_lo']:.3g}–{r['gpu_speedup_hi']:.3g}", tr)
        for _, r in f.iterrows()
    ]
    out = pd.DataFrame(
        {
            "model": [findings.name(m, tr) for m in f["model"]],
            "seq_len": f["seq_len"].astype(int),
            "serial_fraction": [findings.fraction_text(r, tr) for _, r in f.iterrows()],
            "gpu": gpu,
            "fit_flag": [tr(f"serial.scaling.flag.{x or 'none'}") for x in f["fit_flag"]],
            **{c: f[c] for c in keep},
        }
    )
    return out.rename(columns={c: tr(f"serial.scaling.col.{c}") for c in out.columns})
