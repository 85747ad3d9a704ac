"""A row's `note`, written by `core` in English for the CSV, as a sentence in the learner's language.

The experiments write short fixed phrases (a refusal, a time limit, a divergence, an underflow count), said again
through the catalogue (`note.*`); anything else, such as a PyTorch error, points to the results table instead.
A note may come from an uploaded file, so every part a sentence repeats passes through `quote` (never a link).
"""

from __future__ import annotations

import math
import re

from core.findings import labelled
from core.harness.memory_formulas import format_bytes
from core.terms.i18n import catalogue
from core.terms.rules import FRESH_PER_CALL

_NUM = r"[-+0-9.,e]+"
_HOW = {
    "n steps × this device's step latency": "note.how.latency",
    "FLOPs at this device's matmul peak": "note.how.flops",
    "small": "note.how.small",
}


def _how(text: str, tr) -> str:
    m = re.fullmatch(r"extrapolated from n=(\d{1,12})", text)
    if m:
        return tr("note.how.extrapolated", n=f"{int(m.group(1)):,}")
    return tr(_HOW[text]) if text in _HOW else tr("note.other")


def _what(text: str, tr, quote=str) -> str:
    """A training run's divergence: 'loss became nan at step 12' and its two siblings."""
    m = re.fullmatch(r"(.*) at step (\d{1,12})", text)
    if not m:
        return tr("note.other")
    what, step = m.group(1), quote(m.group(2))
    if mm := re.fullmatch(r"loss became (\S+)", what):
        said = tr("note.loss_nonfinite", value=quote(mm.group(1)))
    elif mm := re.fullmatch(rf"loss ({_NUM}) rose above the bound ({_NUM})", what):
        said = tr("note.loss_bound", value=quote(mm.group(1)), bound=quote(mm.group(2)))
    elif mm := re.fullmatch(r"gradient norm became (\S+)", what):
        said = tr("note.grad_nonfinite", value=quote(mm.group(1)))
    else:
        return tr("note.other")
    return tr("note.at_step", what=said, step=step)


def note_text(note, tr, quote=str) -> str:
    """The sentence a page shows for one `note` value ('' for an empty one); `quote` is applied to every part of the
    note the sentence repeats (pass ui.frame.literal where the sentence is drawn as Markdown)."""
    text = "" if note is None or (isinstance(note, float) and math.isnan(note)) else str(note).strip()
    if not text:
        return ""
    if m := re.fullmatch(r"would need (.+); budget (.+)", text):
        return tr("note.guard", need=quote(m.group(1)), budget=quote(m.group(2)))
    if m := re.fullmatch(rf"would take ~({_NUM}) s \((.+)\); limit ({_NUM}) s", text):
        return tr("note.time", seconds=quote(m.group(1)), how=_how(m.group(2), tr), limit=quote(m.group(3)))
    if m := re.fullmatch(rf"would take about ({_NUM}) s per step \(n\^({_NUM}) from n = (\d{{1,12}})\)", text):
        n = f"{int(m.group(3)):,}"
        return tr("note.step_time", seconds=quote(m.group(1)), slope=quote(m.group(2)), n=quote(n))
    if m := re.fullmatch(r"(\d{1,12}) distances below float32's smallest number \(exactly 0\)", text):
        return tr("note.underflow", n=quote(m.group(1)))
    if m := re.fullmatch(r"(\S+) (\S+) d=(\d{1,12}): (.+); this run stopped", text):
        task, model, d = (quote(m.group(i)) for i in (1, 2, 3))
        return tr("note.run_stopped", task=task, model=model, d=d, what=_what(m.group(4), tr, quote))
    if m := re.fullmatch(r"thread scaling is measured on the CPU; on (\S+) torch threads only drive the host", text):
        return tr("note.host_threads", device=quote(m.group(1)))
    if text == "non-finite loss or gradient in float32":
        return tr("note.nonfinite32")
    if text.startswith("No viable backend for scaled_dot_product_attention"):
        return tr("note.no_backend")
    if "out of memory" in text.lower():
        return tr("note.oom")
    if re.fullmatch(r".* at step \d{1,12}", text):
        return _what(text, tr, quote)
    return tr("note.other")


def notes_text(notes, tr, quote=str) -> list[str]:
    """The distinct sentences for a column of notes, in their first order, empty ones left out."""
    return list(dict.fromkeys(s for s in (note_text(n, tr, quote) for n in notes) if s))


def _whole(x) -> int | None:
    """A positive whole number from a cell (an uploaded file may hold anything), else None."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return int(v) if math.isfinite(v) and v >= 1 and v == int(v) else None


def point_words(row: dict, tr, quote=str) -> str:
    """Which point a row is in the page's words ('LSTM stack, n = …'), '' if its columns say nothing.
    A name the catalogue does not know (an uploaded file's) is `quote`d as written."""
    name = ""
    for column in ("mixer", "model"):
        value = row.get(column)
        if isinstance(value, str) and value:
            name = tr(f"model.{value}") if f"model.{value}" in catalogue("en") else quote(value)
            break
    form = row.get("form")
    if name and isinstance(form, str) and f"answers.form.{form}" in catalogue("en"):
        name = tr("answers.named_form", mixer=name, form=tr(f"answers.form.{form}"))
    n, layers = _whole(row.get("seq_len")), _whole(row.get("n_layers"))
    where = tr("note.point.n", n=n) if n else tr("note.point.layers", L=layers) if layers else ""
    return tr("note.point", name=name, where=where) if name and where else name or where


def refusals_text(rows, tr, quote=str) -> list[str]:
    """The distinct sentences for points refused (memory guard or time limit), each led by the point it refused."""
    said = []
    for row in rows.to_dict("records"):
        if text := note_text(row.get("note"), tr, quote):
            point = point_words(row, tr, quote)
            said.append(labelled(point, text, tr) if point else text)
    return list(dict.fromkeys(said))


def fresh_memory_text(df, tr, experiment: str, label: str = "model", time: str = "train_ms") -> list[str]:
    """The sentence for timings whose calls each mapped fresh memory (`fresh_bytes` ≥ rules.FRESH_PER_CALL), if any.
    Off the main thread glibc maps large blocks afresh each call (core.harness.heap); the times include that."""
    hit = df[df["fresh_bytes"].fillna(0) >= FRESH_PER_CALL] if df is not None and "fresh_bytes" in df else ()
    if not len(hit):
        return []
    worst = hit.loc[hit["fresh_bytes"].idxmax()]
    said = {"most": format_bytes(worst["fresh_bytes"]), "what": str(worst[label]), "n": int(worst["seq_len"])}
    return [tr("note.fresh_memory", k=len(hit), total=int(df[time].notna().sum()), **said, experiment=experiment)]
