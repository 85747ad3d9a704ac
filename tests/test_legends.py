"""What a learner walking pages 1–5 reads beside each chart (#58): every legend entry is a line one can see, every
line style is named where the chart is, and a page's text says only what its charts show.

- A line another covers (LSTM + attention under the Transformer at 100%, naive attention under sdpa · math) is
  drawn as a pale band beneath it (core.charts.common.covered), and the subtitle says what the band is.
- A page's panels and takeaways follow the tasks' order in every language, not the sorted order of their names.
- Thread scaling names its three line styles: measured, Amdahl's law fitted (not measured), the ideal.
- Each log axis of the depth page labels its ticks alike, at every power of ten (10⁻⁸, not 0.000001 beside 1e-8).
- A fitted exponent with a wide spread says so where it is read.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from core.charts import attention_cost as ac_charts
from core.charts import common
from core.charts import depth as depth_charts
from core.charts import long_range as lr_charts
from core.charts import scaling as scaling_charts
from core.findings import attention_cost as ac_findings
from core.findings import long_range as lr_findings
from core.store.results import load_reference
from core.terms.i18n import catalogue, translator
from core.terms.rules import EXPONENT_SPREAD

LANGS = ("en", "zh")


def _layers(spec: dict) -> list[dict]:
    """Every unit spec in a Vega-Lite spec (inside layers, facets and concatenations)."""
    out = [spec] if "mark" in spec else []
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in spec.get(key, []):
            out += _layers(child)
    if isinstance(spec.get("spec"), dict):
        out += _layers(spec["spec"])
    return out


def _reference(name: str) -> pd.DataFrame:
    df, problems = load_reference(name)
    assert not problems and len(df)
    return df.assign(source="reference", run=df["device"])  # a run per device, as shown_data names them


def test_covered_finds_the_line_drawn_under_another_in_its_own_panel_only():
    rows = pd.DataFrame(
        {
            "panel": ["a"] * 6 + ["b"] * 2,
            "line": ["x", "x", "y", "y", "z", "z", "w", "w"],
            "n": [1, 2, 1, 2, 1, 2, 1, 2],
            "v": [100.0, 100.0, 99.5, 100.0, 40.0, 10.0, 100.0, 100.0],
        }
    )
    got = common.covered(rows, "n", "v", ["line"], 1.0, panel=("panel",))
    # x lies under y (drawn after it); y is drawn last in its panel; z stands apart; w is alone in panel b
    assert list(rows[got]["line"].unique()) == ["x"]
    logs = pd.DataFrame({"line": ["p", "p", "q", "q"], "n": [1, 2, 1, 2], "v": [1.0, 1e6, 1.2, 1.1e6]})
    assert common.covered(logs, "n", "v", ["line"], 0.1, log=True).tolist() == [True, True, False, False]
    assert not common.covered(logs, "n", "v", ["line"], 0.01, log=True).any()


@pytest.mark.parametrize("lang", LANGS)
def test_every_model_in_page_2s_legend_is_seen_and_its_panels_keep_their_order(lang):
    tr = translator(lang)
    ref = _reference("long_range")
    spec = lr_charts.accuracy_chart(ref, tr).to_dict()
    rows = pd.DataFrame(spec["datasets"][spec["data"]["name"]])
    layers = _layers(spec)
    band = [u for u in layers if u["mark"].get("strokeWidth") == common.UNDER_WIDTH]
    assert band and band[0]["transform"] == [{"filter": "datum.covered"}]
    assert band[0]["encoding"]["color"]["legend"]["symbolOpacity"] == 1  # the legend is drawn, not pale
    legend = next(u for u in layers if "point" in u["mark"])["encoding"]["color"]["scale"]["domain"]
    assert set(legend) == set(rows["model"]) and "lstm_attention" in legend
    for model in legend:  # a legend entry is a line in view, or a band around the line that covers it
        mine = rows[rows["model"] == model]
        assert len(mine) and (not mine["covered"].all() or model in set(rows[rows["covered"]]["model"]))
    assert rows.loc[rows["model"] == "lstm_attention", "covered"].all()  # at 100% beside the Transformer
    assert tr("chart.under_band") in " ".join(spec["title"]["subtitle"])
    names = [tr(f"long_range.task.{t}") for t in lr_findings.TASK_ORDER]
    assert spec["facet"]["column"]["sort"] == names  # recall, then multi-query recall, in 中文 as in English


@pytest.mark.parametrize("lang", LANGS)
def test_page_2s_first_takeaway_answers_its_own_question(lang):
    tr = translator(lang)
    ref = _reference("long_range")
    said = lr_findings.answering(ref, tr)
    recall = tr("long_range.task.recall")
    assert said and said[0].startswith(tr("long_range.take.contrast").split("{")[0]) and recall in said[0]
    assert all(line in lr_findings.takeaways(ref, tr) for line in said)
    assert not any("O(n)" in line for line in said)  # the gradients' path length is the other tab's reason


@pytest.mark.parametrize("lang", LANGS)
def test_naive_attention_is_seen_under_sdpa_math(lang):
    tr = translator(lang)
    spec = ac_charts.memory_chart(_reference("attention_cost"), tr, "peak_bytes").to_dict()
    bands = [u for u in _layers(spec) if u["mark"].get("strokeWidth") == common.UNDER_WIDTH]
    assert bands
    data = next(f for f in map(pd.DataFrame, spec["datasets"].values()) if "covered" in f)
    naive = ac_charts.impl_label({"impl": "naive"}, tr)
    assert data.loc[data["label"] == naive, "covered"].all()
    subtitle = " ".join(spec["title"]["subtitle"])
    assert tr("chart.under_band") in subtitle and "{" not in subtitle


@pytest.mark.parametrize("lang", LANGS)
def test_the_memory_guard_and_an_exponents_spread_are_explained_where_they_are_read(lang):
    tr = translator(lang)
    guard = {"en": "memory guard", "zh": "内存保护"}[lang]
    assert guard in tr("attention_cost.chart.refused_sub") and "%" in tr("attention_cost.chart.refused_sub")
    assert guard in tr("attention_cost.glossary").lower()
    ref = _reference("attention_cost")
    quiet = ac_findings.takeaways(ref, tr)[0]
    assert f"{EXPONENT_SPREAD:.2f}" not in quiet
    noisy = ref.copy()
    busy = (noisy["impl"] == "naive") & (noisy["seq_len"] == 4096)
    noisy.loc[busy, "time_ms"] *= 4  # the middle of the three longest lengths, off the line
    line = ac_findings.takeaways(noisy, tr)[0]
    assert f"{EXPONENT_SPREAD:.2f}" in line and tr("attention_cost.spread.time") in line.split("±")[-1]


@pytest.mark.parametrize("lang", LANGS)
def test_thread_scalings_legend_names_the_fit_and_the_ideal(lang):
    tr = translator(lang)
    spec = scaling_charts.speedup_chart(_reference("scaling"), tr).to_dict()
    dashes = [u["encoding"]["strokeDash"] for u in _layers(spec) if "strokeDash" in u.get("encoding", {})]
    assert len(dashes) == 3  # the measured lines, the fitted curves, the ideal diagonal
    scale = dashes[0]["scale"]
    assert all(d["scale"] == scale and d["field"] == "style" for d in dashes)
    assert scale["range"] == list(scaling_charts.LINE_STYLES.values())
    top = max(max(u.get("threads", 0) for u in rows) for rows in spec["datasets"].values())
    fit = tr("serial.scaling.style.fit", threads=f"{float(top):g}")
    assert scale["domain"][1] == fit and "{" not in fit and f"{float(top):g}" in fit
    for unit in _layers(spec):  # the rows of each layer carry the style their legend entry names
        if "strokeDash" in unit.get("encoding", {}):
            styles = set(pd.DataFrame(spec["datasets"][unit["data"]["name"]])["style"])
            assert len(styles) == 1 and styles <= set(scale["domain"])


def test_the_depth_pages_log_axes_tick_every_power_of_ten_labelled_alike():
    tr = translator("en")
    ref = _reference("depth")
    for chart in (depth_charts.init_layers_chart(ref, tr, 16), depth_charts.first_layer_chart(ref, tr)):
        spec = chart.to_dict()
        y = next(u for u in _layers(spec))["encoding"]["y"]
        lo, hi = y["scale"]["domain"]
        decades = round(math.log10(hi / lo))
        assert y["axis"]["tickCount"] == decades and y["axis"]["labelExpr"] == common.POWER_OF_TEN
        assert y["scale"]["type"] == "log" and "format" not in y["axis"]


def test_page_5s_time_charts_name_their_dashes_and_its_intro_does_not():
    for lang in LANGS:
        said = catalogue(lang)
        assert not any(w in said["answers.speed.intro"] for w in ("Dashed", "dotted", "虚线", "点线"))
        assert "$" in said["answers.claim"]  # the recurrence as math, not raw text
    from core.charts import answers as answers_charts

    spec = answers_charts.time_chart(_reference("answers_speed"), translator("zh")).to_dict()
    assert translator("zh")("answers.chart.form_dashes") in spec["title"]["subtitle"]
