"""Measured kernel latencies: table lookups, and the per-operation figures a plan's step lines use.

The tables (``inference_ledger/data/kernels/*.csv``) are NVIDIA aiconfigurator-core's measured SILICON database
distilled per GPU x engine x version (see the folder's NOTICE and ``scripts/distill_kernels.py``): GEMM latency by
(dtype, N, K) at M = 1 .. 16,384 tokens; decode attention of one layer by (KV dtype, heads, KV heads, head dim,
batch) at KV lengths; prefill attention of one prompt by (KV dtype, heads, KV heads, head dim) at prompt lengths;
all-reduce by (library, GPUs, message bytes), NCCL and the engines' custom all-reduce; one fused MoE layer (routing +
grouped expert GEMMs) by (dtype, hidden, expert intermediate, top-k, experts, MoE TP, MoE EP) at 1 .. 16,384 tokens,
for the catalog's MoE shapes; DeepSeek-V3's whole MLA attention module of one layer (projections + attention over the
latent cache) by (KV dtype, GEMM dtype, heads per GPU), decode by batch x KV length and prefill by prompt length.

**AMD** (MI300X / MI325X / MI355X; ``*_amd.csv``, ``scripts/distill_amd_kernels.py``): GEMM and fused-MoE times from
ROCm/aiter's tuner tables (MIT), the shapes AMD tuned for its models: FP8 block-scaled on all three, BF16 and MXFP4
(aiter's a4w4: FP4 weights and activations, 1x32 scales) on MI355X.
A GEMM shape the table holds is read on its own curve over M; any other along the weight size N x K (log-log between
the tuned sizes around it: a GEMM's floor-plus-weight-read and its FLOPs both follow N x K).  A MoE shape without an
aiter table is scaled from the nearest measured one (:func:`inference_ledger.kernels_fused.moe_scaled_figures`).
All-reduce: the engines' custom all-reduce as published by AMD engineers (vllm-project/vllm#19744 TP 4 and
ROCm/aiter#801 TP 2 on MI300, vllm-project/vllm#39080 TP 8 on MI355X; another GPU count reads the nearest measured
one).  Attention has no AMD table: decode attention costs its KV bytes over HBM bandwidth x ``kv_read_efficiency``
and prefill attention its causal FLOPs over peak x ``prefill_efficiency``, no floor
(:func:`roofline_attention_figures`); an MLA model without the MLA module tables prices its projections from the GEMM
table (DeepSeek-V3's widths, :mod:`inference_ledger.formulas.gemm_shapes`) and its latent on that roofline.  BF16 and
MXFP4 on MI300X / MI325X have no AMD table: the roofline prices the whole step.

**Lookup.**  Between grid points the latency is interpolated log-log (linear in log latency over log size, along
each axis in turn).  Below the grid the smallest point holds (a kernel never gets faster than its floor); above it
the latency grows in proportion to the size (the last measured point's time per unit of work), except an
all-reduce's, which adds the bytes past its largest measured message at the last step's time per byte (latency +
bytes / bandwidth: :func:`allreduce_seconds`).  The plan's step is never below the roofline floor (bytes / HBM
bandwidth, FLOPs / dense peak: ``tpot_floor_seconds``).

**Per-operation figures.**  Each operation of a plan line is a curve over its size x (tokens of a GEMM, KV tokens
a decode attention reads, prompt length squared for a prefill attention, bytes of an all-reduce) with ``a`` its
measured latency at the table's smallest size (launch + weight read at the kernel's achieved bandwidth) and ``r``
its measured time per unit at the largest: GEMMs (a^p + (r M)^p)^(1/p) with p = KERNEL_GEMM_POWER
(:func:`inference_ledger.formulas.serving.gemm_curve`), attention and all-reduce a + r x.  ``a`` and ``r`` are plan
inputs, read here at the model's shapes, TP and dtypes (so the workbook's formulas stay short); a GPU without tables
keeps ``kernel_tables`` 0 and the roofline with the sourced efficiencies of ``efficiencies.csv``.

MoE and MLA: :mod:`inference_ledger.formulas.kernels_fused`.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Mapping, Optional

import numpy as np

from inference_ledger.formulas import kernels_fused
from inference_ledger.formulas.gemm_shapes import GEMM_OPS, expert_shapes, gemm_shapes
from inference_ledger.formulas.ledger import kv_elements_per_token_layer, kv_shards
from inference_ledger.formulas.kernel_tables import (FAMILIES, US, Table, _family, _gemm, _smallest, _rows,
                                                     gemm_dtype, gemm_seconds, has_gemm_table, interpolate,
                                                     kv_table_dtype,
                                                     latency_tables)

MEASURED, FALLBACK = "measured tables", "roofline fallback"
#: kernel_tables codes (the plan input of that name) and their words
KERNEL_SOURCES = {1: MEASURED, 0: FALLBACK}


@functools.lru_cache(maxsize=None)
def _attention(which: str, gpu_id: str) -> dict[tuple, dict[tuple[int, int], Table]]:
    return latency_tables("decode_attention.csv" if which == "decode" else "prefill_attention.csv", which == "decode",
                          lambda gid, r: (gid, r["engine"], r["kv_dtype"], int(r["head_dim"])),
                          lambda r: (int(r["heads"]), int(r["kv_heads"])), gpu_id)


@functools.lru_cache(maxsize=None)
def _allreduce(gpu_id: str) -> dict[tuple[str, str], dict[int, Table]]:
    groups: dict = {}
    for r in (*_rows("allreduce.csv", gpu_id), *_rows("allreduce_amd.csv", gpu_id)):
        groups.setdefault((gpu_id, r["library"]), {}).setdefault(int(r["gpus"]), []).append(r)
    out: dict = {}
    for key, by_g in groups.items():
        out[key] = {}
        for g, rs in by_g.items():
            rs = sorted(rs, key=lambda r: float(r["message_bytes"]))
            out[key][g] = Table((np.array([float(r["message_bytes"]) for r in rs]),),
                                np.array([float(r["latency_us"]) * US for r in rs]),
                                f"{rs[0]['source']} ({rs[0]['library']} {rs[0]['version']})")
    return out


# ---------------------------------------------------------------------------------
# lookups by operation
# ---------------------------------------------------------------------------------


def _nearest_pair(pairs: Mapping[tuple[int, int], Table], heads: float, kv_heads: float) -> tuple[int, int]:
    if (int(heads), int(kv_heads)) in pairs:
        return int(heads), int(kv_heads)
    return min(pairs, key=lambda hk: abs(math.log(hk[0] / heads)) + abs(math.log(hk[1] / kv_heads)))


def _attn_group(which: str, gpu_id: str, engine: str, kv_dtype: str, head_dim: float):
    t = _attention(which, gpu_id)
    hd = 128 if head_dim > 96 else 64
    for e in (_family(engine), *FAMILIES):
        for dt in (kv_table_dtype(kv_dtype), "bfloat16"):
            if (gpu_id, e, dt, hd) in t:
                return t[(gpu_id, e, dt, hd)], hd
    return None, hd


def decode_attention_seconds(gpu_id: str, engine: str, kv_dtype: str, batch: float, context: float, heads: float,
                             kv_heads: float, head_dim: float) -> tuple[float, str]:
    """One layer's decode attention for ``batch`` sequences at ``context`` KV tokens (heads per GPU).

    A (heads, KV heads) pair the table lacks is priced from the nearest measured pair, scaled by the KV heads
    (the KV bytes read) and the head dim."""
    pairs, hd = _attn_group("decode", gpu_id, engine, kv_dtype, head_dim)
    if pairs is None:
        raise KeyError(f"no decode attention table for {gpu_id}")
    hk = _nearest_pair(pairs, heads, kv_heads)
    tab = pairs[hk]
    scale = (kv_heads / hk[1]) * (head_dim / hd)  # more KV bytes: in proportion; fewer: a shorter context
    t = interpolate(tab, batch, context) * scale if scale >= 1 else interpolate(tab, batch, context * scale)
    return t, tab.source


def prefill_attention_seconds(gpu_id: str, engine: str, kv_dtype: str, prompt: float, heads: float, kv_heads: float,
                              head_dim: float) -> tuple[float, str]:
    """One layer's causal attention over one ``prompt``-token prompt (heads per GPU); an unmeasured pair scales by
    the query heads (the FLOPs) and the head dim."""
    pairs, hd = _attn_group("prefill", gpu_id, engine, kv_dtype, head_dim)
    if pairs is None:
        raise KeyError(f"no prefill attention table for {gpu_id}")
    hk = _nearest_pair(pairs, heads, kv_heads)
    tab = pairs[hk]
    scale = (heads / hk[0]) * (head_dim / hd)
    t = interpolate(tab, prompt) * scale if scale >= 1 else interpolate(tab, prompt * math.sqrt(scale))
    return t, tab.source


def _message_seconds(tab: Table, message_bytes: float) -> float:
    """A collective's latency at a message size: the table's log-log interpolation within the measured sizes;
    beyond the largest, latency + bytes / bandwidth (Hockney's alpha-beta model) continued from the last measured
    step: t(largest) + the bytes past it at the marginal time per byte of the two largest sizes.  The proportional
    rule of the other tables (time x size / largest size) would carry the fixed latency, still a share of the
    largest measured message, over into every byte beyond it."""
    sizes, secs = tab.axes[0], tab.seconds
    if message_bytes <= sizes[-1] or len(sizes) < 2:
        return interpolate(tab, message_bytes)
    per_byte = max(float(secs[-1] - secs[-2]) / float(sizes[-1] - sizes[-2]), 0.0)
    return float(secs[-1]) + (message_bytes - float(sizes[-1])) * per_byte


def allreduce_seconds(gpu_id: str, engine: str, gpus: float, message_bytes: float,
                      custom: bool = True) -> tuple[float, str]:
    """One all-reduce of ``message_bytes`` over ``gpus`` GPUs: the faster of NCCL and the engine's custom
    all-reduce (engines switch to NCCL above the custom kernel's size limit; ``custom`` False: an engine without
    one, every all-reduce NCCL's), else (a GPU measured with another engine's custom all-reduce only: AMD) that one;
    the measured GPU count nearest to ``gpus``, beyond 8 GPUs the 8-GPU curve."""
    t = _allreduce(gpu_id)
    g = int(min(max(gpus, 2), 8))
    fam = _family(engine)
    libs = [lib for lib in ((fam, "nccl") if custom else ("nccl",)) if (gpu_id, lib) in t] \
        or [lib for lib in FAMILIES if (gpu_id, lib) in t]
    best = None
    for lib in libs:
        by_g = t[(gpu_id, lib)]
        gg = min(by_g, key=lambda x: abs(math.log(x / g)))
        tab = by_g[gg]
        s = _message_seconds(tab, message_bytes)
        if best is None or s < best[0]:
            best = (s, tab.source + (f" (the {gg}-GPU curve)" if gg != g else ""))
    if best is None:
        raise KeyError(f"no all-reduce table for {gpu_id}")
    return best


def mla_figures(dec: Table, pre: Table) -> dict[str, float]:
    """The MLA module read as the plan's operations (the module doc): QKV floor and time per token, O 0, decode
    attention per KV token, prefill attention per prompt length squared."""
    s1, s2 = float(pre.axes[0][-2]), float(pre.axes[0][-1])
    t1, t2 = interpolate(pre, s1), interpolate(pre, s2)
    # t = a S + q S^2 through the two longest prompts: the projections' time per token and the attention's per S^2
    q = max((t2 / s2 - t1 / s1) / (s2 - s1), 0.0)
    a = max(t1 / s1 - q * s1, 0.0)
    b, ctx = DECODE_REF
    lo = float(dec.axes[1][0])
    kv = max(interpolate(dec, b, ctx) - interpolate(dec, b, lo), 0.0) / (b * (ctx - lo))
    out = dict(zip(op_input_names("qkv"), (interpolate(dec, 1, lo), a)))
    out.update(dict.fromkeys(op_input_names("o"), 0.0))
    out.update(zip(op_input_names("decode_attention"), (0.0, kv)))
    out.update(zip(op_input_names("prefill_attention"), (0.0, q)))
    return out


def has_tables(gpu_id: Optional[str]) -> bool:
    """Whether the GPU has measured GEMM tables (attention without a table of its own is priced on the roofline:
    :func:`roofline_attention_figures`)."""
    if not gpu_id:
        return False
    return bool(_gemm(gpu_id))


#: causal attention FLOPs of one layer per prompt length squared per (query head x head dim): QK^T and PV are
#: 2 S^2 h d FLOPs each over the full square, half of it under the causal mask
CAUSAL_ATTENTION_FLOPS_PER_TOKEN_SQUARED = 2.0


def roofline_attention_figures(v: Mapping[str, Any], heads_per_gpu: float) -> dict[str, float]:
    """Decode and prefill attention of a GPU without attention tables (AMD), as the roofline prices them: no floor;
    per KV token read, its bytes on this GPU over HBM bandwidth x the KV-read efficiency; per prompt length squared,
    2 h d causal FLOPs over peak x the prefill efficiency (``v``: the plan inputs, their sourced defaults)."""
    elements = float(kv_elements_per_token_layer(v["kv_heads"], v["head_dim"], v.get("mla_latent_dim", 0))) \
        / float(kv_shards(v["kv_heads"], v["tp"], v.get("mla_latent_dim", 0)))
    out = dict(zip(op_input_names("decode_attention"),
                   (0.0, elements * float(v["kv_bytes"]) / (float(v["hbm_bw"]) * float(v["kv_read_efficiency"])))))
    out.update(zip(op_input_names("prefill_attention"),
                   (0.0, CAUSAL_ATTENTION_FLOPS_PER_TOKEN_SQUARED * heads_per_gpu * float(v["head_dim"])
                    / (float(v["peak_flops"]) * float(v["prefill_efficiency"])))))
    return out


# ---------------------------------------------------------------------------------
# the plan's kernel inputs: each operation's floor and time per unit at the model's shapes
# ---------------------------------------------------------------------------------

#: size each operation's time per unit is read at (the table's largest measured point below extrapolation)
GEMM_REF_TOKENS = 16384.0
DECODE_REF = (256.0, 16384.0)   # batch, KV length
PREFILL_REF_TOKENS = 16384.0
ALLREDUCE_REF_BYTES = 64 * 2 ** 20
#: the operations of a layer whose kernels the tables price, and the plan inputs each one's curve takes
OPS = (*GEMM_OPS, "moe_expert", "decode_attention", "prefill_attention", "allreduce")


def op_input_names(op: str) -> tuple[str, str]:
    """The two plan inputs of an operation's curve: its floor and its time per unit."""
    unit = {"decode_attention": "kv_token", "prefill_attention": "token_squared", "allreduce": "byte"}.get(op, "token")
    return f"{op}_kernel_floor_seconds", f"{op}_kernel_seconds_per_{unit}"


#: the weight matrices of one expert: gate, up and down (gpt-oss fuses gate and up: 2 x intermediate x hidden)
EXPERT_MATRICES = 3


def experts_only(v: Mapping[str, Any]) -> bool:
    """Whether the weight format quantizes a MoE model's routed experts and nothing else: a token's quantized
    weights are no more than its experts' (gpt-oss' MXFP4 checkpoints list attention, router, embeddings and LM head
    in ``modules_to_not_convert``: inference_ledger/catalogs/hfconfig.py counts ``active_quantized_params`` so)."""
    experts = float(v["moe_layers"]) * float(v["experts_per_token"]) * EXPERT_MATRICES \
        * float(v["hidden_size"]) * float(v["intermediate_size"])
    quantized = float(v.get("active_quantized_params", 0))
    return float(v.get("num_experts", 0)) > 0 and 0 < quantized <= experts * (1 + 1e-9)


def plan_kernel_inputs(v: Mapping[str, Any], gpu_id: Optional[str], engine: str, heads: Optional[float],
                       weight_dtype: Optional[str], kv_dtype: str,
                       table_version: Optional[str] = None, fp4_tensor_cores: bool = False,
                       custom_allreduce: bool = True) -> tuple[dict[str, float], dict[str, str]]:
    """The kernel plan inputs (``kernel_tables``, each operation's floor and time per unit, and the bandwidth, peak and
    active parameters of ``v`` they stand for: ``kernel_hbm_bw``, ``kernel_peak_flops``, ``kernel_active_params``) for
    a deployment,
    with the source of each operation; a GPU without tables (or a weight format without a GEMM table) keeps
    ``kernel_tables`` 0 and the plan prices the step on the roofline with the sourced efficiencies.  ``engine`` is
    the kernel-table engine (an engines.csv id or family; ``none``: no tables) and ``table_version`` the engine
    version whose tables it reads where several are measured (engines.csv kernel_table_version; None: the newest);
    ``custom_allreduce`` False: the engine runs every TP all-reduce through NCCL (engines.csv custom_allreduce).

    A format that quantizes a MoE model's experts only (:func:`experts_only`: gpt-oss' MXFP4) on a GPU without FP4
    tensor cores (``fp4_tensor_cores`` False: Hopper, Ampere) runs its experts as 4-bit weights with BF16
    activations (vLLM's MXFP4 backends below SM100 are Marlin and Triton W4A16 kernels:
    vllm/model_executor/layers/quantization/mxfp4.py) and its other layers in BF16: the w4a16_mxfp4 MoE table and
    the BF16 GEMM table price it.  On a GPU with FP4 tensor cores the engines run native MXFP4 kernels that no table
    here measures: the roofline prices the step (NVFP4 has its own measured tables on B200)."""
    if str(engine).lower() == "none":
        return {"kernel_tables": 0}, {op: FALLBACK for op in OPS}
    out: dict[str, float] = {}
    src: dict[str, str] = {}
    dt = gemm_dtype(weight_dtype or "bf16")
    if dt is not None and has_tables(gpu_id) and not has_gemm_table(gpu_id, engine, weight_dtype or "bf16") \
            and not fp4_tensor_cores and experts_only(v):
        dt = gemm_dtype("bf16")   # the format's GEMMs are the experts' (the MoE table); the rest stays BF16
    h = float(heads) if heads else float(v["hidden_size"]) / float(v["head_dim"])
    tp = float(v["tp"])
    mla = None
    if float(v.get("mla_latent_dim", 0)) > 0 and has_tables(gpu_id) and dt is not None \
            and float(v.get("dp_attention", 1)) == 1:  # the module is measured with each GPU's own tokens: no DP
        mla = kernels_fused.mla_tables(gpu_id, engine, kv_dtype, weight_dtype or "bf16", max(h / tp, 1.0))
    mla_model = float(v.get("mla_latent_dim", 0)) > 0
    if not has_tables(gpu_id) or dt is None or (mla_model and float(v.get("dp_attention", 1)) != 1):
        # no tables for this GPU or weight format, or an MLA model under DP attention (whose ranks each run a share
        # of the step's tokens through the module); an MLA model without the module's tables prices its projections
        # from the GEMM table and its attention over the latent on the roofline
        out["kernel_tables"] = 0
        return out, {op: FALLBACK for op in OPS}
    try:
        # the GEMM operations, and one routed expert's pair (the MoE layers' GEMMs where no fused-MoE table holds them)
        for op, shapes in {**gemm_shapes(v, h), "moe_expert": expert_shapes(v)}.items():
            a = r = 0.0
            for n, k in shapes:
                t1, s = gemm_seconds(gpu_id, engine, dt, 1, n, k)
                tr, _ = gemm_seconds(gpu_id, engine, dt, GEMM_REF_TOKENS, n, k)
                a, r = a + t1, r + tr / GEMM_REF_TOKENS
            fa, fr = op_input_names(op)
            out[fa], out[fr] = a, r
            src[op] = f"{MEASURED}: {s} at (N, K) = " + ", ".join(f"({n:.0f}, {k:.0f})" for n, k in shapes) + \
                f" {dt}" if shapes else "none (no shared experts)"
        # a fused MoE kernel pays one launch per layer, not one per expert
        launch = sum(gemm_seconds(gpu_id, engine, dt, 1, *_smallest(gpu_id, engine, dt))[0] for _ in expert_shapes(v))
        out["moe_kernel_launch_seconds"] = min(launch, out[op_input_names("moe_expert")[0]])
        out["moe_kernel_table"] = 0
        if float(v["num_experts"]) > 0:
            moe = kernels_fused.moe_table(gpu_id, engine, weight_dtype or "bf16", v["hidden_size"], v["intermediate_size"],
                            v["experts_per_token"], v["num_experts"], tp, v["ep"], table_version)
            gpus = tp * float(v.get("dp_attention", 1))
            fa, fr = op_input_names("moe_expert")
            lay = kernels_fused.moe_layout(tp, float(v["ep"]))
            scaled = None if moe is not None else kernels_fused.moe_scaled_figures(
                gpu_id, weight_dtype or "bf16", float(v["hidden_size"]), float(v["intermediate_size"]),
                float(v["experts_per_token"]), float(v["num_experts"]), tp, float(v["ep"]), gpus)
            if moe is not None:
                out["moe_kernel_table"] = 1
                out["moe_kernel_launch_seconds"], out[fa], out[fr] = kernels_fused.moe_expert_figures(
                    moe, float(v["experts_per_token"]), float(v["num_experts"]), float(v["ep"]), gpus)
                src["moe_expert"] = f"{MEASURED}: {moe.source}, fused MoE at MoE TP {lay[0]} / EP {lay[1]}"
            elif scaled is not None:   # another MoE shape measured on this GPU, scaled by the expert bytes
                out["moe_kernel_table"] = 1
                out["moe_kernel_launch_seconds"], out[fa], out[fr], s = scaled
                src["moe_expert"] = f"{MEASURED}: {s}, for MoE TP {lay[0]} / EP {lay[1]}"
            if moe is not None or scaled is not None:
                src["mlp"] = src["moe_expert"] + (f"; dense layers {src['mlp']}"
                                                  if float(v["moe_layers"]) < float(v["num_layers"]) else "")
        hg = max(h / tp, 1.0)
        kvg = max(float(v["kv_heads"]) / tp, 1.0)
        hd = float(v["head_dim"])
        try:
            if mla_model:   # no MLA module table here (else it replaces these below): the latent on the roofline
                raise KeyError("no MLA module table")
            a, s = decode_attention_seconds(gpu_id, engine, kv_dtype, 1, 128, hg, kvg, hd)
            tr, _ = decode_attention_seconds(gpu_id, engine, kv_dtype, *DECODE_REF, hg, kvg, hd)
            fa, fr = op_input_names("decode_attention")
            out[fa], out[fr] = a, max(tr - a, 0.0) / (DECODE_REF[0] * DECODE_REF[1])
            src["decode_attention"] = f"{MEASURED}: {s}, {hg:.0f} heads / {kvg:.0f} KV heads per GPU"
            a, s = prefill_attention_seconds(gpu_id, engine, kv_dtype, 128, hg, kvg, hd)
            tr, _ = prefill_attention_seconds(gpu_id, engine, kv_dtype, PREFILL_REF_TOKENS, hg, kvg, hd)
            fa, fr = op_input_names("prefill_attention")
            out[fa], out[fr] = a, max(tr - a, 0.0) / PREFILL_REF_TOKENS ** 2
            src["prefill_attention"] = f"{MEASURED}: {s}, {hg:.0f} heads per GPU"
        except KeyError:   # no attention tables for this GPU (AMD) or model: the roofline's, sourced efficiencies
            out.update(roofline_attention_figures(v, hg))
            src["decode_attention"] = f"{FALLBACK}: KV bytes per token on the GPU / (HBM bandwidth x " \
                f"kv_read_efficiency), no floor ({hg:.0f} heads / {kvg:.0f} KV heads per GPU)"
            src["prefill_attention"] = f"{FALLBACK}: 2 h d S^2 causal FLOPs / (peak x prefill_efficiency), no " \
                f"floor ({hg:.0f} heads per GPU)"
        fa, fr = op_input_names("allreduce")
        if tp > 1:
            a, s = allreduce_seconds(gpu_id, engine, tp, 1024, custom_allreduce)
            tr, _ = allreduce_seconds(gpu_id, engine, tp, ALLREDUCE_REF_BYTES, custom_allreduce)
            out[fa], out[fr] = a, max(tr - a, 0.0) / ALLREDUCE_REF_BYTES
            src["allreduce"] = f"{MEASURED}: {s}, {tp:.0f} GPUs"
        else:
            out[fa], out[fr] = 0.0, 0.0
            src["allreduce"] = "none at TP 1"
    except KeyError:
        return {"kernel_tables": 0}, {op: FALLBACK for op in OPS}
    if mla is not None:  # the MLA module holds the projections and the attention (the module doc)
        out.update(mla_figures(*mla))
        hg = max(h / tp, 1.0)
        src["qkv"] = f"{MEASURED}: {mla[0].source} at one sequence, {mla[1].source} per token (the MLA module: " \
            f"projections + attention), {hg:.0f} heads per GPU"
        src["o"] = f"{MEASURED}: inside the MLA module (qkv)"
        src["decode_attention"] = f"{MEASURED}: {mla[0].source}, MLA module per KV token, {hg:.0f} heads per GPU"
        src["prefill_attention"] = f"{MEASURED}: {mla[1].source}, MLA module per prompt length squared"
    out["kernel_tables"] = 1
    out["kernel_hbm_bw"], out["kernel_peak_flops"] = float(v["hbm_bw"]), float(v["peak_flops"])   # measured at
    out["kernel_active_params"] = float(v["active_params"])   # the model whose shapes they are read at
    return out, src
