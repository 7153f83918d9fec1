"""The plan graph: hand-derived figures, and every line renders to a portable formula."""

import re

import pytest

from inference_ledger.graph import plan, resolve
from inference_ledger.formulas import serving
from inference_ledger.core.args import LedgerInputError
from inference_ledger.core.expr import PORTABLE_FUNCTIONS

#: The seed article's round 70B (70e9 parameters, all active, all in linear layers) on the default GPU: the plan's
#: defaults are Llama-3.1-70B's catalog row (70.55e9), so the hand derivations below state the round figure they use.
SEED_70B = {"num_params": 70e9, "active_params": 70e9, "quantized_params": 70e9, "active_quantized_params": 70e9}


def test_default_plan_llama70b_on_4x_h100_hand_derived():
    v = plan.evaluate(plan.defaults() | SEED_70B)
    assert v["weights_bytes"] == 140e9                       # 70e9 x 2 B
    assert v["weights_bytes_per_gpu"] == 35e9                # / TP 4
    assert v["kv_bytes_per_token"] == 327_680                # 2 x 80 x 8 x 128 x 2
    assert v["kv_bytes_per_token_per_gpu"] == 81_920         # 8 KV heads over 4 GPUs
    assert v["context_tokens"] == 1536                       # 1024 in + 512 out
    assert v["kv_bytes_per_sequence"] == 327_680 * 1536
    assert v["kv_bytes_peak"] == 327_680 * 1536 * 16
    assert v["flops_request"] == pytest.approx(2.1504e14)    # seed: 2 x 70e9 x 1536
    # decode steps see S + T/2 = 1,024 + 256 = 1,280 tokens on average (not the final 1,536)
    assert v["decode_context_tokens"] == 1280
    # decode step per GPU at batch 16: 35e9 weights + 16 x 419,430,400 / 4 KV bytes
    assert v["decode_bytes_per_step_per_gpu"] == 35e9 + 16 * 327_680 * 1280 / 4
    assert v["tpot_floor_seconds"] == pytest.approx((35e9 + 16 * 327_680 * 1280 / 4) / 3.35e12)


def test_default_plan_steady_state_by_hand():
    """Continuous batching, 16 in flight, 1,024 in + 512 out: every serving line worked by hand."""
    v = plan.evaluate(plan.defaults() | SEED_70B)
    assert v["effective_concurrency"] == 16                   # 16 < KV limit and < max_num_seqs 1,024
    # each of the 15 other sequences starts a 1,024-token prompt every 512 steps: 2 prompt tokens per step each
    assert v["prefill_tokens_per_step"] == 30 and v["step_tokens"] == 46
    linear = max(35e9 / (3.35e12 * 0.8), 2 * 70e9 * 46 / 4 / (989e12 * 0.55))   # 13.06 ms streaming > 2.96 ms compute
    kv = 16 * 327_680 * 1280 / 4 / (3.35e12 * 0.9)                              # 0.556 ms
    allreduce = 2 * 80 * (15e-6 + 2 * 3 / 4 * 46 * 8192 * 2 / 450e9)              # 2.80 ms
    overhead = 80 * 20e-6 + 0.2e-3                                                # 1.8 ms
    tpot = linear + kv + allreduce + overhead
    assert tpot == pytest.approx(0.018218, rel=1e-4)
    assert v["tpot_seconds"] == pytest.approx(tpot, rel=1e-12)
    ttft = 2 * 70e9 * 1024 / 4 / (989e12 * 0.5)               # one 1,024-token chunk, compute-bound: 72.5 ms
    assert v["ttft_service_seconds"] == pytest.approx(ttft, rel=1e-12) and v["queue_seconds"] == 0
    # as a benchmark reports it (N = 1,000 requests): the first 16 arrive together, a wave of 16 x 1,024 tokens
    # (2 chunks of 8,192: the mean request waits max(17/32, 8,192/16,384) of it); the other 984 arrive in lockstep
    # groups: a step has room for 8,192 - 16 decode tokens = 8,176 prompt tokens, 7.98 prompts of 1,024, prefilled
    # together in one step that also runs the 16 decodes (one TPOT); before it, the group waits for the step the
    # engine launched as its predecessors finished and for the one its async scheduler already prepared (2 TPOT)
    wave = 16 * ttft * 17 / 32
    assert v["wave_ttft_seconds"] == pytest.approx(wave, rel=1e-12)
    assert v["prefill_room_tokens"] == 8176 and v["lockstep_prompts"] == pytest.approx(8176 / 1024, rel=1e-12)
    assert v["overlap_scheduling"] == 1 and v["admission_wait_seconds"] == pytest.approx(2 * tpot, rel=1e-12)
    group = 2 * tpot + ttft + (8176 / 1024 - 1) * ttft + tpot     # each further prompt adds its own prefill
    assert v["lockstep_ttft_seconds"] == pytest.approx(group, rel=1e-12)
    assert v["prefill_bound_ttft_seconds"] == 0        # 16 x 1,024 / 8,176 = 2 steps of prompts per 511-step cycle
    assert v["ttft_seconds"] == pytest.approx((16 * wave + 984 * group) / 1000, rel=1e-12)
    # a service at its target QPS sees arrivals one by one: the prompt's prefill + half a running step + the step
    # the async scheduler has already prepared
    assert v["ttft_open_seconds"] == pytest.approx(ttft + tpot / 2 + tpot, rel=1e-12)
    qps = 16 / (ttft + 511 * tpot)                            # Little's law over 16 slots
    assert v["qps_per_replica"] == pytest.approx(qps, rel=1e-12)
    assert v["tokens_per_second"] == pytest.approx(qps * 512, rel=1e-12)
    assert v["binding_limit"] == 0 and v["step_compute_bound"] == 0


def test_prompts_that_outrun_the_token_budget_wait_for_room():
    """64 clients, 4,096 in / 16 out: the prompts need 64 x 4,096 / 8,128 = 32.25 steps of room per cycle, a request
    decodes 15: the 17.25 steps beyond the decode steps are spent waiting for room (in the benchmark's TTFT and in the
    time a slot is held)."""
    v = plan.evaluate(plan.defaults() | SEED_70B | {"concurrency": 64, "input_tokens": 4096, "output_tokens": 16})
    assert v["effective_concurrency"] == 64 and v["chunked_prefill"] == 1 and v["max_num_batched_tokens"] == 8192
    assert v["prefill_room_tokens"] == 8192 - 64
    tpot = v["tpot_seconds"]
    wait = (64 * 4096 / 8128 - 15) * tpot
    assert v["prefill_bound_ttft_seconds"] == pytest.approx(wait, rel=1e-12)
    assert v["steady_ttft_seconds"] == pytest.approx(max(wait, v["lockstep_ttft_seconds"]), rel=1e-12)
    # a step takes at most its room of prompt tokens (vLLM's token budget), and the wait is in the slot's time: a
    # cycle is the lone prompt's service + 32.25 steps, so requests complete at the room's pace, not faster
    assert v["prefill_tokens_per_step"] == 8128 and v["step_tokens"] == 8192
    assert v["qps_per_replica"] == pytest.approx(64 / (v["ttft_service_seconds"] + 64 * 4096 / 8128 * tpot), rel=1e-12)
    # a one-prompt-per-step lockstep: 8,128 / 4,096 = 1.98 prompts arrive and are prefilled together
    assert v["lockstep_prompts"] == pytest.approx(8128 / 4096, rel=1e-12)


def test_a_whole_prompt_engine_prefills_its_lockstep_group_in_one_iteration():
    """chunked_prefill 0 (TensorRT-LLM's default): a prompt runs whole in an iteration of up to max_num_batched_tokens
    (8,192) tokens with no decodes in it, so 8 prompts of 1,024 arrive and are prefilled together; the group waits
    for the running step (and, without overlap scheduling, for no other); nothing waits for room (the prefills stall
    the decode steps instead, in TPOT)."""
    v = plan.evaluate(plan.defaults() | SEED_70B | {"chunked_prefill": 0, "overlap_scheduling": 0})
    assert v["prefill_room_tokens"] == 8192 and v["lockstep_prompts"] == 8
    ttft, tpot = v["ttft_service_seconds"], v["tpot_seconds"]
    assert v["prefill_seconds_per_extra_prompt"] == pytest.approx(ttft, rel=1e-12)   # roofline, compute-bound
    assert v["admission_wait_seconds"] == pytest.approx(tpot, rel=1e-12)
    assert v["lockstep_ttft_seconds"] == pytest.approx(tpot + 8 * ttft + tpot, rel=1e-12)
    assert v["prefill_bound_ttft_seconds"] == 0 and v["prefill_stall_seconds"] > 0


def test_static_batching_mixes_no_prompt_and_waits_for_the_whole_batch():
    v = plan.evaluate(plan.defaults() | SEED_70B | {"batching": 2})
    assert v["prefill_tokens_per_step"] == 0 and v["step_tokens"] == 16
    # TTFT: 16 x 1,024 = 16,384 prompt tokens in 2 chunks of 8,192, compute-bound
    assert v["prefill_batch_tokens"] == 16_384 and v["prefill_chunks"] == 2
    assert v["ttft_seconds"] == pytest.approx(2 * 70e9 * 16_384 / 4 / (989e12 * 0.5), rel=1e-12)


def test_concurrency_beyond_the_kv_cache_queues():
    v = plan.evaluate(plan.defaults() | {"concurrency": 1000})
    b = v["max_concurrency"]
    assert v["effective_concurrency"] == b < 1000 and v["binding_limit"] == 1      # the KV cache binds
    # the default engine (vLLM) admits on the prompt: the requests the KV cache holds at S, beyond the B it runs
    d = v["decode_requests"]
    assert b < d == min(1000, v["admitted_sequences"], v["max_running_sequences"])
    assert v["queue_seconds"] == pytest.approx((1000 - d) / v["qps_per_replica"], rel=1e-12)
    no_evict = plan.evaluate(plan.defaults() | {"concurrency": 1000, "kv_admission_reserve": 1})
    assert no_evict["decode_requests"] == b
    assert no_evict["queue_seconds"] == pytest.approx((1000 - b) / no_evict["qps_per_replica"], rel=1e-12)
    same = plan.evaluate(plan.defaults() | {"concurrency": b})
    assert v["tokens_per_second"] == pytest.approx(same["tokens_per_second"], rel=1e-12)   # the plateau


def test_mixtral_reads_nearly_every_expert_at_batch_64():
    # 8 experts, 2 per token: 8 x (1 - (6/8)^64) = 8 - 8 x 0.75^64 = 7.99999992 (0.75^64 = 1.00907e-8)
    assert serving.distinct_experts(8, 2, 64) == pytest.approx(8 - 8 * 1.00907e-8, rel=1e-12)
    assert serving.distinct_experts(8, 2, 1) == pytest.approx(2)
    assert serving.distinct_experts(0, 0, 64) == 0
    # DeepSeek-V3 (256 routed, 8 per token) at 400 tokens: 256 x (1 - (31/32)^400) = 255.99
    assert serving.distinct_experts(256, 8, 400) == pytest.approx(256 * (1 - (31 / 32) ** 400), rel=1e-12)
    # in the plan: Mixtral at 64 static sequences reads 8 experts' worth of every layer, not 2
    r = resolve.resolve("mixtral-8x7b", "h100-sxm", batching="static", numbers={"tp": 2, "concurrency": 64})
    v = plan.evaluate(r.inputs)
    assert v["moe_distinct_experts"] == pytest.approx(8, abs=1e-6)
    extra = 32 * 6 * 3 * 4096 * 14336 * r.inputs["weight_bytes"]            # 6 more experts x 32 layers x 3 matrices
    assert v["step_weight_bytes_per_gpu"] == pytest.approx((v["weights_read_bytes"] + extra) / 2, rel=1e-6)
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
    assert [s.name for s in plan.STEPS if s.name in plan.FAMILY_BY_NAME] == [f.name for f in plan.FAMILIES]
    known = {i.name for i in plan.INPUTS}
    cands = {f.name: f.candidates(8) for f in plan.FAMILIES}
    for step in plan.STEPS:
        fam = plan.FAMILY_BY_NAME.get(step.name)
        if fam is None:
            rendered = [plan.render(step, lambda n: n, cands)]
        else:   # each member at each candidate: its fellow members and the candidate are the family's own cells
            assert set(fam.params) <= known, f"{fam.name} uses a quantity defined after it"
            rendered = [plan.render_member(fam.flat_name(c, m), lambda n: n) for c in cands[fam.name]
                        for m in fam.member_names]
        for formula, used in rendered:
            assert formula.startswith("=")
            assert set(used) <= known | ({fam.param, *fam.member_names} if fam else set()), \
                f"{step.name} uses a quantity defined after it"
            for fn in re.findall(r"([A-Z][A-Z0-9.]*)\(", formula):
                assert fn in PORTABLE_FUNCTIONS, f"{step.name}: {fn} is not portable"
        known.add(step.name)


@pytest.mark.parametrize("name,value", [("tp", 0), ("concurrency", -1), ("gpu_memory_utilization", 1.5),
                                        ("num_params", float("nan")), ("num_layers", 2.5), ("head_dim", "wide")])
def test_bad_inputs_name_the_argument(name, value):
    with pytest.raises(LedgerInputError, match=name):
        plan.evaluate(plan.defaults() | {name: value})
