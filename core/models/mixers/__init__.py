"""Page 5's token mixers, the field's answers to attention's price, one module each (as zoology's mixers/): its
layer, its facts and its registration (core.models.mixers.base). Every module of this folder is imported with the
package, so a new mixer is its file alone: the shipped ones first, in the order of the page's runs and charts, then
any other in name order. The chapter's LSTM, GRU and Transformer, page 5's baselines too, are core.models.chapter's
records.
"""

import importlib
import pkgutil
import sys

SHIPPED = ("gated", "rwkv", "ssm", "linear", "sliding_window", "dilated_conv")  # the page's order of its mixers


def load() -> tuple[str, ...]:
    """Imports each module of the package's folders that is not imported yet, registering its mixers; their names."""
    found = {m.name for m in pkgutil.iter_modules(__path__)}
    order = (*SHIPPED, *sorted(found - set(SHIPPED)))
    new = tuple(m for m in order if m in found and f"{__name__}.{m}" not in sys.modules)
    for m in new:
        importlib.import_module(f"{__name__}.{m}")
    return new


load()
