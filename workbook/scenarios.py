"""The what-if grid's rows: the comparisons a buyer asks for first, or a user's CSV.

A scenario picks a model, a GPU, the tensor-parallel degree, the weight and KV-cache
formats, the serving engine and the workload; any other plan input may be set too (a column named like
the input, e.g. ``gpu_memory_utilization``).  Inputs a scenario leaves out follow the
Plan sheet, so changing an efficiency there moves every row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from inference_ledger.core import csvfile
from inference_ledger.graph import resolve
from inference_ledger.core.args import LedgerInputError
from inference_ledger.graph.plan import INPUT_BY_NAME
from inference_ledger.formulas.serving import batching_code


@dataclass(frozen=True)
class Scenario:
    label: str
    model: str
    gpu: str
    weight_dtype: str
    kv_dtype: str
    inputs: dict[str, float] = field(default_factory=dict)  # plan input name -> value
    engine: str = ""  # serving engine id or alias; "" = the build's engine (vLLM where that one does not run)
    where: str = ""   # "file.csv line 3" for a row read from a CSV (named in its refusals)


#: Characters a worksheet cannot hold (XML 1.0 allows tab, LF and CR only below U+0020).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")

#: Characters one worksheet cell holds (Excel's limit; a longer label would be cut).
CELL_LIMIT = 32_767

#: CSV columns besides plan input names.
KEYS = ("label", "model", "gpu", "weight_dtype", "kv_dtype", "engine")


def _s(label, model, gpu, tp, wd="bf16", kv="bf16", s=1024, t=512, c=16, **extra) -> Scenario:
    return Scenario(label, model, gpu, wd, kv,
                    {"tp": tp, "input_tokens": s, "output_tokens": t, "concurrency": c, **extra})


#: ~20 comparisons: where the seed's 70B lands, FP8 vs BF16, long context, MoE, big models.
DEFAULT_SCENARIOS: tuple[Scenario, ...] = (
    _s("70B BF16, 4x H100 (seed: 70B starts at 4 GPUs)", "llama-3.1-70b", "h100-sxm", 4),
    _s("70B BF16, 2x H100 (seed: 'two 80 GB are enough')", "llama-3.1-70b", "h100-sxm", 2),
    _s("70B BF16, 2x H200", "llama-3.1-70b", "h200", 2),
    _s("70B BF16, 1x MI300X", "llama-3.1-70b", "mi300x", 1),
    _s("70B BF16, 1x B200", "llama-3.1-70b", "b200", 1),
    _s("70B FP8, 2x H100", "llama-3.1-70b", "h100-sxm", 2, "fp8"),
    _s("70B FP8, 1x H200", "llama-3.1-70b", "h200", 1, "fp8"),
    _s("70B FP8 + FP8 KV, 1x H200, 32 seqs", "llama-3.1-70b", "h200", 1, "fp8", "fp8", c=32),
    _s("70B INT4 (AWQ), 1x H100", "llama-3.1-70b", "h100-sxm", 1, "int4"),
    _s("70B BF16, 4x A100 80GB", "llama-3.1-70b", "a100-80gb", 4),
    _s("70B BF16, 4x H100, 32K context", "llama-3.1-70b", "h100-sxm", 4, s=32768, t=1024),
    _s("70B BF16 + FP8 KV, 4x H100, 32K context", "llama-3.1-70b", "h100-sxm", 4, "bf16", "fp8", s=32768, t=1024),
    _s("8B BF16, 1x L40S", "llama-3.1-8b", "l40s", 1),
    _s("8B BF16, 1x L4", "llama-3.1-8b", "l4", 1),
    _s("8B BF16, 1x H100, 64 seqs", "llama-3.1-8b", "h100-sxm", 1, c=64),
    _s("405B BF16, 8x H100", "llama-3.1-405b", "h100-sxm", 8),
    _s("405B FP8, 8x H100", "llama-3.1-405b", "h100-sxm", 8, "fp8"),
    _s("405B BF16, 8x H200", "llama-3.1-405b", "h200", 8),
    _s("Mixtral-8x7B BF16, 2x H100", "mixtral-8x7b", "h100-sxm", 2),
    _s("DeepSeek-V3 FP8, 8x H200", "deepseek-v3", "h200", 8, "fp8"),
    _s("gpt-oss-120b MXFP4, 1x H100", "gpt-oss-120b", "h100-sxm", 1, "mxfp4"),
    _s("Qwen3-235B-A22B FP8, 4x H100", "qwen3-235b-a22b", "h100-sxm", 4, "fp8"),
    # beyond one node: pipeline stages, wide expert parallelism with DP attention, an NVL72 domain
    _s("405B BF16, 2 nodes of 8x H100 (TP 8 x PP 2)", "llama-3.1-405b", "h100-sxm", 8, pp=2),
    _s("DeepSeek-V3 FP8, 2 nodes of 8x H100 (TP 8 x PP 2)", "deepseek-v3", "h100-sxm", 8, "fp8", pp=2),
    _s("DeepSeek-V3 FP8, 16x H100, DP attention 16 + EP 16", "deepseek-v3", "h100-sxm", 1, "fp8", c=256,
       dp_attention=16, ep=16),
    _s("Kimi-K2 FP8, 32x GB200 NVL72, DP attention 32 + EP 32", "kimi-k2", "gb200", 1, "fp8", c=512,
       dp_attention=32, ep=32),
)


def read_scenarios(path: str | Path) -> tuple[Scenario, ...]:
    """Scenarios from a CSV: columns label, model, gpu, weight_dtype, kv_dtype, engine and any plan input names.

    Every problem is one LedgerInputError naming the file, and the line and column where it has one.
    """
    return _scenarios(csvfile.read(path, kind="scenarios", comments=False, strip=False))   # errors name the file


def _scenarios(table: csvfile.Table) -> tuple[Scenario, ...]:
    name, cols = table.name, table.header
    missing = [k for k in ("model", "gpu") if k not in cols]
    if missing:
        raise LedgerInputError(f"{name}: missing column(s) {', '.join(missing)}; "
                               f"expected {', '.join(KEYS)} and plan input names")
    unknown = [c for c in cols if c not in KEYS and c not in INPUT_BY_NAME]
    if unknown:
        raise LedgerInputError(f"{name}: unknown column {unknown[0]!r}; "
                               f"use {', '.join(KEYS)} or a plan input name")
    out = []
    for row in table.rows:
        n = row.line
        for k, v in row.items():
            if len(v) > CELL_LIMIT:
                raise LedgerInputError(f"{name} line {n}, column '{k}': {len(v):,} characters, more than the "
                                       f"{CELL_LIMIT:,} one worksheet cell holds")
        for k, v in row.items():
            bad = _CONTROL.search(v)
            if bad:
                raise LedgerInputError(f"{name} line {n}, column '{k}': control character U+{ord(bad.group()):04X} "
                                       "cannot be written to a worksheet")
        for k in ("model", "gpu"):
            if not row[k].strip():
                raise LedgerInputError(f"{name} line {n}, column '{k}': {resolve.EMPTY_ID[k]}")
        inputs = {}
        for k, v in row.items():
            if k in INPUT_BY_NAME and v.strip():
                try:
                    x = float(v)
                except ValueError:
                    if k != "batching":
                        raise LedgerInputError(f"{name} line {n}, column '{k}': {v!r} is not a number") from None
                    try:  # the word, as plan --batching takes it
                        x = float(batching_code(v))
                    except ValueError as e:
                        raise LedgerInputError(f"{name} line {n}, column '{k}': {e}") from None
                try:
                    inputs[k] = INPUT_BY_NAME[k].arg.check(x)
                except ValueError as e:
                    raise LedgerInputError(f"{name} line {n}, column '{k}': {e}") from None
        label = row.get("label") or f"{row['model']} on {row['gpu']}"
        out.append(Scenario(label, row["model"], row["gpu"], row.get("weight_dtype") or "",
                            row.get("kv_dtype") or "bf16", inputs, (row.get("engine") or "").strip(),
                            f"{name} line {n}"))
    if not out:
        raise LedgerInputError(f"{name}: no scenario rows")
    return tuple(out)

