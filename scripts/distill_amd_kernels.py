#!/usr/bin/env python3
"""Distil AMD's public kernel measurements into inference_ledger/data/kernels/gemm_amd.csv and allreduce_amd.csv.

Optional tool (never run by the tests or at run time, which read the shipped CSVs).

**GEMM** (``gemm_amd.csv``): ROCm/aiter (MIT, (c) Advanced Micro Devices; see inference_ledger/data/kernels/NOTICE)
ships the GEMM tuner's results as CSVs (``aiter/configs/*tuned_gemm*.csv``, ``aiter/configs/model_configs/*``): one row
per (GPU, M, N, K) with the fastest kernel found and its measured time ``us``.  ``cu_num`` names the GPU: 304 compute
units = MI300X / MI325X (gfx942; the files do not say which of the two), 256 = MI355X (gfx950).  This script reads,
at one pinned aiter commit, the FP8 block-scaled GEMMs (``a8w8_blockscale_tuned_gemm*.csv``: FP8 activations with
1x128 scales, FP8 weights with 128x128 scales, what FP8 checkpoints such as DeepSeek-R1 and Qwen3-FP8 run on ROCm)
and the BF16 GEMMs (``*bf16_tuned_gemm*.csv``, non-batched), keeps the fastest time per (GPU, dtype, M, N, K) over
all the files, and writes one row per (GPU, dtype, N, K) with the columns m<M> of the NVIDIA table (M = 1 .. 16,384).
A grid M that aiter measured is copied; one between two measured Ms is interpolated log-log between them (the
lookup's own rule); one outside the measured Ms is left blank (the lookup then holds the smallest measured M below,
and grows in proportion to M above).  AMD's tables hold the shapes AMD tuned for its models, not a grid of N x K: the
lookup (:mod:`inference_ledger.kernels`) reads them along the weight size N x K.

**All-reduce** (``allreduce_amd.csv``): the engines' custom all-reduce (the kernel vLLM and SGLang use on ROCm for
decode-sized messages) as measured and published by AMD engineers in pull requests, transcribed below with the
address of each table (FP16, in microseconds).

Usage::

    python3 scripts/distill_amd_kernels.py /path/to/aiter.git [commit] [out_dir]

(``fetch github:ROCm/aiter`` gives such a git directory; the commit defaults to the one the shipped tables name.)
"""

from __future__ import annotations

import csv
import datetime
import io
import math
import subprocess
import sys
from pathlib import Path

from kernel_csv import GEMM_M, table, write

COMMIT = "e4048607a535ace3a2b51ded31b1c8c2d45c0879"   # ROCm/aiter main, 2026-08-22 (v0.1.20-46-ge4048607a5)
REPO = "ROCm/aiter"
#: aiter cu_num -> inference_ledger/data/gpus.csv ids it measures
CU_GPUS = {"304": ("mi300x", "mi325x"), "256": ("mi355x",)}


def _is_fp8_block(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "a8w8_blockscale" in name and "tuned_gemm" in name and "untuned" not in name \
        and "bpreshuffle" not in name and "fmoe" not in name


def _is_mxfp4(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "a4w4_blockscale" in name and "tuned_gemm" in name and "untuned" not in name


def _is_bf16(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "bf16" in name and "tuned_gemm" in name and "untuned" not in name and "batched" not in name


def aiter_files(git_dir: str, commit: str) -> list[tuple[str, str]]:
    """(dtype, path) of the tuned GEMM CSVs read at the commit."""
    names = subprocess.check_output(["git", "-C", git_dir, "ls-tree", "-r", "--name-only", commit, "aiter/configs"],
                                    text=True).split()
    out = []
    for p in sorted(names):
        if not p.endswith(".csv"):
            continue
        if _is_fp8_block(p):
            out.append(("fp8", p))
        elif _is_mxfp4(p):
            out.append(("mxfp4", p))
        elif _is_bf16(p):
            out.append(("bfloat16", p))
    return out


def measured(git_dir: str, commit: str) -> dict[tuple[str, str, int, int], dict[int, tuple[float, str]]]:
    """(cu_num, dtype, N, K) -> {M: (fastest us, file)} over the files."""
    out: dict = {}
    for dt, path in aiter_files(git_dir, commit):
        text = subprocess.check_output(["git", "-C", git_dir, "show", f"{commit}:{path}"], text=True)
        for r in csv.DictReader(io.StringIO(text)):
            cu = (r.get("cu_num") or "").strip()
            if cu not in CU_GPUS:
                continue
            try:
                m, n, k, t = int(r["M"]), int(r["N"]), int(r["K"]), float(r["us"])
            except (KeyError, TypeError, ValueError):
                continue
            if not (t > 0 and math.isfinite(t)):
                continue
            cell = out.setdefault((cu, dt, n, k), {})
            if m not in cell or t < cell[m][0]:
                cell[m] = (t, path)
    return out


def on_grid(points: dict[int, tuple[float, str]], grid: tuple[int, ...] = GEMM_M) -> list[str]:
    """The grid cells of one shape: measured, log-log between measured sizes, or blank outside them."""
    ms = sorted(points)
    cells = []
    for g in grid:
        if g in points:
            cells.append(f"{points[g][0]:.4g}")
        elif ms[0] < g < ms[-1]:
            lo = max(m for m in ms if m < g)
            hi = min(m for m in ms if m > g)
            f = (math.log(g) - math.log(lo)) / (math.log(hi) - math.log(lo))
            t = math.exp((1 - f) * math.log(points[lo][0]) + f * math.log(points[hi][0]))
            cells.append(f"{t:.4g}")
        else:
            cells.append("")
    return cells


def gemm_rows(git_dir: str, commit: str):
    data = measured(git_dir, commit)
    for (cu, dt, n, k) in sorted(data, key=lambda x: (-int(x[0]), x[1], x[2], x[3])):
        pts = data[(cu, dt, n, k)]
        cells = on_grid(pts)
        if sum(1 for c in cells if c) < 2:   # a shape measured at one grid point or none: no curve
            continue
        files = sorted({f for _, f in pts.values()})
        src = f"{REPO}@{commit[:10]} " + "+".join(f.rsplit("/", 1)[-1] for f in files) + f" (cu_num {cu})"
        yield ["|".join(CU_GPUS[cu]), "aiter", f"{REPO}@{commit[:10]}", dt, n, k, *cells, src]


MOE_TOKENS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
MOE_TPS = (1, 2, 4, 8)


def moe_shapes() -> set[tuple[int, int, int, int]]:
    """(hidden, expert intermediate, top-k, experts) of the catalog's MoE models."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from inference_ledger.catalogs import catalog
    return {(m.hidden_size, m.intermediate_size, m.experts_per_token, m.num_experts)
            for m in catalog.load_models() if m.num_experts}


def _moe_dtype(r: dict) -> str | None:
    w, q = r.get("q_dtype_w", ""), r.get("q_type", "")
    if w.endswith("bfloat16") and q.endswith("No"):
        return "bfloat16"
    if "float8" in w:
        return {"QuantType.per_1x128": "fp8_block", "QuantType.per_Token": "fp8",
                "QuantType.per_Tensor": "fp8"}.get(q)
    if "float4" in w and "float4" in r.get("q_dtype_a", "") and q == "QuantType.per_1x32":
        return "mxfp4"   # MXFP4 weights and activations (1x32 E8M0 scales): aiter's a4w4 fused MoE
    return None


def moe_rows(git_dir: str, commit: str):
    """Fused MoE layers (aiter's tuned fused-MoE tables) at the catalog's MoE shapes, split over TP (the tables'
    inter_dim is one expert's slice: the model's expert intermediate / MoE TP), no expert parallelism."""
    shapes = moe_shapes()
    names = subprocess.check_output(["git", "-C", git_dir, "ls-tree", "-r", "--name-only", commit, "aiter/configs"],
                                    text=True).split()
    runs: dict = {}
    for path in sorted(p for p in names if p.endswith(".csv") and "tuned_fmoe" in p and "untuned" not in p):
        text = subprocess.check_output(["git", "-C", git_dir, "show", f"{commit}:{path}"], text=True)
        for r in csv.DictReader(io.StringIO(text)):
            cu, dt = (r.get("cu_num") or "").strip(), _moe_dtype(r)
            if cu not in CU_GPUS or dt is None:
                continue
            try:
                t, h, i, e, k, us = (int(r["token"]), int(r["model_dim"]), int(r["inter_dim"]), int(r["expert"]),
                                     int(r["topk"]), float(r["us"]))
            except (KeyError, TypeError, ValueError):
                continue
            full = [s for s in shapes
                    if s[0] == h and s[2] == k and s[3] == e and s[1] % i == 0 and s[1] // i in MOE_TPS]
            if not full or not (us > 0 and math.isfinite(us)):
                continue
            runs.setdefault((cu, dt, full[0], full[0][1] // i), []).append((t, us, path))
    best: dict = {}
    for key, pts in runs.items():
        pts.sort()
        counts: dict = {}
        for t, us, path in pts:
            counts.setdefault((us, path), set()).add(t)
        for t, us, path in pts:
            if len(counts[(us, path)]) > 1:   # one time at several token counts (a bucket the tuner filled):
                continue                      # no measurement of its own
            cell = best.setdefault(key, {})
            if t not in cell or us < cell[t][0]:
                cell[t] = (us, path)
    for (cu, dt, (h, i, k, e), tp) in sorted(best, key=lambda x: (-int(x[0]), x[1], x[2], x[3])):
        pts = best[(cu, dt, (h, i, k, e), tp)]
        cells = on_grid(pts, MOE_TOKENS)
        if sum(1 for c in cells if c) < 3:
            continue
        files = sorted({f.rsplit("/", 1)[-1] for _, f in pts.values()})
        yield ["|".join(CU_GPUS[cu]), "aiter", f"{REPO}@{commit[:10]}", dt, h, i, k, e, tp, 1, *cells,
               f"{REPO}@{commit[:10]} " + "+".join(files) + f" (cu_num {cu})"]


KB, MB = 1024, 1024 ** 2
#: (gpu_ids, GPUs, source address, what the column is, [(message bytes, latency us)]), transcribed
ALLREDUCE = (
    ("mi300x|mi325x", 2, "https://github.com/ROCm/aiter/pull/801",
     "tp2 table, column 'vllm cr' (vLLM custom all-reduce, float16; MI300 series)",
     [(4 * KB, 7.07), (8 * KB, 7.58), (16 * KB, 7.53), (32 * KB, 7.30), (64 * KB, 7.66), (128 * KB, 8.70),
      (256 * KB, 11.45), (512 * KB, 17.13), (1 * MB, 28.15), (2 * MB, 49.67), (4 * MB, 93.79), (8 * MB, 181.43),
      (16 * MB, 355.91), (32 * MB, 703.69), (64 * MB, 1398.17), (128 * MB, 2787.55)]),
    ("mi300x|mi325x", 4, "https://github.com/vllm-project/vllm/pull/19744",
     "TP=4 table, column 'baseline' (vLLM custom all-reduce, float16; MI300)",
     [(2 * KB, 7.18), (16 * KB, 7.26), (32 * KB, 7.58), (256 * KB, 14.39), (512 * KB, 14.65), (1 * MB, 22.91),
      (2 * MB, 36.64), (4 * MB, 63.86), (8 * MB, 118.31), (16 * MB, 230.48)]),
    ("mi355x", 8, "https://github.com/vllm-project/vllm/pull/39080",
     "TP8 (bf16, dim=3072) table, column 'vllm/us' (vLLM's custom all-reduce before that change; MI355X)",
     [(24 * KB, 6.3), (48 * KB, 6.7), (96 * KB, 7.6), (192 * KB, 10.0), (384 * KB, 13.1), (768 * KB, 16.0),
      (1536 * KB, 24.2)]),
)


def allreduce_rows():
    for ids, g, url, what, pts in ALLREDUCE:
        for size, lat in pts:
            yield [ids, "vllm", "custom-ar", g, size, f"{lat:g}", f"{url} {what}"]   # as published


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__)
        return 2
    git_dir = argv[1]
    commit = argv[2] if len(argv) > 2 else COMMIT
    out = Path(argv[3]) if len(argv) > 3 else Path(__file__).resolve().parents[1] / "inference_ledger/data/kernels"
    today = datetime.date.today().isoformat()
    cols = "gpu_ids,engine,version,dtype,n,k," + ",".join(f"m{m}" for m in GEMM_M) + ",source"
    write(out / "gemm_amd.csv",
          f"# GEMM on AMD Instinct GPUs: measured kernel times from the GEMM tuner tables of {REPO} (MIT, see NOTICE),\n"
          f"# aiter/configs/*tuned_gemm*.csv and aiter/configs/model_configs/*tuned_gemm*.csv at commit {commit}; "
          f"distilled {today} by scripts/distill_amd_kernels.py.\n"
          "# Latencies in microseconds (us). One row per (dtype, N, K) AMD tuned (a list of shapes, not a grid): "
          "y = x W^T with x M x K, W N x K; columns m<M> are M (tokens) = " + ", ".join(map(str, GEMM_M))
          + "; the fastest kernel over the files at that shape; a column between two measured Ms is log-log between "
          "them, blank outside the measured Ms. fp8 = FP8 block-scaled (a8w8_blockscale: 1x128 activation, 128x128 "
          "weight scales), mxfp4 = MXFP4 (a4w4_blockscale: FP4 E2M1 activations and weights, 1x32 E8M0 scales; MI355X "
          "only), bfloat16 = the BF16 tuner's files.\n"
          "#   gpu_ids: the gpus.csv ids the row measures (aiter cu_num 304 = MI300X/MI325X, 256 = MI355X); engine "
          "aiter: the kernel library vLLM and SGLang call on ROCm\n"
          f"{cols}\n" + table(gemm_rows(git_dir, commit)))
    cols = "gpu_ids,engine,version,dtype,hidden,inter,topk,experts,tp,ep," \
        + ",".join(f"t{n}" for n in MOE_TOKENS) + ",source"
    write(out / "moe_amd.csv",
          f"# Fused MoE layer on AMD Instinct GPUs: measured kernel times from the fused-MoE tuner tables of {REPO} (MIT, "
          "see NOTICE),\n"
          f"# aiter/configs/*tuned_fmoe*.csv and aiter/configs/model_configs/*tuned_fmoe*.csv at commit {commit}; "
          f"distilled {today} by scripts/distill_amd_kernels.py.\n"
          "# Latencies in microseconds (us), both stages (us = us1 + us2 of the tuner). Columns t<T> are the tokens "
          "entering the layer (aiter's token; the tuner routes them at random); inter is one expert's whole "
          "intermediate size (the tables' inter_dim x tp), tp the MoE TP the slice implies, no expert parallelism; "
          "only the catalog's MoE shapes; a time found at several token counts (a bucket the tuner copied) "
          "is dropped, a column between two measured counts is log-log between them, blank outside them.\n"
          "#   gpu_ids: the gpus.csv ids the row measures (aiter cu_num 304 = MI300X/MI325X, 256 = MI355X)\n"
          f"{cols}\n" + table(moe_rows(git_dir, commit)))
    cols = "gpu_ids,library,version,gpus,message_bytes,latency_us,source"
    write(out / "allreduce_amd.csv",
          "# All-reduce on AMD Instinct GPUs: the engines' custom all-reduce as measured and published by AMD "
          "engineers in pull requests (each row names its table),\n"
          f"# transcribed by scripts/distill_amd_kernels.py on {today}.\n"
          "# Latencies in microseconds (us), float16 / bfloat16 messages. library vllm = vLLM's custom all-reduce "
          "(SGLang's ROCm custom all-reduce is the same kernel family).\n"
          "#   gpu_ids: the gpus.csv ids the row measures (MI325X: the same 64 GB/s xGMI links as MI300X)\n"
          f"{cols}\n" + table(allreduce_rows()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
