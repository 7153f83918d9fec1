"""What every reader shares: the records (:class:`Run`, :class:`Startup`), the one-line :class:`BadFile`, the
safe read (regular files, a size limit, UTF-8) and the number/JSON helpers (see
:mod:`inference_ledger.io.benchfiles`)."""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field, fields
from typing import Any, Optional, Union

from inference_ledger.core.files import INPUT_LIMITS, FileFailed, InvalidInput, read_input, reason

#: Bytes per GiB: the engines print memory in GiB (vLLM's and SGLang's "GB" are GiB too, see startup_logs).
GIB = float(2**30)
#: Largest file a reader opens (a --save-detailed vLLM result of 10k requests is ~30 MB).
MAX_BYTES = INPUT_LIMITS["benchmark"]


class BadFile(InvalidInput):
    """A file given to a reader is not what it should be: one line naming the file and the field (exit 2)."""

    def __init__(self, path: Union[str, os.PathLike], field_: str, why: str):
        self.path, self.field = os.fspath(path), field_
        where = f", field '{field_}'" if field_ else ""
        super().__init__(f"{self.path}{where}: {why}")


@dataclass
class Run:
    """One benchmark run (one client concurrency or request rate), in base units; None = the file does not say."""

    path: str
    tool: str
    model: Optional[str] = None
    gpu: Optional[str] = None                  # as the file names it
    gpu_memory_bytes: Optional[float] = None   # as the file states it
    gpus: Optional[int] = None
    tp: Optional[int] = None
    pp: Optional[int] = None
    ep: Optional[int] = None
    engine: Optional[str] = None               # serving engine as the file names it
    concurrency: Optional[float] = None        # the client's cap on requests in flight (closed loop)
    request_rate: Optional[float] = None       # requests/s offered; math.inf = all at once
    completed: Optional[int] = None
    failed: Optional[int] = None
    duration_seconds: Optional[float] = None
    total_input_tokens: Optional[float] = None
    total_output_tokens: Optional[float] = None
    input_tokens: Optional[float] = None       # mean prompt tokens per request
    output_tokens: Optional[float] = None      # mean generated tokens per request
    request_throughput: Optional[float] = None
    output_tokens_per_second: Optional[float] = None
    total_tokens_per_second: Optional[float] = None
    ttft_mean_seconds: Optional[float] = None
    ttft_median_seconds: Optional[float] = None
    ttft_p99_seconds: Optional[float] = None
    tpot_mean_seconds: Optional[float] = None
    tpot_median_seconds: Optional[float] = None
    tpot_p99_seconds: Optional[float] = None
    itl_mean_seconds: Optional[float] = None
    itl_median_seconds: Optional[float] = None
    itl_p99_seconds: Optional[float] = None
    e2el_mean_seconds: Optional[float] = None
    e2el_median_seconds: Optional[float] = None
    e2el_p99_seconds: Optional[float] = None
    per_request: dict[str, list] = field(default_factory=dict)   # input_lens, output_lens, ttfts, latencies ...
    notes: list[str] = field(default_factory=list)

    kind = "benchmark"

    @property
    def tpot_seconds(self) -> Optional[float]:
        """Mean time per output token after the first: TPOT where the tool prints it, else its mean ITL
        (AIPerf/genai-perf ITL is (latency - TTFT) / (output tokens - 1), the same quantity)."""
        return self.tpot_mean_seconds if self.tpot_mean_seconds is not None else self.itl_mean_seconds


@dataclass
class Startup:
    """One engine start-up log, in base units; None = the log does not say."""

    path: str
    tool: str
    engine: str                                 # vllm | sglang
    engine_version: Optional[str] = None        # V0 / V1 (from the log's wording)
    model: Optional[str] = None
    tp: Optional[int] = None
    pp: Optional[int] = None
    gpu_memory_bytes: Optional[float] = None    # total memory of one GPU as the engine saw it
    gpu_memory_utilization: Optional[float] = None
    weights_bytes: Optional[float] = None       # per GPU
    non_torch_bytes: Optional[float] = None
    activation_bytes: Optional[float] = None
    kv_cache_bytes: Optional[float] = None      # per GPU
    kv_cache_tokens: Optional[int] = None
    kv_blocks: Optional[int] = None
    block_size: Optional[int] = None
    max_model_len: Optional[int] = None
    max_concurrency: Optional[float] = None     # sequences of max_model_len the KV cache holds
    cuda_graph_bytes: Optional[float] = None
    max_running_requests: Optional[int] = None
    max_num_batched_tokens: Optional[int] = None
    started: bool = True
    error: Optional[str] = None                 # the engine's refusal, when it did not start
    notes: list[str] = field(default_factory=list)

    kind = "startup"


Record = Union[Run, Startup]


def values(rec: Record) -> dict[str, Any]:
    """A record's fields as a plain dict (for tests and JSON)."""
    return {f.name: getattr(rec, f.name) for f in fields(rec)}


# ----------------------------------------------------------------------------------------
# safe reading
# ----------------------------------------------------------------------------------------


def read_bytes(path: Union[str, os.PathLike]) -> bytes:
    """A result file's bytes, read as every input file is (:func:`inference_ledger.core.files.read_input`, kind
    ``benchmark``): a path that is not a regular file or is over the limit is a wrong value (exit 2), a file that
    cannot be read FileFailed (exit 1), each in one line naming the file."""
    return read_input(path, "benchmark")


def read_text(path: Union[str, os.PathLike]) -> str:
    raw = read_bytes(path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise BadFile(path, "", f"not UTF-8 text (byte {e.start + 1} is 0x{raw[e.start]:02x})") from None


# ----------------------------------------------------------------------------------------
# helpers the readers share
# ----------------------------------------------------------------------------------------

#: Seconds per unit of the time units the tools print.
TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def number(path, obj: dict, key: str, *, required: bool = False, where: str = "") -> Optional[float]:
    """obj[key] as a finite float (None when absent and not required); BadFile naming the field otherwise."""
    name = f"{where}{key}"
    if key not in obj or obj[key] is None:
        if required:
            raise BadFile(path, name, "missing")
        return None
    v = obj[key]
    if isinstance(v, str) and v.strip().lower() in ("inf", "infinity"):
        return math.inf
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise BadFile(path, name, f"{v!r} is not a number")
    v = float(v)
    if math.isnan(v) or v < 0:
        raise BadFile(path, name, f"{v!r} is not a number >= 0")
    return v


def whole(path, obj: dict, key: str, *, required: bool = False, where: str = "") -> Optional[int]:
    v = number(path, obj, key, required=required, where=where)
    if v is None or math.isinf(v):
        return None
    if v != int(v):
        raise BadFile(path, f"{where}{key}", f"{v!r} is not a whole number")
    return int(v)


def ms(v: Optional[float]) -> Optional[float]:
    return None if v is None else v * 1e-3


#: Keys every serving-benchmark result (vLLM's, SGLang's) holds: a run without them measured nothing.
SERVING_REQUIRED = ("duration", "completed", "total_input_tokens", "total_output_tokens", "output_throughput")


def serving_run(path, obj: dict, where: str, tool: str, *, total_throughput: str, failed: Optional[str],
                latencies: dict[str, str], arrays: tuple[str, ...], **known: Any) -> Run:
    """One run of a serving benchmark's result object (``vllm bench serve``, ``sglang.bench_serving``, which share
    their key names): the totals, the means per request, ``mean_/median_/p99_<key>_ms`` of each of ``latencies``
    (metric -> the tool's key) in seconds and the per-request ``arrays`` there are; ``total_throughput`` and
    ``failed`` name the tool's own keys, ``known`` what the caller read itself."""
    for k in SERVING_REQUIRED:
        number(path, obj, k, required=True, where=where)
    completed = whole(path, obj, "completed", where=where)
    if not completed:
        raise BadFile(path, f"{where}completed", "0 requests completed: the run measured nothing")
    r = Run(path=path, tool=tool, **known,
            concurrency=number(path, obj, "max_concurrency", where=where),
            request_rate=number(path, obj, "request_rate", where=where),
            completed=completed, failed=whole(path, obj, failed, where=where) if failed else None,
            duration_seconds=number(path, obj, "duration", where=where),
            total_input_tokens=number(path, obj, "total_input_tokens", where=where),
            total_output_tokens=number(path, obj, "total_output_tokens", where=where),
            request_throughput=number(path, obj, "request_throughput", where=where),
            output_tokens_per_second=number(path, obj, "output_throughput", where=where),
            total_tokens_per_second=number(path, obj, total_throughput, where=where))
    r.input_tokens = r.total_input_tokens / completed
    r.output_tokens = r.total_output_tokens / completed
    for m, key in latencies.items():
        for stat in ("mean", "median", "p99"):
            setattr(r, f"{m}_{stat}_seconds", ms(number(path, obj, f"{stat}_{key}_ms", where=where)))
    for key in arrays:
        if isinstance(obj.get(key), list):
            r.per_request[key] = obj[key]
    return r


def load_json(path, text: str) -> Any:
    """The JSON document in ``text``; BadFile saying where it is cut short or broken."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()) or not text.rstrip().endswith(("}", "]")):
            why = f"the JSON ends early (truncated at line {e.lineno}, column {e.colno})"
        else:
            why = f"not valid JSON at line {e.lineno}, column {e.colno}: {e.msg}"
        raise BadFile(path, "", why) from None


def json_lines(path, text: str) -> list[Any]:
    """Objects of a JSON-lines file (one per non-blank line); BadFile naming the line that is cut short or broken."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError as e:
            cut = e.pos >= len(line.rstrip()) or not line.rstrip().endswith(("}", "]"))
            raise BadFile(path, f"line {n}", "the JSON ends early (truncated)" if cut else
                          f"not valid JSON at column {e.colno}: {e.msg}") from None
    return out


