"""The measured kernel tables' common machinery: reading the distilled CSVs and interpolating them.

The tables (``inference_ledger/data/kernels/*.csv``, see the folder's NOTICE and ``scripts/distill_kernels.py``) are
NVIDIA aiconfigurator-core's measured SILICON database distilled per GPU x engine x version, and for AMD GPUs
(``*_amd.csv``, ``scripts/distill_amd_kernels.py``) ROCm/aiter's tuner tables and published all-reduce figures; a
blank cell is a point not measured.  Between grid points a
latency is interpolated log-log (linear in log latency over log size, along each axis in turn); below the grid the
smallest point holds (a kernel never gets faster than its floor); above it the latency grows in proportion to the size
(the last measured point's time per unit of work; the all-reduce lookup continues its last step instead).  The GEMM
lookup is here (:func:`gemm_seconds`; AMD's tuned shapes:
:mod:`inference_ledger.formulas.kernels`); the other lookups by operation are :mod:`inference_ledger.formulas.kernels`
and :mod:`inference_ledger.formulas.kernels_fused`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional

import numpy as np

from inference_ledger.core import csvfile

KERNELS_DIR = Path(__file__).resolve().parents[1] / "data" / "kernels"
US = 1e-6
FAMILIES = ("vllm", "sglang", "trtllm")  # the tables are per engine family (by id prefix)


@functools.lru_cache(maxsize=None)
def _lines(name: str) -> tuple[str, tuple[str, ...]]:
    """(the comment lines and the header, the data lines) of one distilled table, read once."""
    text = (KERNELS_DIR / name).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    head = next(k for k, line in enumerate(lines) if line.strip() and not line.startswith("#")) + 1
    return "".join(lines[:head]), tuple(line for line in lines[head:] if line.strip() and not line.startswith("#"))


def _rows(name: str, gpu_id: str) -> tuple[dict[str, str], ...]:
    """The rows of one distilled table (a commented CSV, inference_ledger.csvfile) that measure a GPU (its id among
    the first column's ``gpu_ids``): a plan reads its own GPU's rows, not the whole table (every data line starts
    with its unquoted ``gpu_ids``); the tables built from them are kept per GPU."""
    head, lines = _lines(name)
    return csvfile.parse(head + "".join(line for line in lines if gpu_id in line.split(",", 1)[0].split("|")),
                         name).rows


def _grid(header: list[str], prefix: str) -> tuple[list[str], np.ndarray]:
    cols = [c for c in header if c.startswith(prefix) and c[len(prefix):].isdigit()]
    return cols, np.array([float(c[len(prefix):]) for c in cols])


@dataclass(frozen=True)
class Table:
    """One measured table: axes, latencies (seconds) and where they come from."""

    axes: tuple[np.ndarray, ...]
    seconds: np.ndarray
    source: str

    @functools.cached_property
    def log_seconds(self) -> np.ndarray:
        """The latencies' logarithms (what :func:`interpolate` blends), taken once per table."""
        return np.log(self.seconds)


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


def latency_tables(name: str, decode: bool, key_of, inner_of, gpu_id: str) -> dict:
    """One GPU's tables of a decode or prefill latency CSV: outer key ``key_of(gpu_id, row)`` -> inner key
    ``inner_of(row)`` -> :class:`Table` (decode over (batch, context), prefill over prompt length, extended past the
    grid by the work)."""
    rows = list(_rows(name, gpu_id))
    if not rows:
        return {}
    cols, xs = _grid(list(rows[0]), "ctx" if decode else "isl")
    groups: dict = {}
    for r in rows:
        groups.setdefault(key_of(gpu_id, r), {}).setdefault(inner_of(r), []).append(r)
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
    logt = table.log_seconds
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


# ---------------------------------------------------------------------------------
# GEMM tables: NVIDIA's grid of (N, K), AMD's tuned shapes (see inference_ledger.kernels)
# ---------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _gemm(gpu_id: str) -> dict[tuple[str, str, str], Table]:
    """One GPU's GEMM tables: (gpu, engine, dtype) -> :class:`Table`."""
    out = {}
    for key, rs in _gemm_groups("gemm.csv", gpu_id).items():   # a grid of (N, K): axes (N, K, M)
        ns = np.array(sorted({float(r["n"]) for r in rs}))
        ks = np.array(sorted({float(r["k"]) for r in rs}))
        cols, ms = _grid(list(rs[0]), "m")
        arr = np.full((len(ns), len(ks), len(ms)), np.nan)
        for r in rs:
            arr[np.searchsorted(ns, float(r["n"])), np.searchsorted(ks, float(r["k"]))] = \
                [float(r[c]) * US for c in cols]
        _fill_nearest(arr)
        out[key] = Table((ns, ks, ms), arr, f"{rs[0]['source']} ({rs[0]['engine']} {rs[0]['version']})")
    for key, rs in _gemm_groups("gemm_amd.csv", gpu_id).items():   # a list of tuned shapes: axes (N x K, M)
        out[key] = _weight_size_table(rs)
    return out


def _gemm_groups(name: str, gpu_id: str) -> dict[tuple[str, str, str], list]:
    groups: dict = {}
    for r in _rows(name, gpu_id):
        groups.setdefault((gpu_id, r["engine"], r["dtype"]), []).append(r)
    return groups


def _shape_row(r: Mapping[str, str]) -> np.ndarray:
    """One tuned shape's latencies (s) at the M grid: a blank cell below the smallest measured M holds its time, one
    above the largest grows in proportion to M (the lookup's rules)."""
    cols, ms = _grid(list(r), "m")
    row = np.array([_cell(r[c]) for c in cols])
    first = int(np.argmax(~np.isnan(row)))
    row[:first] = row[first]
    return _extend(row[None, :], ms)[0]


@functools.lru_cache(maxsize=None)
def _gemm_shapes(gpu_id: str) -> dict[tuple[str, str, str], dict[tuple[float, float], Table]]:
    """One GPU's tuned shapes (AMD) one by one: (gpu, engine, dtype) -> {(N, K): latency over M}."""
    out: dict = {}
    for key, rs in _gemm_groups("gemm_amd.csv", gpu_id).items():
        ms = _grid(list(rs[0]), "m")[1]
        out[key] = {(float(r["n"]), float(r["k"])): Table((ms,), _shape_row(r), _gemm(gpu_id)[key].source)
                    for r in rs}
    return out


def _weight_size_table(rs: list) -> Table:
    """A GEMM table of scattered (N, K) shapes read along the weight size W = N x K (the module doc): shapes of one
    size share the geometric mean of their times; a blank M cell holds the smallest measured M's time below it and
    grows in proportion to M above the largest (the lookup's rules)."""
    ms = _grid(list(rs[0]), "m")[1]
    by_w: dict = {}
    for r in rs:
        by_w.setdefault(float(r["n"]) * float(r["k"]), []).append(_shape_row(r))
    ws = np.array(sorted(by_w))
    arr = np.array([np.exp(np.mean(np.log(by_w[w]), axis=0)) for w in ws])
    src = f"{rs[0]['version']} aiter/configs *tuned_gemm*.csv ({len(rs)} tuned shapes, read along N x K)"
    return Table((ws, ms), arr, src)


def gemm_dtype(weight_dtype: str) -> Optional[str]:
    """The GEMM table's dtype for a weight format (None: no table, e.g. INT4).  MXFP4 is measured on MI355X only
    (aiter's a4w4 GEMMs), NVFP4 on B200 only (aiconfigurator's nvfp4 GEMMs); another GPU has no such table and
    prices the step on the roofline."""
    return {"bf16": "bfloat16", "fp16": "bfloat16", "fp32": "bfloat16", "fp8": "fp8", "int8": "fp8",
            "mxfp4": "mxfp4", "nvfp4": "nvfp4"}.get(weight_dtype)


def _gemm_key(gpu_id: str, engine: str, dtype: str) -> Optional[tuple[str, str, str]]:
    t = _gemm(gpu_id)
    for e in (_family(engine), *FAMILIES, "aiter"):  # the engine's own table, else another engine's on the same
        if (gpu_id, e, dtype) in t:                  # GPU (cuBLAS either way); on AMD the aiter tuner's (the
            return gpu_id, e, dtype                  # library both engines call on ROCm)
    return None


def has_gemm_table(gpu_id: str, engine: str, weight_dtype: str) -> bool:
    """Whether a weight format has a GEMM table on the GPU (without one the plan prices the step on the roofline)."""
    dt = gemm_dtype(weight_dtype)
    return dt is not None and _gemm_key(gpu_id, engine, dt) is not None


def _gemm_table(gpu_id: str, engine: str, dtype: str) -> Optional[Table]:
    key = _gemm_key(gpu_id, engine, dtype)
    return None if key is None else _gemm(gpu_id)[key]


@functools.lru_cache(maxsize=None)
def gemm_seconds(gpu_id: str, engine: str, dtype: str, m: float, n: float, k: float) -> tuple[float, str]:
    """Measured latency of one GEMM (M tokens x K -> N) and its source; KeyError when the GPU has no table.  On a
    table of tuned shapes (AMD) a shape it holds is read on its own curve over M, any other along N x K.  Memoised:
    the tables are shipped data, and a workbook's Kernels grid asks for the same GEMM many times (each KV format,
    the plan's and the scenarios' rows)."""
    key = _gemm_key(gpu_id, engine, dtype)
    if key is None:
        raise KeyError(f"no GEMM table for {gpu_id} {dtype}")
    tab = _gemm(gpu_id)[key]
    if len(tab.axes) == 3:
        return interpolate(tab, n, k, m), tab.source
    own = _gemm_shapes(gpu_id)[key].get((float(n), float(k)))
    return (interpolate(own, m) if own is not None else interpolate(tab, n * k, m)), tab.source


def _smallest(gpu_id: str, engine: str, dtype: str) -> tuple[float, float]:
    tab = _gemm_table(gpu_id, engine, dtype)
    if len(tab.axes) == 2:   # a weight-size table: its smallest N x K
        return float(tab.axes[0][0]), 1.0
    return float(tab.axes[0][0]), float(tab.axes[1][0])
