"""Transformer Bottleneck Lab's library: models, tasks, the measurement harness, experiments, results, charts.

Never imports streamlit; the CLI path (`python -m core`) needs only torch, numpy and pandas.
"""

from core.harness.memory_formulas import kv_cache_bytes  # noqa: F401 - pure Python, keeps `import core` light
