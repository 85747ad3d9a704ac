"""Is a shipped file whole? One answer for reference CSVs and model checkpoints: its contents, or one problem.

A file cut short, overwritten or emptied must cost the page one chart and a message naming it, never the page.
A problem has a `kind` the catalogues translate (`file.<kind>`) and an English `detail`. Torch-free.
"""

from __future__ import annotations

import dataclasses
import os
import zipfile
from pathlib import Path

KINDS = ("missing", "empty", "truncated", "unreadable", "wrong_kind", "cut_row")
ZIP_MAGIC = b"PK\x03\x04"  # torch.save writes a zip archive (PyTorch >= 1.6)


@dataclasses.dataclass(frozen=True)
class FileProblem:
    file: str  # the file's name (not its full path: it is shown on the page)
    kind: str  # one of KINDS
    detail: str = ""  # specifics in English: missing columns, the key or shape that does not fit

    def __str__(self) -> str:
        what = {
            "missing": "missing",
            "empty": "empty",
            "truncated": "cut off before its end",
            "unreadable": "unreadable",
            "wrong_kind": "not the kind of file expected here",
            "cut_row": "its last row was cut off mid-line and was dropped",
        }[self.kind]
        return f"{self.file}: {what}" + (f" ({self.detail})" if self.detail else "")


class DamagedFile(ValueError):
    """A shipped file that cannot be used; `.problem` says which and why."""

    def __init__(self, problem: FileProblem):
        super().__init__(str(problem))
        self.problem = problem


def check_present(path: Path) -> None:
    """Raise DamagedFile if `path` is missing or empty."""
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DamagedFile(FileProblem(path.name, "missing")) from None
    except OSError as err:
        raise DamagedFile(FileProblem(path.name, "unreadable", type(err).__name__)) from None
    if size == 0:
        raise DamagedFile(FileProblem(path.name, "empty"))


def check_torch_archive(path: Path) -> None:
    """Raise DamagedFile unless `path` is a whole zip archive, the format torch.save writes."""
    check_present(path)
    path = Path(path)
    with open(path, "rb") as f:
        head = f.read(4)
    if head != ZIP_MAGIC:
        raise DamagedFile(FileProblem(path.name, "unreadable", "not a PyTorch archive"))
    if not zipfile.is_zipfile(path):  # the central directory sits at the end: a cut-off archive has none
        raise DamagedFile(FileProblem(path.name, "truncated"))


def ends_mid_line(path: Path) -> bool:
    """True if the file's last byte is not a newline: its last line was cut off (CSV rows end with one)."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        if f.tell() == 0:
            return False
        f.seek(-1, os.SEEK_END)
        return f.read(1) not in (b"\n", b"\r")


def checked_checkpoint(blob, file: str, meta_types: dict, check=None) -> tuple[dict, dict]:
    """(meta, state_dict) of a loaded checkpoint, or DamagedFile('wrong_kind') naming what does not fit.
    Checked in order: `meta_types` (a bool is no number; ints ≥ 1 but the seed), `check(meta)`, the tensors."""

    def wrong(detail: str):
        return DamagedFile(FileProblem(file, "wrong_kind", detail))

    if (
        not isinstance(blob, dict)
        or not isinstance(blob.get("meta"), dict)
        or not isinstance(blob.get("state_dict"), dict)
    ):
        raise wrong(f"a {type(blob).__name__}, not a dict of 'meta' and 'state_dict'")
    meta, state = blob["meta"], blob["state_dict"]
    for key, kind in meta_types.items():
        v = meta.get(key)
        ok = isinstance(v, (int, float) if kind is float else kind) and not isinstance(v, bool)
        if not ok or (kind is int and v < 1 and key != "seed"):
            raise wrong(f"meta {key!r} is {type(v).__name__}")
    problem = check(meta) if check is not None else None
    if problem:
        raise wrong(problem)
    if not all(isinstance(k, str) and hasattr(v, "shape") for k, v in state.items()):
        raise wrong("'state_dict' holds something other than named tensors")
    return meta, state


def load_checkpoint(path: Path, meta_types: dict, check=None) -> tuple[dict, dict]:
    """A shipped checkpoint read with `torch.load(weights_only=True)` and checked (`checked_checkpoint`); DamagedFile
    for a file that is missing, empty, cut off, unreadable or of another kind."""
    import torch

    path = Path(path)
    check_torch_archive(path)
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - a damaged member, or objects a weights-only load refuses
        raise DamagedFile(FileProblem(path.name, "unreadable", type(err).__name__)) from None
    return checked_checkpoint(blob, path.name, meta_types, check)
