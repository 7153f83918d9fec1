"""The readers of benchmark results and engine logs, field by field on real files (tests/fixtures/bench/SOURCES.md).

Expected values are the numbers the sources print, converted by hand to base units (ms -> s, GiB -> bytes):
never the reader's output fed back.  Bad files: one line naming the file and the field.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from inference_ledger.io import benchfiles
from inference_ledger.core import files
from inference_ledger.io.benchfiles import BadFile, Run, Startup
from inference_ledger.core.files import InvalidInput

BENCH = Path(__file__).resolve().parent / "fixtures" / "bench"
GIB = 2**30


def one(path) -> Run | Startup:
    recs = benchfiles.read(path)
    assert len(recs) == 1
    return recs[0]


def has(rec: Run | Startup, **want) -> None:
    """Each named field of the record is its hand value (numbers to pytest.approx's 1e-6)."""
    assert {k: getattr(rec, k) for k in want} == pytest.approx(want)


def test_vllm_result_json_field_by_field():
    r = one(BENCH / "vllm" / "llama-3.1-8b-sharegpt-1000.json")
    assert isinstance(r, Run)
    has(r, tool="vllm bench serve", model="meta-llama/Llama-3.1-8B-Instruct", completed=1000, duration_seconds=30.85,
        total_input_tokens=229711, total_output_tokens=203068, input_tokens=229.711, output_tokens=203.068,
        request_throughput=32.42, output_tokens_per_second=6582.87, total_tokens_per_second=14029.44,
        ttft_mean_seconds=9.62613, ttft_median_seconds=9.4597, ttft_p99_seconds=12.66673,
        tpot_mean_seconds=0.07786, tpot_median_seconds=0.04884, tpot_p99_seconds=0.21121,
        itl_mean_seconds=0.03813, itl_median_seconds=0.02544, itl_p99_seconds=0.21435)
    assert math.isinf(r.request_rate)                       # "inf" as vLLM writes it
    assert r.concurrency == 1000                            # all sent at once, no --max-concurrency
    assert r.tpot_seconds == r.tpot_mean_seconds


def test_vllm_append_result_lines_and_per_request_arrays(tmp_path):
    base = json.loads((BENCH / "vllm" / "llama-3.1-8b-sharegpt-1000.json").read_text())
    a = dict(base, max_concurrency=16)
    b = dict(base, max_concurrency=64, duration=20.0)
    b.update(input_lens=[100, 200], output_lens=[10, 20], ttfts=[0.1, 0.2], latencies=[1.0, 2.0])
    f = tmp_path / "append.json"
    f.write_text(json.dumps(a) + "\n" + json.dumps(b) + "\n")      # --append-result: one object per line
    runs = benchfiles.read(f)
    assert [r.concurrency for r in runs] == [16, 64] and runs[1].duration_seconds == 20.0
    assert runs[1].per_request == {"input_lens": [100, 200], "output_lens": [10, 20], "ttfts": [0.1, 0.2],
                                   "latencies": [1.0, 2.0]}


def test_sglang_jsonl_field_by_field():
    r = one(BENCH / "sglang" / "glm-h200-fp8-c16.jsonl")
    assert r.model is None and math.isinf(r.request_rate)          # the file names no model
    has(r, tool="sglang.bench_serving", concurrency=16, completed=64, duration_seconds=90.69424906396307,
        total_input_tokens=524288, total_output_tokens=65536, input_tokens=8192, output_tokens=1024,
        request_throughput=0.7056676764020983, output_tokens_per_second=722.6037006357486,
        total_tokens_per_second=6503.433305721738, e2el_mean_seconds=22.663672626033076,
        e2el_p99_seconds=22.78243900728412, ttft_mean_seconds=6.088042177812895,
        ttft_median_seconds=6.147928810445592, ttft_p99_seconds=10.474469358159695,
        tpot_mean_seconds=0.016202962314975743, tpot_median_seconds=0.0161094704726192)


def test_aiperf_json_field_by_field():
    r = one(BENCH / "aiperf" / "profile_export_aiperf.json")
    has(r, tool="AIPerf / genai-perf", request_throughput=0.14968841618235815, completed=80,
        e2el_mean_seconds=6.655520201949999, e2el_median_seconds=6.6538574435, e2el_p99_seconds=6.686540937939999,
        ttft_mean_seconds=0.044166079325, ttft_median_seconds=0.044452151, ttft_p99_seconds=0.04816844818)
    assert r.output_tokens_per_second is None                     # the excerpt ends before it


def test_genai_perf_json_field_by_field():
    r = one(BENCH / "genai-perf" / "profile_export_genai_perf.json")
    has(r, request_throughput=17.222547659562533, output_tokens_per_second=44190.56002502682,
        ttft_mean_seconds=0.18463779366666665, ttft_p99_seconds=0.42502943662,
        itl_mean_seconds=0.0021767344516666665, itl_median_seconds=0.0021787205, e2el_mean_seconds=5.767434807386666)
    assert r.tpot_seconds == r.itl_mean_seconds                   # AIPerf/genai-perf ITL is vLLM's TPOT


def test_genai_perf_csv_field_by_field():
    r = one(BENCH / "genai-perf" / "model_name-openai-chat-concurrency1" / "profile_export_genai_perf.csv")
    has(r, ttft_mean_seconds=0.008, ttft_p99_seconds=0.00898, ttft_median_seconds=0.008, e2el_mean_seconds=0.005,
        e2el_p99_seconds=0.00598, itl_mean_seconds=0.011, itl_median_seconds=0.011, output_tokens=2, input_tokens=6,
        output_tokens_per_second=456, request_throughput=123, completed=3)
    assert r.concurrency == 1                                     # from genai-perf's artifact folder name


def test_aiperf_sweep_files_carry_model_and_concurrency():
    got = {}
    for c in (5, 25, 50, 100, 150, 200, 250):
        r = one(BENCH / "sweep-nim-llama-3.3-70b-h100x2" / f"c{c}" / "profile_export_aiperf.json")
        assert r.model == "meta/llama-3.3-70b-instruct" and r.concurrency == c
        assert r.input_tokens == 5000 and r.output_tokens == 500
        got[c] = (r.output_tokens_per_second, r.ttft_mean_seconds, r.tpot_seconds)
    # the NIM table (docs.nvidia.com/nim/benchmarking/llm/1.0.0/performance.md), converted by hand
    assert got[5] == pytest.approx((218.48, 0.5467, 0.02183))
    assert got[100] == pytest.approx((917.26, 7.99625, 0.09291))
    assert got[250] == pytest.approx((920.12, 88.60532, 0.0932))


def test_trtllm_report_field_by_field():
    r = one(BENCH / "trtllm" / "deepseek-r1-fp4-tp4-ep4.json")
    has(r, tool="trtllm-bench", model="deepseek-ai/DeepSeek-R1", tp=4, pp=1, ep=4, engine="TensorRT-LLM 1.1.0rc1",
        completed=6144, input_tokens=1024, output_tokens=1024, request_throughput=7.3411,
        output_tokens_per_second=7517.2584)
    assert r.concurrency == 1019                                  # round(1018.8281 requests in flight)
    assert r.ttft_mean_seconds is None and any("not a streaming run" in n for n in r.notes)


def test_vllm_v0_log_field_by_field():
    s = one(BENCH / "logs" / "vllm-0.6.4-llama-3.1-8b-rtx3090-len20000.log")
    assert isinstance(s, Startup) and s.started
    has(s, engine="vllm", gpu_memory_bytes=23.58 * GIB, gpu_memory_utilization=0.90,
        weights_bytes=14.9888 * GIB,                               # "GB" in this line is GiB (bytes / 2**30)
        non_torch_bytes=0.35 * GIB, activation_bytes=(17.06 - 14.9888) * GIB,   # peak_torch - weights
        kv_cache_bytes=3.81 * GIB, kv_blocks=1952, kv_cache_tokens=1952 * 16, max_model_len=20000, max_concurrency=1.56)


def test_vllm_log_of_a_refused_start_keeps_its_kv_figures():
    s = one(BENCH / "logs" / "vllm-0.6.4-llama-3.1-8b-rtx3090-len29000.log")
    assert not s.started and "23648" in s.error
    assert s.kv_cache_tokens == 1478 * 16 == 23648 and s.max_model_len == 29000 and s.max_concurrency == 0.82
    assert s.kv_cache_bytes == pytest.approx(2.89 * GIB)


def test_vllm_065_and_v1_logs_field_by_field():
    s = one(BENCH / "logs" / "vllm-0.6.5-llama-3-8b-h100-tp1.log")
    has(s, gpu_memory_bytes=79.22 * GIB, gpu_memory_utilization=0.90, weights_bytes=14.96 * GIB,
        non_torch_bytes=1.79 * GIB, activation_bytes=1.26 * GIB, kv_cache_bytes=53.29 * GIB, kv_cache_tokens=None,
        model="meta-llama/Meta-Llama-3-8B")
    v1 = one(BENCH / "logs" / "vllm-v1-llama-3.1-8b-l40s.log")
    assert v1.weights_bytes == pytest.approx(14.9889 * GIB)
    assert v1.kv_cache_tokens == 158656 and v1.max_model_len == 32768 and v1.max_concurrency == 4.84


def test_sglang_log_field_by_field():
    s = one(BENCH / "logs" / "sglang-qwen3-235b-a22b-fp8-h100x4.log")
    assert s.engine == "sglang" and s.kv_cache_tokens == 367404
    assert s.kv_cache_bytes == pytest.approx((8.23 + 8.23) * GIB)   # SGLang's GB = 1024**3


def test_sglang_log_with_scheduler_and_graph_lines(tmp_path):
    # the lines as sglang's model_runner.py / memory_pool.py / scheduler.py print them
    f = tmp_path / "sglang.log"
    f.write_text("server_args=ServerArgs(model_path='meta-llama/Llama-3.1-8B-Instruct', tp_size=2, "
                 "mem_fraction_static=0.87)\n"
                 "[TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.12 GB, "
                 "mem usage=7.52 GB.\n"
                 "[TP0] KV Cache is allocated. #tokens: 371661, K size: 22.69 GB, V size: 22.69 GB\n"
                 "[TP0] Capture cuda graph end. Time elapsed: 8.04 s. mem usage=0.80 GB. avail mem=10.30 GB.\n"
                 "[TP0] max_total_num_tokens=371661, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                 "max_running_requests=4096, context_len=131072\n")
    s = one(f)
    has(s, model="meta-llama/Llama-3.1-8B-Instruct", tp=2, gpu_memory_utilization=0.87, weights_bytes=7.52 * GIB,
        cuda_graph_bytes=0.80 * GIB, kv_cache_tokens=371661, kv_cache_bytes=45.38 * GIB, max_running_requests=4096,
        max_model_len=131072, max_num_batched_tokens=8192)


# ----------------------------------------------------------------------------------------
# bad files: one line naming the file and the field
# ----------------------------------------------------------------------------------------

def _cut(src: Path, dst: Path, keep: float) -> Path:
    text = src.read_text()
    dst.write_text(text[: int(len(text) * keep)])
    return dst


def test_truncated_json_names_the_file_and_where(tmp_path):
    bad = _cut(BENCH / "aiperf" / "profile_export_aiperf.json", tmp_path / "profile_export_aiperf.json", 0.6)
    with pytest.raises(BadFile, match=r"profile_export_aiperf.json: the JSON ends early \(truncated at line"):
        benchfiles.read(bad)
    bad = _cut(BENCH / "sglang" / "glm-h200-fp8-c16.jsonl", tmp_path / "cut.jsonl", 0.5)
    with pytest.raises(BadFile, match=r"cut.jsonl.*ends early"):
        benchfiles.read(bad)


def test_a_csv_from_another_tool_is_named(tmp_path):
    f = tmp_path / "results.csv"
    f.write_text("model,gpu,tokens_per_second\nllama,h100,900\n")
    with pytest.raises(BadFile, match=r"results.csv: not a file this reads \(first line 'model,gpu,"):
        benchfiles.read(f)


def test_a_failed_start_names_the_field_and_the_error():
    with pytest.raises(BadFile) as e:
        benchfiles.read(BENCH / "logs" / "vllm-v1-gpt-oss-120b-h100-no-kv-memory.log")
    msg = str(e.value)
    assert "vllm-v1-gpt-oss-120b-h100-no-kv-memory.log, field 'kv_cache_bytes'" in msg
    assert "-2.14 GiB" in msg and "No available memory for the cache blocks" in msg and "\n" not in msg


def test_a_log_that_stops_before_the_kv_cache(tmp_path):
    f = tmp_path / "oom.log"
    f.write_text("INFO 01-01 00:00:00 model_runner.py:1115] Loading model weights took 65.97 GB\n"
                 "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    with pytest.raises(BadFile, match=r"oom.log, field 'kv_cache_tokens': no .* line: the engine did not size its "
                                      r"KV cache .*CUDA out of memory"):
        benchfiles.read(f)


def test_mixed_models_in_one_file(tmp_path):
    base = json.loads((BENCH / "vllm" / "llama-3.1-8b-sharegpt-1000.json").read_text())
    f = tmp_path / "mixed.json"
    f.write_text(json.dumps(base) + "\n" + json.dumps(dict(base, model_id="Qwen/Qwen2.5-7B-Instruct")) + "\n")
    with pytest.raises(BadFile, match=r"mixed.json, field 'model_id': the file mixes runs of 2 models"):
        benchfiles.read(f)
    log = tmp_path / "two.log"
    log.write_text("INFO Initializing an LLM engine (v0.6.4) with config: model='a/one', tensor_parallel_size=1\n"
                   "INFO Initializing an LLM engine (v0.6.4) with config: model='b/two', tensor_parallel_size=1\n"
                   "INFO # GPU blocks: 100, # CPU blocks: 0\n")
    with pytest.raises(BadFile, match=r"two.log, field 'model': the log starts 2 models"):
        benchfiles.read(log)


def test_a_field_of_the_wrong_type_is_named(tmp_path):
    base = json.loads((BENCH / "vllm" / "llama-3.1-8b-sharegpt-1000.json").read_text())
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(dict(base, output_throughput="fast")))
    with pytest.raises(BadFile, match=r"bad.json, field 'output_throughput': 'fast' is not a number"):
        benchfiles.read(f)
    f.write_text(json.dumps({k: v for k, v in base.items() if k != "duration"}))
    with pytest.raises(BadFile, match=r"not a file this reads"):       # no longer looks like a vLLM result
        benchfiles.read(f)
    f.write_text(json.dumps(dict(base, completed=0)))
    with pytest.raises(BadFile, match=r"field 'completed': 0 requests completed"):
        benchfiles.read(f)


def test_safe_read_regular_files_only_and_a_size_limit(tmp_path, monkeypatch):
    """Result files are read as every input file is (files.read_input): a folder or FIFO is a wrong value (exit 2,
    never opened: a FIFO would block), as is a file over the limit."""
    with pytest.raises(InvalidInput, match="it is a folder"):
        benchfiles.read(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InvalidInput, match="it is a FIFO"):
        benchfiles.read(fifo)
    big = tmp_path / "big.json"
    big.write_text("{}" + " " * 100)
    monkeypatch.setitem(files.INPUT_LIMITS, "benchmark", 10)
    with pytest.raises(InvalidInput, match=r"big.json is .* larger than"):
        benchfiles.read_bytes(big)
    (tmp_path / "empty.json").write_text("")
    with pytest.raises(BadFile, match="empty.json: the file is empty"):
        benchfiles.read(tmp_path / "empty.json")
    (tmp_path / "bin.log").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BadFile, match="bin.log: not UTF-8 text"):
        benchfiles.read(tmp_path / "bin.log")
