"""Is a shipped file whole? One answer for reference CSVs and model checkpoints: its contents, or one problem.

A learner's copy can hold a file cut short by a failed download, overwritten by something else, or emptied; one
such file must cost the page that one chart, with a message that names the file and what is wrong with it, never
the whole page. A problem has a `kind` that the catalogues translate (`file.<kind>`) and an English `detail`.
Torch-free: the home page reads reference files without torch.
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
