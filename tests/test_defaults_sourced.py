"""Every default of an efficiency, overhead or engine input comes from a data file with a source.

The plan's Python holds no figure of its own for these inputs: efficiencies and fixed overheads are rows
of inference_ledger/data/efficiencies.csv, the engine's batching and memory figures are the default
engine's row of inference_ledger/data/engines.csv for the default GPU and TP.
"""

from __future__ import annotations

import csv

from inference_ledger.catalogs import catalog, catalog_facts, engines
from inference_ledger.graph import plan, resolve
from inference_ledger.formulas.serving import EFFICIENCIES_CSV


def _rows(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(ln for ln in fh if ln.strip() and not ln.lstrip().startswith("#")))


def test_efficiency_and_overhead_defaults_are_rows_with_a_source_and_a_date():
    rows = {r["name"]: r for r in _rows(EFFICIENCIES_CSV) if r["gpu_family"] == "*"}
    group = [i for i in plan.INPUTS if i.group == "efficiency"]
    assert {i.name for i in group} == {"prefill_efficiency", "bw_efficiency", "kv_read_efficiency",
                                       "decode_compute_efficiency", "allreduce_latency_seconds",
                                       "layer_overhead_seconds", "scaleout_latency_seconds", "step_overhead_seconds",
                                       "kernel_layer_overhead_seconds", "host_allreduce_floor_seconds",
                                       "host_allreduce_bw"}
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
    # the largest CUDA-graph batch is read from the row's by-TP column at the default TP
    assert plan.INPUT_BY_NAME["cuda_graph_max_batch"].default == \
        engines.get_engine(engines.DEFAULT_ENGINE).cuda_graph_max_batch(plan.DEFAULT_TP)
    for i in plan.INPUTS:
        if i.group == "engine":
            assert i.name in csv_row or i.name in ("nccl_bytes", "cuda_graph_max_batch"), i.name


def _gpu_row(gpu_id):
    return next(r for r in _rows(catalog.GPUS_CSV) if r["id"] == gpu_id)


def test_default_inputs_are_the_default_model_on_the_default_gpu():
    """No input default is a hand copy of a catalog row: every input the catalog fills defaults to resolving the
    default model (llama-3.1-70b) on the default GPU (h100-sxm), and `plan` with neither is that plan's numbers."""
    assert (catalog_facts.DEFAULT_MODEL, catalog_facts.DEFAULT_GPU) == ("llama-3.1-70b", "h100-sxm")
    resolved = resolve.plan_inputs(catalog_facts.DEFAULT_MODEL, catalog_facts.DEFAULT_GPU)
    assert plan.defaults() == resolved
    # and through the resolver with its rules and the engine: every input but the kernel tables' measured figures
    # (a bare plan has no model to look them up for: roofline, kernel_tables 0)
    full = resolve.resolve(catalog_facts.DEFAULT_MODEL, catalog_facts.DEFAULT_GPU, numbers={"tp": 4}).inputs
    kernel = {i.name for i in plan.INPUTS if i.group == "kernel"}
    assert {k for k, v in plan.defaults().items() if full[k] != v} <= kernel
    # the GPU's figures as data/gpus.csv writes them (read here as text, not through the catalog code)
    row = _gpu_row("h100-sxm")
    d = plan.defaults()
    assert d["price_per_gpu_hour"] == float(row["price_per_gpu_hour"]) == 3.78       # not the old hand-typed 2.50
    assert d["gpu_memory_bytes"] == float(row["memory_runtime_bytes"]) == 79.1875 * 2**30
    for name in ("hbm_bw", "interconnect_bw", "gpus_per_node", "scaleout_bw"):
        assert d[name] == float(row[name]), name
    assert d["peak_flops"] == float(row["bf16_flops"])                                # a BF16 checkpoint
    # the model's: Llama-3.1-70B's config.json (80 layers, 8 KV heads of 128, hidden 8192, MLP 28672, vocab 128256)
    # and its parameter count (70.55e9 with both embedding tables), not a round 70e9 that describes no model
    assert (d["num_layers"], d["kv_heads"], d["head_dim"], d["hidden_size"], d["intermediate_size"],
            d["vocab_size"]) == (80, 8, 128, 8192, 28672, 128256)
    assert d["num_params"] == catalog.get_model("llama-3.1-70b").num_params != 70e9
    assert 70.5e9 < d["num_params"] < 70.6e9
    # the engine defaults follow the same GPU (its runtime memory and NVLink)
    assert plan.DEFAULT_GPU_MEMORY == d["gpu_memory_bytes"] and plan.DEFAULT_INTERCONNECT == d["interconnect_bw"]
