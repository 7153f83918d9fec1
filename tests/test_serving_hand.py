"""The steady-state formulas of inference_ledger.formulas.serving and the layout rules, by hand.

Hand-derived figures for the pieces the mutation run (tests/README.md) found unpinned: each is small
enough to check on paper, so a sign, a factor or a word that changes fails here.
"""

from __future__ import annotations

import dataclasses

import pytest

from inference_ledger.catalogs import catalog
from inference_ledger.formulas import ledger, parallel, serving
from inference_ledger.graph import resolve
from inference_ledger.core.expr import Sym


def test_kv_sequences_are_whole_and_never_negative():
    assert serving.kv_sequences(10e9, 3e9) == 3                  # 3.33 -> 3 whole sequences
    assert serving.kv_sequences(-1e9, 3e9) == 0                  # a budget below zero holds none


def test_routed_and_extra_expert_bytes():
    # Mixtral-8x7B: 32 MoE layers, top-2 of 8 experts, 4096 x 14336, BF16
    one_token = 32 * 2 * 3 * 4096 * 14336 * 2
    assert serving.routed_active_bytes(32, 2, 4096, 14336, 2) == one_token             # 22.5 GB
    # a step touching all 8 experts reads 6 more per layer, capped by the inactive parameters
    six_more = 32 * 6 * 3 * 4096 * 14336
    assert serving.extra_expert_bytes(8, 2, 32, 4096, 14336, 2, 50e9, 12.9e9) == six_more * 2
    assert serving.extra_expert_bytes(8, 2, 32, 4096, 14336, 2, 12.9e9 + 1e9, 12.9e9) == 1e9 * 2   # the cap
    assert serving.extra_expert_bytes(1.5, 2, 32, 4096, 14336, 2, 46.7e9, 12.9e9) == 0        # fewer than k: none


def test_weights_read_per_gpu_spreads_the_experts_over_the_stage():
    # 10 GB dense + 4 GB of one token's experts + 6 GB more experts; TP 2, a stage of 8 GPUs (DP attention 4)
    assert serving.weight_read_per_gpu(14e9, 4e9, 6e9, 2, 8) == pytest.approx(10e9 / 2 + 10e9 / 8)
    assert serving.weight_read_per_gpu(14e9, 4e9, 6e9, 2, 2) == pytest.approx(20e9 / 2)   # TP only: all over TP


def test_compute_bound_and_cycle():
    # 1 GB at 1 TB/s x 0.5 = 2 ms; 1 TFLOP at 1 PFLOP/s x 0.5 = 2 ms: equal is not compute-bound
    assert serving.compute_bound(1e9, 1e12, 1e12, 1e15, 0.5, 0.5) == 0
    assert serving.compute_bound(1e9, 1.01e12, 1e12, 1e15, 0.5, 0.5) == 1
    assert serving.compute_bound(1e9, 1e12, 1e12, 1e15, 0.25, 0.5) == 0     # slower streaming: bandwidth-bound
    assert serving.compute_bound(1e9, 1e12, 1e12, 1e15, 0.5, 0.25) == 1     # slower compute: compute-bound
    # a slot is held for TTFT + (T - 1) steps: 0.2 s + 511 x 20 ms
    assert serving.cycle_seconds(0.2, 512, 0.02) == pytest.approx(0.2 + 511 * 0.02)


def test_limit_words_as_text_and_as_a_formula():
    assert [serving.limit_words(c) for c in range(5)] == [
        "none: the requested concurrency runs, bandwidth-bound", "KV cache", "max_num_seqs", "TPOT target", "compute"]
    assert serving.limit_words(Sym("code")).formula() == (
        '=IF(code=LIMIT_KV,"KV cache",IF(code=LIMIT_MAX_NUM_SEQS,"max_num_seqs",IF(code=LIMIT_TPOT,"TPOT target",'
        'IF(code=LIMIT_COMPUTE,"compute","none: the requested concurrency runs, bandwidth-bound"))))')


def test_seed_roofline_pieces():
    # 70 GB of weights + 16 sequences x 1 GB of KV; at 3.35 TB/s x 0.8 and 989 TFLOP/s x 0.5
    assert ledger.decode_bytes_per_step(70e9, 1e9, 16) == 86e9
    assert ledger.decode_step_seconds(86e9, 2.24e12, 3.35e12, 989e12, 0.8, 0.5) == pytest.approx(86e9 / 2.68e12)
    assert ledger.decode_step_seconds(1e9, 2e15, 3.35e12, 989e12, 0.8, 0.5) == pytest.approx(2e15 / 494.5e12)
    assert ledger.batch_tokens_per_second(16, 0.02) == 800


def test_the_efficiency_file_has_every_default_and_refuses_a_row_without_a_source(tmp_path):
    eff = serving.load_efficiencies()
    assert eff["bw_efficiency"].value == 0.8 and eff["kv_read_efficiency"].value == 0.9
    assert eff["bw_efficiency"].name == "bw_efficiency" and "75-78%" in eff["bw_efficiency"].quote
    assert eff["layer_overhead_seconds"].value == 20e-6 and eff["bw_efficiency"].gpu_family == "*"
    assert "h200-microbench" in eff["bw_efficiency"].source and eff["bw_efficiency"].date == "2026-11-30"
    bad = tmp_path / "e.csv"
    bad.write_text("# comment\nname,value,gpu_family,source,date,quote\nbw_efficiency,0.8,*,,2026-11-30,q\n")
    with pytest.raises(ValueError, match=r"^e\.csv row 1 \(bw_efficiency\): field 'source' is empty$"):
        serving.load_efficiencies(bad)
    fam = tmp_path / "f.csv"
    fam.write_text("name,value,gpu_family,source,date,quote\nbw_efficiency,0.7,mi300x,s,2026-11-30,q\n"
                   "bw_efficiency,0.8,*,s,2026-11-30,q\n")
    assert serving.load_efficiencies(fam)["bw_efficiency"].value == 0.8        # the every-GPU row is the default


# --- the layout rules, each naming its setting ---------------------------------------------------------

LLAMA = catalog.get_model("llama-3.1-70b")
DEEPSEEK = catalog.get_model("deepseek-v3")


@pytest.mark.parametrize("model,pp,ep,dp,tp,red,option,message", [
    (LLAMA, 81, 1, 1, 8, 0, "pp", "PP 81 is more stages than the 80 layers of llama-3.1-70b"),
    (LLAMA, 1, 2, 1, 8, 0, "ep", "EP 2 needs a mixture-of-experts model: llama-3.1-70b is dense"),
    (LLAMA, 1, 1, 2, 8, 0, "dp_attention",
     "DP attention 2 needs a mixture-of-experts model: llama-3.1-70b is dense (its DP ranks are separate replicas)"),
    (LLAMA, 1, 1, 1, 8, 4, "redundant_experts",
     "redundant experts need a mixture-of-experts model: llama-3.1-70b is dense"),
    (DEEPSEEK, 1, 48, 48, 1, 0, "ep", "EP 48 does not divide the 256 routed experts of deepseek-v3"),
    (DEEPSEEK, 1, 64, 64, 1, 32, "ep", "EP 64 does not divide the 256 + 32 redundant routed experts of deepseek-v3"),
    (DEEPSEEK, 1, 16, 1, 8, 0, "ep", "EP 16 does not divide the 8 GPUs of a pipeline stage (TP 8 x DP attention 1)"),
])
def test_layout_refusals(model, pp, ep, dp, tp, red, option, message):
    assert resolve.layout_problem(model, pp, ep, dp, tp, red) == (option, message)


def test_layouts_the_engines_run():
    assert resolve.layout_problem(LLAMA, 80, 1, 1, 8) is None                  # one layer per stage
    assert resolve.layout_problem(DEEPSEEK, 1, 144, 144, 1, 32) is None        # DeepSeek's decode: 288 / 144
    assert resolve.layout_problem(None, 999, 999, 999, 1) is None
    assert resolve.layout_problem(dataclasses.replace(LLAMA, num_layers=4), 4, 1, 1, 1) is None


def test_redundant_experts_reach_the_layout_rule():
    # 256 + 32 = 288 = 6 x 48: EP 48 runs only with the redundant copies counted
    ok = resolve.resolve("deepseek-v3", "h200", numbers={"tp": 1, "dp_attention": 48, "ep": 48, "redundant_experts": 32})
    assert ok.inputs["ep"] == 48
    with pytest.raises(resolve.ChoiceError, match="EP 48 does not divide the 256 routed experts"):
        resolve.resolve("deepseek-v3", "h200", numbers={"tp": 1, "dp_attention": 48, "ep": 48})


def test_batching_words():
    assert resolve.batching_code(None) == resolve.batching_code("  ") == resolve.batching_code("continuous") == 1
    assert resolve.batching_code("Static") == 2
    with pytest.raises(resolve.ChoiceError) as e:
        resolve.batching_code("dynamic")
    assert e.value.option == "batching" and "continuous" in str(e.value) and "static" in str(e.value)


def test_binding_limit_queue_and_links_by_hand():
    assert serving.binding_limit(16, 100, 1024, 1, 1) == 4          # fits, meets TPOT, compute-bound
    assert serving.binding_limit(16, 100, 1024, 1, 0) == 0          # nothing binds: bandwidth-bound
    assert serving.binding_limit(200, 100, 1024, 1, 0) == 1         # the KV cache holds 100 of 200
    assert serving.queue_seconds(1, 4, 2.0) == 0                    # fewer clients than slots: no wait
    assert serving.queue_seconds(10, 4, 2.0) == 3.0                 # 6 waiting at 2 requests/s
    assert serving.distinct_experts(1, 1, 5) == 1                   # one expert: always read
    assert parallel.seconds_per_byte(False, 50e9, 450e9) == 1 / 450e9
    assert parallel.seconds_per_byte(True, 50e9, 450e9) == 1 / 50e9
    assert parallel.ep_seconds_per_byte(4, 8, 50e9, 450e9) == pytest.approx(1 / 450e9)    # EP inside a node


#: nccl-tests all_reduce_perf out-of-place rows (size B, time us) of 2 V100 PCIe GPUs without peer-to-peer, the source
#: quoted by the host_allreduce_* rows of inference_ledger/data/efficiencies.csv (its 64 KiB - 1 MiB rows)
HOST_ALLREDUCE_ROWS = ((65536, 34.72), (131072, 50.87), (262144, 71.13), (1048576, 187.0))


def test_the_host_allreduce_defaults_are_the_line_through_their_quoted_rows():
    """Least squares by hand (normal equations) over the quoted rows gives the two defaults; each row is quoted."""
    n = len(HOST_ALLREDUCE_ROWS)
    sx = sum(x for x, _ in HOST_ALLREDUCE_ROWS)
    sy = sum(y for _, y in HOST_ALLREDUCE_ROWS)
    sxx = sum(x * x for x, _ in HOST_ALLREDUCE_ROWS)
    sxy = sum(x * y for x, y in HOST_ALLREDUCE_ROWS)
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)            # us per byte
    floor_us = (sy - slope * sx) / n
    effs = serving.load_efficiencies()
    assert effs["host_allreduce_floor_seconds"].value == pytest.approx(floor_us * 1e-6, rel=0.005)   # 28.9 us
    assert effs["host_allreduce_bw"].value == pytest.approx(1 / (slope * 1e-6), rel=0.005)           # 6.6 GB/s
    for size, us in HOST_ALLREDUCE_ROWS:
        assert f"{size} {size // 4} float sum -1 {us}" in effs["host_allreduce_bw"].quote


def test_all_reduces_through_host_memory_by_hand():
    """Qwen2.5-7B (28 layers, hidden 3584, BF16) on 2 A100s: 56 all-reduces a step, each no faster than the host
    path's 28.9 us + message / 6.6 GB/s (a 2-GPU ring sends the whole message); TP 1 has none either way."""
    from inference_ledger.graph import plan

    inputs = resolve.resolve("qwen2.5-7b", "a100-80gb", numbers={"tp": 2, "concurrency": 20}).inputs
    p2p = plan.evaluate(inputs)
    host = plan.evaluate({**inputs, "allreduce_through_host": 1})
    message = host["rank_step_tokens"] * 3584 * 2
    assert host["tp_allreduces_per_pass"] == 56
    assert host["decode_allreduce_seconds"] == pytest.approx(56 * (28.9e-6 + message / 6.6e9))
    assert p2p["decode_allreduce_seconds"] < host["decode_allreduce_seconds"] / 3   # NVLink: custom all-reduce
    assert host["tpot_seconds"] > p2p["tpot_seconds"]
    one = resolve.resolve("qwen2.5-7b", "a100-80gb", numbers={"tp": 1, "concurrency": 20}).inputs
    assert plan.evaluate({**one, "allreduce_through_host": 1})["tpot_seconds"] == plan.evaluate(one)["tpot_seconds"]
