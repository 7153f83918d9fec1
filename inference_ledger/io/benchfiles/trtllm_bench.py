"""TensorRT-LLM benchmark reports: ``trtllm-bench ... throughput|latency --report_json FILE``.

Written from NVIDIA/TensorRT-LLM ``tensorrt_llm/bench/dataclasses/reporting.py`` at commit
0249976575050d2c624a5f285683c66de311a3b7 (``ReportUtility.get_statistics_dict``, the dict the report JSON holds):

* ``engine``: ``model``, ``model_path``, ``version``, ``backend``, ``dtype``, ``kv_cache_dtype``, ``quantization``;
* ``machine``: ``name``, ``memory.total`` (torch's total_memory / 1024**3: GiB), ``clocks.mem`` (or null);
* ``world_info``: ``tp_size``, ``pp_size``, ``ep_size``, ``world_size``, ``max_batch_size``, ``max_num_tokens``,
  ``kv_cache_percentage``, ``issue_rate``;
* ``request_info``: ``num_requests``, ``avg_num_concurrent_requests``, ``avg_input_length``, ``avg_output_length``;
* ``performance``: ``total_latency_ms``, ``avg_request_latency_ms``, ``request_throughput_req_s``,
  ``system_output_throughput_tok_s``, ``system_total_throughput_tok_s``, ``output_throughput_per_user_tok_s``,
  ``output_throughput_per_gpu_tok_s``, ``request_latency_percentiles_ms`` (``average``, ``p50``, ``p99`` ...);
* ``streaming_metrics`` (streaming runs): ``avg_ttft_ms``, ``avg_tpot_ms``, ``ttft_percentiles``,
  ``tpot_percentiles`` (ms, keys ``minimum``/``maximum``/``average``/``p50``/``p90``/``p95``/``p99``).

The report holds the *measured* mean requests in flight, not the ``--concurrency`` cap; a closed loop keeps
the cap in flight, so the rounded mean stands for it (said in the run's notes).
"""

from __future__ import annotations

from typing import Any

from inference_ledger.io.benchfiles.core import GIB, BadFile, Run, ms, number, whole

TOOL = "trtllm-bench"


def detect(text: str, parsed: Any) -> bool:
    return isinstance(parsed, dict) and isinstance(parsed.get("performance"), dict) \
        and isinstance(parsed.get("world_info"), dict)


def _section(path, obj: dict, key: str, required: bool = True) -> dict:
    v = obj.get(key)
    if not isinstance(v, dict):
        if required:
            raise BadFile(path, key, "missing")
        return {}
    return v


def read(path: str, text: str, parsed: Any) -> list[Run]:
    eng = _section(path, parsed, "engine", required=False)
    world = _section(path, parsed, "world_info")
    req = _section(path, parsed, "request_info")
    perf = _section(path, parsed, "performance")
    stream = _section(path, parsed, "streaming_metrics", required=False)
    machine = parsed.get("machine") if isinstance(parsed.get("machine"), dict) else {}
    n = whole(path, req, "num_requests", required=True, where="request_info.")
    if not n:
        raise BadFile(path, "request_info.num_requests", "0 requests: the run measured nothing")
    r = Run(path=path, tool=TOOL, model=eng.get("model") or None, engine="TensorRT-LLM " + str(eng.get("version", "")).strip(),
            gpu=machine.get("name") or None,
            tp=whole(path, world, "tp_size", where="world_info."), pp=whole(path, world, "pp_size", where="world_info."),
            ep=whole(path, world, "ep_size", where="world_info."), gpus=whole(path, world, "world_size", where="world_info."),
            completed=n,
            input_tokens=number(path, req, "avg_input_length", required=True, where="request_info."),
            output_tokens=number(path, req, "avg_output_length", required=True, where="request_info."),
            duration_seconds=ms(number(path, perf, "total_latency_ms", where="performance.")),
            request_throughput=number(path, perf, "request_throughput_req_s", where="performance."),
            output_tokens_per_second=number(path, perf, "system_output_throughput_tok_s", required=True,
                                            where="performance."),
            total_tokens_per_second=number(path, perf, "system_total_throughput_tok_s", where="performance."),
            e2el_mean_seconds=ms(number(path, perf, "avg_request_latency_ms", where="performance.")))
    mem = number(path, machine, "memory.total", where="machine.")
    if mem:
        r.gpu_memory_bytes = mem * GIB
    r.total_input_tokens = r.input_tokens * n
    r.total_output_tokens = r.output_tokens * n
    lat = perf.get("request_latency_percentiles_ms")
    if isinstance(lat, dict):
        r.e2el_median_seconds = ms(number(path, lat, "p50", where="performance.request_latency_percentiles_ms."))
        r.e2el_p99_seconds = ms(number(path, lat, "p99", where="performance.request_latency_percentiles_ms."))
    if stream:
        r.ttft_mean_seconds = ms(number(path, stream, "avg_ttft_ms", where="streaming_metrics."))
        r.tpot_mean_seconds = ms(number(path, stream, "avg_tpot_ms", where="streaming_metrics."))
        for key, short in (("ttft_percentiles", "ttft"), ("tpot_percentiles", "tpot")):
            d = stream.get(key)
            if isinstance(d, dict):
                setattr(r, f"{short}_median_seconds", ms(number(path, d, "p50", where=f"streaming_metrics.{key}.")))
                setattr(r, f"{short}_p99_seconds", ms(number(path, d, "p99", where=f"streaming_metrics.{key}.")))
    else:
        r.notes.append("not a streaming run: no TTFT or TPOT, only request latency")
    inflight = number(path, req, "avg_num_concurrent_requests", where="request_info.")
    if inflight:
        r.concurrency = float(max(1, round(inflight)))
        r.notes.append(f"concurrency {r.concurrency:g} = the measured mean requests in flight {inflight:.4f}")
    return [r]
