"""Real text, read byte by byte: the running interpreter's standard library source, or any folder of UTF-8 text.

The standard library is on every machine (PSF licence), so nothing is downloaded. A file is held out by a fixed
rule of its path, `crc32(relative path) % HELD_OUT_EVERY == 0`, the same on every Python version. Windows sit at
random offsets inside one file, so a position in a window is how much context a model has.

A *recall* byte (`recall_mask`) is one a copy from more than FAR bytes back predicts and nothing nearer could:
where attention should help and a fixed state cannot.
"""

from __future__ import annotations

import sysconfig
import zlib
from pathlib import Path

import numpy as np

from core.terms.rules import RECALL_FAR, RECALL_SPAN

VOCAB = 256  # one symbol per byte value
MIN_FILE_BYTES = 2048  # smaller standard-library files (stubs, tiny __init__.py) are left out
HELD_OUT_EVERY = 20  # a file is held out when crc32 of its relative path is divisible by this
SKIP_DIRS = frozenset({"test", "tests", "idle_test", "site-packages", "__pycache__"})  # tests and installed packages
TEXT_DIR_MAX_BYTES = 64 << 20  # a text_dir is read whole: at most this much of it
SPAN, FAR = RECALL_SPAN, RECALL_FAR  # the recall rule: a copied span of SPAN bytes, from more than FAR bytes back


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_files(root: Path | None = None) -> list[Path]:
    """The standard library's .py files of at least MIN_FILE_BYTES, without tests and site-packages, in path order."""
    root = root or stdlib_root()
    found = []
    for p in root.rglob("*.py"):
        rel = p.relative_to(root)
        if SKIP_DIRS.isdisjoint(rel.parts[:-1]) and p.is_file() and p.stat().st_size >= MIN_FILE_BYTES:
            found.append(p)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def held_out(relative: str) -> bool:
    """Is the file at this relative path (posix form) held out? The fixed rule of the module's docstring."""
    return zlib.crc32(relative.encode()) % HELD_OUT_EVERY == 0


def stdlib_split(root: Path | None = None) -> tuple[list[bytes], list[bytes]]:
    """(training files, held-out files) of the standard library, each a list of the files' bytes."""
    root = root or stdlib_root()
    train, test = [], []
    for p in stdlib_files(root):
        (test if held_out(p.relative_to(root).as_posix()) else train).append(p.read_bytes())
    return train, test


def is_text(data: bytes) -> bool:
    """UTF-8 without NUL bytes: what a text file is here (binary formats nearly always hold a NUL)."""
    if b"\x00" in data:
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def read_text_dir(folder: str | Path, min_bytes: int) -> list[bytes]:
    """Every UTF-8 text file under `folder` (recursively, in path order) of at least `min_bytes` bytes.
    ValueError naming `text_dir` if there is none, checked before any model is loaded."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        raise ValueError(f"text_dir: {str(folder)!r} is not a folder")
    paths = sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink())
    if not paths:
        raise ValueError(f"text_dir: {str(folder)!r} holds no files")
    texts, read, longest = [], 0, 0
    for p in paths:
        try:
            data = p.read_bytes()
        except OSError:
            continue
        if not is_text(data):
            continue
        longest = max(longest, len(data))
        if len(data) >= min_bytes:
            texts.append(data)
            read += len(data)
            if read >= TEXT_DIR_MAX_BYTES:
                break
    if longest == 0:
        raise ValueError(f"text_dir: {str(folder)!r} holds no UTF-8 text file ({len(paths)} files, all binary)")
    if not texts:
        raise ValueError(
            f"text_dir: no text file in {str(folder)!r} holds {min_bytes:,} bytes (a window and its next byte); "
            f"the longest holds {longest:,}"
        )
    return texts


class Sampler:
    """Training windows at random offsets inside the files, a file chosen in proportion to its windows."""

    def __init__(self, texts: list[bytes], window: int, seed: int):
        self.size = window + 1
        self.texts = [np.frombuffer(t, dtype=np.uint8) for t in texts if len(t) >= self.size]
        starts = np.array([len(t) - self.size + 1 for t in self.texts], dtype=np.float64)
        self.weights = starts / starts.sum()
        self.starts = starts.astype(np.int64)
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def batch(self, batch_size: int, step: int | None = None) -> np.ndarray:
        """(batch_size, window + 1) uint8; with `step`, the same windows for the same (seed, step), so a resumed
        run reads what it would have read."""
        if step is not None:
            self.rng = np.random.default_rng((self.seed, step))
        files = self.rng.choice(len(self.texts), size=batch_size, p=self.weights)
        offsets = (self.rng.random(batch_size) * self.starts[files]).astype(np.int64)
        return np.stack([self.texts[f][o : o + self.size] for f, o in zip(files, offsets)])


def offset_windows(texts: list[bytes], window: int, n: int, seed: int = 0) -> np.ndarray:
    """(n, window + 1) uint8 windows at random offsets ≥ 1 inside the files (never a file's head), a file chosen in
    proportion to its windows; the same for the same seed."""
    size = window + 1
    arrays = [np.frombuffer(t, dtype=np.uint8) for t in texts if len(t) > size]
    if not arrays:
        return np.zeros((0, size), dtype=np.uint8)
    starts = np.array([len(a) - size for a in arrays], dtype=np.int64)  # offsets 1 … len − size
    rng = np.random.default_rng(seed)
    files = rng.choice(len(arrays), size=n, p=starts / starts.sum())
    offsets = 1 + (rng.random(n) * starts[files]).astype(np.int64)
    return np.stack([arrays[f][o : o + size] for f, o in zip(files, offsets)])


def recall_mask(window: bytes | np.ndarray, span: int = SPAN, far: int = FAR) -> np.ndarray:
    """(len(window) − 1,) bool over the targets (target j is byte t = j + 1): True for a recall byte.
    A match is s < t with b[s−span:s] == b[t−span:t], predicting when b[s] == b[t]; recall when a predicting
    match has t − s > far and no match at all has t − s ≤ far."""
    b = bytes(window)
    out = np.zeros(len(b) - 1, dtype=bool)
    seen: dict[bytes, list[int]] = {}  # context → positions s that followed it, in order
    for t in range(span, len(b)):
        ctx = b[t - span : t]
        earlier = seen.setdefault(ctx, [])
        near = earlier and t - earlier[-1] <= far
        if not near and any(t - s > far and b[s] == b[t] for s in earlier):
            out[t - 1] = True
        earlier.append(t)
    return out


def show_bytes(data: bytes) -> list[str]:
    """Each byte as a character to print: printable ASCII as itself, a newline as ⏎, a tab as →, others as hex;
    the bytes of a UTF-8 character other than ASCII: the character on its first byte, '·' on the rest."""
    out: list[str] = []
    i = 0
    while i < len(data):
        c = data[i]
        n = 1 if c < 0x80 else 2 if c >> 5 == 0b110 else 3 if c >> 4 == 0b1110 else 4 if c >> 3 == 0b11110 else 1
        piece = data[i : i + n]
        try:
            ch = piece.decode("utf-8") if n > 1 else None
        except UnicodeDecodeError:
            ch, n = None, 1
        if ch is not None:
            out += [ch] + ["·"] * (n - 1)
        elif c == 0x0A:
            out.append("⏎")
        elif c == 0x09:
            out.append("→")
        elif 0x20 <= c < 0x7F:
            out.append(chr(c))
        else:
            out.append(f"\\x{c:02x}")
        i += n
    return out
