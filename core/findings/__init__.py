"""Findings: what each page (and the home page) concludes from result rows. Torch-free: pandas and numpy."""


def sig3(v: float) -> str:
    """A number as a sentence shows it: three significant figures below 1,000 (0.0373, 50.9), whole and
    thousands-separated above (3,420), never '3.42e+03'."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"
