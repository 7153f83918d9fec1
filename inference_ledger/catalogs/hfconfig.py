"""Read a Hugging Face ``config.json`` offline and count what the ledgers need.

Nothing here downloads anything: a config is a local file (or a dict).  From it we derive
the attention shape (GQA, explicit ``head_dim``, MLA), the sliding-window layers, the MoE
layout, the checkpoint's weight format, and parameter counts built up module by module
(embeddings, tied heads, biases and norms included), the way the modelling code in
``transformers`` lays the weights out:

* dense decoder (Llama, Mistral, Qwen2, Qwen3, Gemma-2): q/k/v/o projections, a gated MLP
  (3 matrices), RMSNorms (2 per layer, 4 for Gemma-2), a final norm, the embedding table and
  an LM head unless ``tie_word_embeddings``.  Qwen2 carries q/k/v biases; Qwen3 q/k norms.
* MoE: Mixtral (``num_local_experts``), Qwen-MoE (``num_experts``, ``decoder_sparse_step``,
  ``mlp_only_layers``, shared expert), DeepSeek (``n_routed_experts``, ``n_shared_experts``,
  ``first_k_dense_replace``, ``moe_layer_freq``) and gpt-oss (experts and router with biases,
  attention sinks).  Active = everything but the experts a token is not routed to.
* MLA (DeepSeek-V2/V3, arXiv:2405.04434 s2.1): low-rank q and kv projections; the cache holds
  ``kv_lora_rank + qk_rope_head_dim`` elements per layer.  DeepSeek's multi-token-prediction
  module (``num_nextn_predict_layers``) is not part of the 671B count and not counted here.

``quantized_params`` are the weights of the linear layers the checkpoint's format applies to;
embeddings, the LM head, norms, routers and biases stay BF16 (for MXFP4 only the experts,
per ``modules_to_not_convert``).

Every problem is a one-line :class:`~inference_ledger.core.args.LedgerInputError` naming the field.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from inference_ledger.core import files
from inference_ledger.core.args import LedgerInputError
from inference_ledger.catalogs.hfdefaults import MODEL_TYPE_DEFAULTS, TRANSFORMERS_SOURCE, with_defaults  # noqa: F401


@dataclass(frozen=True)
class Architecture:
    """What one config.json says, in the ledger's terms (counts in parameters)."""

    model_type: str
    num_layers: int
    hidden_size: int
    num_attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int  # of the dense MLP, or of one routed expert for a MoE
    vocab_size: int
    tie_word_embeddings: bool
    max_position_embeddings: int
    # MLA (0 when absent)
    kv_lora_rank: int
    qk_rope_head_dim: int
    # sliding-window attention
    sliding_layers: int
    window: int
    # MoE (0 when dense)
    num_experts: int
    experts_per_token: int
    shared_experts: int
    moe_layers: int
    # checkpoint format (a dtypes.csv id)
    weight_dtype: str
    # parameter counts
    num_params: int
    active_params: int
    quantized_params: int
    active_quantized_params: int
    embedding_params: int
    # a MoE model's dense layers' MLP width (0: none, or a dense model) and its shared experts' width per MoE layer
    dense_intermediate_size: int = 0
    shared_intermediate_size: int = 0

    @property
    def mla_latent_dim(self) -> int:
        return self.kv_lora_rank + self.qk_rope_head_dim if self.kv_lora_rank else 0


# ----------------------------------------------------------------------------------------
# reading
# ----------------------------------------------------------------------------------------


def load_config(path: str | Path) -> dict:
    """Read a config.json; every failure is one LedgerInputError line naming the file."""
    p = Path(path)
    raw = files.read_input(p, "config")   # a regular file within the size limit, errors naming it
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise LedgerInputError(f"config {p.name} is not UTF-8 text (byte {e.start + 1} cannot be decoded; "
                               "expected a Hugging Face config.json)") from None
    if not text.strip():
        raise LedgerInputError(f"config {p.name} is empty (expected a Hugging Face config.json object)")
    try:
        cfg = json.loads(text)
    except RecursionError:
        raise LedgerInputError(f"config {p.name} is nested too deeply to be a config.json") from None
    except json.JSONDecodeError as e:
        raise LedgerInputError(f"config {p.name} is not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    if not isinstance(cfg, dict):
        raise LedgerInputError(f"config {p.name} must be a JSON object, got {type(cfg).__name__}")
    return cfg


class _Fields:
    """Typed access to a config's fields, with errors that name the field."""

    def __init__(self, cfg: Mapping[str, Any], where: str):
        self.cfg, self.where = cfg, where

    def has(self, key: str) -> bool:
        return self.cfg.get(key) is not None

    def int(self, key: str, default: int | None = None, *, lo: int = 0, hi: int = 10**15) -> int:
        v = self.cfg.get(key)
        if v is None:
            if default is None:
                raise LedgerInputError(f"{self.where}: missing field '{key}'")
            return default
        if (isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v)
                or not lo <= v <= hi):
            raise LedgerInputError(f"{self.where}: field '{key}' must be a whole number >= {lo} and <= {hi:,} "
                                   f"(got {v!r})")
        return int(v)

    def first_int(self, keys: tuple[str, ...], default: int | None = None, *, lo: int = 0) -> int:
        for k in keys:
            if self.has(k):
                return self.int(k, lo=lo)
        if default is None:
            raise LedgerInputError(f"{self.where}: missing field '{keys[0]}'")
        return default


def _text_fields(cfg: Mapping[str, Any]) -> dict:
    """The decoder's fields: multimodal configs nest them under text_config (top level fills gaps)."""
    inner = cfg.get("text_config")
    if isinstance(inner, dict):
        merged = {k: v for k, v in cfg.items() if k != "text_config"}
        merged.update(inner)
        return merged
    return dict(cfg)


# ----------------------------------------------------------------------------------------
# weight format
# ----------------------------------------------------------------------------------------

_TORCH_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32"}

#: quant_method -> how the weight format is read from quantization_config.
SUPPORTED_QUANT_METHODS = ("fp8", "fbgemm_fp8", "compressed-tensors", "gptq", "awq", "mxfp4", "modelopt")


def weight_format(cfg: Mapping[str, Any], where: str = "config.json") -> tuple[str, tuple[str, ...]]:
    """(dtypes.csv id of the checkpoint's linear layers, module patterns left unquantized)."""
    q = cfg.get("quantization_config")
    if not q:
        name = cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16"
        name = str(name).replace("torch.", "")
        if name not in _TORCH_DTYPES:
            raise LedgerInputError(f"{where}: unsupported torch_dtype {name!r} (supported: {', '.join(_TORCH_DTYPES)})")
        return _TORCH_DTYPES[name], ()
    if not isinstance(q, dict):
        raise LedgerInputError(f"{where}: field 'quantization_config' must be an object")
    method = q.get("quant_method")
    skip = tuple(str(m) for m in (q.get("modules_to_not_convert") or q.get("ignore") or ()))
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8", skip
    if method == "mxfp4":
        return "mxfp4", skip
    if method in ("gptq", "awq"):
        bits = q.get("bits", q.get("w_bit"))
        if bits == 4:
            return "int4", skip
        if bits == 8:
            return "int8", skip
        raise LedgerInputError(f"{where}: unsupported quantization_config.bits {bits!r} for {method} (supported: 4, 8)")
    if method == "compressed-tensors":
        groups = q.get("config_groups") or {}
        weights = [g.get("weights") or {} for g in groups.values() if isinstance(g, dict)]
        if not weights:
            raise LedgerInputError(f"{where}: missing field 'quantization_config.config_groups.*.weights'")
        w = weights[0]
        kind = (w.get("num_bits"), w.get("type"))
        table = {(8, "float"): "fp8", (8, "int"): "int8", (4, "int"): "int4", (4, "float"): "nvfp4"}
        if kind not in table:
            raise LedgerInputError(f"{where}: unsupported compressed-tensors weights num_bits/type {kind} "
                                   f"(supported: 8 float, 8 int, 4 int, 4 float)")
        return table[kind], skip
    if method == "modelopt":
        algo = str(q.get("quant_algo", "")).upper()
        table = {"FP8": "fp8", "NVFP4": "nvfp4"}
        if algo not in table:
            raise LedgerInputError(f"{where}: unsupported quantization_config.quant_algo {algo!r} (supported: FP8, NVFP4)")
        return table[algo], skip
    raise LedgerInputError(f"{where}: unsupported quantization_config.quant_method {method!r} "
                           f"(supported: {', '.join(SUPPORTED_QUANT_METHODS)})")


def _matcher(patterns: tuple[str, ...]):
    """Whether a module name is left unquantized by a modules_to_not_convert / ignore list.

    Conventions of the quantizers: ``re:`` prefixes a regular expression (compressed-tensors),
    ``*`` is a glob over the dotted name or any prefix of it (MXFP4), anything else matches
    as a substring (transformers' ``modules_to_not_convert``).
    """
    regexes = [re.compile(p[3:]) for p in patterns if p.startswith("re:")]
    globs = [p for p in patterns if not p.startswith("re:") and "*" in p]
    plain = [p for p in patterns if not p.startswith("re:") and "*" not in p]
    # one expression for every glob: fnmatchcase(x, g) is a full match of fnmatch.translate(g)
    any_glob = re.compile("|".join(fnmatch.translate(g) for g in globs)) if globs else None

    def skipped(name: str) -> bool:
        if any(p in name for p in plain) or any(r.search(name) for r in regexes):
            return True
        if any_glob is None:
            return False
        parts = name.split(".")
        return any(any_glob.match(".".join(parts[:n])) for n in range(1, len(parts) + 1))

    return skipped


# ----------------------------------------------------------------------------------------
# architecture and parameter counts
# ----------------------------------------------------------------------------------------


def _sliding(f: _Fields, cfg: Mapping[str, Any], num_layers: int) -> tuple[int, int]:
    """(sliding-window layers, window) from layer_types, the family's pattern, or a global window."""
    window = cfg.get("sliding_window")
    if cfg.get("use_sliding_window") is False or not window:
        return 0, 0
    window = f.int("sliding_window", lo=1)
    types = cfg.get("layer_types")
    if isinstance(types, list):
        if len(types) != num_layers:
            raise LedgerInputError(f"{f.where}: field 'layer_types' has {len(types)} entries for {num_layers} layers")
        return sum(1 for t in types if t == "sliding_attention"), window
    if cfg.get("use_sliding_window") is True:  # Qwen2: layers from max_window_layers on slide
        return max(num_layers - f.int("max_window_layers", num_layers), 0), window
    if f.has("sliding_window_pattern"):  # Gemma-3: every pattern-th layer is global
        n = f.int("sliding_window_pattern", lo=1)
        return sum(1 for i in range(num_layers) if (i + 1) % n), window
    if cfg.get("model_type") == "gemma2":  # Gemma-2 alternates: even layers local (4096), odd global
        return math.ceil(num_layers / 2), window
    return num_layers, window  # Mistral-7B-v0.1: one window for every layer


def parse(cfg: Mapping[str, Any], where: str = "config.json") -> Architecture:
    """Derive the architecture and parameter counts of one config.json (a dict)."""
    cfg = with_defaults(_text_fields(cfg))
    f = _Fields(cfg, where)
    L = f.int("num_hidden_layers", lo=1, hi=10_000)   # the plan's range for num_layers (udfs/args.py)
    H = f.int("hidden_size", lo=1)
    nh = f.int("num_attention_heads", lo=1)
    kv = f.int("num_key_value_heads", nh, lo=1)
    V = f.int("vocab_size", lo=1)
    I = f.int("intermediate_size", 0)
    mtype = str(cfg.get("model_type", ""))
    tied = bool(cfg.get("tie_word_embeddings", False))
    dtype, skip = weight_format(cfg, where)
    skipped = _matcher(skip)

    # --- attention ------------------------------------------------------------------
    kv_lora = f.int("kv_lora_rank", 0)
    rope = f.int("qk_rope_head_dim", 0) if kv_lora else 0
    bias = bool(cfg.get("attention_bias", False))
    if kv_lora:  # MLA
        nope, vdim, q_lora = f.int("qk_nope_head_dim"), f.int("v_head_dim"), f.int("q_lora_rank", 0)
        head_dim = nope + rope
        q = {"q_a_proj": H * q_lora, "q_b_proj": q_lora * nh * head_dim} if q_lora else {"q_proj": H * nh * head_dim}
        attn = {**q, "kv_a_proj_with_mqa": H * (kv_lora + rope), "kv_b_proj": kv_lora * nh * (nope + vdim),
                "o_proj": nh * vdim * H}
        attn_other = q_lora + kv_lora  # q_a / kv_a layernorms
    else:
        head_dim = f.int("head_dim", 0, lo=1) or H // nh
        if not cfg.get("head_dim") and H % nh:
            raise LedgerInputError(f"{where}: hidden_size {H} is not a multiple of num_attention_heads {nh}; give 'head_dim'")
        attn = {"q_proj": H * nh * head_dim, "k_proj": H * kv * head_dim, "v_proj": H * kv * head_dim,
                "o_proj": nh * head_dim * H}
        qkv_bias = bias or mtype in ("qwen2", "qwen2_moe", "qwen2_vl", "qwen2_5_vl")
        attn_other = (nh + 2 * kv) * head_dim * qkv_bias + H * bias
        attn_other += 2 * head_dim * mtype.startswith("qwen3")  # q_norm, k_norm
        attn_other += nh * (mtype == "gpt_oss")  # attention sinks
    attn_w = sum(attn.values())
    norms = (4 if mtype.startswith("gemma2") or mtype.startswith("gemma3") else 2) * H

    # --- MLP / MoE ------------------------------------------------------------------
    E = f.first_int(("num_local_experts", "num_experts", "n_routed_experts"), 0)
    k = f.first_int(("num_experts_per_tok", "experts_per_token", "moe_topk"), 0) if E else 0
    gpt_oss = mtype == "gpt_oss"
    llama4 = mtype == "llama4_text"
    moe_I = f.int("moe_intermediate_size", 0) or I
    n_shared = f.int("n_shared_experts", 0)
    shared_I = n_shared * moe_I or f.int("shared_expert_intermediate_size", 0)
    if llama4:  # every MoE layer adds one shared expert as wide as a routed one; dense layers are wider
        shared_I, I = moe_I, f.int("intermediate_size_mlp", I)
        step = f.int("interleave_moe_layer_step", 1, lo=1)
        llama4_moe = set(cfg.get("moe_layers") or range(step - 1, L, step))
    if E and not moe_I:
        raise LedgerInputError(f"{where}: missing field 'moe_intermediate_size'")
    if E and not k:
        raise LedgerInputError(f"{where}: missing field 'num_experts_per_tok'")
    if E and k > E:
        raise LedgerInputError(f"{where}: num_experts_per_tok {k} exceeds the {E} experts")

    def is_moe(i: int) -> bool:
        if not E:
            return False
        if llama4:
            return i in llama4_moe
        if "first_k_dense_replace" in cfg or "moe_layer_freq" in cfg:  # DeepSeek
            return i >= f.int("first_k_dense_replace", 0) and i % f.int("moe_layer_freq", 1, lo=1) == 0
        if i in (cfg.get("mlp_only_layers") or ()):
            return False
        return (i + 1) % f.int("decoder_sparse_step", 1, lo=1) == 0

    moe_layers = sum(is_moe(i) for i in range(L))
    if moe_layers < L and not I:
        raise LedgerInputError(f"{where}: missing field 'intermediate_size'")
    mlp_bias = bool(cfg.get("mlp_bias", False))
    dense_w = 3 * H * I
    dense_other = (2 * I + H) * mlp_bias
    expert_w = 3 * H * moe_I
    expert_other = (2 * moe_I + H) * gpt_oss  # gpt-oss experts carry gate_up and down biases
    router = H * E + E * (gpt_oss or cfg.get("topk_method") == "noaux_tc")  # router bias / score-correction bias
    shared_w = 3 * H * shared_I + H * ("shared_expert_intermediate_size" in cfg)  # Qwen2-MoE shared-expert gate

    sliding_layers, window = _sliding(f, cfg, L)

    # --- totals ---------------------------------------------------------------------
    embed = V * H
    head = 0 if tied else V * H
    dense_layers = L - moe_layers
    per_layer_common = attn_w + attn_other + norms
    total = (embed + head + H  # embeddings, LM head, final norm
             + L * per_layer_common
             + dense_layers * (dense_w + dense_other)
             + moe_layers * (E * (expert_w + expert_other) + router + shared_w))
    # Active = the weights one token multiplies: routed experts only, and not the input
    # embedding table, which a token only gathers one row of (Kaplan et al. 2020 leave
    # embeddings out of C ~ 2N for the same reason).  A tied table is the LM head: counted.
    active = total - moe_layers * (E - k) * (expert_w + expert_other) - (0 if tied else embed)

    # quantized linear layers: (name, weights, active weights) per layer, names as in transformers
    shared_name = "shared_expert" if "shared_expert_intermediate_size" in cfg or llama4 else "shared_experts"
    ffn = "feed_forward" if llama4 else "mlp"
    quantized = active_quantized = 0
    for i in range(L):
        mods = [(f"self_attn.{n}", w, w) for n, w in attn.items()]
        if is_moe(i):
            mods += [(f"{ffn}.experts", E * expert_w, k * expert_w),
                     (f"{ffn}.{shared_name}", 3 * H * shared_I, 3 * H * shared_I)]
        else:
            mods += [(f"{ffn}.{n}", H * I, H * I) for n in ("gate_proj", "up_proj", "down_proj")]
        for name, w, a in mods:
            if w and not skipped(f"model.layers.{i}.{name}"):
                quantized += w
                active_quantized += a

    return Architecture(
        model_type=mtype, num_layers=L, hidden_size=H, num_attention_heads=nh, kv_heads=kv, head_dim=head_dim,
        intermediate_size=moe_I if E else I, vocab_size=V, tie_word_embeddings=tied,
        max_position_embeddings=f.int("max_position_embeddings", 0),
        kv_lora_rank=kv_lora, qk_rope_head_dim=rope,
        sliding_layers=sliding_layers, window=window,
        num_experts=E, experts_per_token=k, shared_experts=n_shared or int(shared_I > 0), moe_layers=moe_layers,
        weight_dtype=dtype, num_params=total, active_params=active,
        quantized_params=quantized, active_quantized_params=active_quantized, embedding_params=embed,
        dense_intermediate_size=I if E and moe_layers < L else 0, shared_intermediate_size=shared_I if E else 0,
    )


def parse_file(path: str | Path) -> Architecture:
    """load_config + parse, with errors naming the file."""
    return parse(load_config(path), where=Path(path).name)
