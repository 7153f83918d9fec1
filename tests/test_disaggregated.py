"""Disaggregated prefill/decode pools: KV transfer, pool sizes and cost, derived by hand."""

from __future__ import annotations

import json
import math

import pytest

from inference_ledger.graph import disaggregated
from inference_ledger.cli import run

WORK = {"input_tokens": 1024, "output_tokens": 512, "target_qps": 40, "ttft_target": 0.5, "tpot_target": 0.05}


def test_llama_70b_pools_by_hand():
    pools = disaggregated.disaggregate("llama-3.1-70b", "h100-sxm", {"tp": 4}, {"tp": 8}, numbers=WORK)
    n, p, d = pools.numbers, pools.prefill, pools.decode
    # KV of a 1024-token prompt: 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B per token
    assert n["kv_transfer_bytes"] == 327_680 * 1024
    # the 8 KV heads are split 4 ways at TP 4: four NICs of 50 GB/s send in parallel, after a 10 us latency
    assert n["kv_transfer_seconds"] == pytest.approx(10e-6 + 327_680 * 1024 / (4 * 50e9))
    # one prompt at a time per prefill instance; decode: B sequences each T steps of TPOT
    # (a prefill instance runs one prompt at a time: its TTFT is the prompt's service time, no benchmark wave)
    rate_p, rate_d = 1 / p["ttft_service_seconds"], d["concurrency"] / (512 * d["tpot_seconds"])
    assert n["prefill_requests_per_second"] == pytest.approx(rate_p)
    assert n["decode_requests_per_second"] == pytest.approx(rate_d)
    assert n["prefill_instances"] == math.ceil(40 / rate_p) and n["decode_instances"] == math.ceil(40 / rate_d)
    assert n["gpus"] == 4 * n["prefill_instances"] + 8 * n["decode_instances"]
    assert n["monthly_cost"] == pytest.approx(n["gpus"] * 3.78 * 730)
    assert n["ttft_seconds"] == pytest.approx(p["ttft_service_seconds"] + n["kv_transfer_seconds"])
    assert d["concurrency"] == d["serving_concurrency"] and d["tpot_seconds"] <= 0.05
    assert pools.summary()["xpyd"] == f"{int(n['prefill_instances'])}P{int(n['decode_instances'])}D"


def test_mla_latent_leaves_from_one_gpu_under_tp_and_from_every_rank_under_dp():
    tp = disaggregated.disaggregate("deepseek-v3", "h200", {"tp": 8}, {"tp": 8}, numbers=WORK)
    # 61 layers x (512 + 64) x 2 B per token; replicated on the 8 TP ranks, so one NIC's worth
    assert tp.numbers["kv_transfer_bytes"] == 61 * 576 * 2 * 1024
    assert tp.numbers["kv_transfer_seconds"] == pytest.approx(10e-6 + 61 * 576 * 2 * 1024 / 50e9)


def test_deepseek_h800_deployment_shape():
    # DeepSeek's own layout: prefill EP32 / DP32 on 4 nodes, decode EP144 / DP144 on 18 nodes, 32 redundant experts
    pools = disaggregated.disaggregate("deepseek-v3", "h800", {"tp": 1, "dp_attention": 32, "ep": 32},
                                       {"tp": 1, "dp_attention": 144, "ep": 144},
                                       numbers=WORK | {"redundant_experts": 32})
    s = pools.summary()
    assert (s["prefill"]["nodes_per_instance"], s["decode"]["nodes_per_instance"]) == (4, 18)
    # each decode GPU holds 288 / 144 = 2 routed experts' weights (+ the replicated attention and shared expert)
    d = pools.decode
    assert d["resident_expert_bytes"] / 144 == pytest.approx(d["expert_weights_bytes"] * 288 / 256 / 144)


def _cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        run([str(a) for a in argv])
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_plan_disaggregated_json(capsys):
    code, out, err = _cli(capsys, "plan", "--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", 8,
                          "--prefill-tp", 4, "--disaggregated", "--target-qps", 40, "--json")
    assert code in (0, None), err
    doc = json.loads(out)
    assert doc["prefill"]["layout"]["tp"] == 4 and doc["decode"]["layout"]["tp"] == 8
    assert doc["xpyd"].endswith("D") and doc["gpus"] > 0 and doc["kv_transfer_bytes"] == 327_680 * 1024


def test_a_bare_disaggregated_plan_is_the_default_deployments_as_a_bare_plan_is(capsys):
    """`plan` with nothing named plans the default model on the default GPU; `plan --disaggregated` stopped with
    "model is empty", and a model given by its numbers alone could not be disaggregated at all."""
    code, out, err = _cli(capsys, "plan", "--disaggregated")
    assert code in (0, None), err
    assert out.startswith("Llama-3.1-70B on NVIDIA H100 SXM5 80GB, disaggregated prefill and decode"), out
    code, out, err = _cli(capsys, "plan", "--disaggregated", "--json")
    assert (json.loads(out)["model"], json.loads(out)["gpu"]) == ("llama-3.1-70b", "h100-sxm")
    code, out, err = _cli(capsys, "plan", "--disaggregated", "--params", "70e9", "--layers", 80, "--kv-heads", 8,
                          "--head-dim", 128, "--gpu-memory", "80GB", "--hbm-bw", "3.35TB/s", "--peak-flops", "989TFLOPS")
    assert code in (0, None), err
    assert out.startswith("70.0B-parameter model on a GPU given by its figures, disaggregated"), out


def test_the_prefill_pools_time_is_the_one_its_ttft_and_rate_are_built_on(capsys):
    """The prefill pool's column showed its plan's benchmark TTFT (330 ms, a closed loop of clients the pool never
    sees) above 'TTFT (prefill + KV transfer): 283 ms'. It shows the prefill time the TTFT and the pool's rate are
    built on: prefill + KV transfer = TTFT, and DP ranks / prefill = requests/s per instance."""
    args = ("plan", "--model", "deepseek-v3", "--gpu", "h800", "--tp", 1, "--dp-attention", 144, "--ep", 144,
            "--redundant-experts", 32,
            "--disaggregated", "--prefill-dp-attention", 32, "--prefill-ep", 32, "--target-qps", 50)
    code, out, err = _cli(capsys, *args, "--json")
    assert code in (0, None), err
    doc = json.loads(out)
    p = doc["prefill"]
    assert p["ttft_service_seconds"] + doc["kv_transfer_seconds"] == pytest.approx(doc["ttft_seconds"])
    assert p["requests_per_second_per_instance"] == pytest.approx(32 / p["ttft_service_seconds"])
    code, out, err = _cli(capsys, *args)
    assert code in (0, None), err
    row = next(line for line in out.splitlines() if line.startswith("prefill / TPOT"))
    assert f"{p['ttft_service_seconds'] * 1000:.2f} ms" in row, row


def test_recommend_disaggregated_compares_with_aggregated(capsys):
    code, out, err = _cli(capsys, "recommend", "--model", "deepseek-v3", "--qps", 5, "--gpu", "h100-sxm,h200,b200",
                          "--disaggregated", "--json")
    assert code in (0, None), err
    doc = json.loads(out)
    rows = doc["disaggregated"]
    assert rows and all(r["meets_targets"] for r in rows)
    assert len({(r["gpu"], r["weight_dtype"]) for r in rows}) == len(rows)     # one per GPU and format
    for r in rows:
        listed = [p["monthly_cost"] for p in doc["plans"] if p["gpu"] == r["gpu"]]
        assert listed and r["aggregated_monthly_cost"] == min(listed)   # each GPU's cheapest plan is listed
        assert r["cost_vs_aggregated"] == pytest.approx(r["monthly_cost"] / min(listed))
