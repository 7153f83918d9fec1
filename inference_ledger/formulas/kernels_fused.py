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
from inference_ledger.formulas.kernel_tables import (FAMILIES, Table, _cell, _extend, _family, _grid, _rows,
                                                     interpolate, kv_table_dtype, latency_tables)


@functools.lru_cache(maxsize=None)
def _moe(gpu_id: str) -> dict[tuple, dict[tuple[int, int], dict[tuple[int, ...], Table]]]:
    """(gpu, engine, dtype, hidden, inter, topk, experts) -> {(MoE TP, MoE EP): {engine version: latency over
    tokens}} (NVIDIA's aiconfigurator tables and AMD's aiter tuner tables; an aiter table's one version is the
    aiter commit it was read at)."""
    out: dict = {}
    for name in ("moe.csv", "moe_amd.csv"):
        rows = list(_rows(name, gpu_id))
        if not rows:
            continue
        cols, ts = _grid(list(rows[0]), "t")
        for r in rows:
            row = np.array([_cell(r[c]) for c in cols])
            row[:int(np.argmax(~np.isnan(row)))] = row[int(np.argmax(~np.isnan(row)))]  # below: the first holds
            key = (gpu_id, r["engine"], r["dtype"], *(int(r[c]) for c in ("hidden", "inter", "topk", "experts")))
            out.setdefault(key, {}).setdefault((int(r["tp"]), int(r["ep"])), {})[version_key(r["version"])] = \
                Table((ts,), _extend(row[None, :], ts)[0], f"{r['source']} ({r['engine']} {r['version']})")
    return out


@functools.lru_cache(maxsize=None)
def _mla(which: str, gpu_id: str) -> dict[tuple, dict[int, Table]]:
    """(gpu, engine, kv dtype, GEMM dtype) -> {heads per GPU: the MLA module's latency} (decode over (batch, KV
    length), prefill over prompt length)."""
    return latency_tables("mla_decode.csv" if which == "decode" else "mla_prefill.csv", which == "decode",
                          lambda gid, r: (gid, r["engine"], r["kv_dtype"], r["gemm_dtype"]), lambda r: int(r["heads"]),
                          gpu_id)


def moe_dtypes(weight_dtype: str) -> tuple[str, ...]:
    """The MoE table's dtypes for a weight format (FP8: per-tensor and block-scaled, the faster taken; MXFP4:
    aiconfigurator's weight-only kernel on NVIDIA, aiter's a4w4 on AMD; NVFP4: the native FP4 kernels measured on
    B200)."""
    return {"bf16": ("bfloat16",), "fp16": ("bfloat16",), "fp32": ("bfloat16",), "fp8": ("fp8", "fp8_block"),
            "int8": ("fp8", "fp8_block"), "mxfp4": ("w4a16_mxfp4", "mxfp4"), "nvfp4": ("nvfp4",)}.get(weight_dtype, ())


def moe_layout(tp: float, ep: float) -> tuple[int, int]:
    """(MoE TP, MoE EP) of the table for a plan's TP and EP: experts split over TP, or whole under EP."""
    return (1, int(ep)) if ep > 1 else (int(tp), 1)


def moe_table(gpu_id: str, engine: str, weight_dtype: str, hidden: float, inter: float, topk: float, experts: float,
              tp: float, ep: float, version: Optional[str] = None) -> Optional[Table]:
    """The fused MoE curve of a shape (the engine's own table, else another engine's on the same GPU), or None.

    Per kernel dtype, the engine version an engine version reads where several are measured (engines.csv
    kernel_table_version): the newest at or below ``version``, else the oldest measured; the newest when no version
    is given.  Of the FP8 kernels (per-tensor, block-scaled), those of the newest version read, the faster."""
    t = _moe(gpu_id)
    shape = (int(hidden), int(inter), int(topk), int(experts))
    for e in (_family(engine), *FAMILIES, "aiter"):
        tabs = []
        for dt in moe_dtypes(weight_dtype):
            by_version = t.get((gpu_id, e, dt, *shape), {}).get(moe_layout(tp, ep))
            if by_version:
                tabs.append(by_version[table_version(list(by_version), version)])
        if tabs:
            newest = max(_version(tab.source) for tab in tabs)
            return min((tab for tab in tabs if _version(tab.source) == newest),
                       key=lambda tab: float(np.sum(np.log(tab.seconds))))
    return None


def version_key(text: str) -> tuple[int, ...]:
    """A version as numbers for ordering: '0.24.0' (0, 24, 0), '1.3.0rc20' (1, 3, 0, 20), '0.5.10.post1'."""
    return tuple(int(p) if p.isdigit() else 0 for p in text.replace("rc", ".").replace("post", ".").split("."))


def table_version(measured: list[tuple[int, ...]], version: Optional[str]) -> tuple[int, ...]:
    """The measured table version an engine version reads: the newest at or below it, else the oldest measured
    (the newest of all when ``version`` is None or empty)."""
    ordered = sorted(set(measured))
    if not version:
        return ordered[-1]
    at_or_below = [v for v in ordered if v <= version_key(version)]
    return at_or_below[-1] if at_or_below else ordered[0]


def _version(source: str) -> tuple[int, ...]:
    """The engine version a table's source names ("... (vllm 0.24.0)"), as numbers for ordering."""
    return version_key(source.rsplit(" ", 1)[-1].rstrip(")"))


def moe_seconds(gpu_id: str, engine: str, weight_dtype: str, tokens: float, hidden: float, inter: float, topk: float,
                experts: float, tp: float, ep: float, version: Optional[str] = None) -> tuple[float, str]:
    """Measured latency of one fused MoE layer on one GPU at ``tokens`` (the EP group's) and its source;
    KeyError when the table lacks the shape, layout or dtype."""
    tab = moe_table(gpu_id, engine, weight_dtype, hidden, inter, topk, experts, tp, ep, version)
    if tab is None:
        raise KeyError(f"no MoE table for {gpu_id} {weight_dtype} {hidden:.0f}x{inter:.0f} top-{topk:.0f} of "
                       f"{experts:.0f}")
    return interpolate(tab, tokens), tab.source


#: the share of the experts the middle fit point's tokens touch (see moe_expert_figures)
MOE_FIT_TOUCHED = 0.95


@functools.lru_cache(maxsize=65536)
def _moe_counts(tokens: float, topk: float, experts: float, ep: float, gpus: float) -> tuple[float, float]:
    """(touched experts per GPU, tokens per touched expert) at ``tokens``: the plan's own distinct-expert rule
    (serving.distinct_experts, serving.experts_per_gpu, serving.expert_tokens); kept per arguments, a pure function
    of numbers that the Kernels sheet's grid asks again for every row of a MoE model."""
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
    dec, pre = _mla("decode", gpu_id), _mla("prefill", gpu_id)
    for e in (_family(engine), *FAMILIES):
        for kdt in dict.fromkeys((kv_table_dtype(kv_dtype), "bfloat16")):
            key = (gpu_id, e, kdt, gdt)
            if key in dec and key in pre:
                h = min(set(dec[key]) & set(pre[key]), key=lambda x: abs(math.log(x / heads_per_gpu)))
                return dec[key][h], pre[key][h]
    return None


#: weight bytes per element of the MoE tables' dtypes and of the plan's weight formats
MOE_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "fp8_block": 1.0, "w4a16_mxfp4": 0.5, "nvfp4": 0.5, "bf16": 2.0,
             "fp16": 2.0, "int8": 1.0, "mxfp4": 0.5}


def _slice_bytes(hidden: float, inter: float, tp: float, dtype: str) -> float:
    """One expert's gate/up + down weights on one GPU: 3 hidden x inter / MoE TP elements."""
    return 3.0 * hidden * inter / tp * MOE_BYTES[dtype]


@functools.lru_cache(maxsize=None)
def moe_scaled_figures(gpu_id: str, weight_dtype: str, hidden: float, inter: float, topk: float, experts: float,
                       tp: float, ep: float, gpus: float) -> Optional[tuple[float, float, float, str]]:
    """(L, f, r, source) of a MoE shape AMD's fused-MoE tables lack (aiter's tuner holds a few models' shapes, not
    the catalog's), from the measured shape on the same GPU whose expert slice is nearest in bytes (no expert
    parallelism either side): its launch L as measured, and each touched expert's weight read f - L and time per
    token r scaled by the ratio of the expert slices' bytes (a fused kernel streams each touched expert's weights at
    the bandwidth it achieves, and its per-token FLOPs at a rate in inverse proportion to the bytes per weight).
    The alternative, one expert's GEMMs from the GEMM table, pays AMD's 3-11 us GEMM call floor per expert where
    aiter's fused kernel measures about 1.2 us per TP-8 expert slice (Qwen3-235B on MI300X).  None without a
    measured shape, or on a GPU whose fused-MoE tables are aiconfigurator's (they hold every catalog shape the
    package measured; the GEMM path stays there).  Under expert parallelism a GPU's experts are whole (MoE TP 1): the
    slice to scale to is a whole expert, and the fused kernel streams its local experts as it streams TP slices."""
    if weight_dtype not in MOE_BYTES:
        return None
    want = _slice_bytes(hidden, inter, 1 if ep > 1 else tp, weight_dtype)
    best = None
    for key, layouts in _moe(gpu_id).items():
        if key[1] != "aiter":
            continue
        dt, h0, i0, k0, e0 = key[2:]
        for (tp0, ep0), by_version in layouts.items():
            if ep0 != 1 or dt not in MOE_BYTES:
                continue
            tab = by_version[table_version(list(by_version), None)]  # the newest aiter commit read
            have = _slice_bytes(h0, i0, tp0, dt)
            d = abs(math.log(want / have))
            if best is None or d < best[0]:
                best = (d, have, tab, (dt, h0, i0, k0, e0, tp0))
    if best is None:
        return None
    _, have, tab, (dt, h0, i0, k0, e0, tp0) = best
    launch, f, r = moe_expert_figures(tab, k0, e0, 1, tp0)
    s = want / have
    src = f"{tab.source}: {h0}x{i0} top-{k0} of {e0} {dt} at MoE TP {tp0}, scaled x{s:.2f} by the expert slice's bytes"
    return launch, launch + (f - launch) * s, r * s, src
