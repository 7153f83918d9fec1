"""KV admission and preemption above the KV capacity: vLLM and SGLang admit a request on its prompt's blocks (SGLang
with a small reserve for its output) and preempt when the cache runs out, so a benchmark sees more requests decoding
than run; TensorRT-LLM's default GUARANTEED_NO_EVICT reserves the whole context and runs every request it admits."""

import pytest

from inference_ledger.catalogs import engines
from inference_ledger.catalogs.load_measurements import load_measured_load
from inference_ledger.formulas import admission, serving
from inference_ledger.validation import load_fidelity

QWEN_7B_C500 = "dennislee-a100-80gb-qwen2-7b-bf16-vllm-t4-n500-1024-1024"


def test_a_vllm_row_above_its_kv_capacity_by_hand():
    """dennislee22, Qwen2.5-7B on one A100 80GB at gpu_memory_utilization 0.25, vLLM 0.9, 500 clients, 1,024 in /
    1,024 out (measured: TPOT 31.56 ms, TTFT 95.8 s, 2,170 output tokens/s).

    By hand from the plan's KV cache of 71,192 tokens (vLLM's 'GPU KV cache size' line for this budget):
    * running at full context S + T = 2,048 tokens: floor(71,192 / 2,048) = 34 sequences (the effective concurrency);
    * vLLM admits on the prompt alone (reserve 0): floor(71,192 / 1,024) = 69 requests past their first token,
      below max_num_seqs 256 and the 500 clients;
    * the 34 running emit 34 tokens a step that 69 requests share: TPOT = step x 69 / 34 = 2.0294 steps;
    * the other 500 - 69 = 431 clients wait for a first token: queue = 431 / QPS (it was 466 / QPS before)."""
    row = next(r for r in load_measured_load() if r.id == QWEN_7B_C500)
    v = load_fidelity.row_values(row)
    assert v["kv_capacity_tokens"] == 71192 and v["kv_admission_reserve"] == 0 and v["kv_admission_policy"] == 0
    assert v["admission_context_tokens"] == 1024
    assert v["effective_concurrency"] == 34 and v["admitted_sequences"] == 69 and v["decode_requests"] == 69
    assert v["benchmark_tpot_seconds"] == pytest.approx(v["tpot_seconds"] * 69 / 34, rel=1e-12)
    assert v["queue_seconds"] == pytest.approx(431 / v["qps_per_replica"], rel=1e-12)
    # the planner's throughput is the running set's: 34 x 1,024 tokens per request cycle, not the 69 admitted
    assert v["tokens_per_second"] == pytest.approx(v["qps_per_replica"] * 1024, rel=1e-12)
    assert v["qps_per_replica"] == pytest.approx(34 / (v["ttft_service_seconds"] + 1023 * v["tpot_seconds"]), rel=1e-12)


def test_admission_context_by_hand():
    """1,024 in / 1,024 out: the whole 2,048 reserved at 1 (TensorRT-LLM), the prompt's 1,024 at 0 (vLLM), 1,024 +
    0.098 x 1,024 = 1,124.352 at SGLang's decayed new_token_ratio."""
    assert admission.admission_context(1024, 1024, 1) == 2048
    assert admission.admission_context(1024, 1024, 0) == 1024
    assert admission.admission_context(1024, 1024, 0.098) == pytest.approx(1124.352)
    # 69 admitted over 34 running: a benchmark's token every 69 / 34 steps of 14.4 ms = 29.22 ms
    assert admission.benchmark_tpot_seconds(0.0144, 69, 34) == pytest.approx(0.029224, rel=1e-4)
    assert serving.queue_seconds(500, 69, 2.0) == pytest.approx(215.5)


def test_engines_reserve_by_family():
    for e in engines.load_engines():
        # ATOM: block_manager.can_allocate(prompt); TurboMind 0.1: SequenceManager.cc CountRequiredBlocks (context + 1)
        expected = {"trtllm": 1, "vllm": 0, "atom": 0, "lmdeploy": 0}.get(e.family)
        if expected is None:
            assert 0 < e.kv_admission_reserve < 1, e.id             # SGLang: new_token_ratio's floor
        else:
            assert e.kv_admission_reserve == expected, e.id
        assert "kv_admission_reserve" in e.trait_sources, e.id


def test_tensorrt_llm_rows_keep_guaranteed_no_evict():
    """Every TensorRT-LLM load row admits only what it runs: D = B, the benchmark's TPOT is the step, and the queue
    is (C - B) / QPS as before."""
    rows = [r for r in load_measured_load() if r.engine_id.startswith("trtllm")]
    assert len(rows) > 50
    for r in rows:
        v = load_fidelity.row_values(r)
        assert v["kv_admission_reserve"] == 1 and v["kv_admission_policy"] == 1, r.id
        assert admission.ADMISSION.render(v["kv_admission_policy"]).startswith("guaranteed no evict"), r.id
        assert v["admitted_sequences"] == v["max_concurrency"], r.id
        assert v["decode_requests"] == v["effective_concurrency"], r.id
        assert v["benchmark_tpot_seconds"] == v["tpot_seconds"], r.id
        assert v["queue_seconds"] == pytest.approx(
            max(v["concurrency"] - v["effective_concurrency"], 0) / v["qps_per_replica"], rel=1e-12), r.id


def test_below_the_kv_capacity_nothing_moves():
    """Where every request runs (C at most the running set), admission changes nothing, whatever the reserve."""
    for r in load_measured_load():
        v = load_fidelity.row_values(r)
        if v["concurrency"] <= v["effective_concurrency"]:
            assert v["decode_requests"] == v["effective_concurrency"], r.id
            assert v["benchmark_tpot_seconds"] == v["tpot_seconds"], r.id


def test_a_long_closed_loop_keeps_littles_law_with_the_benchmark_tpot():
    """C clients with zero think time: C = QPS x (TTFT + (T - 1) x TPOT) once the run is long (N = 100 C), with the
    benchmark's TTFT (the wait for admission included) and TPOT (preempted spells included): the C - D clients not
    admitted plus the D decoding.  Off by the first wave and the prompt's own prefill only (under 1%)."""
    from inference_ledger.graph import plan
    from inference_ledger.validation.accuracy import row_inputs
    row = next(r for r in load_measured_load() if r.id == QWEN_7B_C500)
    v = plan.evaluate(row_inputs(row) | {"benchmark_requests": 50_000})
    in_flight = v["qps_per_replica"] * (v["ttft_seconds"] + (v["output_tokens"] - 1) * v["benchmark_tpot_seconds"])
    assert in_flight == pytest.approx(v["concurrency"], rel=0.01)
    # without the admitted requests' share of the step (TPOT of the running set alone) the loop loses ~D - B clients
    short = v["qps_per_replica"] * (v["ttft_seconds"] + (v["output_tokens"] - 1) * v["tpot_seconds"])
    assert v["concurrency"] - short == pytest.approx(v["decode_requests"] - v["effective_concurrency"], rel=0.1)
