"""What the KV-cache demo concludes from its rows: per-token cache of real models, the GQA/MQA saving, measured
bytes against the formula, and the recurrent state that does not grow."""

from __future__ import annotations

import pandas as pd

from core.findings import listing
from core.harness.memory_formulas import format_bytes

STATE = "rnn_state"  # the scheme of the LSTM's rows: a fixed state instead of a cache


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Sentences computed from the rows: per-token cache of real models, the GQA saving, measured vs formula."""
    out = []
    if df is None or len(df) == 0:
        return out
    formula = df[df.kind == "formula"]
    for name, g in formula.groupby("model", sort=False):
        real = g[~g.hypothetical.astype(bool)]
        row = real.sort_values("seq_len").iloc[-1]
        per_token, total = format_bytes(row.cache_bytes / row.seq_len), format_bytes(row.cache_bytes)
        said = {"model": name, "per_token": per_token, "n": f"{int(row.seq_len):,}", "total": total}
        mha = g[g.hypothetical.astype(bool) & (g.seq_len == row.seq_len)]  # as if every head kept its own K/V
        if len(mha):
            ratio = mha.cache_bytes.iloc[0] / row.cache_bytes
            heads = {"n_kv": int(row.n_kv_heads), "n_heads": int(row.n_heads)}
            out.append(tr("attention_cost.kv.take.gqa", **said, **heads, scheme=row.scheme.upper(), ratio=ratio))
        else:
            out.append(tr("attention_cost.kv.take.model", **said))
    measured = df[(df.kind == "measured") & (df.scheme != STATE)]
    if len(measured):
        exact = bool((measured.measured_bytes == measured.cache_bytes).all())
        last = measured[measured.seq_len == measured.seq_len.max()]
        sizes = listing([f"{r.scheme.upper()} {format_bytes(r.measured_bytes)}" for r in last.itertuples()], tr)
        key = "attention_cost.kv.take.measured" if exact else "attention_cost.kv.take.mismatch"
        out.append(tr(key, n=int(last.seq_len.iloc[0]), sizes=sizes, points=len(measured)))
    rnn = df[df.scheme == STATE]
    if len(rnn):
        key = "attention_cost.kv.take.rnn" if rnn.measured_bytes.nunique() == 1 else "attention_cost.kv.take.rnn_grew"
        lo, hi = int(rnn.seq_len.min()), int(rnn.seq_len.max())
        out.append(tr(key, lo=lo, hi=hi, state=format_bytes(rnn.measured_bytes.max())))
    return out
