"""Sweep workbooks at scale: this streaming writer vs XlsxWriter, build time and memory by size, LibreOffice recalc.

Every build runs in a fresh interpreter; its peak memory is that process's maximum
resident set (``os.wait4`` rusage), so imports, the plan evaluation and the writer all
count.  A child that only imports and builds the sweep's table is the baseline.

1. Same rows, same cells: both writers get the same rows and evaluation (inference_ledger.graph.plan over
   numpy blocks) and write the same cells (labels, input values, every plan line as a
   formula with its cached value, the same number formats, the Inputs sheet and its
   names).  This build stores each column's formula once per 2,048-row block as an OOXML
   shared formula; XlsxWriter (``constant_memory``) writes the full text in every cell.
2. This build at each size (default 10k, 100k; add 1000000 with --sizes).
3. LibreOffice headless recalculation (forced on load) of this build's files.

    python bench/bench_sweep.py [--sizes 10000,100000,1000000] [--compare 20000] [--recalc 10000,100000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sweep_table(rows: int):
    """A sweep of exactly ``rows`` rows: 2 models x 5 GPUs x TP 1-8 x rows/40 concurrencies."""
    from inference_ledger.workbook.sweep import SweepSpec, build_sweep

    per = 2 * 5 * 4
    if rows % per:
        raise SystemExit(f"--sizes: use multiples of {per}")
    spec = SweepSpec(model=["llama-3.1-70b", "qwen2.5-72b"], gpu=["h100-sxm", "h200", "mi300x", "b200", "a100-80gb"],
                     tp=[1, 2, 4, 8], context=[4096], concurrency=list(range(1, rows // per + 1)))
    return build_sweep(spec, max_rows=rows)


def write_xlsxwriter(table, path: str) -> None:
    """The same cells through XlsxWriter's constant_memory (row-at-a-time) mode."""
    import numpy as np
    import xlsxwriter

    from inference_ledger.graph import plan, verdict
    from inference_ledger.core.expr import Sym
    from inference_ledger.core.units import CONSTANTS
    from inference_ledger.workbook.style import number_format
    from inference_ledger.workbook.sweep import VERDICT_WORDS, columns, evaluate_block, family_candidates

    cols = columns(table)
    wb = xlsxwriter.Workbook(path, {"constant_memory": True})
    ws = wb.add_worksheet("Sweep")
    inp = wb.add_worksheet("Inputs")
    for r, (name, value) in enumerate([*table.fixed.items(), *((k.name, float(k)) for k in CONSTANTS)]):
        inp.write_string(r, 0, name)
        inp.write_number(r, 1, value)
        wb.define_name(name, f"=Inputs!$B${r + 1}")
    col_of = {c.key: xlsxwriter.utility.xl_col_to_name(j) for j, c in enumerate(cols)}
    mark = "\x00"
    def ref(n):
        return n if n in table.fixed else f"${col_of[n]}{mark}"

    parts = {c.key: (verdict.words(Sym(ref("verdict"))).formula() if c.key == VERDICT_WORDS
                     else plan.render_key(c.key, ref, family_candidates(table))).split(mark)
             for c in cols if c.kind == "line"}
    fmts = {c.key: wb.add_format({"num_format": number_format(c.unit)}) for c in cols}
    for j, c in enumerate(cols):
        ws.write_string(0, j, c.header)
    r = 1
    for labels, inputs in table.blocks():
        vals = evaluate_block(table, inputs)
        data = []
        for c in cols:
            src = labels[c.key] if c.kind == "label" else (inputs if c.kind == "input" else vals)[c.key]
            data.append(src if isinstance(src, list) else np.asarray(src).tolist())
        for row in zip(*data):
            rs = str(r + 1)
            for j, (c, x) in enumerate(zip(cols, row)):
                if c.kind == "label":
                    ws.write_string(r, j, x)
                elif c.kind == "input":
                    ws.write_number(r, j, x, fmts[c.key])
                else:
                    ws.write_formula(r, j, rs.join(parts[c.key]), fmts[c.key], x)
            r += 1
    wb.close()


def child(kind: str, rows: int, out: str) -> None:
    t0 = time.perf_counter()
    table = sweep_table(rows)
    if kind == "ours":
        from inference_ledger.workbook.sweep import write

        write(table, out)
    elif kind == "xlsxwriter":
        write_xlsxwriter(table, out)
    print(json.dumps({"seconds": time.perf_counter() - t0, "bytes": os.path.getsize(out) if kind != "baseline" else 0}))


def measure(kind: str, rows: int, out: str) -> dict:
    """Run one build in a fresh interpreter: wall seconds, file bytes, peak RSS in MiB."""
    proc = subprocess.Popen([sys.executable, __file__, "--child", kind, str(rows), out], stdout=subprocess.PIPE,
                            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    stdout = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{kind} build of {rows} rows failed")
    res = json.loads(stdout)
    res["peak_mib"] = usage.ru_maxrss / 1024          # Linux: KiB
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="row counts for this build (comma-separated)")
    ap.add_argument("--compare", type=int, default=20_000, help="rows for the XlsxWriter comparison (0 = skip)")
    ap.add_argument("--recalc", default="10000,100000", help="row counts to recalculate in LibreOffice ('' = skip)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], int(a.child[1]), a.child[2])

    sizes = [int(s) for s in a.sizes.split(",") if s]
    recalc_sizes = [int(s) for s in a.recalc.split(",") if s]
    with tempfile.TemporaryDirectory(prefix="bench-sweep-") as tmp:
        base = measure("baseline", sizes[0], os.devnull)
        print(f"baseline (imports + sweep table, no writing): {base['peak_mib']:.0f} MiB peak RSS")
        if a.compare:
            ours = measure("ours", a.compare, f"{tmp}/ours.xlsx")
            xw = measure("xlsxwriter", a.compare, f"{tmp}/xw.xlsx")
            print(f"\n{a.compare:,} rows, same cells (this build vs XlsxWriter constant_memory):")
            for name, r in (("this build", ours), ("XlsxWriter", xw)):
                print(f"  {name:<11} {r['seconds']:8.1f} s  {r['peak_mib']:7.0f} MiB peak  {r['bytes'] / 1e6:8.1f} MB file")
            print(f"  time ratio XlsxWriter / this build:   {xw['seconds'] / ours['seconds']:.2f}x")
            print(f"  memory ratio XlsxWriter / this build: {xw['peak_mib'] / ours['peak_mib']:.2f}x "
                  f"(above baseline: {(xw['peak_mib'] - base['peak_mib']) / max(ours['peak_mib'] - base['peak_mib'], 1):.2f}x)")
        print("\nthis build by size:")
        first = None
        for n in sizes:
            r = measure("ours", n, f"{tmp}/s{n}.xlsx")
            first = first or r
            print(f"  {n:>9,} rows  {r['seconds']:8.1f} s  {n / r['seconds']:9,.0f} rows/s  {r['peak_mib']:6.0f} MiB peak "
                  f"({r['peak_mib'] / first['peak_mib']:.2f}x the smallest)  {r['bytes'] / 1e6:8.1f} MB file")
            if n in recalc_sizes:
                from inference_ledger.workbook.recalc import recalculate

                t0 = time.perf_counter()
                recalculate(f"{tmp}/s{n}.xlsx", f"{tmp}/lo{n}", timeout=3600)
                print(f"  {n:>9,} rows  LibreOffice recalculation (load, recalc, save): {time.perf_counter() - t0:.1f} s")
            os.unlink(f"{tmp}/s{n}.xlsx")


if __name__ == "__main__":
    main()
