"""Published measurements of LLM serving under load (``inference_ledger/data/measured_load.csv``).

One row per measured point at batch or concurrency > 1: the deployment (model, GPU, TP, engine, formats), the
regime (``static``: one batch prefilled then decoded together; ``continuous``: a client keeping ``batch`` requests
in flight against a continuous-batching server), the request shape, and what the source printed: output tokens/s,
mean TPOT or ITL, mean TTFT.  The file's header describes every column and unit.  This module only reads and checks
the file; it predicts nothing (the plan's figures are compared with these rows elsewhere).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from inference_ledger.core.args import LedgerInputError

MEASURED_LOAD_CSV = Path(__file__).resolve().parents[1] / "data" / "measured_load.csv"

REGIMES = ("static", "continuous")
BASES = ("total", "per_gpu")
MODEL_MATCHES = ("exact", "same-shapes", "nearest")
#: columns every row must fill (the rest may be blank where the source does not say)
REQUIRED = ("id", "model_id", "model_match", "model", "weight_dtype", "gpu_id", "gpu", "gpus", "tp", "engine", "regime",
            "batch", "input_tokens", "output_tokens", "source_key", "source_group", "source", "date", "quote")
#: the measured figures (at least one per row)
METRICS = ("output_tok_s", "tpot_ms", "itl_ms", "ttft_ms")
#: engine families, as engines.csv ids begin (vllm-0.9 -> vllm) or as the free text names them
ENGINE_FAMILIES = ("vllm", "sglang", "trtllm", "lmdeploy", "nim", "atom", "tgi")
#: a source key or group: lower-case words of letters, digits and dots joined by '-' (e.g. nvidia-trtllm-perf-v0.9)
SOURCE_KEY = re.compile(r"[a-z0-9.]+(?:-[a-z0-9.]+)*")


@dataclass(frozen=True)
class LoadRow:
    """One measured point under load (latencies in ms, throughput in output tokens/s)."""

    id: str
    model_id: str
    model_match: str
    weight_dtype: str
    kv_dtype: str  # '' = not stated by the source
    gpu_id: str
    gpus: int
    tp: int
    engine_id: str  # '' = engine or version not identifiable
    engine: str  # the engine and version as the source names them (free text)
    regime: str
    batch: int
    input_tokens: int
    output_tokens: int
    output_tok_s: Optional[float]  # as printed, on `basis`
    basis: str
    tpot_ms: Optional[float]
    itl_ms: Optional[float]
    ttft_ms: Optional[float]
    source_key: str  # the document the row comes from
    source_group: str  # the independent source (team + harness) the document belongs to; held out as one
    source: str
    date: str
    quote: str
    notes: str
    requests: Optional[int] = None  # N, the requests of the benchmark run where printed; None = not printed

    @property
    def engine_family(self) -> str:
        """The engine family (one of ENGINE_FAMILIES): the engines.csv id's family, else the first family named in `engine`."""
        for fam in ENGINE_FAMILIES:
            if self.engine_id.split("-")[0] == fam:
                return fam
        text = self.engine.lower().replace("tensorrt-llm", "trtllm")
        found = [(text.find(f), f) for f in ENGINE_FAMILIES if f in text]
        return min(found)[1] if found else "other"

    @property
    def deployment_tok_s(self) -> Optional[float]:
        """Output tokens/s of the whole deployment (a per-GPU figure times the GPUs)."""
        if self.output_tok_s is None:
            return None
        return self.output_tok_s * (self.gpus if self.basis == "per_gpu" else 1)


def _whole(r: dict, key: str, where: str, lo: int = 1) -> int:
    v = r[key]
    if not v.isdigit() or int(v) < lo:
        raise LedgerInputError(f"{where}: field '{key}' must be a whole number >= {lo} (got {v!r})")
    return int(v)


def _positive(r: dict, key: str, where: str) -> Optional[float]:
    v = r.get(key, "")
    if not v:
        return None
    try:
        x = float(v)
    except ValueError:
        x = -1.0
    if not x > 0:
        raise LedgerInputError(f"{where}: field '{key}' must be a number > 0 or blank (got {v!r})")
    return x


def _one(r: dict[str, str], where: str) -> LoadRow:
    for key in REQUIRED:
        if not r.get(key):
            raise LedgerInputError(f"{where}: field '{key}' is empty")
    for key, allowed in (("regime", REGIMES), ("model_match", MODEL_MATCHES)):
        if r[key] not in allowed:
            raise LedgerInputError(f"{where}: field '{key}' must be one of {', '.join(allowed)} (got {r[key]!r})")
    figures = {k: _positive(r, k, where) for k in METRICS}
    if all(v is None for v in figures.values()):
        raise LedgerInputError(f"{where}: no measured figure (one of {', '.join(METRICS)} is needed)")
    basis = r.get("output_tok_s_basis", "")
    if figures["output_tok_s"] is not None and basis not in BASES:
        raise LedgerInputError(f"{where}: field 'output_tok_s_basis' must be one of {', '.join(BASES)} (got {basis!r})")
    for key in ("source_key", "source_group"):
        if not SOURCE_KEY.fullmatch(r[key]):
            raise LedgerInputError(f"{where}: field '{key}' must be lower-case words of a-z, 0-9 and '.' joined by '-' "
                                   f"(got {r[key]!r})")
    gpus, tp = _whole(r, "gpus", where), _whole(r, "tp", where)
    if gpus % tp:
        raise LedgerInputError(f"{where}: gpus {gpus} is not a multiple of tp {tp}")
    return LoadRow(id=r["id"], model_id=r["model_id"], model_match=r["model_match"], weight_dtype=r["weight_dtype"],
                   kv_dtype=r.get("kv_dtype", ""), gpu_id=r["gpu_id"], gpus=gpus, tp=tp, engine_id=r.get("engine_id", ""),
                   engine=r["engine"],
                   regime=r["regime"], batch=_whole(r, "batch", where, lo=2),
                   input_tokens=_whole(r, "input_tokens", where), output_tokens=_whole(r, "output_tokens", where),
                   output_tok_s=figures["output_tok_s"], basis=basis, tpot_ms=figures["tpot_ms"],
                   itl_ms=figures["itl_ms"], ttft_ms=figures["ttft_ms"], source_key=r["source_key"],
                   source_group=r["source_group"], source=r["source"], date=r["date"],
                   quote=r["quote"], notes=r.get("notes", ""),
                   requests=_whole(r, "requests", where) if r.get("requests") else None)


def load_measured_load(path: str | Path | None = None) -> list[LoadRow]:
    """The rows of a load-measurements CSV ('#' lines are comments); each problem is one line naming row and field."""
    p = Path(path) if path is not None else MEASURED_LOAD_CSV
    try:
        with p.open(encoding="utf-8", newline="") as fh:
            lines = [ln for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]
    except OSError as e:
        raise LedgerInputError(f"cannot read {p}: {e.strerror or e}") from None
    rows = [{k: (v or "").strip() for k, v in r.items() if k is not None} for r in csv.DictReader(lines)]
    out = [_one(r, f"{p.name} row {i} ({r.get('id') or 'no id'})") for i, r in enumerate(rows, start=1)]
    seen: set[str] = set()
    group_of: dict[str, str] = {}
    for row in out:
        if row.id in seen:
            raise LedgerInputError(f"{p.name}: duplicate row id {row.id!r}")
        seen.add(row.id)
        group = group_of.setdefault(row.source_key, row.source_group)
        if group != row.source_group:
            raise LedgerInputError(f"{p.name}: source_key {row.source_key!r} is in source_group {group!r} and "
                                   f"{row.source_group!r} (row {row.id!r}); a document belongs to one group")
    return out
