"""vLLM serving benchmark results: ``vllm bench serve --save-result`` and ``benchmarks/benchmark_serving.py``.

Written from vllm-project/vllm ``vllm/benchmarks/serve.py`` at commit
009e6d4a1cd6ba3fb2a9fc00f4ec06f5297232a1 (``benchmark()`` builds ``result``; ``main`` adds the setup keys and
``json.dump``s it):

* setup: ``date``, ``backend`` (and ``endpoint_type``), ``label``, ``model_id``, ``tokenizer_id``, ``num_prompts``,
  ``request_rate`` (a number, or the string ``"inf"``), ``burstiness``, ``max_concurrency`` (null when not set),
  and any ``--metadata KEY=VALUE`` pairs (e.g. ``tensor_parallel_size=2``, ``gpu=H100``);
* totals: ``duration`` (s), ``completed``, ``failed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput`` (req/s), ``output_throughput`` and ``total_token_throughput`` (tok/s);
* per metric of ``--percentile-metrics`` (default ttft,tpot,itl; e2el optional): ``mean_<m>_ms``,
  ``median_<m>_ms``, ``std_<m>_ms`` and ``p<P>_<m>_ms`` for each ``--metric-percentiles`` (default 99);
* with ``--save-detailed``: the per-request arrays ``input_lens``, ``output_lens``, ``ttfts`` (s), ``itls``
  (s, one list per request), ``start_times``, ``generated_texts``, ``errors``; ``latencies`` always in newer
  versions.

``--append-result`` writes one JSON object per line into the same file: each line is one run.
TPOT there is (latency - TTFT) / (output tokens - 1) per request, averaged over requests.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from inference_ledger.io.benchfiles.core import BadFile, Run, serving_run

TOOL = "vllm bench serve"
#: --metadata keys this reader understands (vLLM writes them as strings).
_META_INT = {"tensor_parallel_size": "tp", "tp": "tp", "pipeline_parallel_size": "pp", "pp": "pp",
             "num_gpus": "gpus", "gpus": "gpus"}


def _is_result(obj: Any) -> bool:
    return isinstance(obj, dict) and "duration" in obj and "output_throughput" in obj \
        and ("model_id" in obj or "endpoint_type" in obj or "date" in obj) and "dataset_name" not in obj


def detect(text: str, parsed: Any) -> bool:
    if isinstance(parsed, list):
        return bool(parsed) and all(isinstance(o, dict) for o in parsed) and _is_result(parsed[0])
    return _is_result(parsed)


def _meta_int(path, obj: dict, key: str) -> Optional[int]:
    v = obj.get(key)
    if v is None:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise BadFile(path, key, f"{v!r} is not a number") from None
    if f != int(f) or f < 1:
        raise BadFile(path, key, f"{v!r} is not a whole number >= 1")
    return int(f)


def run_of(path: str, obj: dict, where: str = "") -> Run:
    r = serving_run(path, obj, where, TOOL, total_throughput="total_token_throughput", failed="failed",
                    latencies={m: m for m in ("ttft", "tpot", "itl", "e2el")},
                    arrays=("input_lens", "output_lens", "ttfts", "latencies", "itls", "errors"),
                    model=obj.get("model_id") or None)
    if r.ttft_mean_seconds is None and r.tpot_mean_seconds is None:
        raise BadFile(path, f"{where}mean_ttft_ms", "missing (and mean_tpot_ms too): the run has no latencies")
    for key, attr in _META_INT.items():
        v = _meta_int(path, obj, key)
        if v is not None:
            setattr(r, attr, v)
    for key in ("gpu", "gpu_name", "hardware"):
        if obj.get(key):
            r.gpu = str(obj[key])
    if r.request_rate is not None and math.isinf(r.request_rate) and r.concurrency is None:
        r.concurrency = float(r.completed + (r.failed or 0))
        r.notes.append(f"all requests sent at once with no --max-concurrency: the client's concurrency is the "
                       f"{r.concurrency:g} requests")
    return r


def read(path: str, text: str, parsed: Any) -> list[Run]:
    objs = parsed if isinstance(parsed, list) else [parsed]
    many = len(objs) > 1
    runs = [run_of(path, o, f"line {n}: " if many else "") for n, o in enumerate(objs, 1)]
    models = list(dict.fromkeys(r.model for r in runs if r.model))
    if len(models) > 1:
        raise BadFile(path, "model_id", f"the file mixes runs of {len(models)} models ({', '.join(models)}): "
                                        "give one model's runs per file")
    return runs


