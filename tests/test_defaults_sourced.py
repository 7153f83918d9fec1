"""Every default of an efficiency, overhead or engine input comes from a data file with a source.

The plan's Python holds no figure of its own for these inputs: efficiencies and fixed overheads are rows
of inference_ledger/data/efficiencies.csv, the engine's batching and memory figures are the default
engine's row of inference_ledger/data/engines.csv for the default GPU and TP.
"""

from __future__ import annotations

import csv

from inference_ledger import engines, plan
from inference_ledger.serving import EFFICIENCIES_CSV


def _rows(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(ln for ln in fh if ln.strip() and not ln.lstrip().startswith("#")))


def test_efficiency_and_overhead_defaults_are_rows_with_a_source_and_a_date():
    rows = {r["name"]: r for r in _rows(EFFICIENCIES_CSV) if r["gpu_family"] == "*"}
    group = [i for i in plan.INPUTS if i.group == "efficiency"]
    assert {i.name for i in group} == {"prefill_efficiency", "bw_efficiency", "kv_read_efficiency",
                                       "decode_compute_efficiency", "allreduce_latency_seconds",
                                       "layer_overhead_seconds", "scaleout_latency_seconds", "step_overhead_seconds",
                                       "kernel_layer_overhead_seconds"}
    for i in group:
        r = rows[i.name]
        assert float(r["value"]) == i.default, i.name
        assert r["source"].strip() and r["quote"].strip() and r["date"][:2] == "20", i.name


def test_engine_defaults_are_the_default_engines_row():
    csv_row = next(r for r in _rows(engines.ENGINES_CSV) if r["id"] == engines.DEFAULT_ENGINE)
    assert csv_row["source"].strip()
    # the engine's figures as the CSV writes them, for an 80 GB H100 (large-GPU defaults) at TP 4
    assert plan.INPUT_BY_NAME["max_num_seqs"].default == float(csv_row["max_num_seqs"])
    assert plan.INPUT_BY_NAME["max_num_batched_tokens"].default == float(csv_row["max_num_batched_tokens"])
    assert plan.INPUT_BY_NAME["sampler_bytes_per_logit"].default == float(csv_row["sampler_bytes_per_logit"])
    assert plan.INPUT_BY_NAME["kv_budget_rule"].default == float(csv_row["kv_budget_rule"])
    assert plan.INPUT_BY_NAME["gpu_memory_utilization"].default == float(csv_row["memory_fraction"])
    for i in plan.INPUTS:
        if i.group == "engine":
            assert i.name in csv_row or i.name in ("nccl_bytes",), i.name
