"""Findings: what each page (and the home page) concludes from result rows. Pandas and numpy on rows; no model
is run here (the model records they read are in core.models)."""


def sig3(v: float) -> str:
    """A number as a sentence shows it: three significant figures below 1,000 (0.0373, 50.9), whole and
    thousands-separated above (3,420), never '3.42e+03'; a tiny one as 1.4×10⁻¹⁵, never '1.4e-15'."""
    return f"{v:,.0f}" if abs(v) >= 1000 else sci(v, 3)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def sci(v: float, digits: int = 2) -> str:
    """`digits` significant figures, with a power of ten written as a learner reads it: 0.0039, 1.4×10⁻¹⁵, 4×10⁻⁶."""
    text = f"{v:.{digits}g}"
    if "e" not in text:
        return text
    mantissa, exponent = text.split("e")
    return f"{mantissa}×10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def clear_of(x: float, bounds=(), digits: int = 2) -> str:
    """`x` to `digits` significant figures (whole and thousands-separated from 10 on), with more where fewer would
    print one of `bounds` (where a question's options meet) that x is not: 1.96 is '1.96', never '2'."""
    text = ""
    for d in range(digits, digits + 4):
        text = f"{x:,.0f}" if x >= 10 and d == digits else f"{x:.{d}g}"
        shown = float(text.replace(",", ""))
        if all(x == b or shown != b for b in bounds):
            return text
    return text


# Punctuation a sentence is assembled with in code follows the page's language ("a, b" / "a、b", " (x)" / "（x）"):
# a Chinese sentence built with ASCII commas, colons or brackets reads as a typo.
def listing(items, tr) -> str:
    """Items as a list: 'a, b, c' in English, 'a、b、c' in 中文."""
    return tr("ui.list_sep").join(items)


def clauses(items, tr) -> str:
    """Items that hold their own commas: 'a; b' in English, 'a；b' in 中文."""
    return tr("ui.clause_sep").join(items)


def bracketed(text, tr) -> str:
    """' (text)' in English, '（text）' in 中文: an aside after a value."""
    return tr("ui.bracketed", what=text)


def labelled(label, value, tr) -> str:
    """'label: value' in English, 'label：value' in 中文."""
    return tr("ui.labelled", label=label, value=value)


def model_name(m: str, tr) -> str:
    """A model's name as the learner reads it (the catalogue's `model.<id>`), its id where there is none."""
    text = tr(f"model.{m}")
    return m if text.startswith("«") else text
