"""Each measuring page drawn whole (AppTest, reference data): what its session keeps, and what its legends show.

What a visitor's session keeps once its page is drawn: no table of results.

Streamlit keeps a session (a closed tab's too, for server.disconnectedSessionTTL, 120 s by default) and with it its
widgets, and a widget keeps the functions it was given (a format_func, a callback). A function defined in a page's
script holds that script's whole namespace, so every frame the page built at top level (17,110 rows of depth data,
~12 MiB per session) stayed alive with the session: ten depth visitors grew the server by 129 MiB
(scripts/bench_memory.py). Pages hand widgets functions defined outside them (ui, core), so a drawn page leaves no
DataFrame behind.

Every dash is given by an explicit scale in the rows' order, so a line keeps its dash in English and in 中文 (Vega
gives dashes out in the sorted order of the labels, which differs between the languages). Every dash legend shows
its dashes: Vega draws a legend entry of a line drawn with points as the point's symbol,
which for a dash-only encoding has no colour, so the Amdahl chart's and the speed-up chart's legends (and others)
showed labels beside nothing. core.charts.common.dash_legend gives each a filled, opaque stroke symbol.

Every chart gives each of its rows the same colour, dash, shape, width and panel in English and in 中文 (#58): page
2's panels, sorted by their translated names, stood the other way round in 中文, and the checkpointed-BPTT chart
swapped its two forms' colours.

Every chart title and subtitle fits its chart: Vega cuts a line too long for a half-width chart off with "…" (the
device a chart measured on, the end of a title), so core.charts.common.title wraps them; and each has room above its
title (core.charts.common.PADDING), which a guide's label drawn over the plot would otherwise push off the top.
"""

from __future__ import annotations

import gc
import json
import re

import pandas as pd
import pytest
from conftest import app_test

pytestmark = pytest.mark.slow  # five whole pages drawn with their reference charts


def _dash_legends(spec) -> list[dict]:
    """Every strokeDash encoding's legend in a Vega-Lite spec (layers included); {} for Vega-Lite's default."""
    found = []
    if isinstance(spec, dict):
        dash = spec.get("encoding", {}).get("strokeDash")
        if isinstance(dash, dict) and dash.get("legend", {}) is not None:
            found.append(dash.get("legend", {}))
        for v in spec.values():
            found += _dash_legends(v)
    elif isinstance(spec, list):
        for v in spec:
            found += _dash_legends(v)
    return found


def _dashes_by_name(spec) -> list[str]:
    """Every strokeDash encoding (layers included) whose dashes Vega would give out in the sorted order of its
    values: a translated label sorts differently in 中文, so the same line would change its dash with the language."""
    found = []
    if isinstance(spec, dict):
        dash = spec.get("encoding", {}).get("strokeDash")
        if isinstance(dash, dict) and "field" in dash and not (dash.get("scale") or {}).get("range"):
            found.append(str(dash.get("field")))
        for key, v in spec.items():
            if key != "datasets":
                found += _dashes_by_name(v)
    elif isinstance(spec, list):
        for v in spec:
            found += _dashes_by_name(v)
    return found


def _title_lines_too_long(spec: dict) -> list[str]:
    """The lines of a chart's title and subtitle wider than charts.common allows (a single word excepted)."""
    from core.charts.common import SUBTITLE_WIDTH, TITLE_WIDTH, _width

    t = spec.get("title") or {}
    t = {"text": t} if isinstance(t, str) else t
    found = []
    for key, width in (("text", TITLE_WIDTH), ("subtitle", SUBTITLE_WIDTH)):
        lines = t.get(key) or []
        for line in [lines] if isinstance(lines, str) else lines:
            if _width(line) > width and " " in line.strip():
                found.append(line)
    return found


LEGEND_PX_PER_CHAR = 5.6  # a legend label's letters at Vega's 10 px font (~0.55 em each), a CJK character two
LEGEND_LIMIT = 160  # Vega's default labelLimit, in px: a longer label is cut off with "…"


def _legend_labels_too_long(chart) -> list[str]:
    """The legend labels of a drawn chart (each value of a field a legend lists, named by its labelExpr if any) that
    Vega would cut off at their legend's labelLimit."""
    import pyarrow as pa

    from core.charts.common import _width

    spec = json.loads(chart.proto.spec)
    frames = {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in chart.proto.datasets}
    found = []

    def walk(node, data: str | None = None):
        if isinstance(node, list):
            for v in node:
                walk(v, data)
        if not isinstance(node, dict):
            return
        data = (node.get("data") or {}).get("name", data) if isinstance(node.get("data"), dict) else data
        frame = frames.get(data, pd.DataFrame())
        for channel, enc in (node.get("encoding") or {}).items():
            if channel not in ("color", "strokeDash", "shape", "opacity", "size") or not isinstance(enc, dict):
                continue
            if "field" not in enc or "legend" in enc and enc["legend"] is None:
                continue
            legend = enc.get("legend") or {}
            pairs = re.findall(r'datum\.label === ("[^"]*") \? ("[^"]*")', legend.get("labelExpr", ""))
            names = {json.loads(k): json.loads(v) for k, v in pairs}  # JSON strings: a CJK name is escaped
            field = enc["field"].split(":")[0]
            domain = (enc.get("scale") or {}).get("domain") or (
                frame[field].dropna().unique() if field in frame else ()
            )
            limit = legend.get("labelLimit", LEGEND_LIMIT)
            found.extend(
                label for v in domain if _width(label := names.get(str(v), str(v))) * LEGEND_PX_PER_CHAR > limit
            )
        for v in node.values():
            walk(v, data)

    walk(spec)
    return found


STYLED = ("color", "strokeDash", "shape", "strokeWidth", "opacity", "size", "column", "row", "facet")


def _styles(chart) -> list[tuple[str, list]]:
    """Each styled channel of a drawn chart (its layers, and its facet's panels), as the style every row of its data
    gets: the scale's range at the row's place in its domain, or that place (a scheme's colour, a panel's position),
    in the sorted order of the values where no domain or sort is given, as Vega gives them out."""
    import pyarrow as pa

    spec = json.loads(chart.proto.spec)
    frames = {d.name: pa.ipc.open_stream(d.data.data).read_pandas() for d in chart.proto.datasets}
    found = []

    def style(enc: dict, values: pd.Series) -> list:
        scale, sort = enc.get("scale") or {}, enc.get("sort")
        order = scale.get("domain") or (sort if isinstance(sort, list) else None)
        order = list(order) if order is not None else sorted(values.dropna().astype(str).unique())
        place = [order.index(v) if v in order else None for v in values.astype(str)]
        styles = scale.get("range")
        return [p if p is None or not isinstance(styles, list) else styles[p % len(styles)] for p in place]

    def walk(node, data: str | None, path: str):
        if isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, data, f"{path}/{i}")
        if not isinstance(node, dict):
            return
        data = (node.get("data") or {}).get("name", data) if isinstance(node.get("data"), dict) else data
        frame = frames.get(data, pd.DataFrame())
        channels = dict(node.get("encoding") or {})
        facet = node.get("facet")
        if isinstance(facet, dict):  # .facet(column=…) or .facet(facet=…)
            channels.update(facet if "field" not in facet else {"facet": facet})
        for channel, enc in channels.items():
            if channel in STYLED and isinstance(enc, dict) and enc.get("type") in ("nominal", "ordinal"):
                field = str(enc.get("field", "")).split(":")[0]
                if field in frame:
                    found.append((f"{path}/{channel}:{field}", style(enc, frame[field])))
        for key, v in node.items():
            if key not in ("datasets", "encoding", "facet", "data"):
                walk(v, data, f"{path}/{key}")

    walk(spec, None, "")
    return found


def _frames() -> list[pd.DataFrame]:
    gc.collect()
    return [o for o in gc.get_objects() if isinstance(o, pd.DataFrame) and len(o) >= 20]


def _strict_json(spec: str, fmt: str) -> bytes:
    """In place of ui.data._export: what vl-convert would be handed must be JSON it can read (no NaN)."""
    json.loads(spec, parse_constant=lambda name: pytest.fail(f"a chart's {fmt.upper()} export spec holds {name}"))
    return b""


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("page", ["serial", "long_range", "depth", "attention_cost", "answers"])
def test_a_drawn_page_leaves_no_table_in_its_session_and_its_dash_legends_show_dashes(page, lang, monkeypatch):
    from streamlit.runtime.media_file_manager import MediaFileManager

    import ui.data

    exports, real = [], MediaFileManager.add_deferred

    def kept(self, data_callable, *args, file_name=None, **kw):  # each chart's PNG and SVG download, made on click
        exports.append((file_name, data_callable))
        return real(self, data_callable, *args, file_name=file_name, **kw)

    monkeypatch.setattr(MediaFileManager, "add_deferred", kept)
    monkeypatch.setattr(ui.data, "_export", _strict_json)
    before = {id(f): f for f in _frames()}  # another test's (a cache of reference rows in this worker): not the page's
    at = app_test(default_timeout=120)
    at.query_params["lang"] = lang
    at.run()
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception, at.exception
    # every chart but an instant view's (redrawn at every slider move, it offers no download)
    charts = sum(not json.loads(c.proto.spec).get("usermeta", {}).get("instant") for c in at.get("vega_lite_chart"))
    assert sorted(name.rsplit(".", 1)[1] for name, _ in exports) == sorted(["png", "svg"] * charts)
    for _, export in exports:  # the depth heat map's and the attention memory chart's failed with NaN in them
        export()
    exports.clear()
    legends = [leg for c in at.get("vega_lite_chart") for leg in _dash_legends(json.loads(c.proto.spec))]
    blank = [leg for leg in legends if leg.get("symbolType") != "stroke" or leg.get("symbolOpacity") != 1]
    assert not blank, f"{len(blank)} of the {page} page's {len(legends)} dash legends draw no dash: {blank[:3]}"
    sorted_dashes = [f for c in at.get("vega_lite_chart") for f in _dashes_by_name(json.loads(c.proto.spec))]
    assert not sorted_dashes, f"the {page} page's dashes follow the sorted names of {sorted_dashes}, not the rows"
    long = [line for c in at.get("vega_lite_chart") for line in _title_lines_too_long(json.loads(c.proto.spec))]
    assert not long, f"the {page} page's chart titles hold lines Vega would cut off with '…': {long[:3]}"
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    cut = sorted({label for c in at.get("vega_lite_chart") for label in _legend_labels_too_long(c)})
    assert not cut, f"the {page} page's legends hold labels Vega would cut off with '…': {cut[:5]}"
    bare = [str(sp["title"])[:60] for sp in specs if sp.get("title") and sp.get("padding", {}).get("top", 0) < 10]
    assert not bare, f"titles without room above them (a label over the plot pushes them off the top): {bare[:3]}"
    kept = [f"{len(f)} rows × {', '.join(map(str, f.columns[:4]))}…" for f in _frames() if id(f) not in before]
    assert not kept, f"the session of a drawn {page} page still holds {len(kept)} table(s): {kept[:5]}"
    del at


@pytest.mark.parametrize("page", ["serial", "long_range", "depth", "attention_cost", "answers"])
def test_every_legend_styles_its_lines_alike_in_english_and_chinese(page):
    """Each chart's colours, dashes, shapes, widths and panels give every row the same style in English and in 中文:
    a legend's line styles mean the same thing in both languages (a style handed out in the sorted order of the
    translated names would not)."""
    drawn = {}
    for lang in ("en", "zh"):
        at = app_test(default_timeout=120)
        at.query_params["lang"] = lang
        at.run()
        at.switch_page(f"pages/{page}.py").run()
        assert not at.exception, at.exception
        drawn[lang] = [_styles(c) for c in at.get("vega_lite_chart")]
        del at
    assert len(drawn["en"]) == len(drawn["zh"]), f"the {page} page draws a different number of charts in 中文"
    differ = [f"chart {i}: {len(en)} styled channels, {len(zh)} in 中文" for i, (en, zh) in
              enumerate(zip(drawn["en"], drawn["zh"])) if len(en) != len(zh)]  # fmt: skip
    differ += [
        f"chart {i} {path_en}"
        for i, (en, zh) in enumerate(zip(drawn["en"], drawn["zh"]))
        for (path_en, styles_en), (path_zh, styles_zh) in zip(en, zh)
        if path_en != path_zh or styles_en != styles_zh
    ]
    assert not differ, f"the {page} page styles these lines differently in 中文: {differ[:5]}"
    assert sum(len(s) for s in drawn["en"]) > 0
