"""Property tests of the ledger algebra (hypothesis)."""

import math

import numpy as np
from hypothesis import given, settings, strategies as st

from inference_ledger.formulas import ledger
from inference_ledger.graph import plan

layers = st.integers(1, 200)
heads = st.integers(1, 128)
dims = st.sampled_from([64, 96, 128, 192, 256])
tokens = st.integers(0, 1_000_000)
bytes_per = st.sampled_from([0.5, 1, 2, 4])
tps = st.sampled_from([1, 2, 4, 8, 16])


@given(layers, heads, dims, tokens, tokens, bytes_per)
def test_kv_bytes_is_linear_in_seq_len(nl, k, h, s1, s2, b):
    assert math.isclose(ledger.kv_bytes(nl, k, h, s1 + s2, b), ledger.kv_bytes(nl, k, h, s1, b) + ledger.kv_bytes(nl, k, h, s2, b),
                        rel_tol=1e-12)
    assert ledger.kv_bytes(nl, k, h, s1, b) == s1 * ledger.kv_bytes_per_token(nl, k, h, b)


@given(layers, heads, dims, tokens, bytes_per, st.integers(1, 10))
def test_kv_bytes_grows_with_every_dimension(nl, k, h, s, b, step):
    base = ledger.kv_bytes(nl, k, h, s, b)
    for bigger in (ledger.kv_bytes(nl + step, k, h, s, b), ledger.kv_bytes(nl, k + step, h, s, b),
                   ledger.kv_bytes(nl, k, h + step, s, b), ledger.kv_bytes(nl, k, h, s + step, b)):
        assert bigger >= base


@given(layers, heads, dims, tokens, st.integers(0, 100), st.integers(1, 100_000), bytes_per)
def test_sliding_window_never_exceeds_full_attention(nl, k, h, s, frac, window, b):
    sliding = nl * frac // 100
    windowed = ledger.kv_bytes_windowed(nl, k, h, s, b, sliding, window)
    assert windowed <= ledger.kv_bytes(nl, k, h, s, b) * (1 + 1e-12)
    assert ledger.kv_bytes_windowed(nl, k, h, s, b, 0, window) == ledger.kv_bytes(nl, k, h, s, b)


@given(st.floats(1e8, 1e12), tps, heads)
def test_tp_split_conserves_weights_and_kv(weights, tp, kv_heads):
    shards = ledger.kv_shards(kv_heads, tp)
    # every byte lands on some GPU: weights exactly once, KV at least once (replicated past K)
    assert math.isclose(ledger.per_gpu(weights, tp) * tp, weights, rel_tol=1e-12)
    kv = 1e9
    assert ledger.per_gpu(kv, shards) * tp >= kv * (1 - 1e-12)
    if tp <= kv_heads and kv_heads % tp == 0:
        assert math.isclose(ledger.per_gpu(kv, shards) * tp, kv, rel_tol=1e-12)


@given(st.floats(1e9, 2e12), st.floats(16e9, 300e9), st.floats(0.5, 0.99))
def test_gpus_needed_is_a_power_of_two_that_holds_the_load(total, mem, util):
    n = ledger.gpus_needed(total, mem, util)
    assert n >= 1 and math.log2(n) == int(math.log2(n))
    assert n * mem * util >= total * (1 - 1e-12)
    if n > 1:  # and half as many would not
        assert (n / 2) * mem * util < total * (1 + 1e-12)


@settings(max_examples=50)
@given(st.integers(1, 512), st.sampled_from([1, 2, 4, 8]), st.integers(64, 131072))
def test_plan_monotone_in_concurrency(conc, tp, ctx):
    base = plan.defaults() | {"tp": tp, "input_tokens": ctx, "output_tokens": 1}
    a = plan.evaluate(base | {"concurrency": conc})
    b = plan.evaluate(base | {"concurrency": conc + 1})
    assert b["total_bytes_per_gpu"] > a["total_bytes_per_gpu"]
    assert b["tpot_floor_seconds"] >= a["tpot_floor_seconds"]
    if b["prefill_bound_ttft_seconds"] == 0:   # batching never loses throughput while the prompts fit the steps
        assert b["tokens_per_second"] >= a["tokens_per_second"] * (1 - 1e-12)
    else:   # they outrun the token budget: requests complete no faster than the step's room takes their prompts
        rate = b["prefill_room_tokens"] / ctx / b["tpot_seconds"]
        assert b["tokens_per_second"] <= rate * (1 + 1e-12)
    # capacity does not depend on the requested concurrency
    assert a["kv_capacity_tokens"] == b["kv_capacity_tokens"]


def test_plan_evaluates_arrays_like_scalars():
    d = plan.defaults()
    conc = np.array([1.0, 8.0, 64.0])
    arr = plan.evaluate(d | {"concurrency": conc})
    for i, c in enumerate(conc):
        one = plan.evaluate(d | {"concurrency": float(c)})
        for name in ("total_bytes_per_gpu", "tpot_seconds", "monthly_cost", "fits"):
            assert math.isclose(arr[name][i], one[name], rel_tol=1e-12)
