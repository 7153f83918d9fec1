"""Serving engines: how vLLM, SGLang and TensorRT-LLM size the KV cache, and what decode costs.

An engine decides how much of a GPU the KV cache gets, and each documents its own rule
(the codes are the ``kv_budget_rule`` plan input, the values ``udfs/data/engines.csv``):

1. **vLLM** profiles one forward pass at its batching limits, then gives the KV cache
   ``gpu_memory_utilization x total - weights - activation peak - non-torch memory``
   (vllm/v1/worker/gpu_worker.py ``determine_available_memory``; the V0 worker alike).
2. **SGLang** reserves ``mem_fraction_static`` of the memory it finds after CUDA/NCCL start
   for weights + KV; activations and CUDA graphs live in the rest
   (sglang/srt/model_executor/model_runner.py ``profile_max_num_token``).
3. **TensorRT-LLM** gives the KV cache ``free_gpu_memory_fraction`` of what is free once the
   engine, its activation buffers and the runtime are loaded (``KvCacheConfig``).

The activation peak is that of the engine's memory profile: one prefill chunk of
``max_num_batched_tokens`` tokens, whose widest point is the MLP (residual, normed input and
output: 3 hidden-wide tensors; gate+up and SiLU-and-mul outputs: 3 intermediate-wide ones,
per routed expert for a MoE), or the sampler over ``max_num_seqs`` logits rows, whichever is
larger (they run one after the other).  vLLM's own log checks it: Llama-3.1-8B on an RTX 3090
shows 2.07 GiB at 20,000 tokens and 2.99 GiB at 29,000, i.e. 110.6 KB/token =
2 B x (3 x 4,096 + 3 x 14,336).

Decode adds to the bandwidth roofline what keeps a GPU from it at batch 1: tensor-parallel
all-reduces (two per layer, Megatron-LM arXiv:1909.08053), the fixed cost of each layer's
small kernels, and the engine's per-step work (scheduling, sampling).

Every formula here is written with :mod:`udfs.expr` helpers, so the plan graph renders it
to the workbook unchanged.
"""

from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from .args import LedgerInputError
from .expr import ceil, eq, gt, maximum, where
from .units import (
    ACT_HIDDEN_COPIES,
    ACT_MLP_COPIES,
    ALLREDUCES_PER_LAYER,
    GLU_MATRICES,
    KV_RULE_SGLANG,
    KV_RULE_TRTLLM,
    RING_ALLREDUCE_FACTOR,
)

ENGINES_CSV = Path(__file__).with_name("data") / "engines.csv"

#: The engine a plan uses unless told otherwise.
DEFAULT_ENGINE = "vllm"
#: NCCL allocates NVLink-SHARP (NVLS) buffers only on NVSwitch-3 systems: NVLink 4 or newer,
#: >= 450 GB/s per direction (H100/H200/B200 SXM). Below it, ring/P2P buffers only.
NVLS_MIN_INTERCONNECT_BW = 450e9


# ----------------------------------------------------------------------------------------
# formulas (numbers or numpy arrays in, the same out; Sym in, Excel text out)
# ----------------------------------------------------------------------------------------


def prefill_activation_bytes(tokens, hidden_size, intermediate_size, experts_per_token, act_bytes, tp):
    """Live activations at the MLP of one prefill chunk, on one GPU.

    tokens x bytes x ((3 + k_routed) x hidden + 3 x max(k, 1) x intermediate / TP):
    residual, normed input and MLP output (3 x hidden); gate+up (2 x I/TP) and the
    SiLU-and-mul output (I/TP), once per routed expert for a MoE, whose fused kernel also
    keeps one hidden-wide output per routed expert (k_routed = experts_per_token, 0 if dense).

    >>> prefill_activation_bytes(20000, 4096, 14336, 0, 2, 1) / 2**30   # RTX 3090 log: 2.07 GiB
    2.0599365234375
    """
    experts = maximum(experts_per_token, 1)
    per_token = (ACT_HIDDEN_COPIES + experts_per_token) * hidden_size \
        + ACT_MLP_COPIES * experts * intermediate_size / tp
    return tokens * act_bytes * per_token


def sampler_activation_bytes(max_num_seqs, vocab_size, sampler_bytes_per_logit):
    """The sampler's peak: one logits row per sequence, at the engine's bytes per logit."""
    return max_num_seqs * vocab_size * sampler_bytes_per_logit


def activation_peak_bytes(prefill_bytes, sampler_bytes):
    """The profile's peak: the forward pass and the sampler run one after the other."""
    return maximum(prefill_bytes, sampler_bytes)


def non_torch_bytes(cuda_context_bytes, nccl_bytes, tp):
    """Memory outside PyTorch's allocator: the CUDA context, plus NCCL buffers when TP > 1."""
    return cuda_context_bytes + where(gt(tp, 1), nccl_bytes, 0)


def moe_padding_bytes_per_gpu(num_layers, num_experts, hidden_size, intermediate_size, tp,
                              pad_hidden, pad_intermediate, weight_bytes):
    """Extra weight bytes when a MoE kernel pads each expert to its tile, on one GPU.

    L x E x 3 x (ceil(H / p_h) p_h x ceil(I / (TP p_i)) p_i - H x I / TP) x bytes.  gpt-oss
    (H = I = 2,880) pads to 3,072 x 2,944 under vLLM's MXFP4 MoE: 9% more expert bytes.
    Zero for a dense model (no experts) and for dims already on the tile.
    """
    padded = ceil(hidden_size / pad_hidden) * pad_hidden * ceil(intermediate_size / (tp * pad_intermediate)) * pad_intermediate
    return num_layers * num_experts * GLU_MATRICES * (padded - hidden_size * intermediate_size / tp) * weight_bytes


def kv_budget_bytes(rule, gpu_memory_bytes, memory_fraction, weights_bytes_per_gpu, activation_bytes, non_torch):
    """KV-cache bytes one GPU gets under the engine's rule (negative: the engine refuses to start).

    rule 1 vLLM:         f x total - weights - activation peak - non-torch
    rule 2 SGLang:       f x (total - non-torch) - weights
    rule 3 TensorRT-LLM: f x (total - non-torch - weights - activation peak)
    """
    vllm = memory_fraction * gpu_memory_bytes - weights_bytes_per_gpu - activation_bytes - non_torch
    sglang = memory_fraction * (gpu_memory_bytes - non_torch) - weights_bytes_per_gpu
    trtllm = memory_fraction * (gpu_memory_bytes - non_torch - weights_bytes_per_gpu - activation_bytes)
    return where(eq(rule, KV_RULE_SGLANG), sglang, where(eq(rule, KV_RULE_TRTLLM), trtllm, vllm))


def allreduce_seconds(tp, num_layers, latency_seconds, message_bytes, interconnect_bw):
    """Tensor-parallel all-reduce time of one decode step (0 at TP 1).

    2 per layer x L x (latency + 2 (TP-1)/TP x message / link bandwidth): the ring's bytes,
    and a fixed launch-and-synchronise latency that dominates at small batch.
    """
    one = latency_seconds + RING_ALLREDUCE_FACTOR * (tp - 1) / tp * message_bytes / interconnect_bw
    return where(gt(tp, 1), ALLREDUCES_PER_LAYER * num_layers * one, 0)


def decode_overhead_seconds(num_layers, layer_overhead_seconds, step_overhead_seconds):
    """Time a decode step spends off the bandwidth roofline: L x per-layer kernels + per-step work."""
    return num_layers * layer_overhead_seconds + step_overhead_seconds


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
                moe_pad_intermediate=int(r["moe_pad_intermediate"]), source=r["source"], date=r["date"],
                notes=r.get("notes", ""),
            ))
        except (KeyError, ValueError) as e:
            raise LedgerInputError(f"engines.csv row {r.get('id')!r}: bad or missing value ({e})") from None
    return tuple(out)


def load_engines() -> list[Engine]:
    """Every engine of udfs/data/engines.csv, in file order."""
    return list(_load(ENGINES_CSV))


def engine_ids() -> tuple[str, ...]:
    return tuple(e.id for e in load_engines())


def get_engine(name: str) -> Engine:
    """An engine by id or alias, case-insensitive: 'vllm', 'sglang', 'trtllm', 'TensorRT-LLM'."""
    key = str(name).strip().lower()
    for e in load_engines():
        if key == e.id or key in (a.lower() for a in e.aliases):
            return e
    raise LedgerInputError(f"unknown engine {name!r} (known: {', '.join(engine_ids())})")


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
    }



def with_engine(inputs: dict[str, Any], engine: Engine | str = DEFAULT_ENGINE, *, gpu_id: str = "",
                max_model_len: Optional[int] = None) -> dict[str, Any]:
    """Plan inputs with an engine's numeric inputs filled in from the inputs' own GPU memory,
    interconnect and TP (what ``--engine`` does; apply explicit user values after this)."""
    out = dict(inputs)
    out.update(engine_inputs(engine, gpu_memory_bytes=out["gpu_memory_bytes"], interconnect_bw=out["interconnect_bw"],
                             gpu_id=gpu_id, tp=int(out["tp"]), max_model_len=max_model_len))
    return out


def deployment_inputs(model: Any, gpu: Any = None, engine: Engine | str = DEFAULT_ENGINE, *, tp: int = 1,
                      weight_dtype: Optional[str] = None, kv_dtype: str = "bf16", max_model_len: Optional[int] = None,
                      gpu_memory_bytes: Optional[float] = None, **overrides: Any) -> dict[str, Any]:
    """Plan inputs for a model served by an engine on TP GPUs: catalog facts + the engine's defaults.

    ``gpu_memory_bytes`` replaces the catalog's runtime memory (a log's ``total_gpu_memory``);
    ``overrides`` (plan input names, e.g. ``gpu_memory_utilization``) win over everything.
    """
    from . import catalog  # the catalog imports the plan, which imports this module

    g = catalog.get_gpu(gpu) if isinstance(gpu, str) else gpu
    v = catalog.plan_inputs(model, g, weight_dtype=weight_dtype, kv_dtype=kv_dtype, tp=tp)
    if gpu_memory_bytes is not None:
        v["gpu_memory_bytes"] = gpu_memory_bytes
    v = with_engine(v, engine, gpu_id=g.id if g is not None else "", max_model_len=max_model_len)
    v.update(overrides)
    return v
