"""Fidelity: the plan's predictions against measured deployments.

``inference_ledger/data/measured.csv`` holds the public measurements (vLLM/SGLang startup logs, batch-1
decode latencies) with their sources.  Each row is mapped onto the catalogs (model, weight
format, GPU, engine) and run through the same plan graph as every other answer: nothing
here knows a measured value before comparing with it, and nothing is tuned per row.

What is compared (``METRICS``), and the targets the tests hold over the shipped rows:

* ``weights_gib``: per-GPU weights against "Model loading took ... GiB" (within 2%);
* ``kv_tokens`` / ``kv_cache_gib``: the engine's KV budget against "GPU KV cache size: N
  tokens" / "Available KV cache memory" (within 5%);
* ``kv_bytes_per_token``: logged KV memory / logged tokens against the per-GPU KV per token;
* ``started``: a configuration the engine refused to start is predicted not to start;
* ``tpot_ms``: expected TPOT (median |error| <= 15%), and the floor (100% bandwidth, no
  overhead) never above the measurement; both at the mean context of the decode steps;
* ``activation_gib``, ``non_torch_gib``, ``ttft_ms``: reported, not held to a target.

Rows may also come in the public file's own format (no mapping columns): the model, GPU,
engine and format are then read from its free-text columns (:func:`infer_mapping`).
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional

from inference_ledger.catalogs import catalog, engines
from inference_ledger.core import csvfile
from inference_ledger.graph import plan, resolve
from inference_ledger.core.args import LedgerInputError
from inference_ledger.core.units import BYTES_PER_GIB, MS_PER_S

MEASURED_CSV = Path(__file__).resolve().parents[1] / "data" / "measured.csv"
GIB = float(BYTES_PER_GIB)

#: Accuracy targets (relative error): one set of defaults must meet them over the dataset.
WEIGHTS_TOLERANCE = 0.02
KV_TOLERANCE = 0.05
TPOT_MEDIAN_TOLERANCE = 0.15

#: metric -> (label, unit, target description)
METRICS: dict[str, tuple[str, str, str]] = {
    "weights_gib": ("Weights per GPU", "GiB", "|error| <= 2%"),
    "kv_tokens": ("KV cache tokens", "tokens", "|error| <= 5%"),
    "kv_cache_gib": ("KV cache memory", "GiB", "|error| <= 5%"),
    "kv_bytes_per_token": ("KV bytes per token per GPU", "B", "|error| <= 5%"),
    "started": ("Engine starts", "1/0", "equal"),
    "tpot_ms": ("TPOT, batch 1 (expected)", "ms", "median |error| <= 15%"),
    "tpot_floor_ms": ("TPOT floor (100% bandwidth)", "ms", "floor <= measured"),
    "activation_gib": ("Activation peak", "GiB", "reported"),
    "non_torch_gib": ("Non-torch memory", "GiB", "reported"),
    "ttft_ms": ("TTFT", "ms", "reported"),
}
#: Metrics held to a per-row relative tolerance.
ROW_TOLERANCE = {"weights_gib": WEIGHTS_TOLERANCE, "kv_tokens": KV_TOLERANCE, "kv_cache_gib": KV_TOLERANCE,
                 "kv_bytes_per_token": KV_TOLERANCE}


# ----------------------------------------------------------------------------------------
# rows
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One measured deployment, mapped onto the catalogs (blank ids: not identified)."""

    id: str
    model_id: str
    weight_dtype: str
    kv_dtype: str
    gpu_id: str
    engine_id: str
    tp: int
    total_gpu_memory_gib: Optional[float]
    gpu_memory_utilization: Optional[float]
    max_model_len: Optional[int]
    measured: dict[str, float]
    batch: int
    in_len: Optional[int]
    out_len: Optional[int]
    started: Optional[int]
    not_checked: dict[str, str] = field(default_factory=dict)
    source: str = ""


class _Cells:
    """Numbers from one row's cells; a cell that is not blank must start with a number in its column's range.

    A note after the number is allowed, as the public file writes it ('0.93 (mem-fraction-static)');
    anything else is an error naming the row and the column (never a silent default).
    """

    WHOLE = {"tp": 1, "pp": 1, "batch": 1, "in_len": 1, "out_len": 1, "max_model_len": 1, "started": 0, "kv_tokens": 0}

    def __init__(self, r: dict[str, str], where: str):
        self.r, self.where = r, where

    def float(self, col: str) -> Optional[float]:
        text = (self.r.get(col) or "").strip()
        if not text:
            return None
        m = re.match(r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)(?![\w.])", text)
        v = float(m.group(1)) if m else math.nan
        if not math.isfinite(v):
            raise LedgerInputError(f"{self.where}, column '{col}': {text!r} is not a number")
        lo = self.WHOLE.get(col)
        if lo is not None and (v != int(v) or v < lo or (col == "started" and v > 1)):
            allowed = "0 or 1" if col == "started" else f"a whole number >= {lo}"
            raise LedgerInputError(f"{self.where}, column '{col}': {text!r} is not {allowed}")
        if col == "gpu_mem_util" and not 0 < v <= 1:
            raise LedgerInputError(f"{self.where}, column '{col}': {text!r} is not a fraction in (0, 1]")
        return v

    def int(self, col: str) -> Optional[int]:
        v = self.float(col)
        return int(v) if v is not None else None


def _not_checked(text: str) -> dict[str, str]:
    out = {}
    for part in (text or "").split("|"):
        if "=" in part:
            k, why = part.split("=", 1)
            out[k.strip()] = why.strip()
    return out


def infer_mapping(r: dict[str, str]) -> dict[str, str]:
    """Catalog ids from a public row's free text: model, GPU, engine and weight format.

    The model is tried as written, then its parenthesised architecture ('(Qwen2.5-14B arch)'),
    then without -Instruct/-chat/-hf/-FP8 suffixes; the GPU is the longest catalog alias the
    text contains; the engine is SGLang/TensorRT-LLM by name, vLLM V0 for 0.5-0.7 or '(V0)',
    vLLM (V1, the current profile) from 0.19, vllm-0.9 for any other V1 text; the format is the first dtype id
    or alias in the dtype column.
    """
    return {"model_id": _model_id(r.get("model", "")), "gpu_id": _gpu_id(r.get("gpu", "")),
            "engine_id": _engine_id(r.get("engine", "")), "weight_dtype": _dtype_id(r.get("dtype", ""))}


def _model_id(text: str) -> str:
    candidates = [text.split(" (")[0].strip()]
    candidates += re.findall(r"\(([^)]*?)(?: arch)?\)", text)
    more = []
    for c in candidates:
        base = re.sub(r"(-Instruct|-chat|-hf|-FP8|-fp8)+$", "", c.split(" ")[0])
        more += [base, base.split("/")[-1], base.replace("Meta-Llama-3-", "Llama-3.1-")]
    for c in candidates + more:
        try:
            return catalog.get_model(c).id
        except LedgerInputError:
            continue
    return ""


def _gpu_id(text: str) -> str:
    t = text.lower()
    best, size = "", 0
    for g in catalog.load_gpus():
        for name in (g.id, g.name, *g.aliases):
            n = name.lower()
            if len(n) > size and re.search(r"(?<![\w.])" + re.escape(n) + r"(?![\w.])", t):
                best, size = g.id, len(n)
    return best


def _engine_id(text: str) -> str:
    t = text.lower()
    if "sglang" in t:
        return "sglang"
    if "tensorrt" in t or "trt" in t:
        return "trtllm"
    if "vllm" not in t:
        return ""
    m = re.search(r"(\d+)\.(\d+)", t)
    version = (int(m.group(1)), int(m.group(2))) if m else None
    if "(v0" in t or (version and version < (0, 8)):
        return "vllm-v0"
    if version == (0, 8):
        return "vllm-0.8"
    if version and version >= (0, 19):
        return "vllm"
    return "vllm-0.9"  # V1 0.9-0.18, or a V1 log that names no version (this file's are from 2025)


def _dtype_id(text: str, use: str = "weight") -> str:
    for word in re.findall(r"[a-z0-9]+", (text or "").lower()):
        try:
            d = catalog.get_dtype(word)
        except LedgerInputError:
            continue
        if use in d.use.split("|"):
            return d.id
    return ""


def _row(r: dict[str, str], where: str = "row") -> Row:
    cells = _Cells(r, where)
    inferred = infer_mapping(r)
    pick = {k: (r.get(k) or "").strip() or v for k, v in inferred.items()}
    total = cells.float("total_gpu_memory_gib")
    if total is None:  # the public file prints the runtime total inside the GPU text: '(23.58GiB)'
        m = re.search(r"([\d.]+)\s*GiB", r.get("gpu", ""))
        total = float(m.group(1)) if m else None
    measured = {k: cells.float(k) for k in ("weights_gib", "activation_gib", "non_torch_gib", "kv_cache_gib",
                                                 "kv_tokens", "tpot_ms", "ttft_ms")}
    measured = {k: v for k, v in measured.items() if v is not None}
    started = cells.int("started")
    if started is None and (measured.get("kv_cache_gib", 0) < 0 or "FAILED" in r.get("notes", "")):
        started = 0
    elif started is None and ("kv_cache_gib" in measured or "kv_tokens" in measured):
        started = 1  # it logged its KV cache: it got that far
    not_checked = _not_checked(r.get("not_checked", ""))
    if (cells.int("pp") or 1) > 1:
        not_checked.setdefault("all", "pipeline parallelism splits layers over stages; the plan models TP only")
    return Row(id=r.get("id") or r.get("model", ""), model_id=pick["model_id"], weight_dtype=pick["weight_dtype"],
               kv_dtype=_dtype_id(r.get("kv_dtype", ""), "kv") or "bf16", gpu_id=pick["gpu_id"], engine_id=pick["engine_id"], tp=cells.int("tp") or 1,
               total_gpu_memory_gib=total, gpu_memory_utilization=cells.float("gpu_mem_util"),
               max_model_len=cells.int("max_model_len"),
               measured=measured, batch=cells.int("batch") or 1,
               in_len=cells.int("in_len"), out_len=cells.int("out_len"), started=started,
               not_checked=not_checked, source=r.get("source", ""))


def load_measured(path: str | Path | None = None) -> list[Row]:
    """Rows of a measured CSV ('#' comment lines skipped): this project's copy by default."""
    p = Path(path) if path is not None else MEASURED_CSV
    table = csvfile.read(p, kind="data")   # a regular file within the size limit, errors naming it
    if not table.rows or "model" not in table.header and "model_id" not in table.header:
        raise LedgerInputError(f"{p}: not a measured-deployments CSV (needs a 'model' or 'model_id' column)")
    return [_row(r, table.where(r)) for r in table.rows]


# ----------------------------------------------------------------------------------------
# predictions
# ----------------------------------------------------------------------------------------


def row_inputs(row: Row, decode: bool = False) -> Optional[dict[str, Any]]:
    """Plan inputs for a row (None when its model is not in the catalog).

    ``decode=True`` runs the row as a static batch: its decode steps (priced at their mean
    context S + T/2, as every plan's are) carry no other request's prompt, as in a latency
    benchmark, so the floor and the expected TPOT compare with a TPOT averaged over the generation.
    """
    if not row.model_id:
        return None
    prompt, out = row.in_len or 1, row.out_len or 1
    overrides: dict[str, Any] = {"concurrency": row.batch, "input_tokens": prompt, "output_tokens": out}
    if decode:  # one batch timed through its decode steps: nothing else prefills in between
        overrides["batching"] = 2
    if row.gpu_memory_utilization is not None:
        overrides["gpu_memory_utilization"] = row.gpu_memory_utilization
    if row.total_gpu_memory_gib:
        overrides["gpu_memory_bytes"] = row.total_gpu_memory_gib * GIB
    model = resolve.find_model(row.model_id)
    return resolve.resolve(model, row.gpu_id or None, weight_dtype=row.weight_dtype or None, kv_dtype=row.kv_dtype,
                           engine=row.engine_id or engines.DEFAULT_ENGINE,
                           max_model_len=row.max_model_len or model.max_position_embeddings,
                           numbers={"tp": row.tp, **overrides}).inputs


@dataclass(frozen=True)
class Check:
    """One predicted-vs-measured figure of one row."""

    row: str
    metric: str
    measured: float
    predicted: float
    checked: bool       # held to the target
    reason: str = ""    # why not, when not

    @property
    def error(self) -> float:
        """Relative error (predicted - measured) / |measured| (0 for an exact 1/0 match)."""
        if self.metric == "started":
            return float(self.predicted != self.measured)
        return (self.predicted - self.measured) / abs(self.measured) if self.measured else math.inf

    @property
    def passed(self) -> bool:
        if self.metric == "started":
            return self.predicted == self.measured
        if self.metric == "tpot_floor_ms":
            return self.predicted <= self.measured
        tol = ROW_TOLERANCE.get(self.metric)
        return tol is None or abs(self.error) <= tol


def _row_checks(row: Row) -> list[Check]:
    nc = row.not_checked
    if "all" in nc or not row.model_id:
        return []
    v = plan.evaluate(row_inputs(row))
    memory = bool(row.engine_id and (row.gpu_id or row.total_gpu_memory_gib))
    out: list[Check] = []

    def add(metric: str, measured: float, predicted: float, target: bool = True) -> None:
        reason = nc.get(metric, "")
        out.append(Check(row.id, metric, float(measured), float(predicted), target and not reason, reason))

    m = row.measured
    if "weights_gib" in m:
        add("weights_gib", m["weights_gib"], v["weights_bytes_per_gpu"] / GIB)
    if "kv_tokens" in m and "kv_cache_gib" in m:
        add("kv_bytes_per_token", m["kv_cache_gib"] * GIB / m["kv_tokens"], v["kv_bytes_per_token_per_gpu"])
    if memory:
        budget = v["kv_cache_budget_bytes_per_gpu"]
        if "kv_tokens" in m:
            add("kv_tokens", m["kv_tokens"], v["kv_capacity_tokens"])
        if "kv_cache_gib" in m and m["kv_cache_gib"] > 0:
            add("kv_cache_gib", m["kv_cache_gib"], budget / GIB)
        if row.started is not None:
            need = (row.max_model_len or 1) * v["kv_bytes_per_token_per_gpu"]
            add("started", row.started, 1.0 if budget >= need else 0.0)
        if "activation_gib" in m:
            add("activation_gib", m["activation_gib"], v["activation_peak_bytes_per_gpu"] / GIB, target=False)
        if "non_torch_gib" in m:
            add("non_torch_gib", m["non_torch_gib"], v["non_torch_bytes_per_gpu"] / GIB, target=False)
    if row.gpu_id and "tpot_ms" in m:
        d = plan.evaluate(row_inputs(row, decode=True))
        add("tpot_ms", m["tpot_ms"], d["tpot_seconds"] * MS_PER_S)
        add("tpot_floor_ms", m["tpot_ms"], d["tpot_floor_seconds"] * MS_PER_S)
    if row.gpu_id and "ttft_ms" in m and row.in_len:
        add("ttft_ms", m["ttft_ms"], v["ttft_seconds"] * MS_PER_S, target=False)
    return out


def compare(rows: Iterable[Row] | None = None) -> list[Check]:
    """Every predicted-vs-measured figure of the rows (the shipped dataset by default)."""
    return [c for r in (load_measured() if rows is None else rows) for c in _row_checks(r)]


@dataclass(frozen=True)
class Summary:
    metric: str
    n: int
    median_abs_error: float
    max_abs_error: float
    passed: bool


def summarize(checks: list[Check]) -> list[Summary]:
    """Per metric, over the checked figures: count, median and max |error|, and the target met."""
    out = []
    for metric in METRICS:
        cs = [c for c in checks if c.metric == metric and c.checked]
        if not cs:
            continue
        errs = [abs(c.error) for c in cs]
        if metric == "tpot_ms":
            ok = statistics.median(errs) <= TPOT_MEDIAN_TOLERANCE
        else:
            ok = all(c.passed for c in cs)
        out.append(Summary(metric, len(cs), statistics.median(errs), max(errs), ok))
    return out


def floor_violations(checks: list[Check]) -> list[Check]:
    """TPOT floors above a measured TPOT: the floor would not be a floor (checked or not)."""
    return [c for c in checks if c.metric == "tpot_floor_ms" and c.predicted > c.measured]
