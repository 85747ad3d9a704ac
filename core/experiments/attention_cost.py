"""The Transformer's own bottleneck: memory and time of one attention layer against sequence length n.

Self-attention forms an n × n score matrix per head. The explicit path (`naive`, softmax(QKᵀ)V) keeps it for
backward, so its memory grows as n²; fused kernels (`sdpa`: FlashAttention, Dao et al. 2022, and its relatives)
recompute it in tiles and keep O(n). Both still do O(n²) work. `linear` attention (Katharopoulos et al. 2020,
"Transformers are RNNs") is O(n) in both, but computes a different function. An LSTM's state at inference stays
the same size whatever n is. Each point runs forward + backward and reports the median time (IQR), the exact bytes
saved for backward, a peak (CUDA allocator, or on CPU the peak of live tensors returned by operators) and the
analytic size of one score matrix. `wall` and `extrapolate` turn the fitted curves into where each implementation
stops fitting, labelled as extrapolation.
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import torch
import torch.nn.functional as F
from torch.multiprocessing.reductions import StorageWeakRef
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from core import bench, guard
from core.config import Experiment, Progress, spec
from core.device import DEVICES, environment, resolve_device
from core.experiments.kv_cache import one_thread
from core.fit import loglog_fit, tail_slope
from core.memory_formulas import DTYPE_BYTES, ModelShape, attention_saved_bytes, kv_cache_bytes, score_bytes
from core.models import naive_attention
from core.results import tidy

IMPLS = ("naive", "sdpa", "linear", "lstm_state")
QUADRATIC = ("naive",)  # implementations whose memory holds an n × n matrix
BACKENDS = ("auto", "flash", "efficient", "cudnn", "math")
SDP_BACKENDS = {
    "flash": SDPBackend.FLASH_ATTENTION,
    "efficient": SDPBackend.EFFICIENT_ATTENTION,
    "cudnn": SDPBackend.CUDNN_ATTENTION,
    "math": SDPBackend.MATH,
}
# aten operator names → the SDPA backend that ran (math is composite: it shows no fused operator)
KERNEL_OPS = (
    ("cudnn_attention", "cudnn"),
    ("efficient_attention", "efficient"),
    ("flash_attention", "flash"),
    ("fused_attention_overrideable", "overrideable"),
)
DTYPES = ("float32", "bfloat16", "float16", "auto")  # auto: bfloat16 on CUDA (flash needs it), else float32
COLUMNS = (
    "impl",
    "backend",
    "requested_backend",
    "mode",
    "seq_len",
    "batch_size",
    "n_heads",
    "head_dim",
    "dtype",
    "causal",
    "time_ms",
    "time_iqr_ms",
    "noisy",
    "peak_bytes",
    "peak_kind",
    "saved_bytes",
    "formula_saved_bytes",
    "analytic_bytes",
    "state_bytes",
    "predicted_bytes",
    "budget_bytes",
    "point",
    "fits_budget",
    "device",
    "status",
    "note",
    "seed",
)
WALL_LENGTHS = (8192, 32768, 131072, 524288, 1048576)


@dataclasses.dataclass(frozen=True)
class AttentionCostConfig:
    impls: tuple[str, ...] = spec(IMPLS, choices=IMPLS, help="implementations to compare")
    backends: tuple[str, ...] = spec(
        ("auto",), choices=BACKENDS, help="SDPA backends for 'sdpa': auto = the device's best; others are forced"
    )
    seq_lens: tuple[int, ...] = spec((256, 512, 1024, 2048), lo=2, hi=2**21, help="sequence lengths n to sweep")
    batch_size: int = spec(1, lo=1, hi=1024)
    n_heads: int = spec(4, lo=1, hi=256)
    head_dim: int = spec(32, lo=1, hi=512)
    dtype: str = spec("float32", choices=DTYPES, help="CUDA flash needs bfloat16 or float16; auto = bf16 on CUDA")
    causal: bool = spec(False, help="causal mask (decoder); off = every token sees every token")
    device: str = spec("auto", choices=DEVICES, help="auto = CUDA, then MPS, then CPU")
    seed: int = spec(0, lo=0, hi=2**31 - 1)
    warmup: int = spec(1, lo=0, hi=50, help="untimed calls first")
    repeats: int = spec(5, lo=1, hi=200, help="timed calls; the median and IQR are reported")
    max_point_s: float = spec(2.0, lo=0.05, hi=600.0, help="stop repeating a point after this much timed work")
    time_limit_s: float = spec(
        60.0, lo=0.1, hi=3600.0, help="skip a point whose time, extrapolated from smaller n, would exceed this"
    )
    budget_mib: float = spec(0.0, lo=0.0, hi=1e9, help="memory budget for the wall; 0 = the guard's (half of free)")
    verify_wall: bool = spec(False, help="after the sweep, run just below and above each predicted wall if affordable")

    def check(self):
        if "sdpa" not in self.impls and self.backends != ("auto",):
            raise ValueError("backends: only used by impl 'sdpa'; add sdpa to impls")


PRESETS = {
    "quick": {"seq_lens": (256, 512, 1024, 2048), "warmup": 2, "repeats": 3, "max_point_s": 0.5},
    # up to 128K: on a GPU the guard finds the wall; on a CPU the long points come back at once as rows saying
    # what they would need (memory) or take (time)
    "full": {
        "seq_lens": (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072),
        "dtype": "auto",
        "backends": BACKENDS,
        "warmup": 2,
        "repeats": 7,
        "max_point_s": 10.0,
        "time_limit_s": 45.0,
        "verify_wall": True,
    },
}


# ---- the implementations -------------------------------------------------------------------------------------


def linear_attention(q, k, v, causal: bool = False, eps: float = 1e-6) -> torch.Tensor:
    """Katharopoulos et al. 2020: φ(q)·(Σ φ(k)ᵀv) / φ(q)·Σ φ(k), φ = elu + 1. O(n) memory and time, not softmax."""
    fq, fk = F.elu(q) + 1, F.elu(k) + 1  # (B, H, n, d), positive feature maps
    if causal:
        kv = torch.cumsum(fk.unsqueeze(-1) * v.unsqueeze(-2), dim=2)  # (B, H, n, d, d): prefix sums, O(n·d²)
        num = torch.einsum("bhnd,bhnde->bhne", fq, kv)
        den = torch.einsum("bhnd,bhnd->bhn", fq, fk.cumsum(dim=2))
    else:
        kv = torch.einsum("bhnd,bhne->bhde", fk, v)  # (B, H, d, d): the whole sequence summed once
        num = torch.einsum("bhnd,bhde->bhne", fq, kv)
        den = torch.einsum("bhnd,bhd->bhn", fq, fk.sum(dim=2))
    return num / (den.unsqueeze(-1) + eps)


def sdpa(q, k, v, backend: str = "auto", causal: bool = False) -> torch.Tensor:
    """scaled_dot_product_attention with the device's choice ('auto') or one backend forced via sdpa_kernel."""
    if backend == "auto":
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    with sdpa_kernel([SDP_BACKENDS[backend]]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


class LivePeak(TorchDispatchMode):
    """Peak bytes of live tensors returned by operators while active (a CPU stand-in for max_memory_allocated).

    Storages that existed before (inputs, parameters: pass them as `exclude`) are not counted; scratch memory a
    fused kernel allocates and frees inside one operator is not seen. Records the operator names too.
    """

    def __init__(self, exclude=()):
        super().__init__()
        self.excluded = {t.untyped_storage().data_ptr() for t in exclude if isinstance(t, torch.Tensor)}
        self.live: dict[int, tuple] = {}
        self.current = self.peak = 0
        self.ops: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.ops.add(str(func))
        for key, (ref, nbytes) in list(self.live.items()):
            if ref.expired():
                self.current -= nbytes
                del self.live[key]
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor) and t.layout == torch.strided and t.device.type != "meta":
                storage = t.untyped_storage()
                key = storage.data_ptr()
                if key and key not in self.live and key not in self.excluded:
                    self.live[key] = (StorageWeakRef(storage), storage.nbytes())
                    self.current += storage.nbytes()
        self.peak = max(self.peak, self.current)
        return out


def backend_from_ops(ops) -> str:
    """Which SDPA backend ran, from the aten operators seen (math has no fused operator of its own)."""
    for fragment, name in KERNEL_OPS:
        if any(fragment in op for op in ops):
            return name
    return "math"


# ---- predictions (for the guard and the wall) ----------------------------------------------------------------


def elem_bytes(dtype: str) -> int:
    return int(DTYPE_BYTES[dtype])


def predicted_bytes(impl: str, backend: str, cfg: AttentionCostConfig, n: int, device: torch.device) -> float:
    """A generous peak estimate for the guard: computed from the shape alone, before anything is allocated."""
    B, H, d, e = cfg.batch_size, cfg.n_heads, cfg.head_dim, elem_bytes(cfg.dtype)
    linear_part = 12 * B * H * n * d * e  # q, k, v, their gradients, the output and its gradient, temporaries
    if impl == "lstm_state":
        return 2.0 * B * n * H * d * e + 64 * B * H * d * e
    if impl == "linear":
        dd = d * d * (n if cfg.causal else 1)  # causal prefix sums hold a d × d matrix per position
        return 2.0 * linear_part + 4.0 * B * H * dd * e
    quadratic = impl == "naive" or backend == "math" or (backend == "auto" and device.type not in ("cpu", "cuda"))
    # naive: scores, probabilities and their gradients live together (~3-4 copies), plus the causal mask
    return float(linear_part + (4 * score_bytes(B, H, n, e) + n * n if quadratic else 0))


def formula_saved(impl: str, backend: str, cfg: AttentionCostConfig, n: int) -> float:
    """The exact bytes saved for backward by formula, where one is known (fp32); NaN otherwise."""
    if cfg.dtype != "float32" or impl in ("linear", "lstm_state"):
        return math.nan
    which = "naive" if impl == "naive" else backend
    try:
        return float(attention_saved_bytes(which, cfg.batch_size, cfg.n_heads, n, cfg.head_dim, 4, cfg.causal))
    except ValueError:
        return math.nan


# ---- measuring one point -------------------------------------------------------------------------------------


def _inputs(cfg: AttentionCostConfig, n: int, device: torch.device, requires_grad: bool = True):
    g = torch.Generator().manual_seed(cfg.seed)
    dtype = getattr(torch, cfg.dtype)
    shape = (cfg.batch_size, cfg.n_heads, n, cfg.head_dim)  # (B, H, n, head_dim)
    q, k, v, grad = (torch.randn(shape, generator=g).to(device, dtype) for _ in range(4))
    for t in (q, k, v):
        t.requires_grad_(requires_grad)
    return q, k, v, grad


def _attention_fn(impl: str, backend: str, cfg: AttentionCostConfig):
    if impl == "naive":
        return lambda q, k, v: naive_attention(q, k, v, cfg.causal)[0]
    if impl == "linear":
        return lambda q, k, v: linear_attention(q, k, v, cfg.causal)
    return lambda q, k, v: sdpa(q, k, v, backend, cfg.causal)


def _measure_attention(impl: str, backend: str, cfg: AttentionCostConfig, n: int, device: torch.device) -> dict:
    q, k, v, grad = _inputs(cfg, n, device)
    attend = _attention_fn(impl, backend, cfg)

    def forward():
        return attend(q, k, v)

    def step():
        forward().backward(grad)
        q.grad = k.grad = v.grad = None

    with LivePeak(exclude=(q, k, v, grad)) as live:
        step()  # also the first warm-up call; records which kernel ran
    ran = backend_from_ops(live.ops) if impl == "sdpa" else impl
    timing = bench.time_fn(
        step, warmup=max(cfg.warmup - 1, 0), repeats=cfg.repeats, device=device, max_seconds=cfg.max_point_s
    )
    saved = bench.saved_activation_bytes(forward, exclude=(q, k, v, grad))
    cuda_peak = bench.cuda_peak_bytes(step, device)
    return {
        "backend": ran,
        "time_ms": timing.median_ms,
        "time_iqr_ms": timing.iqr_ms,
        "noisy": timing.noisy,
        "saved_bytes": saved,
        "peak_bytes": cuda_peak if cuda_peak is not None else live.peak,
        "peak_kind": "cuda_max_allocated" if cuda_peak is not None else "live_tensors",
        "formula_saved_bytes": formula_saved(impl, ran, cfg, n),
    }


def _measure_lstm(cfg: AttentionCostConfig, n: int, device: torch.device) -> dict:
    """An LSTM of the same width (H·head_dim) reads n tokens at inference, one step at a time, keeping only (h, c)."""
    d = cfg.n_heads * cfg.head_dim
    dtype = getattr(torch, cfg.dtype)
    torch.manual_seed(cfg.seed)
    cell = torch.nn.LSTMCell(d, d).to(device, dtype)
    x = torch.randn(n, cfg.batch_size, d, generator=torch.Generator().manual_seed(cfg.seed)).to(device, dtype)
    state = {}

    @torch.no_grad()
    def read():
        h = c = x.new_zeros(cfg.batch_size, d)
        for t in range(n):  # h_t = f(h_{t-1}, x_t): the state is overwritten, never grows
            h, c = cell(x[t], (h, c))
        state["bytes"] = h.untyped_storage().nbytes() + c.untyped_storage().nbytes()

    with one_thread():  # tiny sequential steps: split over threads on a busy machine they ran 30x slower here
        with LivePeak(exclude=(x, *cell.parameters())) as live:
            read()
        timing = bench.time_fn(read, warmup=0, repeats=cfg.repeats, device=device, max_seconds=cfg.max_point_s)
        cuda_peak = bench.cuda_peak_bytes(read, device)
    return {
        "threads": 1,
        "backend": "-",
        "time_ms": timing.median_ms,
        "time_iqr_ms": timing.iqr_ms,
        "noisy": timing.noisy,
        "state_bytes": state["bytes"],
        "peak_bytes": cuda_peak if cuda_peak is not None else live.peak,
        "peak_kind": "cuda_max_allocated" if cuda_peak is not None else "live_tensors",
    }


def attention_flops(impl: str, cfg: AttentionCostConfig, n: int) -> float:
    """Forward + backward FLOPs: 4·B·H·n²·d forward (QKᵀ and PV), backward 2.5× that (Dao 2023); linear in n
    for linear attention (≈ 8·B·H·n·d² both ways) and the LSTM (8·d·2d per token, forward only)."""
    B, H, d = cfg.batch_size, cfg.n_heads, cfg.head_dim
    if impl == "lstm_state":
        return 8.0 * (H * d) * (2 * H * d) * B * n
    if impl == "linear":
        return 3.5 * 4.0 * B * H * n * d * d
    return 3.5 * 4.0 * B * H * n * n * d


def predicted_seconds(
    impl: str, cfg: AttentionCostConfig, n: int, device: torch.device, history: list[tuple[int, float]]
) -> tuple[float, str]:
    """Seconds for one call: extrapolated from the largest smaller n measured (∝ n² for softmax attention, n for
    the others); with no history, the FLOPs at this device's measured matmul peak (a lower bound)."""
    smaller = [(m, t) for m, t in history if m < n and math.isfinite(t)]
    if smaller:
        m, t_ms = max(smaller)
        power = 1 if impl in ("linear", "lstm_state") else 2
        return t_ms / 1e3 * (n / m) ** power, f"extrapolated from n={m}"
    if impl == "lstm_state" and n > 4096:  # n dependent steps: latency-bound, not FLOP-bound
        return n * bench.step_latency_s(str(device)), "n steps × this device's step latency"
    flops = attention_flops(impl, cfg, n)
    if flops < 1e9:  # about a second even at 1 GFLOP/s: not worth measuring the device's peak to decide
        return 0.0, "small"
    return flops / bench.peak_flops(str(device), cfg.dtype), "FLOPs at this device's matmul peak"


def measure_point(
    impl: str,
    backend: str,
    cfg: AttentionCostConfig,
    n: int,
    device: torch.device,
    history: list | None = None,
    point: str = "sweep",
    budget: int | None = None,
) -> dict:
    """One row, guarded first by memory (bytes predicted from the shape; nothing is allocated for a refused
    point), then by time (a point that would exceed `time_limit_s`); a bad point is a row, never an exception."""
    B, H, e = cfg.batch_size, cfg.n_heads, elem_bytes(cfg.dtype)
    row = {
        "impl": impl,
        "requested_backend": backend if impl == "sdpa" else "-",
        "backend": backend if impl == "sdpa" else "-",
        "mode": "inference" if impl == "lstm_state" else "train (fwd+bwd)",
        "seq_len": n,
        "batch_size": B,
        "n_heads": H,
        "head_dim": cfg.head_dim,
        "dtype": cfg.dtype,
        "causal": cfg.causal,
        "analytic_bytes": score_bytes(B, H, n, e),
        "seed": cfg.seed,
        "point": point,
        "note": "",
    }
    predicted = predicted_bytes(impl, backend, cfg, n, device)
    budget = guard.budget_bytes(device) if budget is None else budget
    if not guard.fits(predicted, device, budget):
        return {
            **row,
            "status": "skipped",
            "predicted_bytes": predicted,
            "note": f"would need {guard.format_bytes(predicted)}; budget {guard.format_bytes(budget)}",
        }
    calls = cfg.warmup + min(cfg.repeats, 3) + 2  # warm-up, timed repeats (capped), saved-bytes and peak passes
    if impl == "lstm_state":
        calls = min(cfg.repeats, 3) + 8  # its live-peak pass dispatches every step's operators through Python
    seconds, how = predicted_seconds(impl, cfg, n, device, history or [])
    seconds *= calls
    if seconds > cfg.time_limit_s:
        return {
            **row,
            "status": "skipped",
            "predicted_bytes": predicted,
            "note": f"would take ~{seconds:,.0f} s ({how}); limit {cfg.time_limit_s:,.0f} s",
        }
    measure = (
        (lambda: _measure_lstm(cfg, n, device))
        if impl == "lstm_state"
        else (lambda: _measure_attention(impl, backend, cfg, n, device))
    )
    try:
        fields = guard.guarded(measure, predicted, device, budget)
    except RuntimeError as err:  # a backend this device, dtype or shape cannot run ("No viable backend", cuDNN)
        forced = impl == "sdpa" and backend != "auto"
        if not forced and "No viable backend" not in str(err):
            raise
        guard.free(device)
        return {**row, "status": "unsupported", "predicted_bytes": predicted, "note": str(err).splitlines()[0][:160]}
    return {**row, **fields}


def run(cfg: AttentionCostConfig, on_progress=None) -> pd.DataFrame:
    """One row per (n, implementation, backend), shortest n first so the memory-hungry points run last."""
    device = resolve_device(cfg.device)
    if cfg.dtype == "auto":
        cfg = dataclasses.replace(cfg, dtype="bfloat16" if device.type == "cuda" else "float32")
    env = environment(device)
    budget = budget_for(cfg, device)  # the wall's budget (yours, or the guard's)
    guard_budget = guard.budget_bytes(device)  # what may really be allocated now
    variants = [(impl, b) for impl in cfg.impls for b in (cfg.backends if impl == "sdpa" else ("-",))]
    points = [(n, impl, b) for n in sorted(cfg.seq_lens) for impl, b in variants]
    total = len(points) + (2 * len(variants) if cfg.verify_wall else 0)
    history: dict[tuple, list] = {v: [] for v in variants}
    rows = []

    def add(row, message):
        row = {**env, **row, "budget_bytes": budget}  # a row may say it ran on fewer threads
        row["fits_budget"] = bool(row.get("peak_bytes", math.nan) <= budget) if row["status"] == "ok" else math.nan
        rows.append(row)
        if on_progress is not None:
            on_progress(Progress(len(rows), total, message, (row,)))

    for n, impl, b in points:
        row = measure_point(impl, b, cfg, n, device, history[(impl, b)], budget=guard_budget)
        history[(impl, b)].append((n, row.get("time_ms", math.nan)))
        add(row, f"{impl}{'/' + b if impl == 'sdpa' else ''} n={n}")
    if cfg.verify_wall:
        walls = wall(to_frame(rows), budget)
        for impl, b in variants:
            found = walls[(walls.impl == impl) & (walls.requested_backend == (b if impl == "sdpa" else "-"))]
            n_max = float(found.n_max.iloc[0]) if len(found) else math.nan
            for side, factor in (("below", 0.9), ("above", 1.1)):
                if not math.isfinite(n_max) or n_max * factor > 2**21:
                    continue
                n = max(2, int(n_max * factor))
                row = measure_point(
                    impl, b, cfg, n, device, history[(impl, b)], point=f"wall_{side}", budget=guard_budget
                )
                add(row, f"checking the wall: {impl} n={n}")
    return to_frame(rows)


def to_frame(rows: list[dict]) -> pd.DataFrame:
    return tidy(rows, COLUMNS)


# ---- the wall ------------------------------------------------------------------------------------------------


def budget_for(cfg: AttentionCostConfig, device: torch.device) -> int:
    return int(cfg.budget_mib * 2**20) if cfg.budget_mib > 0 else guard.budget_bytes(device)


def wall(df: pd.DataFrame, budget_bytes: float, metric: str = "peak_bytes", points: int = 3) -> pd.DataFrame:
    """Per implementation: fit bytes ≈ a·n^b over the largest `points` measured n, then solve a·n^b = budget.

    The predicted largest n is an extrapolation of the fitted curve, not a measurement.
    """
    out = []
    ok = df[(df.status == "ok") & (df.point == "sweep")] if len(df) else df
    for (impl, req), g in ok.groupby(["impl", "requested_backend"], sort=False):
        g = g.dropna(subset=[metric]).sort_values("seq_len").tail(points)
        a, b = loglog_fit(g.seq_len, g[metric])
        n_max = math.nan
        if math.isfinite(a) and b > 0.2:  # a flat curve (the LSTM's state) has no wall in n
            n_max = (budget_bytes / math.exp(a)) ** (1 / b)
        out.append(
            {
                "impl": impl,
                "requested_backend": req,
                "backend": g.backend.iloc[-1] if len(g) else "",
                "slope": b,
                "n_max": n_max,
                "budget_bytes": budget_bytes,
                "metric": metric,
                "fitted_on": f"n={int(g.seq_len.min())}..{int(g.seq_len.max())}" if len(g) else "",
                "kind": "extrapolation",
            }
        )
    return pd.DataFrame(
        out,
        columns=[
            "impl",
            "requested_backend",
            "backend",
            "slope",
            "n_max",
            "budget_bytes",
            "metric",
            "fitted_on",
            "kind",
        ],
    )


def extrapolate(
    df: pd.DataFrame,
    shape: ModelShape,
    dtype: str = "bfloat16",
    batch_size: int = 1,
    lengths=WALL_LENGTHS,
    budget_bytes: float = math.nan,
) -> pd.DataFrame:
    """A whole model at 8K … 1M tokens: attention memory by formula, time extrapolated from this device.

    Memory (formula): training keeps, per layer, the probabilities (naive: B·H·n²) or the output and log-sum-exp
    (fused: B·H·n·(d + 4 bytes)); inference keeps the KV cache. Time (extrapolation): the largest measured naive /
    SDPA fwd+bwd point, scaled by (n / n_measured)² — attention's FLOPs, exactly n² — and by layers · heads ·
    head size · batch. A fitted exponent would be noisier over a 500× jump; the measured slope is on the page.
    """
    e = DTYPE_BYTES[dtype]
    L, H, d, B = shape.n_layers, shape.n_heads, shape.head_dim, batch_size
    anchors = {}
    ok = df[(df.status == "ok") & (df.point == "sweep")] if len(df) else df
    for impl in ("naive", "sdpa"):
        g = ok[ok.impl == impl]
        if impl == "sdpa":
            g = g[g.requested_backend == "auto"]
        if len(g):
            top = g.sort_values("seq_len").iloc[-1]
            scale = (L * H * d * B) / float(top.n_heads * top.head_dim * top.batch_size)
            anchors[impl] = (float(top.time_ms), int(top.seq_len), scale)
    rows = []
    for n in lengths:
        memory = {
            "naive": L * score_bytes(B, H, n, e),
            "sdpa": L * B * H * n * (d * e + 4),
            "kv_cache": kv_cache_bytes(L, shape.n_kv_heads, d, n, B, e),
        }
        for what, nbytes in memory.items():
            t_s, time_kind = math.nan, ""
            if what in anchors:
                t_ms, n0, scale = anchors[what]
                t_s = t_ms / 1e3 * (n / n0) ** 2 * scale
                time_kind = f"extrapolation from n={n0} as n²"
            rows.append(
                {
                    "model": shape.name,
                    "what": what,
                    "seq_len": n,
                    "bytes": nbytes,
                    "fits_budget": bool(nbytes <= budget_bytes) if math.isfinite(budget_bytes) else math.nan,
                    "time_s": t_s,
                    "memory_kind": "formula",
                    "time_kind": time_kind,
                }
            )
    return pd.DataFrame(rows)


def format_seconds(s: float, tr=None) -> str:
    """'250 ms', '1.5 min', '3.5 h', '12 days', '3e+04 years'; unit names from the catalogue when `tr` is given."""

    def unit(u):
        return tr(f"attention_cost.unit.{u}") if tr is not None else u

    if not math.isfinite(s):
        return "–"
    for u, size in (("years", 365 * 86400), ("days", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if s >= size:
            return f"{s / size:,.3g} {unit(u)}"
    return f"{s * 1e3:.3g} {unit('ms')}"


# ---- takeaways -----------------------------------------------------------------------------------------------


def _fmt_n(n: float) -> str:
    return f"{n:,.0f}" if math.isfinite(n) else "?"


def takeaways(df: pd.DataFrame, tr) -> list[str]:
    """Sentences computed from the rows shown: slopes, the ratio at the largest common n, the wall, refusals."""
    out = []
    if df is None or len(df) == 0:
        return out
    ok = df[(df.status == "ok") & (df.point == "sweep")]
    label = {}
    for (impl, req), g in ok.groupby(["impl", "requested_backend"], sort=False):
        name = (
            impl
            if impl != "sdpa"
            else (f"sdpa (auto → {g.backend.iloc[-1]})" if req == "auto" else f"sdpa ({g.backend.iloc[-1]})")
        )
        label[(impl, req)] = name
        mem = g.peak_bytes if impl == "lstm_state" else g.saved_bytes
        if g.seq_len.nunique() >= 3:
            key = "attention_cost.take.lstm_flat" if impl == "lstm_state" else "attention_cost.take.slopes"
            out.append(
                tr(
                    key,
                    impl=name,
                    mem_slope=tail_slope(g.seq_len, mem),
                    time_slope=tail_slope(g.seq_len, g.time_ms),
                    n_lo=_fmt_n(g.seq_len.min()),
                    n_hi=_fmt_n(g.seq_len.max()),
                    state=guard.format_bytes(g.state_bytes.max()),
                )
            )
    noisy = ok.noisy.astype(bool).sum() if "noisy" in ok else 0
    if noisy:
        out.append(tr("attention_cost.take.noisy", k=int(noisy), total=len(ok)))
    naive = ok[ok.impl == "naive"]
    fused = ok[(ok.impl == "sdpa") & (ok.requested_backend == "auto")]
    common = sorted(set(naive.seq_len) & set(fused.seq_len))
    if common:
        n = common[-1]
        a, b = naive[naive.seq_len == n].iloc[0], fused[fused.seq_len == n].iloc[0]
        out.append(
            tr(
                "attention_cost.take.ratio",
                n=_fmt_n(n),
                backend=b.backend,
                mem_ratio=a.saved_bytes / b.saved_bytes,
                naive_mem=guard.format_bytes(a.saved_bytes),
                sdpa_mem=guard.format_bytes(b.saved_bytes),
                time_ratio=a.time_ms / b.time_ms,
                naive_ms=a.time_ms,
                sdpa_ms=b.time_ms,
            )
        )
    if len(ok):
        budget = float(df.budget_bytes.dropna().iloc[0]) if df.budget_bytes.notna().any() else math.nan
        walls = wall(df, budget)
        for _, w in walls.iterrows():
            if math.isfinite(w.n_max):
                out.append(
                    tr(
                        "attention_cost.take.wall",
                        impl=label.get((w.impl, w.requested_backend), w.impl),
                        n_max=_fmt_n(w.n_max),
                        budget=guard.format_bytes(budget),
                        slope=w.slope,
                        fitted_on=w.fitted_on,
                    )
                )
    checks = df[(df.point != "sweep") & (df.status == "ok")]
    for _, r in checks.iterrows():
        as_predicted = bool(r.fits_budget) == (r.point == "wall_below")
        out.append(
            tr(
                "attention_cost.take.check",
                impl=r.impl,
                n=_fmt_n(r.seq_len),
                peak=guard.format_bytes(r.peak_bytes),
                budget=guard.format_bytes(r.budget_bytes),
                verdict=tr("attention_cost.take.check." + ("ok" if as_predicted else "miss")),
            )
        )
    # one sentence per (kind of refusal, implementation), over the lengths it covers
    refused = df[df.status.isin(["skipped", "oom", "unsupported"])].copy()
    if len(refused):
        refused["key"] = refused.status.where(
            ~((refused.status == "skipped") & refused.note.astype(str).str.startswith("would take")), "skipped_time"
        )
        refused["name"] = [f"sdpa ({b})" if i == "sdpa" else i for i, b in zip(refused.impl, refused.requested_backend)]
        for (key, name), g in refused.groupby(["key", "name"], sort=False):
            g = g.sort_values("seq_len")
            n = _fmt_n(g.seq_len.iloc[0]) + (f" … {_fmt_n(g.seq_len.iloc[-1])}" if len(g) > 1 else "")
            need = guard.format_bytes(g.predicted_bytes.iloc[0]) + (
                f" … {guard.format_bytes(g.predicted_bytes.iloc[-1])}" if len(g) > 1 else ""
            )
            out.append(
                tr(
                    f"attention_cost.take.{key}",
                    impl=name,
                    backend=g.requested_backend.iloc[0],
                    n=n,
                    need=need,
                    note=g.note.iloc[0],
                )
            )
    return out


EXPERIMENT = Experiment(
    "attention_cost",
    AttentionCostConfig,
    run,
    PRESETS,
    "memory and time of one attention layer vs n: naive O(n²) vs fused SDPA vs linear vs an LSTM's state",
    takeaways,
)
