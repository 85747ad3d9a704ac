"""A results table as a CSV a spreadsheet opens safely.

A text cell starting with `=`, `+`, `-`, `@`, a tab or a carriage return runs as a formula in a spreadsheet (OWASP,
"CSV Injection"); uploaded rows carry text the lab did not write, so `safe_cells` prefixes such cells with a quote.
Numbers stay numbers; `csv_text` writes CRLF line breaks (RFC 4180), so a cell holding a line break is quoted.
"""

from __future__ import annotations

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def safe_cell(value):
    """`value`, with a leading single quote if it is text a spreadsheet would run as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def safe_cells(df: pd.DataFrame) -> pd.DataFrame:
    """A copy of `df` whose text cells cannot start a formula (numeric and boolean columns are left as they are)."""
    out = df.copy()
    for column in out.columns:
        if out[column].dtype.kind in "biufcmM":
            continue
        out[column] = out[column].map(safe_cell)
    for_names = {c: safe_cell(c) for c in out.columns if isinstance(c, str)}  # a header is a cell too
    return out.rename(columns=for_names)


def csv_text(df: pd.DataFrame) -> str:
    """`df` as the text of a CSV file a spreadsheet opens without running anything (no index column)."""
    return safe_cells(df).to_csv(index=False, lineterminator="\r\n")
