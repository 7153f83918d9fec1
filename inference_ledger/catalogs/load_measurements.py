"""Published measurements of LLM serving under load (``inference_ledger/data/measured_load.csv``).

One row per measured point at batch or concurrency > 1: the deployment (model, GPU, TP, engine, formats), the
regime (``static``: one batch prefilled then decoded together; ``continuous``: a client keeping ``batch`` requests
in flight against a continuous-batching server), the request shape, and what the source printed: output tokens/s,
mean TPOT or ITL, mean TTFT (and the median TTFT where printed).  The file's header describes every column and unit.
This module only reads and checks the file; it predicts nothing (the plan's figures are compared with these rows
elsewhere).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from inference_ledger.core import csvfile
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
#: engine settings a row may state (``engine_args``): the plan input each sets, and the flags that set it
#: (max_model_len is no plan input: it chooses the engine's prefill budget when the plan is resolved)
ENGINE_ARGS = {
    "gpu_memory_utilization": "vLLM --gpu-memory-utilization, SGLang --mem-fraction-static, TensorRT-LLM "
                              "free_gpu_memory_fraction",
    "max_num_batched_tokens": "vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size, TensorRT-LLM --max_num_tokens",
    "max_num_seqs": "vLLM --max-num-seqs, SGLang --max-running-requests, TensorRT-LLM --max_batch_size",
    "overlap_scheduling": "1 for vLLM --async-scheduling",
    "scheduler_recv_interval": "SGLang --scheduler-recv-interval",
    "ep": "whole-expert EP (MoE TP 1): vLLM --enable-expert-parallel (= TP), SGLang --ep-size, TensorRT-LLM "
          "moe_expert_parallel_size / --ep_size equal to tp_size",
    "max_model_len": "vLLM --max-model-len, TensorRT-LLM --max_seq_len, SGLang --context-length",
    "dp_attention": "attention data-parallel ranks among the row's tp GPUs (attention TP = tp / dp_attention): "
                    "TensorRT-LLM enable_attention_dp (DP = tp_size), SGLang --enable-dp-attention --dp",
    "allreduce_through_host": "1 where the engine's log says its GPUs have no peer-to-peer path (vLLM: 'Custom "
                              "allreduce is disabled because your platform lacks GPU P2P capability')",
}


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
    fixed_lengths: Optional[int] = None  # 1 every request the same lengths, 0 drawn per request; None = not stated
    engine_args: str = ""  # the engine settings the source states, 'name=value|...' (ENGINE_ARGS); '' = defaults
    ttft_median_ms: Optional[float] = None  # the run's median TTFT where the source prints it (the typical request)

    @property
    def engine_settings(self) -> dict[str, float]:
        """``engine_args`` as {name: value} (checked when the file is read)."""
        return parse_engine_args(self.engine_args)

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


def parse_engine_args(text: str) -> dict[str, float]:
    """'name=value|name=value' (names of :data:`ENGINE_ARGS`, positive numbers) as {name: value}; ValueError names
    the bad part."""
    out: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split("|"))):
        name, eq, value = part.partition("=")
        if not eq or name not in ENGINE_ARGS:
            raise ValueError(f"engine_args: {part!r} is not name=value with a name of {', '.join(ENGINE_ARGS)}")
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not number > 0 or name in out:
            raise ValueError(f"engine_args: {part!r} needs one positive number per name")
        out[name] = number
    return out


def _one(c: csvfile.Cells) -> LoadRow:
    for key in REQUIRED:
        c.text(key, True)
    c.choice("regime", REGIMES)
    c.choice("model_match", MODEL_MATCHES)
    figures = {k: c.positive(k) for k in METRICS}
    if all(v is None for v in figures.values()):
        raise LedgerInputError(f"{c.where}: no measured figure (one of {', '.join(METRICS)} is needed)")
    basis = c.text("output_tok_s_basis")
    if figures["output_tok_s"] is not None:
        c.choice("output_tok_s_basis", BASES)
    for key in ("source_key", "source_group"):
        if not SOURCE_KEY.fullmatch(c.text(key)):
            raise c.fail(key, f"must be lower-case words of a-z, 0-9 and '.' joined by '-' (got {c.text(key)!r})")
    gpus, tp = c.whole("gpus", lo=1), c.whole("tp", lo=1)
    if gpus % tp:
        raise LedgerInputError(f"{c.where}: gpus {gpus} is not a multiple of tp {tp}")
    try:
        parse_engine_args(c.text("engine_args"))
    except ValueError as e:
        raise c.fail("engine_args", str(e).partition(": ")[2]) from None
    return csvfile.as_dataclass(LoadRow, c, gpus=gpus, tp=tp, batch=c.whole("batch", lo=2), basis=basis,
                                input_tokens=c.whole("input_tokens", lo=1),
                                output_tokens=c.whole("output_tokens", lo=1),
                                requests=c.whole("requests", False, lo=1), fixed_lengths=_flag(c, "fixed_lengths"),
                                ttft_median_ms=c.positive("ttft_median_ms"), **figures)


def _flag(c: csvfile.Cells, key: str) -> Optional[int]:
    """A 1/0 cell, or None for a blank one."""
    v = c.whole(key, False, lo=0)
    if v is not None and v > 1:
        raise c.fail(key, f"must be 1, 0 or blank (got {v})")
    return v


def load_measured_load(path: str | Path | None = None) -> list[LoadRow]:
    """The rows of a load-measurements CSV ('#' lines are comments); each problem is one line naming row and field."""
    p = Path(path) if path is not None else MEASURED_LOAD_CSV
    out = csvfile.load(LoadRow, p, make=_one)
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
