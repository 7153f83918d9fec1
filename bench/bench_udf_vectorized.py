"""KV_BYTES over 1,000,000 rows: the Excel function vs the same arithmetic in plain numpy.

The Excel side goes through the call path users hit: ``udfs.excel.KV_BYTES`` with the
seq_len column as the 2-D list xlwings passes (``ndim=2``), returning the 2-D list
xlwings spills; it includes reading and checking every cell.  The numpy side is
2 * L * K * H * S * b on a ready float array.  A third line shows what the list <-> array
conversion alone costs, i.e. the floor for any function that takes Excel's 2-D lists.

    python bench/bench_udf_vectorized.py [rows]
"""

from __future__ import annotations

import sys
import time

import numpy as np

from udfs.excel import KV_BYTES

LAYERS, KV_HEADS, HEAD_DIM, BYTES_PER = 80, 8, 128, 2  # Llama-3.1-70B, BF16


def best_of(repeats, fn, *args):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args)
        times.append(time.perf_counter() - t0)
    return min(times), out


def numpy_kv(seq):
    return 2 * LAYERS * KV_HEADS * HEAD_DIM * seq * BYTES_PER


def numpy_with_lists(column):
    return numpy_kv(np.asarray(column, dtype=float)).tolist()


def main(rows: int = 1_000_000, repeats: int = 3) -> None:
    column = [[float(1 + i % 131072)] for i in range(rows)]  # seq_len, 1 .. 128K tokens
    seq = np.asarray(column, dtype=float)

    t_excel, out = best_of(repeats, KV_BYTES, LAYERS, KV_HEADS, HEAD_DIM, column)
    t_numpy, ref = best_of(repeats, numpy_kv, seq)
    t_lists, _ = best_of(repeats, numpy_with_lists, column)
    assert len(out) == rows and np.array_equal(np.asarray(out), ref)

    print(f"rows: {rows:,}  (best of {repeats})")
    print(f"excel KV_BYTES, 2-D list in/out : {t_excel * 1e3:9.1f} ms")
    print(f"plain numpy arithmetic          : {t_numpy * 1e3:9.1f} ms")
    print(f"numpy + list conversion in/out  : {t_lists * 1e3:9.1f} ms")
    print(f"ratio excel / numpy             : {t_excel / t_numpy:9.1f} x")
    print(f"ratio excel / numpy with lists  : {t_excel / t_lists:9.1f} x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
