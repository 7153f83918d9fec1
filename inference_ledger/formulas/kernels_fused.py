"""Fused kernels measured whole: a MoE layer's fused expert GEMMs and DeepSeek's MLA attention module.

**A fused MoE layer** is priced as the step lines price it (:func:`inference_ledger.formulas.serving.mlp_seconds`): a
launch L + each touched expert on the GPU (n of them, the distinct experts of the step's T tokens) x its GEMM pair at
its x = T k / distinct tokens beyond the launch.  Where the MoE table holds the model's shape, layout and dtype
(``moe_kernel_table`` 1), the pair is f + r x - L, with (L, f, r) read off the measured curve t(T)
(:func:`moe_expert_figures`): the per-expert memory cost f - L from the rise between T = 1 and the first grid T whose
tokens touch nearly every expert, L from T = 1, r from T = 16,384, so the line passes through the table at those
points (and within about 15% of it at the grid points between, where a GEMM's (f^2 + (r x)^2)^(1/2) is 20-45% low:
the fused kernels' time grows linearly with their tokens).  Elsewhere (``moe_kernel_table`` 0) the pair is one
expert's GEMMs from the dense GEMM table, (f^2 + (r x)^2)^(1/2) - L, as for a dense MLP.

**MLA** (``mla_latent_dim`` > 0) is priced from the measured module (:func:`mla_figures`): the QKV operation carries the
whole module's projections (floor: the decode module at one sequence and the shortest KV length; time per token and
the prefill attention's time per prompt length squared: the two-term fit a S + q S^2 of the prefill module at the
table's two longest prompts), the O operation is 0 (inside the module), and decode attention's time per KV token is
the decode module's rise from the shortest to the reference KV length at the reference batch.  A GPU without the MLA
tables keeps the roofline for the whole step.
"""

from __future__ import annotations

import functools
import math
from typing import Optional

import numpy as np

from inference_ledger.formulas import serving
from inference_ledger.formulas.kernel_tables import (FAMILIES, US, Table, _family, _grid, _rows, interpolate,
                                                     kv_table_dtype, latency_tables)


@functools.lru_cache(maxsize=None)
def _moe() -> dict[tuple, dict[tuple[int, int], Table]]:
    """(gpu, engine, dtype, hidden, inter, topk, experts) -> {(MoE TP, MoE EP): latency over tokens}."""
    rows = list(_rows("moe.csv"))
    cols, ts = _grid(list(rows[0]), "t")
    out: dict = {}
    for r in rows:
        for gid in r["gpu_ids"].split("|"):
            key = (gid, r["engine"], r["dtype"], *(int(r[c]) for c in ("hidden", "inter", "topk", "experts")))
            out.setdefault(key, {})[(int(r["tp"]), int(r["ep"]))] = Table(
                (ts,), np.array([float(r[c]) * US for c in cols]), f"{r['source']} ({r['engine']} {r['version']})")
    return out


@functools.lru_cache(maxsize=None)
def _mla(which: str) -> dict[tuple, dict[int, Table]]:
    """(gpu, engine, kv dtype, GEMM dtype) -> {heads per GPU: the MLA module's latency} (decode over (batch, KV
    length), prefill over prompt length)."""
    return latency_tables("mla_decode.csv" if which == "decode" else "mla_prefill.csv", which == "decode",
                          lambda gid, r: (gid, r["engine"], r["kv_dtype"], r["gemm_dtype"]), lambda r: int(r["heads"]))


def moe_dtypes(weight_dtype: str) -> tuple[str, ...]:
    """The MoE table's dtypes for a weight format (FP8: per-tensor and block-scaled, the faster taken)."""
    return {"bf16": ("bfloat16",), "fp16": ("bfloat16",), "fp32": ("bfloat16",), "fp8": ("fp8", "fp8_block"),
            "int8": ("fp8", "fp8_block"), "mxfp4": ("w4a16_mxfp4",)}.get(weight_dtype, ())


def moe_layout(tp: float, ep: float) -> tuple[int, int]:
    """(MoE TP, MoE EP) of the table for a plan's TP and EP: experts split over TP, or whole under EP."""
    return (1, int(ep)) if ep > 1 else (int(tp), 1)


def moe_table(gpu_id: str, engine: str, weight_dtype: str, hidden: float, inter: float, topk: float, experts: float,
              tp: float, ep: float) -> Optional[Table]:
    """The fused MoE curve of a shape (the engine's own table, else another engine's on the same GPU), or None."""
    t = _moe()
    shape = (int(hidden), int(inter), int(topk), int(experts))
    for e in (_family(engine), *FAMILIES):
        tabs = [tab for dt in moe_dtypes(weight_dtype)
                if (tab := t.get((gpu_id, e, dt, *shape), {}).get(moe_layout(tp, ep))) is not None]
        if tabs:  # the newest engine version measured; of its FP8 kernels (per-tensor, block-scaled), the faster
            newest = max(_version(tab.source) for tab in tabs)
            return min((tab for tab in tabs if _version(tab.source) == newest),
                       key=lambda tab: float(np.sum(np.log(tab.seconds))))
    return None


def _version(source: str) -> tuple[int, ...]:
    """The engine version a table's source names ("... (vllm 0.24.0)"), as numbers for ordering."""
    v = source.rsplit(" ", 1)[-1].rstrip(")")
    return tuple(int(p) if p.isdigit() else 0 for p in v.replace("rc", ".").replace("post", ".").split("."))


def moe_seconds(gpu_id: str, engine: str, weight_dtype: str, tokens: float, hidden: float, inter: float, topk: float,
                experts: float, tp: float, ep: float) -> tuple[float, str]:
    """Measured latency of one fused MoE layer on one GPU at ``tokens`` (the EP group's) and its source;
    KeyError when the table lacks the shape, layout or dtype."""
    tab = moe_table(gpu_id, engine, weight_dtype, hidden, inter, topk, experts, tp, ep)
    if tab is None:
        raise KeyError(f"no MoE table for {gpu_id} {weight_dtype} {hidden:.0f}x{inter:.0f} top-{topk:.0f} of "
                       f"{experts:.0f}")
    return interpolate(tab, tokens), tab.source


#: the share of the experts the middle fit point's tokens touch (see moe_expert_figures)
MOE_FIT_TOUCHED = 0.95


def _moe_counts(tokens: float, topk: float, experts: float, ep: float, gpus: float) -> tuple[float, float]:
    """(touched experts per GPU, tokens per touched expert) at ``tokens``: the plan's own distinct-expert rule
    (serving.distinct_experts, serving.experts_per_gpu, serving.expert_tokens)."""
    d = float(serving.distinct_experts(experts, topk, tokens))
    return float(serving.experts_per_gpu(d, ep, gpus)), float(serving.expert_tokens(tokens, topk, d))


def moe_expert_figures(tab: Table, topk: float, experts: float, ep: float, gpus: float) -> tuple[float, float, float]:
    """(launch L, expert floor f, expert time per token r) whose line L + n (f + r x - L) passes through the
    measured curve at T = 1, at the first grid T touching MOE_FIT_TOUCHED of the experts, and at the table's
    largest T (the module doc)."""
    ts = tab.axes[0]
    mid = next((float(t) for t in ts if float(t) > 1 and _moe_counts(float(t), topk, experts, 1, 1)[0]
                >= MOE_FIT_TOUCHED * experts), float(ts[-1]))
    (n1, _), (nm, _), (nb, xb) = (_moe_counts(t, topk, experts, ep, gpus) for t in (1.0, mid, float(ts[-1])))
    t1, tm, tb = (interpolate(tab, t) for t in (1.0, mid, float(ts[-1])))
    e = max(tm - t1, 0.0) / (nm - n1) if nm > n1 else 0.0      # each touched expert's weight read beyond the launch
    launch = max(t1 - n1 * e, 0.0)
    e = (t1 - launch) / n1 if e == 0.0 else e
    f = launch + e
    g = launch + (tb - launch) / nb                             # one expert's pair at the largest T
    return launch, f, max(g - f, 0.0) / xb


def mla_tables(gpu_id: str, engine: str, kv_dtype: str, weight_dtype: str,
               heads_per_gpu: float) -> Optional[tuple[Table, Table]]:
    """The MLA module's (decode, prefill) tables at the nearest measured heads per GPU (the engine's own, else
    another engine's on the same GPU), or None."""
    gdt = {"fp8": "fp8_block", "int8": "fp8_block"}.get(weight_dtype, "bfloat16")
    dec, pre = _mla("decode"), _mla("prefill")
    for e in (_family(engine), *FAMILIES):
        for kdt in dict.fromkeys((kv_table_dtype(kv_dtype), "bfloat16")):
            key = (gpu_id, e, kdt, gdt)
            if key in dec and key in pre:
                h = min(set(dec[key]) & set(pre[key]), key=lambda x: abs(math.log(x / heads_per_gpu)))
                return dec[key][h], pre[key][h]
    return None
