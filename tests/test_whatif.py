"""What QPS and the closed-form inverses: hand-derived figures, and round trips through the plan.

Round trip: an inverse's answer fed back into ``inference_ledger.graph.plan.evaluate`` lands on the
boundary -- it fits (or meets the target), and one step further does not.
"""

import re

import pytest

from inference_ledger.catalogs import catalog
from inference_ledger.graph import plan, resolve
from inference_ledger.io import report
from inference_ledger.formulas import whatif
from inference_ledger.core.expr import Sym

GIB = 2**30

# The default plan: Llama-3.1-70B BF16 on 4 x H100 SXM (79.1875 GiB runtime), 1024 in + 512 out, 16 sequences.
USABLE = 79.1875 * GIB * 0.9                       # 76,524,237,619.2 B
KV_BUDGET = USABLE - 2 * GIB - 140e9 / 4           # 39,376,753,971.2 B after workspace and weights
KV_SEQ_PER_GPU = 327_680 * 1536 / 4                # 125,829,120 B: 8 KV heads over 4 GPUs


def test_qps_per_replica_littles_law():
    # 16 in flight, each holds its slot for its first token and 511 decode steps: 0.2 + 511 x 0.03 = 15.53 s
    assert whatif.qps_per_replica(16, 0.2, 512, 0.03) == pytest.approx(16 / 15.53, rel=1e-15)
    assert whatif.qps_per_replica(16, 0.2, 512, 0.03) == pytest.approx(1.0302640, rel=1e-7)
    # one output token: the request is its TTFT alone (no decode step)
    assert whatif.qps_per_replica(16, 0.2, 1, 0.03) == pytest.approx(80.0, rel=1e-15)


def test_plan_qps_replicas_and_cost_follow_littles_law():
    v = plan.evaluate(plan.defaults())
    assert v["effective_concurrency"] == 16 and v["queue_seconds"] == 0   # all 16 fit: nobody waits
    qps = 16 / (v["ttft_service_seconds"] + 511 * v["tpot_seconds"])  # B / (TTFT + (T - 1) x TPOT): slots over cycles
    assert v["qps_per_replica"] == pytest.approx(qps, rel=1e-12)
    replicas = -(-20 // qps)                                        # ceil(20 QPS / per replica)
    assert v["replicas_for_qps"] == replicas
    assert v["gpus_for_qps"] == replicas * 4                        # x TP 4
    assert v["qps_capacity"] == pytest.approx(replicas * qps, rel=1e-12)
    assert v["qps_headroom"] == pytest.approx(replicas * qps / 20 - 1, rel=1e-9)
    assert v["monthly_gpu_hours_qps"] == replicas * 4 * 730
    assert v["monthly_cost_qps"] == pytest.approx(replicas * 4 * 730 * 3.78)   # the h100-sxm row's $3.78/GPU-h


def test_tpot_max_batch_compute_bound_hand_derived():
    # bandwidth: (0.05 x 3.35e12 x 0.8 - 35e9) / 125,829,120 = 786.8
    # compute:    0.05 x 989e12 x 0.5 / (2 x 70e9 / 4)        = 706.4   -> 706
    b = whatif.tpot_max_batch_roofline(0.05, 35e9, KV_SEQ_PER_GPU, 2 * 70e9 / 4, 3.35e12, 989e12, 0.8, 0.5)
    assert b == 706


def test_tpot_max_batch_bandwidth_bound_and_none():
    # bandwidth: (0.03 x 3.35e12 x 0.8 - 35e9) / 125,829,120 = 360.8 -> 360; compute 423.9
    assert whatif.tpot_max_batch_roofline(0.03, 35e9, KV_SEQ_PER_GPU, 3.5e10, 3.35e12, 989e12, 0.8, 0.5) == 360
    # weights alone take 35e9 / 2.68e12 = 13 ms > 10 ms: no batch meets it
    assert whatif.tpot_max_batch_roofline(0.01, 35e9, KV_SEQ_PER_GPU, 3.5e10, 3.35e12, 989e12, 0.8, 0.5) == 0


def test_max_sequences_hand_derived():
    # 39,376,753,971.2 / 125,829,120 = 312.9
    assert whatif.max_sequences(KV_BUDGET, KV_SEQ_PER_GPU) == 312
    assert whatif.max_sequences(-1e9, KV_SEQ_PER_GPU) == 0


def test_max_context_hand_derived_full_attention():
    # 16 sequences x 81,920 B per token per GPU: 39,376,753,971.2 / 1,310,720 = 30,042.3
    assert whatif.max_context_tokens(KV_BUDGET, 16, 327_680 / 4, 80) == 30_042


def test_max_context_hand_derived_sliding_window():
    # 4 layers, 2 of them sliding over 100 tokens, 100 B per layer-token (400 B per token), 10 sequences.
    # budget 1e6: t = 1e6 / (10 x 400) = 250 > window -> C = (4 x 250 - 2 x 100) / 2 = 400,
    # check: (2 x 400 + 2 x 100) layer-tokens x 100 B x 10 = 1,000,000 B exactly.
    assert whatif.max_context_tokens(1e6, 10, 400, 4, 2, 100) == 400
    # budget 2e5: t = 50 <= window -> every layer holds all 50 tokens
    assert whatif.max_context_tokens(2e5, 10, 400, 4, 2, 100) == 50


def test_min_gpus_to_fit_hand_derived():
    # no KV: 140e9 over 70e9 per GPU -> 2
    assert whatif.min_gpus_closed_form(140e9, 0, 70e9, 8) == 2
    # 2 KV heads: W 100, KV 100, 60 per GPU. (W+KV)/A = 3.3 but the KV stops splitting at 2:
    # W / (60 - 100/2) = 10 -> TP 16 (16: 6.25 + 50 = 56.25 <= 60; 8: 12.5 + 50 = 62.5 > 60)
    assert whatif.min_gpus_closed_form(100, 100, 60, 2) == 16
    # MLA latent (split 1): W 100, KV 20, 40 per GPU: 100 / 20 = 5 -> 8
    assert whatif.min_gpus_closed_form(100, 20, 40, 1) == 8
    # KV alone (split as far as it goes) fills the GPU: no TP fits
    assert whatif.min_gpus_closed_form(100, 100, 50, 2) == 0
    assert whatif.min_gpus_closed_form(100, 100, 40, 2) == 0


def test_monthly_gpu_hours():
    assert whatif.monthly_gpu_hours(36) == 26_280


def test_inverses_render_to_excel_formulas():
    s = lambda n: Sym(n)  # noqa: E731
    f = whatif.tpot_max_batch_roofline(s("t"), s("w"), s("kv"), s("fl"), s("bw"), s("pk"), s("e1"), s("e2")).formula()
    assert f == "=MAX(INT(MIN((t*bw*e1-w)/kv,t*pk*e2/fl)),0)"
    f = whatif.min_gpus_closed_form(s("W"), s("KV"), s("A"), s("S")).formula()
    assert f == ("=IF(A-KV/S>0,TP_BASE^ROUNDUP(LOG(MAX((W+KV)/A,W/IF(A-KV/S>0,A-KV/S,1),1),TP_BASE),0),0)")
    assert whatif.qps_per_replica(s("B"), s("ttft"), s("T"), s("tpot")).formula() == "=B/(ttft+(T-1)*tpot)"


# --- round trips through the plan --------------------------------------------------------

GPT_OSS_LIKE = {"num_params": 21e9, "active_params": 3.6e9, "quantized_params": 19e9,
                "active_quantized_params": 2.5e9, "num_layers": 24, "kv_heads": 8, "head_dim": 64,
                "sliding_layers": 12, "window": 128, "weight_bytes": 0.53125, "tp": 1,
                "gpu_memory_bytes": 22.5 * GIB, "input_tokens": 2048, "output_tokens": 512}
MLA_LIKE = {"num_params": 671e9, "active_params": 37e9, "quantized_params": 650e9,
            "active_quantized_params": 36e9, "num_layers": 61, "kv_heads": 128, "head_dim": 128,
            "mla_latent_dim": 576, "weight_bytes": 1, "tp": 8, "gpu_memory_bytes": 131.3 * GIB,
            "hbm_bw": 4.8e12}
CASES = {
    "llama70b-tp4": {},
    "llama70b-tp8-fp8kv": {"tp": 8, "kv_bytes": 1, "concurrency": 64},
    "llama70b-tp16-kv-replicated": {"tp": 16, "concurrency": 200},
    "gpt-oss-like-windowed": GPT_OSS_LIKE,
    "deepseek-like-mla": MLA_LIKE,
}


def _plan(case, **over):
    return plan.evaluate(plan.defaults() | CASES[case] | over)


@pytest.mark.parametrize("case", CASES)
def test_max_sequences_round_trip(case):
    b = _plan(case)["max_concurrency"]
    assert b >= 1
    assert _plan(case, concurrency=b)["fits"] == 1
    assert _plan(case, concurrency=b + 1)["fits"] == 0


@pytest.mark.parametrize("case", CASES)
def test_max_context_round_trip(case):
    v = _plan(case)
    c = v["max_context_tokens"]
    out = v["output_tokens"]
    assert c > out
    assert _plan(case, input_tokens=c - out)["fits"] == 1
    assert _plan(case, input_tokens=c - out + 1)["fits"] == 0


@pytest.mark.parametrize("case", CASES)
def test_min_gpus_to_fit_round_trip(case):
    g = _plan(case)["min_gpus_to_fit"]
    assert g >= 1
    assert _plan(case, tp=g)["fits"] == 1
    if g > 1:
        assert _plan(case, tp=g / 2)["fits"] == 0


def test_min_gpus_to_fit_round_trip_where_kv_stops_splitting():
    # 2 KV heads, a heavy load: past TP 2 only the weights keep splitting
    over = {"kv_heads": 2, "concurrency": 64, "input_tokens": 16384}
    g = _plan("llama70b-tp4", **over)["min_gpus_to_fit"]
    assert g == 8
    assert _plan("llama70b-tp4", tp=8, **over)["fits"] == 1
    assert _plan("llama70b-tp4", tp=4, **over)["fits"] == 0


#: The KV cap and max_num_seqs lifted (a GPU of 10 TB): the TPOT at a concurrency is then the TPOT at that decode batch.
NO_CAP = {"gpu_memory_bytes": 1e13, "gpu_memory_utilization": 1, "max_num_seqs": 1e5}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("batching", [1, 2])
def test_tpot_max_batch_round_trip(case, batching):
    b = _plan(case, batching=batching)["tpot_max_batch"]
    assert b >= 1
    assert _plan(case, concurrency=b, batching=batching, **NO_CAP)["tpot_ok"] == 1
    if CASES[case].get("num_experts", 0) == 0:   # dense: exact; MoE: every expert read, a lower bound
        assert _plan(case, concurrency=b + 1, batching=batching, **NO_CAP)["tpot_ok"] == 0


def test_serving_concurrency_is_the_tighter_limit():
    v = _plan("llama70b-tp4")
    assert v["serving_concurrency"] == min(v["max_concurrency"], v["tpot_max_batch"])
    assert v["max_concurrency"] > v["tpot_max_batch"]                # the TPOT target binds first at 1,536 tokens
    assert v["binding_limit"] == 0                                    # ... but not at the requested 16 sequences


def test_min_gpus_to_fit_line_tests_each_tp_of_a_node():
    fam = plan.FAMILY_BY_NAME["tp_candidates"]
    f, _ = plan.render("min_gpus_to_fit", lambda n: n, {"tp_candidates": (1, 2, 4, 8)})
    # TP 1, 2, 4, 8 in turn, each cell of the family's table at its own candidate
    assert f == ("=IF(tp_candidates.1.fits_in_node=1,tp_candidates.1.tp,IF(tp_candidates.2.fits_in_node=1,"
                 "tp_candidates.2.tp,IF(tp_candidates.4.fits_in_node=1,tp_candidates.4.tp,"
                 "IF(tp_candidates.8.fits_in_node=1,tp_candidates.8.tp,0))))")
    # within the node: a candidate beyond gpus_per_node counts as not fitting
    assert plan.render_member("tp_candidates.8.fits_in_node", lambda n: n)[0] == \
        "=IF(tp_candidates.8.tp<=gpus_per_node,tp_candidates.8.fits,0)"
    # 70B BF16 at 16 sequences needs 4 H100s; on a 2-GPU node nothing fits
    base = resolve.resolve("llama-3.1-70b", "h100-sxm", numbers={"tp": 4}).inputs
    assert plan.evaluate(base)["min_gpus_to_fit"] == 4
    assert plan.evaluate(base | {"gpus_per_node": 2})["min_gpus_to_fit"] == 0
    # a member is the plan's own fit test with TP replaced by the column's candidate (no reference to the row's TP),
    # through named members at that TP: weights, workspace and the KV budget
    f4, used = plan.render_member("tp_candidates.4.fits", lambda n: n)
    assert "MIN(tp_candidates.4.tp,kv_heads)" in f4 and "tp_candidates.4.kv_cache_budget_bytes_per_gpu" in f4
    assert "kv_shards" not in used and "tp" not in re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", f4)
    w4, _ = plan.render_member("tp_candidates.4.weights_bytes_per_gpu", lambda n: n)
    assert w4.startswith("=weights_bytes/tp_candidates.4.tp+")
    b4, _ = plan.render_member("tp_candidates.4.kv_cache_budget_bytes_per_gpu", lambda n: n)
    assert b4 == ("=usable_bytes_per_gpu-tp_candidates.4.weights_bytes_per_gpu-tp_candidates.4.workspace_bytes_per_gpu"
                  "+tp_candidates.4.kv_budget_rule_adjustment_bytes_per_gpu")
    # each candidate is a formula of named constants (no bare 4 in a cell)
    assert [fam.candidate_formula(c).text for c in (1, 2, 4, 8)] == ["1", "TP_BASE", "TP_BASE*TP_BASE",
                                                                     "TP_BASE*TP_BASE*TP_BASE"]
    # no line per TP degree is left: the family is the one definition
    assert not [n for n in plan.NAMES if re.search(r"_tp[0-9]+$", n)]


def test_tp_candidates_follow_the_gpus_node():
    """The candidates are the powers of two up to the GPU's gpus_per_node: a 4-GPU node offers 1, 2, 4."""
    base = resolve.resolve("llama-3.1-70b", "h100-sxm", numbers={"tp": 4}).inputs
    four = plan.evaluate(base | {"gpus_per_node": 4})["tp_candidates"]
    assert list(four) == ["1", "2", "4"] and [c["tp"] for c in four.values()] == [1, 2, 4]
    assert list(plan.evaluate(base)["tp_candidates"]) == ["1", "2", "4", "8"]      # an HGX node: 8 GPUs
    assert list(plan.evaluate(base | {"gpus_per_node": 6})["tp_candidates"]) == ["1", "2", "4"]
    assert list(plan.evaluate(base | {"gpus_per_node": 1})["tp_candidates"]) == ["1"]
    # a GB200 NVL72 rack (72 GPUs per NVLink domain in the GPU catalog): up to TP 64
    gb = resolve.resolve("llama-3.1-70b", "gb200", numbers={"tp": 4}).inputs
    assert gb["gpus_per_node"] == 72
    assert list(plan.evaluate(gb)["tp_candidates"]) == ["1", "2", "4", "8", "16", "32", "64"]
    # each candidate's members are the plan's own figures at that TP: TP 4 of 70B BF16 = 140 GB / 4 per GPU
    at4 = plan.evaluate(base)["tp_candidates"]["4"]
    direct = plan.evaluate(base)
    assert at4["weights_bytes_per_gpu"] == direct["weights_bytes_per_gpu"] == direct["weights_bytes"] / 4
    assert at4["kv_cache_budget_bytes_per_gpu"] == pytest.approx(direct["kv_cache_budget_bytes_per_gpu"])
    # plan --json nests them by candidate, 1/0 members as booleans
    doc = report.plan_json(plan.evaluate(base | {"gpus_per_node": 4}))
    assert list(doc["tp_candidates"]) == ["1", "2", "4"] and doc["tp_candidates"]["4"]["fits"] is True
    assert doc["tp_candidates"]["1"]["fits"] is False and doc["units"]["tp_candidates"]["weights_bytes_per_gpu"] == "B"
    with pytest.raises(ValueError, match="gpus_per_node"):
        whatif.tp_candidates(0)


@pytest.mark.parametrize("model", [m.id for m in catalog.load_models()])
def test_every_catalog_model_round_trips(model):
    """Over the catalog: each inverse lands on its boundary in the plan at the same inputs."""
    for gpu, wd, tp, ctx, conc in [("h100-sxm", None, 4, 4096, 16), ("l40s", "fp8", 2, 32768, 4), ("mi300x", None, 1, 2048, 64)]:
        def ev(**over):
            base = {"tp": tp, "input_tokens": ctx - 512, "concurrency": conc} | over
            return plan.evaluate(resolve.plan_inputs(model, gpu, weight_dtype=wd, **base), validate=False)
        v = ev()
        g = v["min_gpus_to_fit"]
        fits = [ev(tp=t)["fits"] for t in (1, 2, 4, 8)]
        assert g == next((t for t, f in zip((1, 2, 4, 8), fits) if f == 1), 0)
        s = v["max_concurrency"]
        if s >= 1:
            assert (ev(concurrency=s)["fits"], ev(concurrency=s + 1)["fits"]) == (1, 0)
        c = v["max_context_tokens"]
        if c > 512:
            assert (ev(input_tokens=c - 512)["fits"], ev(input_tokens=c - 511)["fits"]) == (1, 0)
        b = v["tpot_max_batch"]
        if b >= 1:  # the KV cap lifted; MoE reads every expert in the inverse: a lower bound there
            ok = (ev(concurrency=b, **NO_CAP)["tpot_ok"], ev(concurrency=b + 1, **NO_CAP)["tpot_ok"])
            assert ok == (1, 0) or (catalog.get_model(model).num_experts and ok[0] == 1)
