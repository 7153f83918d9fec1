"""Server start-up logs of vLLM (V0 and V1) and SGLang: where each GPU's memory went, and the KV cache it got.

The lines read, and the source that prints each (memory is in GiB throughout, whatever the unit word says):

vLLM (vllm-project/vllm)

* V0 ``vllm/worker/worker.py`` (commit 6ae52299e0b5dc74b480709e4a08d93c8cb13916 and its history):
  0.6.4 ``Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=... peak_torch_memory=...
  non_torch_memory=0.35GiB kv_cache_size=3.81GiB gpu_memory_utilization=0.90``; 0.6.5 one ``key  value`` line
  each (``total_gpu_memory``, ``gpu_memory_utilization``, ``model weights take``, ``non_torch_memory``,
  ``PyTorch activation peak memory``, ``available_kv_cache_memory``); 0.6.6 onwards and V1 before 0.9
  ``the current vLLM instance can use total_gpu_memory (X GiB) x gpu_memory_utilization (U) = Y GiB`` and
  ``model weights take A GiB; non_torch_memory takes B GiB; PyTorch activation peak memory takes C GiB; the rest
  of the memory reserved for KV Cache is D GiB.``;
* ``Loading model weights took X GB`` (V0 ``model_runner.py``: bytes / 2**30, printed "GB") and V1
  ``vllm/v1/worker/gpu_model_runner.py`` (commit 4e1790651fc758c06c7a903dd4cd82364ac91b27)
  ``Model loading took X GiB and T seconds`` and ``Graph capturing finished in T secs, took X GiB``;
* V1 ``vllm/v1/worker/gpu_worker.py`` (commit 35d5cda123ec28581759b6d34cde8052314fb1e6)
  ``Available KV cache memory: X GiB``;
* V1 ``vllm/v1/core/kv_cache_utils.py`` (commit bbf906a88ba1a39104884c88c9811a4f968e4659)
  ``GPU KV cache size: N tokens`` and ``Maximum concurrency for L tokens per request: Xx`` (thousands separators
  since 0.8); V0 executors ``# GPU blocks: N, # CPU blocks: M`` (or ``# cuda blocks``) and the same concurrency line;
* the refusal to start, ``ValueError: The model's max seq len (L) is larger than the maximum number of tokens
  that can be stored in KV cache (N)``: the KV cache was sized (its figures are kept) but the engine did not start.

SGLang (sgl-project/sglang)

* ``python/sglang/srt/model_executor/model_runner.py`` (commit 01cc04e2b5b01ce379698a3fee1bd17706e1d0ec)
  ``Load weight end. type=..., dtype=..., avail mem=X GB, mem usage=Y GB.`` and ``Capture cuda graph end. Time
  elapsed: T s. mem usage=X GB. avail mem=Y GB.``;
* ``python/sglang/srt/mem_cache/memory_pool.py`` (commit 000ccdba94d4ed75d4fab7b1dac5f8ebcaaee7e8, where
  ``GB = 1024 * 1024 * 1024``) ``KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB`` (MLA: ``KV size``);
* the scheduler's ``max_total_num_tokens=N, chunked_prefill_size=..., max_prefill_tokens=...,
  max_running_requests=R, context_len=L``; ``server_args=ServerArgs(model_path='...', tp_size=T,
  mem_fraction_static=F, ...)``.

A log whose engine stopped before it sized its KV cache (out of memory while loading, no memory left for the
cache) is refused with one line naming the file and the missing field, and the error the log ends with.
Only the first rank's lines count (every TP worker prints the same ones).
"""

from __future__ import annotations

import re
from typing import Any, Optional

from inference_ledger.io.benchfiles.core import GIB, BadFile, Startup

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
_GIB = _NUM + r"\s*Gi?B"


def _f(s: str) -> float:
    return float(s.replace(",", ""))


def _first(pattern: str, text: str, flags: int = 0) -> Optional[re.Match]:
    return re.search(pattern, text, flags)


def _bytes(gib: str) -> float:
    return _f(gib) * GIB


def _whole(s: str) -> int:
    return int(_f(s))


#: Lines that mark each engine's log (the mixed-log check reads these); a vLLM log is also told by the lines of
#: ``_VLLM_ALSO`` alone.
_SGLANG_LINES = ("KV Cache is allocated", "Load weight end", "max_total_num_tokens", "ServerArgs(")
_VLLM_LINES = ("Memory profiling", "GPU KV cache size", "# GPU blocks", "model weights take", "Model loading took",
               "Loading model weights took", "LLM engine")
_VLLM_ALSO = ("# CUDA blocks", "# cuda blocks", "Maximum concurrency for", "vllm serve")
_ERRORS = re.compile(r"(?:^|\s)((?:[A-Za-z_.]*(?:Error|Exception))\b:?.*|CUDA out of memory.*|"
                     r"No available memory for the cache blocks.*)$", re.MULTILINE)

_KV_GIB = r"(-?" + _NUM[1:] + r"\s*Gi?B"     # a KV budget, negative when the weights leave no room
#: (field, the value of its first group, patterns tried in order): what a vLLM log prints, each in one line; a
#: field read before (from a line of two figures) keeps its value.
_VLLM_FIELDS = (
    ("model", str, r"'model': '([^']+)'", r"vllm serve\s+(\S+)"),
    ("tp", _whole, r"tensor_parallel_size[=:]\s*'?(\d+)", r"(?:-tp|--tensor-parallel-size)[ =](\d+)"),
    ("pp", _whole, r"pipeline_parallel_size[=:]\s*'?(\d+)"),
    # memory: the three wordings
    ("gpu_memory_bytes", _bytes, r"total_gpu_memory\s*[=(]?\s*" + _GIB),
    ("gpu_memory_utilization", _f, r"gpu_memory_utilization\s*[=(]?\s*([0-9.]+)"),
    ("weights_bytes", _bytes, r"Model loading took\s+" + _GIB, r"Loading model weights took\s+" + _GIB,
     r"model weights take\s+" + _GIB),
    ("non_torch_bytes", _bytes, r"non_torch_memory\s*(?:takes|=)?\s*" + _GIB),
    ("activation_bytes", _bytes, r"PyTorch activation peak memory\s*(?:takes)?\s*" + _GIB),
    ("kv_cache_bytes", _bytes, r"reserved for KV Cache is\s+" + _KV_GIB, r"available_kv_cache_memory\s+" + _KV_GIB,
     r"kv_cache_size=" + _KV_GIB, r"Available KV cache memory:\s*" + _KV_GIB),
    ("kv_cache_tokens", _whole, r"GPU KV cache size:\s*" + _NUM + r"\s*tokens"),
    ("kv_blocks", _whole, r"#\s*(?:GPU|CUDA|cuda|gpu) blocks:\s*(\d+)"),
    ("block_size", _whole, r"block_size[=:]\s*'?(\d+)"),
    ("max_model_len", _whole, r"max_model_len[=:]\s*'?(\d+)"),
    ("max_num_batched_tokens", _whole, r"max_num_batched_tokens[=:]\s*'?(\d+)"),
    ("cuda_graph_bytes", _bytes, r"Graph capturing finished in [0-9.]+ secs?, took\s+" + _GIB),
)
#: The same for an SGLang log.
_SGLANG_FIELDS = (
    ("model", str, r"model_path='([^']+)'"),
    ("tp", _whole, r"tp_size=(\d+)"),
    ("pp", _whole, r"pp_size=(\d+)"),
    ("gpu_memory_utilization", _f, r"mem_fraction_static=([0-9.]+)"),
    ("weights_bytes", _bytes, r"Load weight end\..*?avail mem=" + _NUM[1:-1] + r"\s*Gi?B, mem usage=" + _GIB),
    ("kv_cache_tokens", _whole, r"max_total_num_tokens=(\d+)"),
    ("max_running_requests", _whole, r"max_running_requests=(\d+)"),
    ("max_model_len", _whole, r"context_len=(\d+)"),
    ("max_num_batched_tokens", _whole, r"chunked_prefill_size=(\d+)"),
    ("cuda_graph_bytes", _bytes, r"Capture cuda graph end\..*?mem usage=" + _GIB),
)


def _read_fields(s: Startup, text: str, table) -> None:
    """Each field of ``table`` not yet read, from the first of its patterns the log holds."""
    for name, value, *patterns in table:
        if getattr(s, name) is not None:
            continue
        m = next((m for m in (_first(p, text) for p in patterns) if m), None)
        if m:
            setattr(s, name, value(m.group(1)))


def detect(text: str, parsed: Any) -> bool:
    if parsed is not None:
        return False
    return any(m in text for m in (*_SGLANG_LINES, *_VLLM_LINES, *_VLLM_ALSO))


def _error(text: str) -> Optional[str]:
    found = [m.group(1).strip() for m in _ERRORS.finditer(text)]
    found = [e for e in found if not e.startswith(("ErrorCount", "Exception ignored"))]
    return found[-1][:200] if found else None


def _vllm(path: str, text: str) -> Startup:
    s = Startup(path=path, tool="vLLM start-up log", engine="vllm")
    m = _first(r"Initializing an? (V1 )?LLM engine \(v?([0-9][^)]*)\) with config: model='([^']+)'", text)
    if m:
        s.engine_version = f"{m.group(2)} ({'V1' if m.group(1) else 'V0'})"
        s.model = m.group(3)
    m = _first(r"Maximum concurrency for\s+" + _NUM + r"\s+tokens per request:\s*" + _NUM + "x", text)
    if m:
        s.max_model_len = int(_f(m.group(1)))
        s.max_concurrency = _f(m.group(2))
    _read_fields(s, text, _VLLM_FIELDS)
    peak = _first(r"peak_torch_memory=" + _GIB, text)
    if s.activation_bytes is None and peak and s.weights_bytes is not None:
        s.activation_bytes = _f(peak.group(1)) * GIB - s.weights_bytes
        s.notes.append("activation = peak_torch_memory - weights (this vLLM prints no activation line)")
    refused = _first(r"max seq len \((\d+)\) is larger than the maximum number of tokens that can be stored in KV "
                     r"cache \((\d+)\)", text)
    if refused:
        s.started = False
        s.error = refused.group(0)
        s.max_model_len = s.max_model_len or int(refused.group(1))
        s.kv_cache_tokens = s.kv_cache_tokens or int(refused.group(2))
        s.notes.append("the engine refused to start (max_model_len above the KV cache); its KV figures are kept")
    if s.kv_cache_tokens is None and s.kv_blocks is not None:
        bs = s.block_size or 16
        s.kv_cache_tokens = s.kv_blocks * bs
        s.notes.append(f"KV tokens = {s.kv_blocks} GPU blocks x block size {bs}"
                       + ("" if s.block_size else " (vLLM's default)"))
    if s.kv_cache_tokens is None and s.max_concurrency is not None and s.max_model_len:
        s.kv_cache_tokens = int(round(s.max_concurrency * s.max_model_len))
        s.notes.append("KV tokens = maximum concurrency x max_model_len (the log prints no token count)")
    return s


def _sglang(path: str, text: str) -> Startup:
    s = Startup(path=path, tool="SGLang start-up log", engine="sglang")
    m = _first(r"KV Cache is allocated\. #tokens: (\d+), K size: " + _GIB + r", V size: " + _GIB, text)
    if m:
        s.kv_cache_tokens = int(m.group(1))
        s.kv_cache_bytes = (_f(m.group(2)) + _f(m.group(3))) * GIB
    else:
        m = _first(r"KV Cache is allocated\. #tokens: (\d+), KV size: " + _GIB, text)
        if m:
            s.kv_cache_tokens = int(m.group(1))
            s.kv_cache_bytes = _f(m.group(2)) * GIB
    _read_fields(s, text, _SGLANG_FIELDS)
    if s.kv_cache_tokens and s.max_model_len:
        s.max_concurrency = s.kv_cache_tokens / s.max_model_len
    return s


def read(path: str, text: str, parsed: Any) -> list[Startup]:
    sglang = any(m in text for m in _SGLANG_LINES)
    vllm = any(m in text for m in _VLLM_LINES)
    if sglang and vllm:
        raise BadFile(path, "engine", "the log mixes vLLM and SGLang lines: give one engine's log per file")
    s = _sglang(path, text) if sglang else _vllm(path, text)
    if s.kv_cache_tokens is None and (s.kv_cache_bytes is None or s.kv_cache_bytes <= 0):
        err = _error(text)
        what = ("'KV Cache is allocated. #tokens'" if sglang else "'GPU KV cache size', '# GPU blocks' or "
                "'Maximum concurrency for'")
        tail = f"; the log ends with: {err}" if err else ""
        if s.kv_cache_bytes is not None:
            raise BadFile(path, "kv_cache_bytes", f"{s.kv_cache_bytes / GIB:.2f} GiB left for the KV cache: the engine "
                                                  f"could not start{tail}")
        raise BadFile(path, "kv_cache_tokens", f"no {what} line: the engine did not size its KV cache (a failed "
                                               f"start?){tail}")
    models = set(re.findall(r"Initializing an? (?:V1 )?LLM engine \([^)]*\) with config: model='([^']+)'", text)) \
        | set(re.findall(r"model_path='([^']+)'", text))
    if len(models) > 1:
        raise BadFile(path, "model", f"the log starts {len(models)} models ({', '.join(sorted(models))}): "
                                     "give one start per file")
    return [s]
