"""Every argument the ledger takes: its meaning, unit, default and allowed range.

One table serves every adapter: the Excel functions' argument docs and cell errors,
the CLI's --help and one-line errors, and the workbook's data validation and input
messages.  Ranges are generous but finite: a 10^20-parameter model is a typo.
"""

from __future__ import annotations

import functools
import inspect
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Optional, Sequence

import numpy as np


class LedgerInputError(ValueError):
    """A bad argument; the message names it and what is allowed."""


#: Most characters of a user's value a message repeats (a 100,000-character id is not echoed in full).
ECHO_LIMIT = 60


def echo(value: Any, limit: int = ECHO_LIMIT) -> str:
    """A user's value for a message: its repr, cut to ``limit`` characters with its length said."""
    text = value if isinstance(value, str) else repr(value)
    if len(text) <= limit:
        return repr(value)
    return f"{text[:limit]!r}... ({len(text):,} characters)"


@dataclass(frozen=True)
class Arg:
    name: str
    doc: str
    unit: str
    lo: float
    hi: float
    lo_inclusive: bool = True
    integer: bool = False
    default: Optional[float] = None

    def allowed(self) -> str:
        kind = "a whole number" if self.integer else "a number"
        op = ">=" if self.lo_inclusive else ">"
        return f"{kind} {op} {_fmt(self.lo)} and <= {_fmt(self.hi)}"

    def check(self, value: Any) -> float:
        """Validate one scalar; return it as float or raise LedgerInputError.

        Numbers only: a bool is not a number (True is not a length), and neither is text ("80").
        """
        if isinstance(value, (bool, np.bool_)) or value is None:
            raise LedgerInputError(f"{self.name} must be {self.allowed()} (got {value!r})")
        if isinstance(value, (str, bytes)):
            raise LedgerInputError(f"{self.name} must be {self.allowed()} (got text {echo(value)})")
        try:
            v = float(value)
        except (TypeError, ValueError):
            raise LedgerInputError(
                f"{self.name} must be {self.allowed()} (got {type(value).__name__} {echo(value)})"
            ) from None
        if math.isnan(v):
            raise LedgerInputError(f"{self.name} must be {self.allowed()} (got NaN)")
        bad_lo = v < self.lo or (v == self.lo and not self.lo_inclusive)
        if bad_lo or v > self.hi:
            raise LedgerInputError(f"{self.name} must be {self.allowed()} (got {_fmt(v)})")
        if self.integer and v != int(v):
            raise LedgerInputError(f"{self.name} must be {self.allowed()} (got {_fmt(v)})")
        return v


def _fmt(v: float) -> str:
    if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:g}"


def _a(name, doc, unit, lo, hi, lo_inclusive=True, integer=False, default=None):
    return Arg(name, doc, unit, lo, hi, lo_inclusive, integer, default)


_LIST = [
    # model shape
    _a("num_params", "Total parameters (all experts of a MoE): what memory holds", "params", 0, 1e14, False),
    _a("active_params", "Parameters used per token (MoE: routed experts only); drives FLOPs and bytes read", "params", 0, 1e14, False),
    _a("num_layers", "Transformer layers (num_hidden_layers)", "layers", 1, 10000, integer=True),
    _a("kv_heads", "KV heads per layer (num_key_value_heads; GQA < attention heads)", "heads", 1, 4096, integer=True),
    _a("head_dim", "Dimension of one attention head", "elements", 1, 65536, integer=True),
    _a("kv_lora_rank", "MLA compressed KV latent width (DeepSeek kv_lora_rank)", "elements", 0, 1e6, integer=True),
    _a("qk_rope_head_dim", "MLA decoupled RoPE key width, cached beside the latent", "elements", 0, 1e6, integer=True),
    _a("sliding_layers", "Layers with sliding-window attention (their KV is capped at the window)", "layers", 0, 10000, integer=True, default=0),
    _a("window", "Sliding-window length", "tokens", 0, 1e9, integer=True, default=0),
    # precision
    _a("bytes_per", "Bytes per element (BF16/FP16 2, FP8/INT8 1, INT4 0.5)", "B", 0, 16, False, default=2),
    _a("weight_bytes", "Bytes per weight of the quantized linear layers", "B/param", 0, 16, False, default=2),
    _a("kv_bytes", "Bytes per KV-cache element (BF16 2, FP8 1, INT4 0.5)", "B", 0, 16, False, default=2),
    _a("bits", "Bits per element of the format", "bit", 0, 128, False),
    _a("group_size", "Elements sharing one scale (1 = no group scale)", "elements", 1, 1e9, integer=True, default=1),
    _a("scale_bits", "Bits of each group scale (0 = none)", "bit", 0, 128, default=0),
    # workload
    _a("seq_len", "Sequence length held in the KV cache", "tokens", 0, 1e9, integer=True),
    _a("context", "Tokens of context per sequence (prompt + generated)", "tokens", 0, 1e9, integer=True),
    _a("input_tokens", "Prompt tokens per request (S)", "tokens", 0, 1e9, integer=True),
    _a("output_tokens", "Generated tokens per request (T)", "tokens", 0, 1e9, integer=True),
    _a("concurrency", "Sequences decoding at the same time (peak batch)", "sequences", 0, 1e7, integer=True, default=1),
    _a("batch", "Sequences in one decode step", "sequences", 0, 1e7, integer=True, default=1),
    # hardware
    _a("hbm_bw", "HBM bandwidth of one GPU", "B/s", 0, 1e15, False),
    _a("peak_flops", "Dense peak FLOP/s of one GPU at the compute dtype (not the sparse headline)", "FLOP/s", 0, 1e18, False),
    _a("gpu_memory_bytes", "GPU memory as the runtime sees it (an 80 GB H100 is 79.19 GiB)", "B", 0, 1e13, False),
    _a("gpu_memory_utilization", "Fraction of GPU memory the engine may use (vLLM default 0.9)", "fraction", 0, 1, False, default=0.9),
    _a("tp", "Tensor-parallel degree (GPUs one model copy is split across)", "GPUs", 1, 1024, integer=True, default=1),
    _a("num_gpus", "GPUs", "GPUs", 1, 1e6, integer=True, default=1),
    _a("efficiency", "Achieved fraction of the peak (model FLOP/s or bandwidth utilisation)", "fraction", 0, 1, False, default=0.5),
    # generic ledger quantities
    _a("weights_bytes", "Weight bytes", "B", 0, 1e15),
    _a("kv_bytes_per_token", "KV-cache bytes per token (all layers)", "B/token", 0, 1e12),
    _a("workspace_bytes", "Activation/workspace bytes", "B", 0, 1e13, default=0),
    _a("total_bytes", "Bytes to place", "B", 0, 1e16),
    _a("flops", "Floating-point operations", "FLOP", 0, 1e30),
    _a("bytes_moved", "Bytes read from HBM", "B", 0, 1e16),
    _a("seconds", "Time", "s", 0, 1e9, False),
    _a("tokens_per_second", "Output tokens per second", "tokens/s", 0, 1e12, False),
    # money and load
    _a("price_per_gpu_hour", "Price of one GPU for one hour", "$/GPU-h", 0, 1e6),
    _a("requests_per_day", "Forecast requests per day", "requests/day", 0, 1e12, default=0),
    _a("qps", "Requests per second (load the service must sustain)", "requests/s", 0, 1e9, False),
    # what-if and inverses (inference_ledger.formulas.whatif)
    _a("ttft_seconds", "Time to first token (prefill)", "s", 0, 1e6),
    _a("tpot_target", "Time per output token the service promises", "s", 0, 1e6, False),
    _a("flops_per_sequence", "Decode FLOPs one sequence adds to a step on one GPU (2 x active params / TP)", "FLOP", 0, 1e18, False),
    _a("kv_budget_bytes", "Bytes one GPU has for KV after weights and workspace (negative = weights do not fit)", "B", -1e16, 1e16),
    _a("kv_peak_bytes", "KV-cache bytes of the whole load: KV per sequence x concurrency", "B", 0, 1e16),
    _a("fit_bytes_per_gpu", "Bytes one GPU offers for weights and KV: usable memory - workspace", "B", 0, 1e13, False),
    _a("kv_max_shards", "Most ways the KV cache splits: the KV heads (GQA), 1 for an MLA latent", "x", 1, 1e6, integer=True),
    # further ledger-function arguments (the Excel functions document every argument from here)
    _a("quantized_params", "Parameters stored in the quantized format (the linear layers)", "params", 0, 1e14),
    _a("unquantized_bytes", "Bytes per parameter of the modules left unquantized (embeddings, norms, routers)", "B/param", 0, 16, False, default=2),
    _a("mla_latent_dim", "MLA cached width per layer: kv_lora_rank + qk_rope_head_dim (0 = no MLA)", "elements", 0, 1e6, integer=True, default=0),
    _a("kv_bytes_per_sequence", "KV-cache bytes of one sequence at its context", "B", 0, 1e15),
    _a("weights_bytes_per_gpu", "Weight bytes on one GPU (weights / TP)", "B", 0, 1e15),
    _a("workspace_bytes_per_gpu", "Activation/workspace bytes on one GPU", "B", 0, 1e13),
    _a("kv_bytes_per_token_per_gpu", "KV-cache bytes per token on one GPU (per token / KV shards)", "B/token", 0, 1e12, False),
    _a("kv_capacity_tokens", "KV tokens that fit on one GPU", "tokens", 0, 1e15),
    _a("bytes_per_param", "Bytes per weight read in decode", "B/param", 0, 16, False, default=2),
    _a("weights_read_bytes", "Weight bytes one decode step reads (active parameters x bytes)", "B", 0, 1e15),
    _a("kv_sequence_bytes", "KV-cache bytes one sequence reads per decode step", "B", 0, 1e15),
    _a("bw_efficiency", "Achieved fraction of HBM bandwidth (1 = the roofline floor)", "fraction", 0, 1, False, default=1),
    _a("compute_efficiency", "Achieved fraction of dense peak FLOP/s (1 = the roofline floor)", "fraction", 0, 1, False, default=1),
    _a("tpot_seconds", "Time per output token (one decode step)", "s", 0, 1e6, False),
    _a("required_tokens_per_second", "Output tokens per second the load needs", "tokens/s", 0, 1e12),
    _a("tokens_per_second_per_replica", "Output tokens per second one model copy delivers", "tokens/s", 0, 1e12, False),
    _a("total_bytes_per_gpu", "Bytes one GPU must hold", "B", 0, 1e16),
    _a("usable_bytes_per_gpu", "Bytes one GPU may use", "B", 0, 1e13),
]

ARGS: dict[str, Arg] = {a.name: a for a in _LIST}


def check(name: str, value: Any) -> float:
    return ARGS[name].check(value)


# --- the Python functions: the same checks as the Excel functions, raising instead of an error cell ------------


def undefined(fn: Callable[..., Any], args: Sequence[Arg], row: Sequence[float]) -> str:
    """Why checked arguments still give no finite answer: a zero that divides.  The divisor is the zero
    argument whose replacement by 1 makes the answer finite (the Excel functions' cell message too)."""
    zeros = [k for k, v in enumerate(row) if v == 0]
    with np.errstate(all="ignore"):
        divisors = [k for k in zeros
                    if np.isfinite(fn(*(np.array([1.0 if j == k else v]) for j, v in enumerate(row)))).all()]
    if divisors or zeros:
        return "; ".join(
            f"{args[k].name} must be {replace(args[k], lo=0, lo_inclusive=False).allowed()} here, it divides (got 0)"
            for k in divisors or zeros
        )
    return "no finite result for these inputs: " + ", ".join(f"{a.name}={_fmt(v)}" for a, v in zip(args, row))


def _checked_value(a: Arg, value: Any) -> Any:
    """One argument checked: a scalar as float, an array (or list) elementwise as a float array."""
    if isinstance(value, (list, tuple)):
        value = np.array(value, dtype=object)
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "iuf":
            x = value.astype(float)
            for v in x.ravel()[~_in_range(a, x.ravel())]:
                a.check(v)       # raises with the first bad element's words
            return x
        return np.array([a.check(v) for v in value.ravel()], dtype=float).reshape(value.shape)
    return np.array([a.check(value)])   # computed as an array: a zero that divides gives inf (then the message)


def _in_range(a: Arg, x: np.ndarray) -> np.ndarray:
    ok = ((x > a.lo) | ((x == a.lo) & a.lo_inclusive)) & (x <= a.hi)
    return ok & (x == np.floor(x)) if a.integer else ok


def checked(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` with every argument checked against :data:`ARGS` by its parameter name, as the Excel function of
    the same formula checks it, raising LedgerInputError (a ValueError) with the same words where Excel shows an
    error cell: out of range, NaN or infinite, a bool or text, or a zero that divides.

    ``fn`` itself stays pure (numbers, arrays, formula expressions): the plan graph calls it unchecked.
    """
    sig = inspect.signature(fn)
    names = list(sig.parameters)
    missing = [n for n in names if n not in ARGS]
    if missing:
        raise TypeError(f"{fn.__name__}: no argument table row for {', '.join(missing)}")

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        bound = sig.bind(*args, **kwargs)   # a missing or extra argument is Python's own TypeError
        bound.apply_defaults()
        given = [bound.arguments[n] for n in names]
        scalar = not any(isinstance(v, (np.ndarray, list, tuple)) for v in given)
        xs = [_checked_value(ARGS[n], v) for n, v in zip(names, given)]
        with np.errstate(all="ignore"):
            result = np.asarray(fn(*xs), dtype=float)
        bad = ~np.isfinite(result)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            row = [float(np.broadcast_to(x, result.shape).flat[i]) for x in xs]
            raise LedgerInputError(undefined(fn, [ARGS[n] for n in names], row))
        return float(result.ravel()[0]) if scalar else result

    call.pure = fn
    return call
