"""SGLang serving benchmark results: ``python -m sglang.bench_serving --output-file F.jsonl``.

Written from sgl-project/sglang ``python/sglang/bench_serving.py`` at commit
0033168f0f58b2bc05aa0273bd475d9c01bafb1c (end of ``benchmark()``): each run *appends* one JSON object and a
newline to the file, so a sweep of concurrencies is one JSONL file, one line per run.  The keys:

* arguments: ``backend``, ``dataset_name``, ``request_rate`` (``Infinity`` when unset: Python's json writes
  the bare word), ``max_concurrency``, ``sharegpt_output_len``, ``random_input_len``, ``random_output_len``,
  ``random_range_ratio`` (newer versions add ``tag``);
* results: ``duration`` (s), ``completed``, ``total_input_tokens``, ``total_output_tokens``,
  ``total_output_tokens_retokenized``, ``request_throughput``, ``input_throughput``, ``output_throughput``
  (newer: ``total_throughput``), and in ms ``mean/median/std/p99_e2e_latency_ms``,
  ``mean/median/std/p99_ttft_ms``, ``mean/median/std/p99_tpot_ms``, ``mean/median/std/p95/p99_itl_ms``;
  ``concurrency`` is the *measured* mean requests in flight (sum of latencies / duration), not the cap;
* with ``--output-details``: ``input_lens``, ``output_lens``, ``ttfts``, ``itls``, ``generated_texts``, ``errors``.

The file names no model (the model is a command-line argument only), so ``calibrate``'s ``--model`` says it.
"""

from __future__ import annotations

from typing import Any

from inference_ledger.io.benchfiles.core import BadFile, Run, ms, number, whole

TOOL = "sglang.bench_serving"
_REQUIRED = ("duration", "completed", "total_input_tokens", "total_output_tokens", "output_throughput")


def _is_result(obj: Any) -> bool:
    return isinstance(obj, dict) and "duration" in obj and "dataset_name" in obj and "output_throughput" in obj


def detect(text: str, parsed: Any) -> bool:
    objs = parsed if isinstance(parsed, list) else [parsed]
    return bool(objs) and all(isinstance(o, dict) for o in objs) and _is_result(objs[0])


def run_of(path: str, obj: dict, where: str) -> Run:
    for k in _REQUIRED:
        number(path, obj, k, required=True, where=where)
    completed = whole(path, obj, "completed", where=where)
    if not completed:
        raise BadFile(path, f"{where}completed", "0 requests completed: the run measured nothing")
    r = Run(path=path, tool=TOOL, engine=obj.get("backend"),
            concurrency=number(path, obj, "max_concurrency", where=where),
            request_rate=number(path, obj, "request_rate", where=where),
            completed=completed,
            duration_seconds=number(path, obj, "duration", where=where),
            total_input_tokens=number(path, obj, "total_input_tokens", where=where),
            total_output_tokens=number(path, obj, "total_output_tokens", where=where),
            request_throughput=number(path, obj, "request_throughput", where=where),
            output_tokens_per_second=number(path, obj, "output_throughput", where=where),
            total_tokens_per_second=number(path, obj, "total_throughput", where=where))
    r.input_tokens = r.total_input_tokens / completed
    r.output_tokens = r.total_output_tokens / completed
    if r.total_tokens_per_second is None and r.duration_seconds:
        r.total_tokens_per_second = (r.total_input_tokens + r.total_output_tokens) / r.duration_seconds
    for m, key in (("ttft", "ttft"), ("tpot", "tpot"), ("itl", "itl"), ("e2el", "e2e_latency")):
        setattr(r, f"{m}_mean_seconds", ms(number(path, obj, f"mean_{key}_ms", where=where)))
        setattr(r, f"{m}_median_seconds", ms(number(path, obj, f"median_{key}_ms", where=where)))
        setattr(r, f"{m}_p99_seconds", ms(number(path, obj, f"p99_{key}_ms", where=where)))
    if r.ttft_mean_seconds is None:
        raise BadFile(path, f"{where}mean_ttft_ms", "missing: the run has no latencies")
    measured = number(path, obj, "concurrency", where=where)
    if measured is not None:
        r.notes.append(f"mean requests in flight {measured:.2f} (SGLang's 'concurrency')")
    for key in ("input_lens", "output_lens", "ttfts", "itls", "errors"):
        if isinstance(obj.get(key), list):
            r.per_request[key] = obj[key]
    return r


def read(path: str, text: str, parsed: Any) -> list[Run]:
    objs = parsed if isinstance(parsed, list) else [parsed]
    many = len(objs) > 1
    return [run_of(path, o, f"line {n}: " if many else "") for n, o in enumerate(objs, 1)]
