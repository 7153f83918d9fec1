"""TTFT as a closed-loop serving benchmark reports it: the wave, the lockstep groups and the wait for the steps already
under way when a request arrives (engine loop and overlap scheduling)."""

import pytest

from inference_ledger.graph import plan
from inference_ledger.formulas import serving, whatif

#: The seed article's round 70B on the default 4 x H100 (as tests/test_plan.py: every active parameter linear).
SEED_70B = {"num_params": 70e9, "active_params": 70e9, "quantized_params": 70e9, "active_quantized_params": 70e9}


def test_an_inferencex_shaped_run_by_hand():
    """16 clients, 1,024 in / 512 out, N = 10 x 16 = 160 requests (InferenceX's --num-prompts $((CONC * 10))), the
    default engine (vLLM V1, async scheduling on).

    By hand, with the roofline defaults of tests/test_plan.py:
    * one 1,024-token prompt, compute-bound: 2 x 70e9 x 1,024 / 4 / (989e12 x 0.5) = 72.477 ms; TPOT 18.218 ms;
    * the first 16 requests are one wave of 16 x 1,024 tokens in 2 chunks of 8,192: the mean waits 17/32 of
      16 x 72.477 ms = 616.06 ms;
    * the other 144 arrive with their lockstep group of 8,176 / 1,024 = 7.984 prompts: they wait for the step the
      engine launched as their predecessors finished and for the one the async scheduler had already prepared
      (2 x 18.218 ms), then the group's prefill (7.984 x 72.477 ms, each further prompt costs as much on the
      roofline) in a step that also runs the decodes (18.218 ms): 633.34 ms;
    * mean TTFT = (16 x 616.06 + 144 x 633.34) / 160 = 631.61 ms."""
    v = plan.evaluate(plan.defaults() | SEED_70B | {"benchmark_requests": 160})
    assert v["effective_concurrency"] == 16 and v["overlap_scheduling"] == 1 and v["queue_seconds"] == 0
    assert v["ttft_service_seconds"] == pytest.approx(0.072477, rel=1e-4)
    assert v["tpot_seconds"] == pytest.approx(0.018218, rel=1e-4)
    assert v["wave_ttft_seconds"] == pytest.approx(0.61606, rel=1e-4)
    assert v["lockstep_ttft_seconds"] == pytest.approx(0.63334, rel=1e-4)
    assert v["ttft_seconds"] == pytest.approx(0.63161, rel=1e-4)


def _no_scheduler_cost(**numbers):
    """The default plan with the scheduler's CPU time left out, so overlap scheduling changes TTFT alone."""
    return plan.evaluate(plan.defaults() | SEED_70B | {"scheduler_seconds_per_sequence": 0} | numbers)


def test_overlap_scheduling_adds_one_step_to_every_request_after_the_wave():
    """Flipping overlap_scheduling 0 -> 1 leaves TPOT alone (no scheduler CPU time priced here) and makes each
    lockstep request wait one more decode step: TTFT grows by (N - B) / N x TPOT, the first wave (sent to an idle
    engine) unchanged."""
    off, on = _no_scheduler_cost(overlap_scheduling=0), _no_scheduler_cost(overlap_scheduling=1)
    assert on["tpot_seconds"] == pytest.approx(off["tpot_seconds"], rel=1e-12)
    tpot = off["tpot_seconds"]
    assert off["admission_wait_seconds"] == pytest.approx(tpot, rel=1e-12)
    assert on["admission_wait_seconds"] == pytest.approx(2 * tpot, rel=1e-12)
    assert on["wave_ttft_seconds"] == pytest.approx(off["wave_ttft_seconds"], rel=1e-12)
    n, b = off["benchmark_requests"], off["effective_concurrency"]
    assert on["ttft_seconds"] - off["ttft_seconds"] == pytest.approx((n - b) / n * tpot, rel=1e-9)


def test_static_batches_wait_for_no_running_step():
    """A static batch is prefilled by itself: no step runs before it, so no admission wait."""
    assert serving.admission_wait_seconds(2, 1, 30, 0.02) == 0
    assert serving.admission_wait_seconds(1, 0, 1, 0.02) == pytest.approx(0.02)
    assert serving.admission_wait_seconds(1, 1, 1, 0.02) == pytest.approx(0.04)
    v = plan.evaluate(plan.defaults() | SEED_70B | {"batching": 2})
    assert v["admission_wait_seconds"] == 0 and v["lockstep_ttft_seconds"] == v["ttft_service_seconds"]


def test_a_scheduler_that_reads_every_30th_step_adds_half_a_cycle():
    """SGLang --scheduler-recv-interval 30 (InferenceX's B200 DeepSeek-R1 runs at C >= 16): the scheduler reads new
    requests once its count of decode steps reaches 30. A closed-loop request arrives as a step starts, at step j of
    the cycle (j = 0 .. 29 alike) and waits for that step and 29 - j more: 1 + 14.5 steps on average, + 1 with
    overlap scheduling. One arriving at a random moment waits half the cycle, 15 steps. TPOT unchanged; the first wave
    (sent to an idle engine, which spins through its count) unchanged; every later request 14.5 steps later."""
    tpot = 0.02
    assert serving.admission_wait_seconds(1, 0, 30, tpot) == pytest.approx(15.5 * tpot)
    assert serving.admission_wait_seconds(1, 1, 30, tpot) == pytest.approx(16.5 * tpot)
    assert serving.admission_wait_seconds(1, 1, 1, tpot) == pytest.approx(2 * tpot)
    every, thirty = _no_scheduler_cost(overlap_scheduling=1), _no_scheduler_cost(overlap_scheduling=1,
                                                                                  scheduler_recv_interval=30)
    step = every["tpot_seconds"]
    assert thirty["tpot_seconds"] == pytest.approx(step, rel=1e-12)
    assert thirty["wave_ttft_seconds"] == pytest.approx(every["wave_ttft_seconds"], rel=1e-12)
    assert thirty["admission_wait_seconds"] - every["admission_wait_seconds"] == pytest.approx(14.5 * step, rel=1e-9)
    assert thirty["ttft_open_seconds"] - every["ttft_open_seconds"] == pytest.approx(14.5 * step, rel=1e-9)
    n, b = every["benchmark_requests"], every["effective_concurrency"]
    assert thirty["ttft_seconds"] - every["ttft_seconds"] == pytest.approx((n - b) / n * 14.5 * step, rel=1e-9)


def test_open_arrivals_wait_half_a_running_step_and_any_prepared_one():
    """An arrival at a random moment waits half the running step on average, and the whole step an overlapping
    scheduler prepared before it arrived: with overlap 1, TTFT_open = prefill + 1.5 TPOT; without, + 0.5 TPOT."""
    off, on = _no_scheduler_cost(overlap_scheduling=0), _no_scheduler_cost(overlap_scheduling=1)
    tpot, svc = off["tpot_seconds"], off["ttft_service_seconds"]
    assert off["ttft_open_seconds"] == pytest.approx(svc + 0.5 * tpot, rel=1e-12)
    assert on["ttft_open_seconds"] == pytest.approx(svc + 1.5 * tpot, rel=1e-12)


# ----------------------------------------------------------------------------------------------------------------
# a prefill-first scheduler brings the wave back every cycle when the lengths are fixed
# ----------------------------------------------------------------------------------------------------------------


def _closed_loop(prefill_first, spread, clients=16, prompt=2048, output=128, budget=8192, seed=7):
    """TTFTs of a closed loop of ``clients`` against a one-GPU engine, step by step (independent of the plan's
    formulas): each step takes 5 ms + 2 us per token it carries; a prefill-first scheduler runs waiting prompts (up to
    ``budget`` tokens a step, in chunks) before any decode, a decode-first one schedules every running sequence's
    token first and fills the rest of the budget with prompts.  A request's first token comes out of the step that
    ends its prompt; its client sends the next request when the last token comes out, with lengths drawn in
    [1 - spread, 1] x nominal.  10 x clients requests, as InferenceX sends."""
    import random
    rnd, now, sent, done, ttfts = random.Random(seed), 0.0, 0, 0, []
    draw = lambda x: rnd.randint(int(x * (1 - spread)), x)
    waiting, running = [], []
    for _ in range(clients):
        waiting.append([draw(prompt), now, draw(output)])
        sent += 1
    while done < 10 * clients:
        decodes = [] if (prefill_first and waiting) else running
        room, prompt_tokens, ended = budget - len(decodes), 0, []
        for w in waiting:
            take = min(room, w[0])
            w[0], room, prompt_tokens = w[0] - take, room - take, prompt_tokens + take
            if w[0] == 0:
                ended.append(w)
        now += 5e-3 + 2e-6 * (len(decodes) + prompt_tokens)
        for r in decodes:
            r[0] -= 1
        for r in [r for r in running if r[0] == 0]:
            running.remove(r)
            done += 1
            if sent < 10 * clients:
                waiting.append([draw(prompt), now, draw(output)])
                sent += 1
        for w in ended:
            waiting.remove(w)
            ttfts.append(now - w[1])
            running.append([w[2] - 1])
    return ttfts[:clients], ttfts[clients:]


def test_a_prefill_first_scheduler_repeats_the_wave_only_with_fixed_lengths():
    """Simulated: SGLang's or vLLM V0's prefill-first loop with fixed lengths sends every later cycle as one wave (the
    later requests wait as the first wave did, within 5%); lengths drawn in [0.8, 1] x nominal spread the finishes and
    the later requests wait well under half of it; a decode-first scheduler (vLLM V1) staggers the wave even with
    fixed lengths.  That is the plan's steady state: the first wave's mean TTFT again only where prefill_first x
    benchmark_fixed_lengths is 1."""
    first, later = _closed_loop(prefill_first=True, spread=0)
    assert sum(later) / len(later) == pytest.approx(sum(first) / len(first), rel=0.05)
    first, later = _closed_loop(prefill_first=True, spread=0.2)
    assert sum(later) / len(later) < 0.5 * sum(first) / len(first)
    first, later = _closed_loop(prefill_first=False, spread=0)
    assert sum(later) / len(later) < 0.5 * sum(first) / len(first)


def test_the_wave_comes_back_on_a_prefill_first_engine_with_fixed_lengths():
    """The InferenceX-shaped run above (16 clients of 1,024 / 512, N = 160) on a prefill-first engine: every request
    waits as the first wave's do, 616.06 ms (17/32 of 16 prompts' 72.477 ms, by hand above), whatever N.  With
    lengths drawn per request the groups dissolve: a prompt shares its prefill with those of the 15 other clients
    that arrive while it runs, each sending one per cycle of 72.477 + 511 x 18.218 = 9,381.9 ms, so 1 + 15 x 72.477 /
    9,381.9 = 1.1159 prompts; its TTFT is the two steps under way (36.436 ms) + 1.1159 x 72.477 ms + one step (18.218
    ms) = 135.53 ms, and the mean over N = (16 x 616.06 + 144 x 135.53) / 160 = 183.58 ms."""
    kw = plan.defaults() | SEED_70B | {"benchmark_requests": 160, "prefill_first": 1}
    waves = plan.evaluate(kw)
    assert waves["steady_ttft_seconds"] == pytest.approx(0.61606, rel=1e-4)
    assert waves["ttft_seconds"] == pytest.approx(0.61606, rel=1e-4)
    assert plan.evaluate(kw | {"benchmark_requests": 1000})["ttft_seconds"] == pytest.approx(0.61606, rel=1e-4)
    drawn = plan.evaluate(kw | {"benchmark_fixed_lengths": 0})
    assert drawn["lockstep_prompts"] == pytest.approx(1.11588, rel=1e-4)
    assert drawn["steady_ttft_seconds"] == pytest.approx(0.13553, rel=1e-4)
    assert drawn["ttft_seconds"] == pytest.approx(0.18358, rel=1e-4)


def test_sglang_and_vllm_v0_schedule_prompts_first_and_v0_stops_once_it_chunks():
    """engines.csv: SGLang (every version) and vLLM V0 without chunked prefill run waiting prompts first; vLLM V1,
    TensorRT-LLM's in-flight batching and V0 above 32K max_model_len (its chunked scheduler) run decodes first."""
    from inference_ledger.catalogs import engines
    assert [engines.get_engine(e).prefills_first() for e in ("sglang", "sglang-0.3", "vllm-0.7", "vllm", "trtllm")] \
        == [1, 1, 1, 0, 0]
    assert engines.get_engine("vllm-0.7").prefills_first(max_model_len=65536) == 0


def test_a_benchmarks_throughput_is_its_requests_over_rounds_of_their_latency():
    """N x T over ROUNDUP(N / C) rounds of TTFT + (T - 1) x TPOT; one round lasts as long as its last request (TTFT
    2 x mean - the lone prompt's); never above the steady state.

    * N = 1,000 at C = 100, T = 100, TTFT 20 s, TPOT 0.1 s: 10 rounds, 100,000 / (10 x (20 + 99 x 0.1)) = 334.448;
    * one burst of N = C = 100 of those, the lone prompt served in 1 s: the last first token at 2 x 20 - 1 = 39 s,
      100 x 100 / (39 + 9.9) = 204.499;
    * dstack's vLLM run at C = 128, N = 500, 3,200 in / 800 out with its printed latencies (mean TTFT 66,811.6 ms,
      mean TPOT 71.8586 ms): 4 rounds of 66.8116 + 799 x 0.0718586 = 124.2266 s, 500 x 800 / 496.906 = 804.98
      (it printed 744.78: its last round drains);
    * the steady state caps it, and static batching is the steady state."""
    f = whatif.benchmark_tokens_per_second
    assert whatif.benchmark_seconds(1000, 100, 100, 20.0, 0.1, 1.0) == pytest.approx(299.0, rel=1e-12)
    assert whatif.benchmark_seconds(100, 100, 100, 20.0, 0.1, 1.0) == pytest.approx(48.9, rel=1e-12)
    assert f(1, 1e9, 1000, 100, 100, 20.0, 0.1, 1.0) == pytest.approx(334.448, rel=1e-5)
    assert f(1, 1e9, 100, 100, 100, 20.0, 0.1, 1.0) == pytest.approx(204.499, rel=1e-5)
    assert f(1, 1e9, 100, 100, 100, 20.0, 0.1, 30.0) == pytest.approx(100 * 100 / 29.9, rel=1e-12)  # never before the mean
    assert f(1, 1e9, 500, 128, 800, 66.8116224, 0.07185856, 1.0) == pytest.approx(804.98, rel=1e-4)
    assert f(1, 150.0, 100, 100, 100, 20.0, 0.1, 1.0) == 150.0
    assert f(2, 5000.0, 100, 100, 100, 20.0, 0.1, 1.0) == 5000.0


def test_a_one_round_runs_throughput_is_its_requests_over_its_last_requests_latency():
    """Independent check on published one-round runs (every request sent at once, N <= C: GPUStack's and
    dennislee22's vllm bench serve runs without --max-concurrency, 84 of them) that print output throughput, mean
    TTFT and mean TPOT: N x T over the LAST request's latency (TTFT 2 x the mean, the lone prompt's taken as 0 here:
    not printed) gives the printed throughput within 15% at the median and within 25% on 3 of 4 runs, where the mean
    request's latency (Little's law, right over several rounds) is 22% off at the median (47 of 84 within 25%)."""
    from inference_ledger.catalogs.load_measurements import load_measured_load
    runs = [r for r in load_measured_load() if r.requests and r.batch >= r.requests and r.regime == "continuous"
            and r.ttft_ms and r.tpot_ms]
    assert len(runs) >= 80 and {r.source_group for r in runs} == {"gpustack", "dennislee22"}
    off = sorted(abs(r.deployment_tok_s * whatif.benchmark_seconds(
        r.requests, r.batch, r.output_tokens, r.ttft_ms / 1000, r.tpot_ms / 1000, 0.0)
        / (r.requests * r.output_tokens) - 1) for r in runs)
    assert off[len(off) // 2] <= 0.15 and sum(x <= 0.25 for x in off) >= 0.75 * len(off)


def test_the_run_formula_reproduces_dstacks_throughput_from_its_own_latencies():
    """Independent check on published runs: dstack's 45 closed loops (N = 500 fixed-length requests, 499 completed in
    one, at C = 4..128,
    SGLang's bench_serving) print output_throughput, mean_ttft_ms and mean_tpot_ms; N x T over the rounds of the
    printed mean latency gives the printed throughput within 10% on every run (the drain of the last round is what
    it leaves out)."""
    from inference_ledger.catalogs.load_measurements import load_measured_load
    runs = [r for r in load_measured_load() if r.source_group == "dstack"]
    assert len(runs) == 45 and {r.requests for r in runs} == {499, 500}
    for r in runs:
        got = r.requests * r.output_tokens / whatif.benchmark_seconds(r.requests, r.batch, r.output_tokens,
                                                                      r.ttft_ms / 1000, r.tpot_ms / 1000, 0.0)
        assert 0.9 <= r.deployment_tok_s / got <= 1.02, r.id
