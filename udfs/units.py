"""Named constants and unit conversions.

Every number that is not an input lives here with a name, a unit and a reason, so that
the workbook can show it as a labelled cell (FAST: no constants inside formulas) and
the Python formulas use exactly the same value.

Units: GB = 1e9 bytes (decimal, what vendors print on the box) and GiB = 2**30 bytes
(binary, what CUDA, torch and the engines' logs report, often labelled "GB").
"""

from __future__ import annotations

from .expr import Const

KV_FACTOR = Const(2, "KV_FACTOR", "one key and one value vector are cached per KV head, per layer, per token", "x")
FLOPS_PER_PARAM = Const(2, "FLOPS_PER_PARAM", "one multiply and one add per weight per token (Kaplan et al. 2020, C ~ 2N per token forward)", "FLOP/param/token")
BITS_PER_BYTE = Const(8, "BITS_PER_BYTE", "8 bits in a byte", "bit/B")
BYTES_PER_GB = Const(1e9, "BYTES_PER_GB", "decimal gigabyte (SI), as marketed", "B/GB")
BYTES_PER_GIB = Const(2**30, "BYTES_PER_GIB", "binary gibibyte, as CUDA/torch/vLLM report (often labelled 'GB')", "B/GiB")
SECONDS_PER_HOUR = Const(3600, "SECONDS_PER_HOUR", "60 x 60", "s/h")
SECONDS_PER_DAY = Const(86400, "SECONDS_PER_DAY", "24 x 3600", "s/day")
HOURS_PER_MONTH = Const(730, "HOURS_PER_MONTH", "8760 h per year / 12 (the cloud-billing convention)", "h/month")
DAYS_PER_MONTH = Const(365 / 12, "DAYS_PER_MONTH", "365 / 12", "day/month")
TOKENS_PER_MILLION = Const(1e6, "TOKENS_PER_MILLION", "prices are quoted per million tokens", "tokens/Mtok")
TP_BASE = Const(2, "TP_BASE", "tensor-parallel degrees are powers of two (1, 2, 4, 8): they must divide the attention heads", "x")
MS_PER_S = Const(1000, "MS_PER_S", "milliseconds per second", "ms/s")

#: Every constant, in the order the workbook lists them.
CONSTANTS: tuple[Const, ...] = (
    KV_FACTOR,
    FLOPS_PER_PARAM,
    BITS_PER_BYTE,
    BYTES_PER_GB,
    BYTES_PER_GIB,
    SECONDS_PER_HOUR,
    SECONDS_PER_DAY,
    HOURS_PER_MONTH,
    DAYS_PER_MONTH,
    TOKENS_PER_MILLION,
    TP_BASE,
    MS_PER_S,
)


def gb(x: float) -> float:
    """bytes -> GB (1e9)."""
    return x / BYTES_PER_GB


def gib(x: float) -> float:
    """bytes -> GiB (2**30)."""
    return x / BYTES_PER_GIB
