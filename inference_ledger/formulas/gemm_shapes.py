"""The (N, K) of each GEMM a layer runs on one GPU: what :mod:`inference_ledger.formulas.kernels` reads the tables at.

A layer's linear work is its attention projections (QKV, O), its MLP (a dense layer's gate/up and down, at the dense
width) or, in a MoE layer, the routed experts (the fused-MoE table, or one expert's GEMM pair where it lacks the shape)
plus the shared experts every token passes through (DeepSeek-V3 / R1, Kimi-K2 and GLM-4.5: one expert as wide as a
routed one; Llama-4: one per MoE layer, Maverick's dense layers twice as wide as its experts), and once per pass the
LM head.  The widths are the model's config.json fields (``intermediate_size``, ``moe_intermediate_size``,
``n_shared_experts``, ``intermediate_size_mlp``: :mod:`inference_ledger.catalogs.hfconfig`).
"""

from __future__ import annotations

from typing import Any, Mapping

from inference_ledger.core.sheetfuncs import gt, where

#: the GEMM operations of a pass, each priced from the GEMM table at its shapes
GEMM_OPS = ("qkv", "o", "mlp", "shared_mlp", "lm_head")

#: DeepSeek-V3's MLA widths (q_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim; the KV latent is the
#: model's mla_latent_dim = kv_lora_rank + qk_rope_head_dim): the shapes the MLA module tables are measured at, and
#: those of its projections priced from the GEMM table where a GPU has no module table
MLA_Q_LORA, MLA_NOPE, MLA_ROPE, MLA_V = 1536.0, 128.0, 64.0, 128.0


def dense_width(dense_intermediate_size, intermediate_size):
    """A dense layer's MLP width: ``dense_intermediate_size`` where the model gives one (a MoE model's dense layers),
    else ``intermediate_size`` (a dense model's MLP); numbers or cell expressions (the element-wise line reads it)."""
    return where(gt(dense_intermediate_size, 0), dense_intermediate_size, intermediate_size)


def glu_pair(width: float, hidden: float, split: float) -> list[tuple[float, float]]:
    """A gated MLP's two GEMMs over ``split`` GPUs: gate/up (2 x width / split, hidden) and down (hidden, width /
    split); none at width 0."""
    return [(2 * width / split, hidden), (hidden, width / split)] if width > 0 else []


def expert_shapes(v: Mapping[str, Any]) -> list[tuple[float, float]]:
    """One routed expert's GEMM pair on a GPU: over TP, or whole under expert parallelism."""
    split = 1.0 if float(v["ep"]) > 1 else float(v["tp"])
    return glu_pair(float(v["intermediate_size"]), float(v["hidden_size"]), split)


def gemm_shapes(v: Mapping[str, Any], heads: float) -> dict[str, list[tuple[float, float]]]:
    """(N, K) of each GEMM operation on one GPU: QKV, O, a dense layer's MLP gate/up and down, a MoE layer's shared
    experts (none without), each over TP, the LM head (over TP).  An MLA model's QKV is its projections: the fused
    q / KV down-projection (q_lora + latent, whole on every GPU), the q up-projection and the latent's up-projection
    to the heads' keys and values (the absorbed decode's two per-head products hold the same weights), over TP."""
    tp, hd, hidden = float(v["tp"]), float(v["head_dim"]), float(v["hidden_size"])
    latent = float(v.get("mla_latent_dim", 0))
    if latent > 0:
        qkv = [(MLA_Q_LORA + latent, hidden), (heads * (MLA_NOPE + MLA_ROPE) / tp, MLA_Q_LORA),
               (heads * (MLA_NOPE + MLA_V) / tp, latent - MLA_ROPE)]
        o = [(hidden, heads * MLA_V / tp)]
    else:
        qkv = [((heads + 2 * float(v["kv_heads"])) * hd / tp, hidden)]
        o = [(hidden, heads * hd / tp)]
    shared = float(v.get("shared_intermediate_size", 0)) if float(v["num_experts"]) > 0 else 0.0
    dense = float(dense_width(float(v.get("dense_intermediate_size", 0)), float(v["intermediate_size"])))
    return {"qkv": qkv, "o": o, "mlp": glu_pair(dense, hidden, tp),
            "shared_mlp": glu_pair(shared, hidden, tp), "lm_head": [(float(v["vocab_size"]) / tp, hidden)]}
