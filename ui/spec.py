"""A chart's Vega-Lite spec as the page hands it on: tooltip titles from the catalogue, and JSON a strict reader
takes (no NaN)."""

from __future__ import annotations

import math

from ui.frame import has_key


def tooltip_titles(spec: dict, tr, lang: str) -> dict:
    """A chart's Vega-Lite spec with a title on every tooltip field that lacks one, from the catalogue
    (`col.<field>`), so a hover reads 'step time, ms (median)' / '训练步耗时，毫秒（中位数）' rather than the CSV's
    `train_ms`. Fields the catalogue does not name keep their own name. Changes `spec` in place and returns it."""
    types = {"Q": "quantitative", "N": "nominal", "O": "ordinal", "T": "temporal"}

    def titled(entry):
        if isinstance(entry, str):
            field, _, kind = entry.partition(":")
            entry = {"field": field, "type": types.get(kind, "nominal")}
        key = f"col.{entry.get('field')}" if isinstance(entry, dict) else ""  # 'col.None': no field, no title
        if key and "title" not in entry and has_key(key, lang):
            entry = {**entry, "title": tr(key)}
        return entry

    def walk(node):
        if isinstance(node, dict):
            enc = node.get("encoding")
            if isinstance(enc, dict) and "tooltip" in enc:
                tip = enc["tooltip"]
                enc["tooltip"] = [titled(t) for t in tip] if isinstance(tip, list) else titled(tip)
            for key, v in node.items():
                if key != "datasets":  # the rows themselves: nothing to title there
                    walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    return spec


def json_safe(node):
    """`node` with every NaN or infinity as None (JSON's null: Vega-Lite's missing value, as Streamlit sends it to the
    browser). A layer's datum or a scale's domain computed from no data can hold one."""
    if isinstance(node, float) and not math.isfinite(node):
        return None
    if isinstance(node, dict):
        return {k: json_safe(v) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [json_safe(v) for v in node]
    return node
