"""Serving engines by version as a catalog: vLLM, SGLang and TensorRT-LLM, their memory rule, batching defaults and
the traits of their step (chunked prefill, scheduler overlap and CPU time per sequence, kernels and kernel tables).

Ids are ``<family>-<major>.<minor>`` of the first release a row covers (its aliases name the others) and the bare
family for the current release.  The values (with a source per trait) are in ``inference_ledger/data/engines.csv``; the
formulas that use them are in :mod:`inference_ledger.formulas.engine_ledger`, and
:mod:`inference_ledger.graph.resolve` turns an engine choice into plan inputs.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from inference_ledger.core.args import LedgerInputError, echo

ENGINES_CSV = Path(__file__).resolve().parents[1] / "data" / "engines.csv"

#: The engine a plan uses unless told otherwise.
DEFAULT_ENGINE = "vllm"
#: NCCL allocates NVLink-SHARP (NVLS) buffers only on NVSwitch-3 systems: NVLink 4 or newer,
#: >= 450 GB/s per direction (H100/H200/B200 SXM). Below it, ring/P2P buffers only.
NVLS_MIN_INTERCONNECT_BW = 450e9


# ----------------------------------------------------------------------------------------
# the catalog of engines
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Engine:
    """One serving engine's memory rule and batching defaults (base units)."""

    id: str
    name: str
    aliases: tuple[str, ...]
    kv_budget_rule: int
    memory_fraction: float
    memory_fraction_by_tp: tuple[tuple[int, float], ...]
    max_num_batched_tokens: int
    max_num_batched_tokens_small_gpu: int
    large_gpu_min_bytes: float
    large_gpu_excludes: str
    whole_prompt_up_to: int
    max_num_seqs: int
    max_num_seqs_small_gpu: int
    sampler_bytes_per_logit: float
    cuda_context_bytes: float
    nccl_nvls_bytes: float
    nccl_p2p_bytes: float
    moe_pad_hidden: int
    moe_pad_intermediate: int
    chunked_prefill: int
    prefill_first: int
    kv_admission_reserve: float
    releases: str
    overlap_scheduling: int
    scheduler_recv_interval: int   # decode steps between the scheduler's reads of new requests (1: every step)
    scheduler_seconds_per_sequence: float
    cuda_graphs: int
    cuda_graph_max_batch_by_tp: tuple[tuple[int, float], ...]
    eager_seconds_per_layer: float
    eager_seconds_per_moe_layer: float
    gqa_decode: int
    fp8_block_gemm: int
    mla_kernel: str
    fused_moe: str
    kernel_table_engine: str
    kernel_table_version: str
    custom_allreduce: int          # 1: its own all-reduce kernel for small messages; 0: every TP all-reduce NCCL's
    gpu_vendors: str               # the GPU vendor it runs on (gpus.csv vendor), or ANY_VENDOR
    trait_sources: str
    quote: str
    source: str
    date: str
    notes: str

    def fraction(self, tp: int) -> float:
        """The default memory fraction at a TP degree (SGLang lowers it as TP grows)."""
        out = self.memory_fraction
        for t, f in self.memory_fraction_by_tp:
            if tp >= t:
                out = f
        return out

    def cuda_graph_max_batch(self, tp: int) -> int:
        """The largest decode batch the engine captures a CUDA graph for at a TP degree (0: no graphs)."""
        out = 0.0
        for t, b in self.cuda_graph_max_batch_by_tp:
            if tp >= t:
                out = b
        return int(out) if self.cuda_graphs else 0

    def large_gpu(self, gpu_memory_bytes: float, gpu_id: str = "") -> bool:
        """Whether the engine applies its large-GPU batching defaults to this GPU."""
        excluded = bool(self.large_gpu_excludes) and self.large_gpu_excludes in gpu_id.lower()
        return gpu_memory_bytes >= self.large_gpu_min_bytes and not excluded

    def batched_tokens(self, gpu_memory_bytes: float, gpu_id: str = "", max_model_len: Optional[int] = None) -> int:
        """Tokens of the prefill chunk the memory profile runs."""
        chunk = self.max_num_batched_tokens if self.large_gpu(gpu_memory_bytes, gpu_id) \
            else self.max_num_batched_tokens_small_gpu
        if self.whole_prompt_up_to and max_model_len and max_model_len <= self.whole_prompt_up_to:
            return max(int(max_model_len), chunk)
        return chunk

    def seqs(self, gpu_memory_bytes: float, gpu_id: str = "") -> int:
        return self.max_num_seqs if self.large_gpu(gpu_memory_bytes, gpu_id) else self.max_num_seqs_small_gpu

    def chunks(self, max_model_len: Optional[int] = None) -> int:
        """1 when the engine chunks prompts at this max_model_len: its default, or (vLLM V0) above whole_prompt_up_to,
        where the API server switches chunked prefill on."""
        long = bool(self.whole_prompt_up_to and max_model_len and max_model_len > self.whole_prompt_up_to)
        return 1 if (self.chunked_prefill or long) else 0

    def prefills_first(self, max_model_len: Optional[int] = None) -> int:
        """1 when the scheduler runs waiting prompts before any decode step at this max_model_len: its trait, except
        vLLM V0 once chunked prefill switches on above whole_prompt_up_to (its chunked scheduler runs decodes first)."""
        return self.prefill_first if (self.chunked_prefill or not self.chunks(max_model_len)) else 0

    @property
    def family(self) -> str:
        """vllm, sglang, trtllm: the id without its version."""
        return self.id.split("-")[0]


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        lines = [ln for ln in fh if ln.strip() and not ln.lstrip().startswith("#")]
    return [{k: (v or "").strip() for k, v in r.items()} for r in csv.DictReader(lines)]


def _by_tp(text: str) -> tuple[tuple[int, float], ...]:
    pairs = [p.split(":") for p in text.split("|") if p.strip()]
    return tuple(sorted((int(t), float(f)) for t, f in pairs))


@functools.lru_cache(maxsize=None)
def _load(path: Path) -> tuple[Engine, ...]:
    out = []
    for r in _rows(path):
        try:
            out.append(Engine(
                id=r["id"], name=r["name"], aliases=tuple(a for a in r["aliases"].split("|") if a),
                kv_budget_rule=int(r["kv_budget_rule"]), memory_fraction=float(r["memory_fraction"]),
                memory_fraction_by_tp=_by_tp(r["memory_fraction_by_tp"]),
                max_num_batched_tokens=int(r["max_num_batched_tokens"]),
                max_num_batched_tokens_small_gpu=int(r["max_num_batched_tokens_small_gpu"]),
                large_gpu_min_bytes=float(r["large_gpu_min_bytes"]), large_gpu_excludes=r["large_gpu_excludes"].lower(),
                whole_prompt_up_to=int(r["whole_prompt_up_to"]), max_num_seqs=int(r["max_num_seqs"]),
                max_num_seqs_small_gpu=int(r["max_num_seqs_small_gpu"]),
                sampler_bytes_per_logit=float(r["sampler_bytes_per_logit"]),
                cuda_context_bytes=float(r["cuda_context_bytes"]), nccl_nvls_bytes=float(r["nccl_nvls_bytes"]),
                nccl_p2p_bytes=float(r["nccl_p2p_bytes"]), moe_pad_hidden=int(r["moe_pad_hidden"]),
                moe_pad_intermediate=int(r["moe_pad_intermediate"]), chunked_prefill=int(r["chunked_prefill"]),
                prefill_first=int(r["prefill_first"]),
                kv_admission_reserve=float(r["kv_admission_reserve"]), releases=r["releases"], overlap_scheduling=int(r["overlap_scheduling"]),
                scheduler_recv_interval=int(r["scheduler_recv_interval"]),
                scheduler_seconds_per_sequence=float(r["scheduler_seconds_per_sequence"]),
                cuda_graphs=int(r["cuda_graphs"]), cuda_graph_max_batch_by_tp=_by_tp(r["cuda_graph_max_batch_by_tp"]),
                eager_seconds_per_layer=float(r["eager_seconds_per_layer"]),
                eager_seconds_per_moe_layer=float(r["eager_seconds_per_moe_layer"]), gqa_decode=int(r["gqa_decode"]),
                fp8_block_gemm=int(r["fp8_block_gemm"]), mla_kernel=r["mla_kernel"], fused_moe=r["fused_moe"],
                kernel_table_engine=r["kernel_table_engine"], kernel_table_version=r["kernel_table_version"],
                custom_allreduce=int(r["custom_allreduce"]), gpu_vendors=r["gpu_vendors"],
                trait_sources=r["trait_sources"], quote=r["quote"], source=r["source"], date=r["date"],
                notes=r.get("notes", ""),
            ))
        except (KeyError, ValueError) as e:
            raise LedgerInputError(f"engines.csv row {r.get('id')!r}: bad or missing value ({e})") from None
    return tuple(out)


def load_engines() -> list[Engine]:
    """Every engine of inference_ledger/data/engines.csv, in file order."""
    return list(_load(ENGINES_CSV))


def engine_ids() -> tuple[str, ...]:
    return tuple(e.id for e in load_engines())


def engine_names() -> tuple[str, ...]:
    """Every name ``--engine`` accepts in the id form: the ids and the aliases that are ids of a release
    (``vllm-0.11``, ``vllm-v0``, ``trt-llm``), without the free-text aliases ('vLLM V1')."""
    out = list(engine_ids())
    for e in load_engines():
        out += [a.lower() for a in e.aliases if " " not in a and a.lower() not in out]
    return tuple(out)


def get_engine(name: str) -> Engine:
    """An engine by id or alias, case-insensitive: 'vllm', 'vllm-0.11', 'sglang-0.4', 'trtllm', 'TensorRT-LLM'."""
    key = str(name).strip().lower()
    for e in load_engines():
        if key == e.id or key in (a.lower() for a in e.aliases):
            return e
    raise LedgerInputError(f"--engine: unknown engine {echo(name)} (known: {', '.join(engine_ids())}, "
                           f"or a release such as vllm-0.11 within a row's releases)")


def engine_inputs(engine: Engine | str = DEFAULT_ENGINE, *, gpu_memory_bytes: float, interconnect_bw: Optional[float] = None,
                  gpu_id: str = "", tp: int = 1, max_model_len: Optional[int] = None) -> dict[str, Any]:
    """The numeric plan inputs an engine implies on a GPU (like a catalog lookup).

    Batching limits follow the engine's own GPU-dependent defaults; NCCL's non-torch memory
    is the NVLS figure on NVSwitch-3 systems and the ring-buffer figure elsewhere.
    """
    e = get_engine(engine) if isinstance(engine, str) else engine
    nvls = interconnect_bw is not None and interconnect_bw >= NVLS_MIN_INTERCONNECT_BW
    return {
        "kv_budget_rule": e.kv_budget_rule,
        "gpu_memory_utilization": e.fraction(tp),
        "max_num_batched_tokens": e.batched_tokens(gpu_memory_bytes, gpu_id, max_model_len),
        "max_num_seqs": e.seqs(gpu_memory_bytes, gpu_id),
        "sampler_bytes_per_logit": e.sampler_bytes_per_logit,
        "cuda_context_bytes": e.cuda_context_bytes,
        "nccl_bytes": e.nccl_nvls_bytes if nvls else e.nccl_p2p_bytes,
        "moe_pad_hidden": e.moe_pad_hidden,
        "moe_pad_intermediate": e.moe_pad_intermediate,
        "chunked_prefill": e.chunks(max_model_len),
        "prefill_first": e.prefills_first(max_model_len),
        "kv_admission_reserve": e.kv_admission_reserve,
        "overlap_scheduling": e.overlap_scheduling,
        "scheduler_recv_interval": e.scheduler_recv_interval,
        "scheduler_seconds_per_sequence": e.scheduler_seconds_per_sequence,
        "cuda_graphs": e.cuda_graphs,
        "cuda_graph_max_batch": e.cuda_graph_max_batch(tp),
        "eager_seconds_per_layer": e.eager_seconds_per_layer,
        "eager_seconds_per_moe_layer": e.eager_seconds_per_moe_layer,
        "gqa_decode": e.gqa_decode,
    }
