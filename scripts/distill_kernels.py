#!/usr/bin/env python3
"""Distil NVIDIA aiconfigurator-core's measured kernel tables into the compact CSVs of inference_ledger/data/kernels/.

Optional tool (needs ``pyarrow``; never run by the tests or at run time, which read the shipped CSVs).  It reads the
SILICON parquet tables of an unpacked ``aiconfigurator_core`` wheel (Apache-2.0, (c) NVIDIA; see
inference_ledger/data/kernels/NOTICE) and keeps a grid trimmed to what the catalog models need:

* ``gemm.csv``: GEMM latency by (dtype, N, K) at M = 1, 4, 16, 64, 256, 1024, 4096, 16384 (one column per M);
* ``decode_attention.csv``: generation attention per layer by (KV dtype, heads, KV heads, head dim, batch) at KV
  lengths 128 .. 65,536 (the table's ``step`` + 1);
* ``prefill_attention.csv``: context attention per layer of one prompt (batch 1) by (KV dtype, heads, KV heads,
  head dim) at prompt lengths 128 .. 16,384;
* ``allreduce.csv``: all-reduce latency by (library, GPUs, message bytes): NCCL and each engine's custom all-reduce
  (CUDA-graph variant where the table has both); the package counts a message in 2-byte elements, written here as
  bytes (``ALLREDUCE_ELEMENT_BYTES``);
* ``moe.csv``: one fused MoE layer (routing, grouped gate/up + down expert GEMMs) on one GPU by (dtype, hidden,
  expert intermediate, top-k, experts, MoE TP, MoE EP) at 1 .. 16,384 tokens, for the catalog's MoE shapes only,
  with the package's default routing (``power_law_1.01``, what its DeepSeek/MoE models query);
* ``mla_decode.csv`` / ``mla_prefill.csv``: DeepSeek-V3's whole MLA attention module of one layer (its projections,
  the absorbed or plain attention over the latent cache) by (KV dtype, GEMM dtype, heads per GPU): decode for batch x
  KV length (the table's ``step``), prefill of one prompt (batch 1) by prompt length.

For each GPU x engine family the newest version the package holds is kept (for ``moe.csv``: the newest that holds
the shape).  Latencies are written in microseconds
with four significant digits.  Usage::

    python3 scripts/distill_kernels.py /path/to/unzipped/aiconfigurator_core [out_dir]
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

import pyarrow.parquet as pq  # optional dependency of this script only
from kernel_csv import GEMM_M, table, write

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PACKAGE = "aiconfigurator-core 0.12.0"
#: package GPU folder -> inference_ledger/data/gpus.csv ids it measures
GPUS = {"h100_sxm": ("h100-sxm",), "h200_sxm": ("h200",), "a100_sxm": ("a100-80gb", "a100-40gb"),
        "b200_sxm": ("b200",), "gb200": ("gb200",), "l40s": ("l40s",), "rtx_pro_6000_server": ("rtx-pro-6000",)}
ENGINES = ("vllm", "sglang", "trtllm")
GEMM_NK = (512, 1024, 1536, 2048, 2560, 3072, 3584, 4096, 5120, 6144, 7168, 8192, 10240, 12288, 16384, 51200, 65536)
GEMM_DTYPES = ("bfloat16", "fp8", "fp8_block", "nvfp4")
DECODE_CTX = (128, 1024, 4096, 16384, 65536)
DECODE_BATCH = (1, 4, 16, 64, 256, 1024)
PREFILL_ISL = (128, 512, 1024, 2048, 4096, 8192, 16384)
HEAD_DIMS = (64, 128)
MOE_TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
MOE_DTYPES = ("bfloat16", "fp8", "fp8_block", "w4a16_mxfp4", "nvfp4")
MOE_LAYOUTS = ((1, 1), (2, 1), (4, 1), (8, 1), (1, 2), (1, 4), (1, 8))   # (MoE TP, MoE EP) within one node
MOE_DISTRIBUTION = "power_law_1.01"
MLA_HEADS = (8, 16, 32, 64, 128)   # heads per GPU of DeepSeek-V3 / Kimi-K2 (128 / 64 heads) at TP 1 .. 8


def moe_shapes() -> set[tuple[int, int, int, int]]:
    """(hidden, expert intermediate, top-k, experts) of the catalog's MoE models."""
    from inference_ledger.catalogs import catalog
    return {(m.hidden_size, m.intermediate_size, m.experts_per_token, m.num_experts)
            for m in catalog.load_models() if m.num_experts}


def _version_key(v: str):
    out = []
    for part in v.replace("rc", ".").replace("post", ".").split("."):
        out.append(int(part) if part.isdigit() else 0)
    return out


def newest(folder: Path, filename: str) -> Path | None:
    """The newest version folder under ``folder`` that holds ``filename``."""
    if not folder.is_dir():
        return None
    vs = sorted((p for p in folder.iterdir() if (p / filename).is_file()), key=lambda p: _version_key(p.name))
    return vs[-1] if vs else None


def us(ms: float) -> str:
    return f"{ms * 1000:.4g}"


def header(kind: str, columns: str, extra: str) -> str:
    return (f"# {kind}: measured kernel latencies distilled from NVIDIA {PACKAGE} (Apache-2.0, see NOTICE),\n"
            f"# aiconfigurator_core/systems/data/<gpu>/<op>/<engine>/<version>/*.parquet (SILICON tables); "
            f"distilled {datetime.date.today().isoformat()} by scripts/distill_kernels.py.\n"
            f"# Latencies in microseconds (us). {extra}\n"
            f"#   gpu_ids: the gpus.csv ids the row measures; engine, version: the runtime the package measured with\n"
            f"{columns}\n")


def gemm_rows(root: Path):
    for folder, ids in GPUS.items():
        for eng in ENGINES:
            d = newest(root / "data" / folder / "gemm" / eng, "gemm_perf.parquet")
            if d is None:
                continue
            t = pq.read_table(d / "gemm_perf.parquet", columns=["gemm_dtype", "m", "n", "k", "latency"]).to_pydict()
            best: dict = {}
            for dt, m, n, k, lat in zip(t["gemm_dtype"], t["m"], t["n"], t["k"], t["latency"]):
                if dt in GEMM_DTYPES and m in GEMM_M and n in GEMM_NK and k in GEMM_NK:
                    key = (dt, n, k, m)
                    best[key] = min(lat, best.get(key, lat))  # the fastest kernel the engine picks
            for dt in GEMM_DTYPES:
                for n in GEMM_NK:
                    for k in GEMM_NK:
                        lats = [best.get((dt, n, k, m)) for m in GEMM_M]
                        if all(x is not None for x in lats):
                            yield ["|".join(ids), eng, d.name, dt, n, k, *(us(x) for x in lats),
                                   f"{folder}/gemm/{eng}/{d.name}/gemm_perf.parquet"]


def attention_rows(root: Path, which: str):
    for folder, ids in GPUS.items():
        for eng in ENGINES:
            d = newest(root / "data" / folder / "attention" / eng, f"{which}_attention_perf.parquet")
            if d is None:
                continue
            f = d / f"{which}_attention_perf.parquet"
            t = pq.read_table(f).to_pydict()
            t.setdefault("window_size", [0] * len(t["latency"]))  # older tables hold full attention only
            best: dict = {}
            for b, isl, h, kv, hd, w, adt, kdt, step, lat in zip(*(t[c] for c in (
                    "batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "window_size", "attn_dtype",
                    "kv_cache_dtype", "step", "latency"))):
                if w != 0 or hd not in HEAD_DIMS or adt != "bfloat16":
                    continue
                if which == "generation":
                    if b in DECODE_BATCH and step + 1 in DECODE_CTX:
                        best[(kdt, h, kv, hd, b, step + 1)] = lat
                elif b == 1 and isl in PREFILL_ISL:
                    best[(kdt, h, kv, hd, 1, isl)] = lat
            axis = DECODE_CTX if which == "generation" else PREFILL_ISL
            groups = sorted({k[:5] for k in best})
            for g in groups:
                lats = [best.get((*g, x)) for x in axis]
                # large batches are measured at short contexts only (the KV cache must fit): a blank cell is a
                # shape the package did not measure; keep rows measured at the two shortest lengths
                if lats[0] is not None and lats[1] is not None:
                    row = ["|".join(ids), eng, d.name, *g] if which == "generation" else ["|".join(ids), eng, d.name,
                                                                                          *g[:4]]
                    yield [*row, *("" if x is None else us(x) for x in lats),
                           f"{folder}/attention/{eng}/{d.name}/{f.name}"]


#: bytes per element of the all-reduce tables: their ``message_size`` counts elements, not bytes (the package's
#: sdk/perf_database.py: "comm shims factor an element count into ``x * per_token_elements``"; its all-reduce queries
#: pass tokens x hidden size), of FP16 (NCCL's ``nccl_dtype`` half, the rows kept) or BF16 (every custom all-reduce
#: table's ``allreduce_dtype``): 2 bytes.  Read as bytes, the H200 8-GPU curve would move 1 GiB in 4.0 ms at a bus
#: bandwidth of 234 GB/s, half of what NVLink-SHARP reaches; as elements, 469 GB/s.
ALLREDUCE_ELEMENT_BYTES = 2
#: all-reduce curves left out: (package GPU folder, GPUs).  The L40S server the package measured all-reduces over 4
#: and 8 GPUs at a bus bandwidth of 5 and 1.5 GB/s with every library (NCCL and the engines' custom kernels alike),
#: a quarter and a thirteenth of its own 2-GPU curve (20 GB/s, what PCIe 4.0 x16 peer-to-peer carries): that server's
#: topology, not the GPU's (a PCIe ring runs at the slowest link whatever its length; TensorRT-LLM 0.9's L40S TP 4
#: rows step in about 130 ms, where 160 such all-reduces of 4 MB would take 260).  Beyond 2 GPUs the plan reads the
#: 2-GPU curve (kernels.allreduce_seconds: the nearest measured count).
ALLREDUCE_LEFT_OUT = {("l40s", 4), ("l40s", 8)}


def allreduce_rows(root: Path):
    for folder, ids in GPUS.items():
        d = newest(root / "data" / folder / "comm" / "nccl", "nccl_perf.parquet")
        if d is not None:
            t = pq.read_table(d / "nccl_perf.parquet").to_pydict()
            for op, dt, g, size, lat in zip(t["op_name"], t["nccl_dtype"], t["num_gpus"], t["message_size"],
                                            t["latency"]):
                if op == "all_reduce" and dt == "half" and (folder, g) not in ALLREDUCE_LEFT_OUT:
                    yield ["|".join(ids), "nccl", d.name, g, size * ALLREDUCE_ELEMENT_BYTES, us(lat),
                           f"{folder}/comm/nccl/{d.name}/nccl_perf.parquet"]
        for eng in ENGINES:
            d = newest(root / "data" / folder / "comm" / eng, "custom_allreduce_perf.parquet")
            if d is None:
                continue
            f = d / "custom_allreduce_perf.parquet"
            t = pq.read_table(f).to_pydict()
            srcs = t.get("kernel_source", [""] * len(t["latency"]))
            has_graph = any("graph" in s.lower() for s in srcs)
            for src, g, size, lat, dt in zip(srcs, t["num_gpus"], t["message_size"], t["latency"],
                                             t["allreduce_dtype"]):
                if (has_graph and "graph" not in src.lower()) or (folder, g) in ALLREDUCE_LEFT_OUT:
                    continue
                if dt not in ("bfloat16", "float16", "half"):
                    raise ValueError(f"{f}: an all-reduce of {dt}, not 2-byte elements")
                yield ["|".join(ids), eng, d.name, g, size * ALLREDUCE_ELEMENT_BYTES, us(lat),
                       f"{folder}/comm/{eng}/{d.name}/{f.name}"]


def moe_rows(root: Path):
    shapes = moe_shapes()
    for folder, ids in GPUS.items():
        for eng in ENGINES:
            base = root / "data" / folder / "moe" / eng
            if not base.is_dir():
                continue
            done: set = set()   # (dtype, shape, layout) already taken from a newer version
            for d in sorted((p for p in base.iterdir() if (p / "moe_perf.parquet").is_file()),
                            key=lambda p: _version_key(p.name), reverse=True):
                t = pq.read_table(d / "moe_perf.parquet", columns=[
                    "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size",
                    "moe_ep_size", "distribution", "latency"]).to_pydict()
                best: dict = {}
                for dt, n, h, i, k, e, tp, ep, dist, lat in zip(*t.values()):
                    if dist == MOE_DISTRIBUTION and dt in MOE_DTYPES and (h, i, k, e) in shapes \
                            and (tp, ep) in MOE_LAYOUTS and n in MOE_TOKENS:
                        key = (dt, h, i, k, e, tp, ep, n)
                        best[key] = min(lat, best.get(key, lat))  # the fastest kernel the engine's table holds
                for g in sorted({k[:7] for k in best}):
                    lats = [best.get((*g, n)) for n in MOE_TOKENS]
                    if g in done or any(x is None for x in lats):
                        continue
                    done.add(g)
                    yield ["|".join(ids), eng, d.name, *g, *(us(x) for x in lats),
                           f"{folder}/moe/{eng}/{d.name}/moe_perf.parquet"]


def mla_rows(root: Path, which: str):
    name = f"mla_{which}_module_perf.parquet"
    for folder, ids in GPUS.items():
        for eng in ENGINES:
            d = newest(root / "data" / folder / "mla" / eng, name)
            if d is None:
                continue
            t = pq.read_table(d / name, columns=["kv_cache_dtype", "gemm_type", "num_heads", "batch_size", "isl",
                                                 "step", "latency"]).to_pydict()
            best: dict = {}
            for kdt, gdt, h, b, isl, step, lat in zip(*t.values()):
                if h not in MLA_HEADS:
                    continue
                if which == "generation" and b in DECODE_BATCH and step in DECODE_CTX:
                    key = (kdt, gdt, h, b, step)
                elif which == "context" and b == 1 and isl in PREFILL_ISL:
                    key = (kdt, gdt, h, 1, isl)
                else:
                    continue
                best[key] = min(lat, best.get(key, lat))  # the fastest kernel the engine's table holds
            axis = DECODE_CTX if which == "generation" else PREFILL_ISL
            for g in sorted({k[:4] for k in best}):
                lats = [best.get((*g, x)) for x in axis]
                if lats[0] is not None and lats[1] is not None:
                    row = ["|".join(ids), eng, d.name, *(g if which == "generation" else g[:3])]
                    yield [*row, *("" if x is None else us(x) for x in lats), f"{folder}/mla/{eng}/{d.name}/{name}"]


def _columns(keys: str, prefix: str, axis) -> str:
    """A table's header: its key columns, one column ``prefix``<x> per point x of the axis, then the source."""
    return f"{keys}," + ",".join(f"{prefix}{x}" for x in axis) + ",source"


_ATTENTION = "gpu_ids,engine,version,kv_dtype,heads,kv_heads,head_dim"     # key columns of the attention tables
_MLA = "gpu_ids,engine,version,kv_dtype,gemm_dtype,heads"                   # and of the MLA modules'
_DECODE, _PREFILL = ("ctx", DECODE_CTX), ("isl", PREFILL_ISL)               # their axes: KV length, prompt length
#: The tables written: (file, its columns, its rows from the package folder).
TABLES = (
    ("gemm.csv", _columns("gpu_ids,engine,version,dtype,n,k", "m", GEMM_M), gemm_rows),
    ("decode_attention.csv", _columns(_ATTENTION + ",batch", *_DECODE), lambda r: attention_rows(r, "generation")),
    ("prefill_attention.csv", _columns(_ATTENTION, *_PREFILL), lambda r: attention_rows(r, "context")),
    ("allreduce.csv", "gpu_ids,library,version,gpus,message_bytes,latency_us,source", allreduce_rows),
    ("moe.csv", _columns("gpu_ids,engine,version,dtype,hidden,inter,topk,experts,tp,ep", "t", MOE_TOKENS),
     lambda r: sorted(moe_rows(r), key=lambda row: row[:10])),
    ("mla_decode.csv", _columns(_MLA + ",batch", *_DECODE), lambda r: mla_rows(r, "generation")),
    ("mla_prefill.csv", _columns(_MLA, *_PREFILL), lambda r: mla_rows(r, "context")),
)
#: What each table measures, and a note on its columns (its header says both).
ABOUT = {
    "gemm.csv": (
        "GEMM",
        "One row per (dtype, N, K): y = x W^T with x M x K, W N x K; columns m<M> are M (tokens) = "
        + ", ".join(map(str, GEMM_M)) + "; the fastest kernel the engine's table holds at that shape."),
    "decode_attention.csv": (
        "Decode (generation) attention, one layer",
        "Columns ctx<L> are the KV length each sequence attends over (blank: not measured); heads and kv_heads are "
        "per GPU (after TP); BF16 queries, no sliding window."),
    "prefill_attention.csv": (
        "Prefill (context) attention of one prompt, one layer",
        "Columns isl<S> are the prompt length (causal, batch 1; blank: not measured); heads per GPU; BF16 queries, "
        "no sliding window."),
    "allreduce.csv": (
        "All-reduce",
        "library nccl = NCCL all_reduce (fp16), otherwise the engine's custom all-reduce (CUDA-graph variant where "
        "measured both ways); message_bytes = the package's message_size (2-byte elements) x 2."),
    "moe.csv": (
        "Fused MoE layer (routing + grouped expert GEMMs) on one GPU",
        "Columns t<T> are the tokens entering the layer (all the EP group's: aiconfigurator's num_tokens); inter is "
        "one expert's intermediate size, tp and ep the MoE layer's own split; routing " + MOE_DISTRIBUTION
        + " (the package's default); the fastest kernel the engine's table holds at that shape."),
    "mla_decode.csv": (
        "MLA attention module of one layer, decode (DeepSeek-V3 shapes)",
        "The whole module: q/kv projections, attention over the latent KV cache and the output projection; heads "
        "per GPU; columns ctx<L> are the KV length of each sequence (the table's step; blank: not measured); the "
        "fastest kernel the engine's table holds."),
    "mla_prefill.csv": (
        "MLA attention module of one layer, prefill of one prompt (DeepSeek-V3 shapes)",
        "The whole module (projections + causal attention); heads per GPU; columns isl<S> are the prompt length "
        "(batch 1; blank: not measured)."),
}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    root = Path(argv[1]) / "systems" if (Path(argv[1]) / "systems").is_dir() else Path(argv[1])
    out = Path(argv[2]) if len(argv) > 2 else Path(__file__).resolve().parents[1] / "inference_ledger/data/kernels"
    out.mkdir(parents=True, exist_ok=True)
    for name, cols, rows in TABLES:
        write(out / name, header(ABOUT[name][0], cols, ABOUT[name][1]) + table(rows(root)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
