"""The measured kernel tables' common machinery: reading the distilled CSVs and interpolating them.

The tables (``inference_ledger/data/kernels/*.csv``, see the folder's NOTICE and ``scripts/distill_kernels.py``) are
NVIDIA aiconfigurator-core's measured SILICON database distilled per GPU x engine x version, and for AMD GPUs
(``*_amd.csv``, ``scripts/distill_amd_kernels.py``) ROCm/aiter's tuner tables and published all-reduce figures; a
blank cell is a point not measured.  Between grid points a
latency is interpolated log-log (linear in log latency over log size, along each axis in turn); below the grid the
smallest point holds (a kernel never gets faster than its floor); above it the latency grows in proportion to the size
(the last measured point's time per unit of work).  The lookups by operation are :mod:`inference_ledger.kernels` and
:mod:`inference_ledger.kernels_fused`.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

KERNELS_DIR = Path(__file__).with_name("data") / "kernels"
US = 1e-6
FAMILIES = ("vllm", "sglang", "trtllm")  # the tables are per engine family (by id prefix)


def _rows(name: str):
    with (KERNELS_DIR / name).open(encoding="utf-8", newline="") as fh:
        yield from csv.DictReader(ln for ln in fh if ln.strip() and not ln.startswith("#"))


def _grid(header: list[str], prefix: str) -> tuple[list[str], np.ndarray]:
    cols = [c for c in header if c.startswith(prefix) and c[len(prefix):].isdigit()]
    return cols, np.array([float(c[len(prefix):]) for c in cols])


@dataclass(frozen=True)
class Table:
    """One measured table: axes, latencies (seconds) and where they come from."""

    axes: tuple[np.ndarray, ...]
    seconds: np.ndarray
    source: str


def _family(engine: str) -> str:
    e = str(engine).lower()
    for f in FAMILIES:
        if e.startswith(f):
            return f
    return "vllm"


def _fill_nearest(arr: np.ndarray) -> None:
    """Fill a missing (N, K) cell from its nearest measured neighbour along K (then N)."""
    for i, j in np.argwhere(np.isnan(arr[..., 0])):
        near = [(ii, jj) for d in range(1, max(arr.shape[:2])) for ii, jj in ((i, j - d), (i, j + d), (i - d, j),
                (i + d, j)) if 0 <= ii < arr.shape[0] and 0 <= jj < arr.shape[1] and not np.isnan(arr[ii, jj, 0])]
        arr[i, j] = arr[near[0]]


def _cell(text: str) -> float:
    return float(text) * US if text.strip() else np.nan


def _extend(arr: np.ndarray, work: np.ndarray) -> np.ndarray:
    """Fill the unmeasured (longer) cells of each row in proportion to the work from its last measured cell
    (the module's rule above a grid)."""
    out = arr.copy()
    for row in out:
        last = None
        for j in range(len(row)):
            if np.isnan(row[j]) and last is not None:
                row[j] = row[last] * work[j] / work[last]
            elif not np.isnan(row[j]):
                last = j
    return out


# ---------------------------------------------------------------------------------
# interpolation
# ---------------------------------------------------------------------------------


def latency_tables(name: str, decode: bool, key_of, inner_of) -> dict:
    """A decode or prefill latency CSV as tables: outer key ``key_of(gpu_id, row)`` -> inner key ``inner_of(row)`` ->
    :class:`Table` (decode over (batch, context), prefill over prompt length, extended past the grid by the work)."""
    rows = list(_rows(name))
    cols, xs = _grid(list(rows[0]), "ctx" if decode else "isl")
    groups: dict = {}
    for r in rows:
        for gid in r["gpu_ids"].split("|"):
            groups.setdefault(key_of(gid, r), {}).setdefault(inner_of(r), []).append(r)
    out: dict = {}
    for key, inner in groups.items():
        out[key] = {}
        for k, rs in inner.items():
            src = f"{rs[0]['source']} ({rs[0]['engine']} {rs[0]['version']})"
            if decode:
                bs = np.array(sorted({float(r["batch"]) for r in rs}))
                arr = np.full((len(bs), len(xs)), np.nan)
                for r in rs:
                    arr[np.searchsorted(bs, float(r["batch"]))] = [_cell(r[c]) for c in cols]
                out[key][k] = Table((bs, xs), _extend(arr, xs), src)
            else:
                out[key][k] = Table((xs,), _extend(np.array([[_cell(rs[0][c]) for c in cols]]), xs ** 2)[0], src)
    return out


def _axis(grid: np.ndarray, x: float) -> tuple[int, float, float]:
    """(lower index, log-fraction to the next point, factor beyond the top) of x on a sorted grid."""
    if len(grid) == 1 or x <= grid[0]:
        return 0, 0.0, 1.0
    if x >= grid[-1]:
        return len(grid) - 2, 1.0, x / grid[-1]
    i = int(np.searchsorted(grid, x, side="right")) - 1
    f = (math.log(x) - math.log(grid[i])) / (math.log(grid[i + 1]) - math.log(grid[i]))
    return i, f, 1.0


def interpolate(table: Table, *point: float) -> float:
    """Log-log interpolation of a table at a point (one value per axis): multilinear in log latency over the log
    axes; below an axis the first point holds, above it the time grows in proportion (see the module doc)."""
    idx, scale = [], 1.0
    for grid, x in zip(table.axes, point):
        i, f, s = _axis(grid, float(x))
        idx.append((i, f))
        scale *= s
    logt = np.log(table.seconds)
    total = 0.0
    for corner in range(2 ** len(idx)):
        w, sel = 1.0, []
        for d, (i, f) in enumerate(idx):
            hi = (corner >> d) & 1
            if len(table.axes[d]) == 1:
                if hi:
                    w = 0.0
                sel.append(0)
                continue
            w *= f if hi else 1.0 - f
            sel.append(i + hi)
        if w:
            total += w * logt[tuple(sel)]
    return float(math.exp(total) * scale)


def kv_table_dtype(kv_dtype: str) -> str:
    return "fp8" if kv_dtype in ("fp8", "int8", "int4-kv") else "bfloat16"
