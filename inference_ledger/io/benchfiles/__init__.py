"""Readers for the files serving benchmarks and engines write: results in, measured points out.

One reader per format, each written from the tool's own source (cited in its module):

* :mod:`.vllm_bench`   ``vllm bench serve --save-result`` / ``benchmarks/benchmark_serving.py`` result JSON
  (also ``--append-result``: one JSON object per line);
* :mod:`.sglang_bench` ``python -m sglang.bench_serving --output-file`` JSONL (one object per run);
* :mod:`.aiperf`       NVIDIA AIPerf ``profile_export_aiperf.json`` / ``.csv`` and genai-perf
  ``profile_export_genai_perf.json`` / ``.csv`` (the same two layouts: AIPerf mimics genai-perf);
* :mod:`.trtllm_bench` ``trtllm-bench throughput|latency --report_json`` report;
* :mod:`.startup_logs` vLLM (V0 and V1) and SGLang server start-up logs: weights, non-torch and activation
  memory, KV cache memory and tokens, maximum concurrency, CUDA-graph memory.

:func:`read` picks the reader from the contents (never the name alone) and returns
:class:`Run` (one benchmark run at one concurrency) and :class:`Startup` (one engine start)
records in base units: seconds, bytes, tokens, requests/s, tokens/s.  A file that is not one
of these formats, is cut short, or lacks a field a reader needs is refused with one line
naming the file and the field (:class:`BadFile`, a wrong input: exit 2).

Files are read under the project's safe-read rules: regular files only (never a FIFO or a
device that could block), at most :data:`MAX_BYTES`, UTF-8 text.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable, Union

from inference_ledger.io.benchfiles import aiperf, sglang_bench, startup_logs, trtllm_bench, vllm_bench
from inference_ledger.io.benchfiles.core import (GIB, MAX_BYTES, TIME_UNITS, BadFile, Record, Run, Startup, json_lines,
                                                 load_json, ms, number, read_bytes, read_text, values, whole)

__all__ = ["GIB", "MAX_BYTES", "TIME_UNITS", "BadFile", "Record", "Run", "Startup", "json_lines", "load_json", "ms",
           "number", "read", "read_all", "read_bytes", "read_text", "values", "whole"]


# ----------------------------------------------------------------------------------------
# dispatch
# ----------------------------------------------------------------------------------------

#: The formats, in the order their detectors are tried: (name, detector(text, parsed), reader(path, text, parsed)).
def _formats() -> list[tuple[str, Callable, Callable]]:
    return [
        ("trtllm-bench report JSON", trtllm_bench.detect, trtllm_bench.read),
        ("AIPerf / genai-perf profile export JSON", aiperf.detect_json, aiperf.read_json),
        ("AIPerf / genai-perf profile export CSV", aiperf.detect_csv, aiperf.read_csv),
        ("vLLM benchmark result JSON", vllm_bench.detect, vllm_bench.read),
        ("SGLang bench_serving JSONL", sglang_bench.detect, sglang_bench.read),
        ("vLLM / SGLang start-up log", startup_logs.detect, startup_logs.read),
    ]


FORMAT_NAMES = ("vLLM bench serve result JSON", "SGLang bench_serving JSONL", "AIPerf / genai-perf profile export "
                "JSON or CSV", "trtllm-bench report JSON", "vLLM or SGLang start-up log")


def _parsed(path, text: str) -> Any:
    """The text as JSON (a document, or a list of JSON lines), or None when it does not look like JSON."""
    s = text.lstrip()
    if not s.startswith(("{", "[")):
        return None
    lines = [ln for ln in s.splitlines() if ln.strip()]
    if s.startswith("{") and len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines) \
            and lines[0].rstrip().endswith("}"):
        return json_lines(path, text)          # JSON lines: vLLM --append-result, SGLang --output-file
    return load_json(path, text)


def read(path: Union[str, os.PathLike]) -> list[Record]:
    """Every measured record in one file, whichever format it is; BadFile naming the file (and field) otherwise."""
    p = os.fspath(path)
    text = read_text(p)
    if not text.strip():
        raise BadFile(p, "", "the file is empty")
    parsed = _parsed(p, text)
    for _name, detect, reader in _formats():
        if detect(text, parsed):
            recs = reader(p, text, parsed)
            if not recs:
                raise BadFile(p, "", "no measured run in the file")
            return recs
    head = text.strip().splitlines()[0][:80]
    raise BadFile(p, "", f"not a file this reads (first line {head!r}); it reads: {'; '.join(FORMAT_NAMES)}")


def read_all(paths: Iterable[Union[str, os.PathLike]]) -> list[Record]:
    out: list[Record] = []
    for p in paths:
        out.extend(read(p))
    return out


def stem(path: str) -> str:
    return Path(path).name
