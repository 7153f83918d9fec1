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

from inference_ledger.io.benchfiles.core import BadFile, Run, number, serving_run

TOOL = "sglang.bench_serving"


def _is_result(obj: Any) -> bool:
    return isinstance(obj, dict) and "duration" in obj and "dataset_name" in obj and "output_throughput" in obj


def detect(text: str, parsed: Any) -> bool:
    objs = parsed if isinstance(parsed, list) else [parsed]
    return bool(objs) and all(isinstance(o, dict) for o in objs) and _is_result(objs[0])


def run_of(path: str, obj: dict, where: str) -> Run:
    r = serving_run(path, obj, where, TOOL, total_throughput="total_throughput", failed=None,
                    latencies={"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e_latency"},
                    arrays=("input_lens", "output_lens", "ttfts", "itls", "errors"), engine=obj.get("backend"))
    if r.total_tokens_per_second is None and r.duration_seconds:
        r.total_tokens_per_second = (r.total_input_tokens + r.total_output_tokens) / r.duration_seconds
    if r.ttft_mean_seconds is None:
        raise BadFile(path, f"{where}mean_ttft_ms", "missing: the run has no latencies")
    measured = number(path, obj, "concurrency", where=where)
    if measured is not None:
        r.notes.append(f"mean requests in flight {measured:.2f} (SGLang's 'concurrency')")
    return r


def read(path: str, text: str, parsed: Any) -> list[Run]:
    objs = parsed if isinstance(parsed, list) else [parsed]
    many = len(objs) > 1
    return [run_of(path, o, f"line {n}: " if many else "") for n, o in enumerate(objs, 1)]
