"""Engine memory models: the catalog of engines and the formulas, against hand-derived figures."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from inference_ledger.formulas import engine_ledger
from inference_ledger.catalogs import engines
from inference_ledger.graph.resolve import resolve
from inference_ledger.graph import plan
from inference_ledger.core.args import LedgerInputError
from inference_ledger.core.expr import Sym

GIB = 2**30


def test_engine_catalog_has_the_three_engines_and_their_documented_fractions():
    ids = engines.engine_ids()
    assert {"vllm", "sglang", "trtllm"} <= set(ids)
    assert engines.get_engine("vllm").memory_fraction == 0.9          # gpu_memory_utilization default
    assert engines.get_engine("trtllm").memory_fraction == 0.9        # free_gpu_memory_fraction default
    sglang = engines.get_engine("SGLang")
    assert [sglang.fraction(tp) for tp in (1, 2, 4, 8, 16)] == [0.88, 0.87, 0.85, 0.81, 0.79]
    assert engines.get_engine("TensorRT-LLM").id == "trtllm"
    assert [engines.get_engine(i).kv_budget_rule for i in ("vllm", "sglang", "trtllm")] == [1, 2, 3]
    for e in engines.load_engines():
        assert e.source and e.date, e.id


def test_unknown_engine_names_the_known_ones():
    with pytest.raises(LedgerInputError, match="unknown engine 'vlm'.*vllm.*sglang"):
        engines.get_engine("vlm")


# ----------------------------------------------------------------------------------------------------------------
# engines by version
# ----------------------------------------------------------------------------------------------------------------

VERSION_ID = re.compile(r"(vllm|sglang|trtllm|atom|lmdeploy)(-\d+\.\d+)?")
#: every trait column of engines.csv that a row's trait_sources must cite
TRAITS = ("chunked_prefill", "prefill_first", "kv_admission_reserve", "overlap_scheduling", "scheduler_seconds_per_sequence", "cuda_graphs", "cuda_graph_max_batch",
          "eager_seconds_per_layer", "gqa_decode", "fp8_block_gemm", "mla_kernel", "fused_moe", "kernel_table_engine")


def test_ids_are_family_or_family_major_minor_and_every_trait_cites_its_source():
    rows = engines.load_engines()
    assert all(VERSION_ID.fullmatch(e.id) for e in rows), [e.id for e in rows]
    for fam in ("vllm", "sglang", "trtllm"):
        versions = [e for e in rows if e.family == fam]
        assert sum(e.id == fam for e in versions) == 1          # the bare id: the current release
        assert len(versions) >= 3, fam                          # releases of 2024-2026 whose traits differ
    for e in rows:
        for trait in TRAITS:
            assert trait in e.trait_sources, (e.id, trait)
        assert e.quote and e.releases and e.date.startswith("2026"), e.id
        assert e.kernel_table_engine == e.family and e.kernel_table_version, e.id
    # neighbouring versions differ in at least one trait of the step (else they would be one row)
    step = lambda e: (e.chunks(4096), e.overlap_scheduling, e.scheduler_seconds_per_sequence, e.gqa_decode,
                      e.fp8_block_gemm, e.mla_kernel, e.max_num_batched_tokens, e.max_num_seqs, e.sampler_bytes_per_logit,
                      e.kernel_table_version)
    assert len({step(e) for e in rows}) == len(rows)


@pytest.mark.parametrize("name, row", [("vllm-0.10", "vllm-0.9"), ("vllm-0.11", "vllm-0.9"), ("vllm-0.13", "vllm-0.12"),
                                       ("vllm-0.5", "vllm-0.4"), ("vllm-v0", "vllm-0.7"), ("vllm-0.19", "vllm"),
                                       ("sglang-0.5", "sglang"), ("trtllm-1.1", "trtllm-1.0"), ("trt-llm", "trtllm"),
                                       ("trtllm-0.12", "trtllm-0.10"), ("trtllm-0.9", "trtllm-0.9"), ("TensorRT-LLM", "trtllm"),
                                       ("SGLang 0.4", "sglang-0.4"), ("ATOM", "atom")])
def test_every_release_of_a_row_resolves_to_it(name, row):
    assert engines.get_engine(name).id == row


def test_the_default_stays_current_vllm_and_todays_ids_keep_working():
    assert engines.DEFAULT_ENGINE == "vllm" and plan.INPUT_BY_NAME["chunked_prefill"].default == 1
    for old in ("vllm", "vllm-0.9", "vllm-v0", "vllm-0.8", "sglang", "trtllm"):
        engines.get_engine(old)
    assert plan.INPUT_BY_NAME["overlap_scheduling"].default == 1    # vLLM schedules asynchronously since vllm#27614


def test_an_unknown_version_is_refused_in_one_line_naming_engine():
    with pytest.raises(ValueError) as e:
        resolve("llama-3.1-8b", "h100-sxm", engine="vllm-9.9")
    assert "--engine" in str(e.value) and "\n" not in str(e.value)
    out = subprocess.run([sys.executable, "-m", "inference_ledger", "plan", "--engine", "vllm-9.9"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    said = [ln for ln in out.stderr.splitlines() if "--engine" in ln and "vllm-9.9" in ln]
    # what it takes: the families and where every version id is listed (not the 55 ids and aliases)
    assert len(said) == 1 and "vllm, sglang, trtllm" in said[0] and "`inference-ledger engines`" in said[0]


def test_plan_cell_gives_an_error_value_for_an_unknown_engine():
    from udfs import excel
    (cell,) = excel.PLAN("llama-3.1-8b", "h100-sxm", "tpot_seconds", None, None, None, None, None, None, "vllm-9.9")[0]
    assert str(cell).startswith("#VALUE!") and "--engine" in str(cell) and "vllm-0.9" in str(cell)
    (ok,) = excel.PLAN("llama-3.1-8b", "h100-sxm", "tpot_seconds", None, None, None, None, None, None, "vllm-0.11")[0]
    assert isinstance(ok, float) and ok > 0


def test_a_scheduler_in_step_with_the_gpu_adds_its_cpu_time_per_sequence():
    """vLLM 0.9-0.11 and 0.12-0.18 differ only in async scheduling (vllm#27614): Llama-3.1-70B TP4 at 64 sequences
    waits 64 x 21 us = 1.344 ms more per step without it (vllm#10634: 5-6 ms at batch 256 = 21 us a sequence)."""
    kw = dict(tp=4, concurrency=64, input_tokens=1024, output_tokens=512)
    sync = plan.evaluate(resolve("llama-3.1-70b", "h100-sxm", engine="vllm-0.11", numbers=kw).inputs)
    overlap = plan.evaluate(resolve("llama-3.1-70b", "h100-sxm", engine="vllm-0.13", numbers=kw).inputs)
    assert sync["effective_concurrency"] == overlap["effective_concurrency"] == 64
    assert overlap["scheduler_seconds_per_step"] == 0
    assert sync["scheduler_seconds_per_step"] == pytest.approx(64 * 21e-6, rel=1e-12)
    assert sync["tpot_seconds"] - overlap["tpot_seconds"] == pytest.approx(1.344e-3, rel=1e-9)
    # vLLM 0.4-0.5 processed outputs in step too: 3.4 ms at batch 32 (vllm#6913) = 106 us a sequence
    v04 = plan.evaluate(resolve("llama-3.1-70b", "h100-sxm", engine="vllm-0.5", numbers=kw).inputs)
    assert v04["scheduler_seconds_per_step"] == pytest.approx(64 * 106e-6, rel=1e-12)


#: sgl-project/sglang#1401 (sglang.bench_latency, batch 1, 128 in / 8 out): Llama-3-8B (32 layers) with FlashInfer
#: 8.23 ms a decode step eager, 7.35 ms with CUDA graphs; DeepSeek-Coder-V2-Lite (27 layers: 1 dense, 26 MLA + MoE)
#: 6.22 ms with graphs, "4x faster" than eager.  An eager step is bound by its host dispatch there, so per layer:
EAGER_DENSE = 8.23e-3 / 32                          # 257 us
EAGER_MOE = (4 * 6.22e-3 - EAGER_DENSE) / 26        # 947 us


def test_eager_host_time_per_layer_is_the_sglang_1401_measurement():
    for e in engines.load_engines():
        if e.id in ("trtllm-0.9", "trtllm-0.10", "lmdeploy-0.1"):   # C++ engines (TensorRT, TurboMind): no per-op
            # Python dispatch
            assert e.eager_seconds_per_layer == e.eager_seconds_per_moe_layer == 0
        else:
            assert e.eager_seconds_per_layer == pytest.approx(EAGER_DENSE, abs=0.5e-6), e.id
            assert e.eager_seconds_per_moe_layer == pytest.approx(EAGER_MOE, abs=0.5e-6), e.id
    # capture limits as the engines' sources set them
    cap = lambda i, tp=1: engines.get_engine(i).cuda_graph_max_batch(tp)
    assert (cap("vllm-0.7"), cap("vllm-0.8"), cap("vllm"), cap("sglang-0.4")) == (256, 512, 512, 160)
    assert (cap("sglang", 1), cap("sglang", 8), cap("trtllm-0.17"), cap("trtllm-0.9")) == (256, 512, 0, 0)


def test_an_eager_step_lasts_the_longer_of_its_kernels_and_the_host_dispatch():
    """TensorRT-LLM 0.17-0.21's PyTorch backend runs without CUDA graphs (PyTorchConfig use_cuda_graph=False):
    DeepSeek-R1 on 8 H200 at 4 sequences dispatches 3 dense + 58 MoE layers eager, 3 x 257 + 58 x 947 us = 55.7 ms
    of host time, longer than the step's 13 ms of kernels: the step waits for the CPU (dstack published 55.1 ms TPOT
    for this deployment at 4 clients, a source the figures were not taken from).  With graphs on, the same step is
    its kernels; flipping the trait moves TPOT by exactly host - kernels."""
    kw = dict(tp=8, concurrency=4, input_tokens=3200, output_tokens=800)
    r = resolve("deepseek-r1", "h200", weight_dtype="fp8", engine="trtllm-0.17", numbers=kw).inputs
    eager = plan.evaluate(r)
    graphed = plan.evaluate(r | {"cuda_graphs": 1, "cuda_graph_max_batch": 128})
    assert eager["num_layers"] == 61 and eager["moe_layers"] == 58 and eager["cuda_graphs"] == 0
    host = 3 * EAGER_DENSE + 58 * EAGER_MOE
    assert eager["eager_host_seconds_per_step"] == pytest.approx(host, rel=1e-3)
    assert graphed["eager_host_seconds_per_step"] == 0 and graphed["decode_eager_wait_seconds"] == 0
    gpu = eager["decode_gpu_seconds"]
    assert gpu == graphed["decode_gpu_seconds"] and gpu < host
    assert eager["decode_eager_wait_seconds"] == pytest.approx(host - gpu, rel=1e-3)
    assert eager["tpot_seconds"] - graphed["tpot_seconds"] == pytest.approx(host - gpu, rel=1e-3)
    assert eager["tpot_seconds"] == pytest.approx(host + eager["prefill_stall_seconds"]
                                                  + eager["scheduler_seconds_per_step"], rel=1e-3)


def test_a_batch_above_the_largest_captured_graph_runs_eager():
    """vLLM V1 captures decode graphs up to 512 sequences: Llama-3.1-8B on an H100 at 600 sequences runs eager
    (32 dense layers x 257 us = 8.2 ms of dispatch), at 500 it replays a graph; the step is max(kernels, host)."""
    kw = dict(tp=1, input_tokens=256, output_tokens=128)
    at = {c: plan.evaluate(resolve("llama-3.1-8b", "h100-sxm", engine="vllm", numbers=kw | {"concurrency": c}).inputs)
          for c in (500, 600)}
    assert at[500]["effective_concurrency"] == 500 and at[600]["effective_concurrency"] == 600
    assert at[500]["eager_host_seconds_per_step"] == 0
    assert at[600]["eager_host_seconds_per_step"] == pytest.approx(32 * EAGER_DENSE, rel=1e-3)
    v = at[600]
    assert v["decode_eager_wait_seconds"] == pytest.approx(
        max(v["eager_host_seconds_per_step"] - v["decode_gpu_seconds"], 0), abs=1e-15)
    # a host slower than the kernels sets the step (5 ms a layer: 160 ms)
    slow = plan.evaluate(resolve("llama-3.1-8b", "h100-sxm", engine="vllm", numbers=kw | {"concurrency": 600}).inputs
                         | {"eager_seconds_per_layer": 5e-3})
    assert slow["tpot_seconds"] == pytest.approx(0.16 + slow["parallel_seconds_per_step"]
                                                 + slow["prefill_stall_seconds"]
                                                 + slow["scheduler_seconds_per_step"], rel=1e-9)


def test_whole_prompt_versions_stall_the_step_by_the_sarathi_formula():
    """SGLang 0.3 runs whole prompts (no chunked prefill by default) and SGLang 0.4 chunks them: the whole-prompt
    TPOT is step(B) + (B - 1) x prefill(S) / (T - 1) + the in-step scheduler, by hand from the plan's own parts."""
    kw = dict(tp=1, concurrency=32, input_tokens=2048, output_tokens=256)
    whole = plan.evaluate(resolve("llama-3.1-8b", "h100-sxm", engine="sglang-0.3", numbers=kw).inputs)
    chunked = plan.evaluate(resolve("llama-3.1-8b", "h100-sxm", engine="sglang-0.4", numbers=kw).inputs)
    b, s, t = 32, 2048, 256
    assert whole["chunked_prefill"] == 0 and chunked["chunked_prefill"] == 1
    assert whole["step_tokens"] == b and chunked["step_tokens"] == pytest.approx(b + (b - 1) * s / t)
    stall = (b - 1) * whole["ttft_service_seconds"] / (t - 1)
    assert whole["prefill_stall_seconds"] == pytest.approx(stall, rel=1e-12)
    assert whole["tpot_seconds"] == pytest.approx(max(whole["decode_kernel_seconds"], whole["tpot_floor_seconds"])
                                                  + stall + b * 1e-5, rel=1e-12)
    assert chunked["prefill_stall_seconds"] == 0 and chunked["scheduler_seconds_per_step"] == 0
    assert whole["tpot_seconds"] > chunked["tpot_seconds"]


def test_vllm_v0_chunks_above_32k_max_model_len():
    v0 = engines.get_engine("vllm-0.7")
    assert (v0.chunks(32768), v0.chunks(32769), engines.get_engine("vllm").chunks(1024)) == (0, 1, 1)
    gpu = dict(gpu_memory_bytes=79.1875 * GIB, interconnect_bw=450e9, gpu_id="h100-sxm")
    assert engines.engine_inputs(v0, **gpu, max_model_len=131072)["chunked_prefill"] == 1
    assert engines.engine_inputs(v0, **gpu, max_model_len=8192)["chunked_prefill"] == 0


def test_current_vllm_sglang_and_trtllm_give_different_tpot_for_one_deployment():
    kw = dict(tp=4, concurrency=64, input_tokens=1024, output_tokens=512)
    tpot = {e: plan.evaluate(resolve("llama-3.1-70b", "h100-sxm", engine=e, numbers=kw).inputs)["tpot_seconds"]
            for e in ("vllm", "sglang", "trtllm", "vllm-0.9", "sglang-0.2", "trtllm-0.9")}
    assert len({round(x, 9) for x in tpot.values()}) >= 5, tpot
    assert tpot["vllm-0.9"] > tpot["vllm"] and tpot["sglang-0.2"] > tpot["sglang"]


def test_each_version_reads_its_own_fused_moe_table_version():
    from inference_ledger.formulas import kernels_fused
    assert kernels_fused.table_version([(0, 19, 0), (0, 22, 0), (0, 24, 0)], "0.23") == (0, 22, 0)
    assert kernels_fused.table_version([(0, 19, 0), (0, 24, 0)], "0.18") == (0, 19, 0)   # older: the oldest measured
    assert kernels_fused.table_version([(0, 19, 0), (0, 24, 0)], None) == (0, 24, 0)
    assert kernels_fused.table_version([(1, 3, 0, 10), (1, 3, 0, 20)], "1.3.0rc10") == (1, 3, 0, 10)


def test_a_shape_measured_at_two_versions_is_read_at_the_release_s_own(monkeypatch):
    """Where the MoE table holds one shape at two engine versions, vllm-0.12 (releases to 0.18) reads 0.19.0's (none
    older), vllm (0.24.0) reads 0.24.0's; the plan's source names the version read."""
    import numpy as np
    from inference_ledger.formulas import kernels_fused
    from inference_ledger.formulas.kernel_tables import Table
    ts = np.array([1.0, 16384.0])
    tab = lambda us, v: Table((ts,), np.array(us) * 1e-6, f"h200_sxm/moe/vllm/{v}/moe_perf.parquet (vllm {v})")
    key = ("h200", "vllm", "fp8", 4096, 1536, 8, 128)
    fake = {key: {(4, 1): {(0, 19, 0): tab([100, 9000], "0.19.0"), (0, 24, 0): tab([80, 7000], "0.24.0")}}}
    monkeypatch.setattr(kernels_fused, "_moe", lambda gpu_id: fake)
    read = lambda release: kernels_fused.moe_table("h200", "vllm", "fp8", 4096, 1536, 8, 128, 4, 1,
                                                   engines.get_engine(release).kernel_table_version).source
    assert read("vllm-0.13").endswith("(vllm 0.19.0)") and read("vllm").endswith("(vllm 0.24.0)")
    assert kernels_fused.moe_seconds("h200", "vllm", "fp8", 1, 4096, 1536, 8, 128, 4, 1, "0.20")[0] == \
        pytest.approx(100e-6)


@pytest.mark.parametrize("engine", ["vllm", "vllm-0.9"])
def test_vllm_batching_defaults_follow_the_gpu(engine):
    h100 = engines.engine_inputs(engine, gpu_memory_bytes=79.1875 * GIB, interconnect_bw=450e9, gpu_id="h100-sxm", tp=2)
    assert (h100["max_num_batched_tokens"], h100["max_num_seqs"]) == (8192, 1024)
    a100 = engines.engine_inputs(engine, gpu_memory_bytes=79.15 * GIB, interconnect_bw=300e9, gpu_id="a100-80gb")
    assert (a100["max_num_batched_tokens"], a100["max_num_seqs"]) == (2048, 256)   # A100 excluded (PR #17885)
    l40s = engines.engine_inputs(engine, gpu_memory_bytes=44.5 * GIB, gpu_id="l40s")
    assert (l40s["max_num_batched_tokens"], l40s["max_num_seqs"]) == (2048, 256)   # below 70 GiB
    if engine == "vllm-0.9":  # its snapshot came before NCCL's init: the buffers count against the budget
        assert h100["nccl_bytes"] == pytest.approx(1.79 * GIB, rel=1e-9)     # NVSwitch: NVLS buffers
        assert a100["nccl_bytes"] == 64 * 2**20                              # ring buffers only
    else:  # 0.19+: NCCL initialises before the memory snapshot, outside the budget; only cuBLAS's workspace after it
        assert h100["nccl_bytes"] == a100["nccl_bytes"] == 0
        assert h100["cuda_context_bytes"] == 685 * 2**20 - 523 * 2**20 and h100["sampler_bytes_per_logit"] == 20


def test_current_vllm_keeps_2_to_4_gb_beside_weights_and_kv_on_an_h100():
    """Llama-3.1-8B on one H100 at the API server's defaults: 1,024 x 128,256 logits x 20 B = 2.63 GB
    (more than the 8,192-token forward pass), plus 162 MiB of cuBLAS workspace: 2.8 GB, not 0.9's 5.6 GB."""
    now = plan.evaluate(resolve("llama-3.1-8b", "h100-sxm", engine="vllm", numbers={"tp": 1}).inputs)
    old = plan.evaluate(resolve("llama-3.1-8b", "h100-sxm", engine="vllm-0.9", numbers={"tp": 1}).inputs)
    assert now["workspace_bytes_per_gpu"] == 1024 * 128_256 * 20 + 162 * 2**20
    assert 2e9 < now["workspace_bytes_per_gpu"] < 4e9 < old["workspace_bytes_per_gpu"]


def test_vllm_v0_profiles_a_whole_prompt_up_to_32k_then_chunks():
    v0 = engines.get_engine("vllm-v0")
    assert v0.batched_tokens(23.58 * GIB, max_model_len=20000) == 20000
    assert v0.batched_tokens(23.58 * GIB, max_model_len=1000) == 2048     # max(max_model_len, 2048)
    assert v0.batched_tokens(23.58 * GIB, max_model_len=131072) == 2048   # chunked prefill above 32K


def test_prefill_activation_matches_the_rtx3090_log():
    # Llama-3.1-8B, BF16: 2 B x (3 x 4096 + 3 x 14336) = 110,592 B per token
    assert engine_ledger.prefill_activation_bytes(1, 4096, 14336, 0, 2, 1) == 110_592
    # vLLM log (vllm#10517): peak_torch - weights = 17.06 - 14.99 = 2.07 GiB at 20,000 tokens, 2.99 at 29,000
    assert engine_ledger.prefill_activation_bytes(20000, 4096, 14336, 0, 2, 1) / GIB == pytest.approx(2.07, rel=0.01)
    assert engine_ledger.prefill_activation_bytes(29000, 4096, 14336, 0, 2, 1) / GIB == pytest.approx(2.99, rel=0.01)


def test_moe_activation_counts_each_routed_expert():
    # gpt-oss: top-4 of experts 2880 wide, hidden 2880: 2 x ((3 + 4) x 2880 + 3 x 4 x 2880) = 109,440 B/token
    assert engine_ledger.prefill_activation_bytes(1, 2880, 2880, 4, 2, 1) == 109_440


def test_kv_budget_rules_by_hand():
    total, f, w, a, n = 100.0, 0.9, 50.0, 5.0, 2.0
    assert engine_ledger.kv_budget_bytes(1, total, f, w, a, n) == pytest.approx(90 - 50 - 5 - 2)          # vLLM
    assert engine_ledger.kv_budget_bytes(2, total, f, w, a, n) == pytest.approx(0.9 * 98 - 50)            # SGLang
    assert engine_ledger.kv_budget_bytes(3, total, f, w, a, n) == pytest.approx(0.9 * (100 - 2 - 50 - 5))  # TensorRT-LLM


def test_allreduce_is_zero_at_tp1_and_latency_plus_ring_bytes_above():
    assert engine_ledger.allreduce_seconds(1, 64, 15e-6, 8192, 300e9) == 0
    # TP 2, 32 layers (2 all-reduces each): 64 x (15 us + 2 x 1/2 x 8,192 B / 300 GB/s)
    assert engine_ledger.allreduce_seconds(2, 64, 15e-6, 8192, 300e9) == pytest.approx(64 * (15e-6 + 8192 / 300e9))


def test_mxfp4_expert_padding_of_gpt_oss_120b():
    # 36 layers x 128 experts x 3 matrices x (3072 x 2944 - 2880 x 2880) x 0.53125 B = 5,504,827,392 B
    assert engine_ledger.moe_padding_bytes_per_gpu(36, 128, 2880, 2880, 1, 256, 128, 0.53125, 1) == 5_504_827_392
    assert engine_ledger.moe_padding_bytes_per_gpu(80, 0, 8192, 28672, 4, 256, 128, 2, 1) == 0   # dense: no experts
    # the same experts in BF16: the fused-MoE kernels run them at their own shapes (the weight format does not pad)
    assert engine_ledger.moe_padding_bytes_per_gpu(36, 128, 2880, 2880, 1, 256, 128, 2, 0) == 0


def test_only_the_mxfp4_weight_format_pads_the_experts_in_the_plan_and_the_workbook():
    """The rule is the weight format's catalog fact (dtypes.csv moe_kernel_pads), read by the plan line and looked up
    by the workbook: gpt-oss-120b in MXFP4 pads (5.5 GB at TP 1, above), in BF16 it does not; Qwen3-235B in BF16 at
    TP 8 holds its 1,536-wide experts as 192 rows per GPU, unpadded."""
    from inference_ledger.workbook.build import make_context
    from inference_ledger.workbook.cells import SELECTOR_NAMES
    from inference_ledger.workbook.tables import lookup

    mx = resolve("gpt-oss-120b", "h100-sxm", numbers={"tp": 1})
    assert mx.weight_dtype == "mxfp4" and mx.inputs["moe_kernel_pads"] == 1
    bf = resolve("gpt-oss-120b", "h100-sxm", weight_dtype="bf16", numbers={"tp": 1})
    assert bf.inputs["moe_kernel_pads"] == 0
    assert plan.evaluate(mx.inputs)["moe_padding_bytes_per_gpu"] == pytest.approx(5_504_827_392)
    assert plan.evaluate(bf.inputs)["moe_padding_bytes_per_gpu"] == 0
    qwen = resolve("qwen3-235b-a22b", "h100-sxm", weight_dtype="bf16", numbers={"tp": 8})
    assert plan.evaluate(qwen.inputs)["moe_padding_bytes_per_gpu"] == 0
    ctx = make_context()
    for wd, pads in (("mxfp4", 1), ("bf16", 0), ("fp8", 0)):
        formula, value = lookup("moe_kernel_pads", ctx.tables, SELECTOR_NAMES, {"weight_dtype": wd})
        assert value == pads and "DTYPE" in formula.text


def test_formulas_render_without_literals():
    s = {n: Sym(n) for n in ("rule", "total", "f", "w", "a", "n", "tp", "ar", "lat", "msg", "bw")}
    text = engine_ledger.kv_budget_bytes(s["rule"], s["total"], s["f"], s["w"], s["a"], s["n"]).text
    assert text == ("f*total-w-(a+n)+IF(rule=KV_RULE_SGLANG,a+n-f*n,"
                    "IF(rule=KV_RULE_TRTLLM,(1-f)*(w+a+n),0))")
    assert engine_ledger.allreduce_seconds(s["tp"], s["ar"], s["lat"], s["msg"], s["bw"]).text == \
        "IF(tp>1,ar*(lat+RING_ALLREDUCE_FACTOR*(tp-1)/tp*msg/bw),0)"


def test_plan_engine_switch_changes_the_kv_budget_only_through_the_rule():
    base = resolve("qwen3-235b-a22b", "h100-sxm", engine="vllm", weight_dtype="fp8", numbers={"tp": 4}).inputs
    sg = resolve("qwen3-235b-a22b", "h100-sxm", engine="sglang", weight_dtype="fp8",
                 numbers={"tp": 4, "gpu_memory_utilization": 0.93}).inputs
    v, s = plan.evaluate(base), plan.evaluate(sg)
    assert v["weights_bytes_per_gpu"] == s["weights_bytes_per_gpu"] == 59_097_093_888   # (233.8e9 x 1 + 1.29e9 x 2) / 4
    assert s["kv_budget_rule"] == 2
    # SGLang: 0.93 x (79.1875 - 0.35 - 1.79 GiB) - weights
    assert s["kv_cache_budget_bytes_per_gpu"] == pytest.approx(0.93 * (79.1875 - 0.35 - 1.79) * GIB - 59_097_093_888,
                                                               rel=1e-9)


def test_engine_refusing_to_start_does_not_fit():
    # gpt-oss-120b on one H100 at vLLM's default 0.9: the log shows -2.14 GiB of KV memory and no start
    v = plan.evaluate(resolve("gpt-oss-120b", "h100-sxm", engine="vllm-0.9",   # the version of that log
                              numbers={"tp": 1, "concurrency": 1, "input_tokens": 1, "output_tokens": 1}).inputs)
    assert v["kv_cache_budget_bytes_per_gpu"] < 0
    assert v["kv_capacity_tokens"] == 0
    assert v["fits"] == 0


@pytest.mark.parametrize("engine, gpu, vendor", [("trtllm", "mi300x", "NVIDIA"), ("trtllm-0.9", "mi355x", "NVIDIA"),
                                                 ("atom", "h100-sxm", "AMD")])
def test_an_engine_is_refused_on_a_gpu_it_does_not_run_on(engine, gpu, vendor):
    """TensorRT-LLM is NVIDIA's, ATOM is ROCm's (engines.csv gpu_vendors, each with its source): `plan` refuses the pair
    in one line naming --engine (exit 2), and sweeps skip it."""
    proc = subprocess.run([sys.executable, "-m", "inference_ledger", "plan", "--gpu", gpu, "--engine", engine],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "--engine" in proc.stderr and f"runs on {vendor} GPUs only" in proc.stderr, proc.stderr
    assert engines.get_engine("vllm").gpu_vendors == engines.get_engine("sglang").gpu_vendors == "any"
    resolve(None, "mi300x", engine="vllm")   # vLLM and SGLang run on both vendors
    resolve(None, "h100-sxm", engine="sglang")


def test_a_scenario_row_without_an_engine_keeps_the_builds_unless_it_does_not_run_on_its_gpu():
    """`build --engine trtllm` with the built-in scenarios: the MI300X row runs vLLM (its engine cell says so), the
    NVIDIA rows TensorRT-LLM; a build once stopped on that row."""
    from inference_ledger.workbook.scenarios_sheet import inherited_engine

    assert inherited_engine("trtllm", "mi300x") == engines.DEFAULT_ENGINE == "vllm"
    assert inherited_engine("trtllm", "h100-sxm") == "trtllm"
    assert inherited_engine("atom", "mi355x") == "atom" and inherited_engine("atom", "h200") == "vllm"
    assert inherited_engine("sglang", "mi300x") == "sglang"


@pytest.mark.parametrize("engine, model, passes", [
    ("trtllm-0.9", "mistral-7b-v0.3", 4),   # 32 query heads / 8 KV heads: no XQA kernel for groups of 4
    ("trtllm-0.9", "llama-2-70b", 1),       # 64 / 8 = 8: the one group 0.9's XQA runs
    ("trtllm-0.9", "llama-2-7b", 1),        # MHA: one query head per KV head either way
    ("trtllm-0.10", "mistral-7b-v0.3", 1),
    ("vllm-0.3", "llama-2-70b", 8),         # PagedAttention: one pass per query head
    ("vllm", "llama-2-70b", 1),
])
def test_the_decode_kernel_reads_each_kv_head_once_per_group_or_once_per_query_head(engine, model, passes):
    """TensorRT-LLM 0.9's XQA decode kernel takes query groups of 8 heads only (DecoderXQARunner::shouldUse); other
    groups run the masked MHA kernel, one thread block per query head, each reading its KV head: the step reads the
    KV heads x heads / KV heads times.  The static batch of the 0.9 perf overview's Mistral-7B row at 128/2048."""
    kw = dict(tp=1 if "7b" in model else 4, batching=2, concurrency=120, input_tokens=128, output_tokens=2048)
    v = plan.evaluate(resolve(model, "h100-sxm", engine=engine, numbers=kw).inputs)
    assert v["kv_read_passes"] == passes
    once = plan.evaluate(resolve(model, "h100-sxm", engine=engine, numbers=kw | {"gqa_decode": 1}).inputs)
    assert v["decode_attention_kv_tokens"] == pytest.approx(passes * once["decode_attention_kv_tokens"])
    assert v["step_kv_bytes_per_gpu"] == pytest.approx(passes * once["step_kv_bytes_per_gpu"])


def test_fewer_query_heads_than_kv_heads_never_reads_the_kv_less_than_once():
    """A typed model with 4 query heads over 8 KV heads on a kernel without GQA support: one pass, not half of one."""
    v = plan.evaluate(resolve("llama-3.1-8b", "h100-sxm", engine="vllm-0.3",
                              numbers={"num_attention_heads": 4, "kv_heads": 8}).inputs)
    assert v["kv_read_passes"] == 1


def test_the_decode_attention_source_says_when_the_kernel_reads_the_kv_once_per_query_head(capsys):
    import json
    from inference_ledger.cli import run
    with pytest.raises(SystemExit) as e:
        run(["plan", "--model", "mistral-7b-v0.3", "--gpu", "h100-sxm", "--engine", "trtllm-0.9", "--json"])
    assert e.value.code in (0, None)
    attention = json.loads(capsys.readouterr().out)["decode_ops"]["attention"]
    assert "x 4 passes over each KV head" in attention["source"] and "gqa_decode" in attention["source"]
