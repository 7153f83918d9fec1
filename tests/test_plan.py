"""The plan graph: hand-derived figures, and every line renders to a portable formula."""

import re

import pytest

from inference_ledger import plan
from inference_ledger.args import LedgerInputError
from inference_ledger.expr import PORTABLE_FUNCTIONS


def test_default_plan_llama70b_on_4x_h100_hand_derived():
    v = plan.evaluate(plan.defaults())
    assert v["weights_bytes"] == 140e9                       # 70e9 x 2 B
    assert v["weights_bytes_per_gpu"] == 35e9                # / TP 4
    assert v["kv_bytes_per_token"] == 327_680                # 2 x 80 x 8 x 128 x 2
    assert v["kv_bytes_per_token_per_gpu"] == 81_920         # 8 KV heads over 4 GPUs
    assert v["context_tokens"] == 1536                       # 1024 in + 512 out
    assert v["kv_bytes_per_sequence"] == 327_680 * 1536
    assert v["kv_bytes_peak"] == 327_680 * 1536 * 16
    assert v["flops_request"] == pytest.approx(2.1504e14)    # seed: 2 x 70e9 x 1536
    # decode step per GPU at batch 16: 35e9 weights + 16 x 503,316,480 / 4 KV bytes
    assert v["decode_bytes_per_step_per_gpu"] == 35e9 + 16 * 327_680 * 1536 / 4
    assert v["tpot_floor_seconds"] == pytest.approx((35e9 + 16 * 327_680 * 1536 / 4) / 3.35e12)
    assert v["ridge_batch"] == pytest.approx(989e12 * 2 / (2 * 3.35e12))


def test_kv_replicates_when_tp_exceeds_kv_heads():
    v = plan.evaluate(plan.defaults() | {"tp": 16})
    assert v["kv_shards"] == 8
    assert v["kv_bytes_per_token_per_gpu"] == 327_680 / 8


def test_mla_latent_is_not_split_across_tp():
    d = plan.defaults() | {"num_layers": 61, "mla_latent_dim": 576, "kv_heads": 128, "tp": 8}
    v = plan.evaluate(d)
    assert v["kv_bytes_per_token"] == 70_272                 # DeepSeek-V3: 61 x (512 + 64) x 2
    assert v["kv_bytes_per_token_per_gpu"] == 70_272


def test_sliding_window_caps_kv_per_sequence():
    d = plan.defaults() | {"num_layers": 36, "kv_heads": 8, "head_dim": 64, "sliding_layers": 18,
                           "window": 128, "input_tokens": 8000, "output_tokens": 192}
    v = plan.evaluate(d)
    per_layer_token = 2 * 8 * 64 * 2
    assert v["kv_bytes_per_sequence"] == per_layer_token * (18 * 8192 + 18 * 128)


def test_every_line_renders_portably_with_inputs_defined_first():
    """The graph comes from the lines' signatures: evaluated in that order, every quantity is known when used."""
    assert sorted(l.name for l in plan.EVALUATION_ORDER) == sorted(l.name for l in plan.LINES)
    known = {i.name for i in plan.INPUTS}
    for line in plan.EVALUATION_ORDER:
        formula, used = plan.render(line, lambda n: n)
        assert formula.startswith("=")
        assert set(used) <= known, f"{line.name} uses a quantity defined after it"
        for fn in re.findall(r"([A-Z][A-Z0-9.]*)\(", formula):
            assert fn in PORTABLE_FUNCTIONS, f"{line.name}: {fn} is not portable"
        known.add(line.name)


@pytest.mark.parametrize("name,value", [("tp", 0), ("concurrency", -1), ("gpu_memory_utilization", 1.5),
                                        ("num_params", float("nan")), ("num_layers", 2.5), ("head_dim", "wide")])
def test_bad_inputs_name_the_argument(name, value):
    with pytest.raises(LedgerInputError, match=name):
        plan.evaluate(plan.defaults() | {name: value})
