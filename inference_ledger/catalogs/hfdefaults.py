"""What a config.json may leave out: each model type's transformers defaults, with their sources.

:func:`with_defaults` fills them in before :mod:`inference_ledger.catalogs.hfconfig` reads a config.
"""

from __future__ import annotations

from typing import Any, Mapping

#: transformers' source the defaults below are read from (one file per model type; the commit of each file read).
TRANSFORMERS_SOURCE = "github.com/huggingface/transformers src/transformers/models/<type>/configuration_<type>.py"
#: What a config.json may leave out, per ``model_type``: the default of that architecture's transformers config
#: class (a field it leaves out takes the class default when transformers builds the model). Only fields that
#: change sizes, windows or the context are listed; a key present in the file, even as null, is never replaced
#: (null means "none" for a window, "derive it" for head_dim and num_key_value_heads). Sources, transformers v5 line:
#:   llama        LlamaConfig       (models/llama, commit 008e5743): head_dim and num_key_value_heads derive (None)
#:   mistral      MistralConfig     (models/mistral, commit 001f85b3): num_key_value_heads 8, sliding_window 4096
#:   mixtral      MixtralConfig     (models/mixtral, commit 008e5743)
#:   qwen2        Qwen2Config       (models/qwen2, commit 008e5743): num_key_value_heads 32 (not the heads)
#:   qwen3        Qwen3Config       (models/qwen3, commit 008e5743): head_dim 128
#:   qwen2_moe    Qwen2MoeConfig    (models/qwen2_moe, commit 008e5743): a shared expert (5632) and its gate
#:   qwen3_moe    Qwen3MoeConfig    (models/qwen3_moe, commit 008e5743): no head_dim field (hidden / heads)
#:   gemma2       Gemma2Config      (models/gemma2, commit 008e5743): tie_word_embeddings True, head_dim 256
#:   gemma3_text  Gemma3TextConfig  (models/gemma3, commit 008f5c8c): tie True, head_dim 256, every 6th layer global
#:   deepseek_v3  DeepseekV3Config  (models/deepseek_v3, commit 001f85b3)
#:   gpt_oss      GptOssConfig      (models/gpt_oss, commit 02b8f42b): attention_bias True, window 128
#:   llama4_text  Llama4TextConfig  (models/llama4, commit 008e5743): MoE every interleave_moe_layer_step-th layer,
#:                each with a shared expert (Llama4TextMoe.shared_expert); dense layers use intermediate_size_mlp
#: Any other model_type keeps the reader's own fallbacks (untied embeddings, head_dim = hidden / heads).
MODEL_TYPE_DEFAULTS: dict[str, dict[str, Any]] = {
    "llama": {"tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
              "max_position_embeddings": 2048},
    "mistral": {"tie_word_embeddings": False, "num_key_value_heads": 8, "sliding_window": 4096,
                "max_position_embeddings": 4096 * 32},
    "mixtral": {"tie_word_embeddings": False, "num_key_value_heads": 8, "sliding_window": None,
                "num_local_experts": 8, "num_experts_per_tok": 2, "max_position_embeddings": 4096 * 32},
    "qwen2": {"tie_word_embeddings": False, "num_key_value_heads": 32, "use_sliding_window": False,
              "sliding_window": 4096, "max_window_layers": 28, "max_position_embeddings": 32768},
    "qwen3": {"tie_word_embeddings": False, "num_key_value_heads": 32, "head_dim": 128, "attention_bias": False,
              "use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28,
              "max_position_embeddings": 32768},
    "qwen2_moe": {"tie_word_embeddings": False, "num_key_value_heads": 16, "use_sliding_window": False,
                  "sliding_window": 4096, "max_window_layers": 28, "decoder_sparse_step": 1,
                  "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632, "num_experts_per_tok": 4,
                  "num_experts": 60, "mlp_only_layers": [], "max_position_embeddings": 32768},
    "qwen3_moe": {"tie_word_embeddings": False, "num_key_value_heads": 4, "attention_bias": False,
                  "use_sliding_window": False, "sliding_window": 4096, "decoder_sparse_step": 1,
                  "moe_intermediate_size": 768, "num_experts_per_tok": 8, "num_experts": 128, "mlp_only_layers": [],
                  "max_position_embeddings": 32768},
    "gemma2": {"tie_word_embeddings": True, "num_key_value_heads": 4, "head_dim": 256, "attention_bias": False,
               "sliding_window": 4096, "max_position_embeddings": 8192},
    "gemma3_text": {"tie_word_embeddings": True, "num_key_value_heads": 4, "head_dim": 256, "attention_bias": False,
                    "sliding_window": 4096, "sliding_window_pattern": 6, "max_position_embeddings": 131072},
    "deepseek_v3": {"tie_word_embeddings": False, "num_key_value_heads": 128, "n_shared_experts": 1,
                    "n_routed_experts": 256, "moe_intermediate_size": 2048, "kv_lora_rank": 512, "q_lora_rank": 1536,
                    "qk_rope_head_dim": 64, "v_head_dim": 128, "qk_nope_head_dim": 128, "num_experts_per_tok": 8,
                    "first_k_dense_replace": 3, "attention_bias": False, "max_position_embeddings": 4096},
    "gpt_oss": {"tie_word_embeddings": False, "num_key_value_heads": 8, "head_dim": 64, "sliding_window": 128,
                "num_local_experts": 128, "num_experts_per_tok": 4, "attention_bias": True,
                "max_position_embeddings": 131072},
    "llama4_text": {"tie_word_embeddings": False, "num_key_value_heads": 8, "head_dim": 128, "attention_bias": False,
                    "intermediate_size_mlp": 16384, "interleave_moe_layer_step": 1, "num_local_experts": 16,
                    "num_experts_per_tok": 1, "max_position_embeddings": 4096 * 32},
}


def with_defaults(cfg: Mapping[str, Any]) -> dict:
    """The config with the fields it leaves out filled from its model_type's transformers defaults."""
    out = dict(cfg)
    for key, value in MODEL_TYPE_DEFAULTS.get(str(cfg.get("model_type", "")), {}).items():
        out.setdefault(key, value)
    return out
