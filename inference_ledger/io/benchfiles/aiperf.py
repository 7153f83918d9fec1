"""NVIDIA AIPerf and genai-perf profile exports: ``profile_export_aiperf.json|csv``, ``*_genai_perf.json|csv``.

Written from the tools' exporters:

* ai-dynamo/aiperf at commit db4f6397d11ee2d4cfbb41f70b2327315163dcf0: ``aiperf/exporters/json_exporter.py`` and
  ``aiperf/common/models/export_models.py`` (``JsonExportData``: one object per metric tag, ``{"unit", "avg",
  "p1" .. "p99", "min", "max", "std"}``, in display units, plus ``input_config`` = the user config:
  ``endpoint.model_names``, ``loadgen.concurrency`` / ``loadgen.request_rate``), and
  ``aiperf/exporters/csv_exporter.py`` (two sections: ``Metric,avg,min,max,p1..p99,std`` rows for per-request
  metrics, then a blank line and ``Metric,Value`` rows; each name is the metric's header with its unit in
  parentheses, counts without one);
* triton-inference-server/perf_analyzer at commit 263c5f6e0c7a6c15472a54409174981f67930cfe:
  ``genai-perf/genai_perf/export_data/json_exporter.py`` (the statistics dict, whose layout AIPerf copies, plus
  ``input_config``: ``model_names`` and ``perf_analyzer.stimulus.concurrency``; older releases a flat
  ``model`` / ``concurrency``) and ``csv_exporter.py`` (the same two CSV sections).

Metric tags read: ``request_throughput``, ``request_latency``, ``request_count``, ``time_to_first_token``,
``inter_token_latency`` (per request (latency - TTFT) / (output tokens - 1): vLLM's TPOT), ``output_token_throughput``,
``input_sequence_length``, ``output_sequence_length``, ``benchmark_duration``.  Times are converted by the
unit each metric states (ms, s, ns).  A CSV names neither the model nor the concurrency; genai-perf's
artifact folder does (``<model>-<service>-<endpoint>-concurrency<N>``), and is read when it is there.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import Any, Optional

from inference_ledger.io.benchfiles.core import TIME_UNITS, BadFile, Run, number

TOOL = "AIPerf / genai-perf"
#: tag -> (Run fields for avg, p50, p99) for time metrics
_TIMES = {"time_to_first_token": "ttft", "inter_token_latency": "itl", "request_latency": "e2el"}
#: CSV metric names (lower case, unit stripped) -> JSON tag
_CSV_NAMES = {"time to first token": "time_to_first_token", "inter token latency": "inter_token_latency",
              "request latency": "request_latency", "output token throughput": "output_token_throughput",
              "request throughput": "request_throughput", "request count": "request_count",
              "output sequence length": "output_sequence_length", "input sequence length": "input_sequence_length",
              "benchmark duration": "benchmark_duration"}
_CONCURRENCY_DIR = re.compile(r"concurrency(\d+)")


def detect_json(text: str, parsed: Any) -> bool:
    return isinstance(parsed, dict) and isinstance(parsed.get("time_to_first_token", parsed.get("request_latency")),
                                                   dict) and "unit" in (parsed.get("request_latency") or
                                                                        parsed.get("time_to_first_token"))


def detect_csv(text: str, parsed: Any) -> bool:
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    return parsed is None and first.replace(" ", "").lower().startswith(("metric,avg", "metric,value"))


def _seconds(path, tag: str, unit: str) -> float:
    u = (unit or "").strip().lower()
    if u not in TIME_UNITS:
        raise BadFile(path, f"{tag}.unit", f"{unit!r} is not a time unit (ms, s, ns, us)")
    return TIME_UNITS[u]


def _stat(path, d: dict, tag: str, key: str) -> Optional[float]:
    return number(path, d, key, where=f"{tag}.") if isinstance(d, dict) else None


def _fill(path, r: Run, stats: dict[str, dict]) -> Run:
    """Fill a run from {tag: {"unit", "avg", "p50", "p99", ...}}."""
    for tag, short in _TIMES.items():
        d = stats.get(tag)
        if not isinstance(d, dict):
            continue
        f = _seconds(path, tag, d.get("unit", "ms"))
        for key, attr in (("avg", "mean"), ("p50", "median"), ("p99", "p99")):
            v = _stat(path, d, tag, key)
            setattr(r, f"{short}_{attr}_seconds", None if v is None else v * f)
    if r.ttft_mean_seconds is None and r.e2el_mean_seconds is None:
        raise BadFile(path, "time_to_first_token", "missing (and request_latency too): the run has no latencies")

    def avg(tag):
        d = stats.get(tag)
        return _stat(path, d, tag, "avg") if isinstance(d, dict) else None

    r.request_throughput = avg("request_throughput")
    r.output_tokens_per_second = avg("output_token_throughput")
    r.input_tokens = avg("input_sequence_length")
    r.output_tokens = avg("output_sequence_length")
    if r.output_tokens_per_second is None and r.request_throughput is not None and r.output_tokens is not None:
        r.output_tokens_per_second = r.request_throughput * r.output_tokens
        r.notes.append("output tokens/s = request throughput x mean output sequence length (no "
                       "output_token_throughput in the file)")
    count = avg("request_count")
    r.completed = int(count) if count is not None else None
    d = stats.get("benchmark_duration")
    if isinstance(d, dict) and avg("benchmark_duration") is not None:
        r.duration_seconds = avg("benchmark_duration") * _seconds(path, "benchmark_duration", d.get("unit", "sec"))
    if r.completed and r.input_tokens is not None:
        r.total_input_tokens = r.completed * r.input_tokens
    if r.completed and r.output_tokens is not None:
        r.total_output_tokens = r.completed * r.output_tokens
    return r


def _config(path, r: Run, cfg: Any) -> None:
    if not isinstance(cfg, dict):
        return
    ep = cfg.get("endpoint") if isinstance(cfg.get("endpoint"), dict) else {}
    names = ep.get("model_names") or cfg.get("model_names") or cfg.get("model")
    if isinstance(names, list) and names:
        r.model = str(names[0])
        if len(names) > 1:
            r.notes.append(f"the run names {len(names)} models; the first, {names[0]}, is used")
    elif isinstance(names, str) and names:
        r.model = names
    load = cfg.get("loadgen") if isinstance(cfg.get("loadgen"), dict) else {}
    stim = (cfg.get("perf_analyzer") or {}).get("stimulus") if isinstance(cfg.get("perf_analyzer"), dict) else None
    for src, where in ((load, "input_config.loadgen."), (stim if isinstance(stim, dict) else {},
                                                         "input_config.perf_analyzer.stimulus."),
                       (cfg, "input_config.")):
        c = number(path, src, "concurrency", where=where)
        if c is not None and r.concurrency is None:
            r.concurrency = c
        q = number(path, src, "request_rate", where=where)
        if q is not None and r.request_rate is None:
            r.request_rate = q


def read_json(path: str, text: str, parsed: Any) -> list[Run]:
    r = _fill(path, Run(path=path, tool=TOOL), parsed)
    _config(path, r, parsed.get("input_config"))
    if parsed.get("was_cancelled"):
        r.notes.append("the run was cancelled before it finished")
    return [r]


def _csv_name(cell: str) -> tuple[str, str]:
    """'Time To First Token (ms)' -> ('time_to_first_token', 'ms'); unknown names keep their words."""
    m = re.match(r"^(.*?)\s*(?:\(([^()]*)\))?\s*$", cell.strip())
    name, unit = (m.group(1), m.group(2) or "") if m else (cell, "")
    return _CSV_NAMES.get(name.strip().lower(), name.strip().lower()), unit


def read_csv(path: str, text: str, parsed: Any) -> list[Run]:
    rows = list(csv.reader(io.StringIO(text)))
    stats: dict[str, dict] = {}
    header: Optional[list[str]] = None
    for n, row in enumerate(rows, 1):
        if not any(c.strip() for c in row):
            header = None
            continue
        if row[0].strip().lower() == "metric":
            header = [c.strip().lower() for c in row]
            continue
        if header is None:
            raise BadFile(path, f"line {n}", "a metric row before its 'Metric,...' header")
        tag, unit = _csv_name(row[0])
        d: dict[str, Any] = {"unit": unit}
        for key, cell in zip(header[1:], row[1:]):
            key = "avg" if key == "value" else key
            if cell.strip() == "":
                continue
            try:
                d[key] = float(cell)
            except ValueError:
                raise BadFile(path, f"line {n}, column '{key}'", f"{cell!r} is not a number") from None
        stats[tag] = d
    r = _fill(path, Run(path=path, tool=TOOL), stats)
    m = _CONCURRENCY_DIR.search(Path(path).parent.name)
    if m:
        r.concurrency = float(m.group(1))
        r.notes.append(f"concurrency {m.group(1)} from the artifact folder name {Path(path).parent.name}")
    return [r]
