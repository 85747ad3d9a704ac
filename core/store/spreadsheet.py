"""A results table as a CSV a spreadsheet opens safely.

A cell whose text begins with `=`, `+`, `-`, `@`, a tab or a carriage return is read by Excel, LibreOffice and Google
Sheets as a formula, and a formula can fetch a URL or run a command (OWASP, "CSV Injection"). Rows uploaded from
another machine carry text the lab did not write, so the page's "Download CSV" passes every text cell through
`safe_cells`: such a cell gets a leading single quote, which spreadsheets take as "this is text" and do not show.
Numbers stay numbers, and a text cell that is a number ("-1.5") is left as it is. `csv_text` writes the file with
RFC 4180's line break (CRLF), so a cell holding a carriage return or a newline is quoted: unquoted, a carriage return
would start a new row whose first cell could again begin with `=`.
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
