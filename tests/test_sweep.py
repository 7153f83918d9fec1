"""Sweeps: a 1,000+-row sheet recalculated by LibreOffice equals `plan --json` row by row; notes, CSV, errors, memory."""

from __future__ import annotations

import csv
import math
import os
import sys
import tracemalloc
import zipfile
from pathlib import Path

import openpyxl
import pytest

from inference_ledger.cli import run
from inference_ledger.catalogs import catalog
from inference_ledger.graph import plan, resolve, verdict
from inference_ledger.graph.bills import billed
from inference_ledger.io.report import plan_json
from inference_ledger.workbook import sweep
from inference_ledger.workbook.recalc import recalculate

SPEC = sweep.SweepSpec(
    # dense GQA, sliding-window MoE (MXFP4), MLA MoE (FP8): every branch of the memory ledger
    model=["llama-3.1-70b", "gpt-oss-20b", "deepseek-v3", "llama-3.1-8b"],
    gpu=["h100-sxm", "h200", "mi300x", "l40s"],      # NVSwitch, NVSwitch, Infinity Fabric, PCIe (small-GPU defaults)
    tp=[1, 2, 4, 8, 16],
    weight_dtype=["native", "fp8"],
    kv_dtype=["bf16", "fp8"],
    context=[4096, 32768],
    concurrency=[1, 16, 64],
)
# TP 16 cannot run; DeepSeek-V3's native format is FP8, so its native and fp8 rows are one: (3 x 2 + 1) formats
N_ROWS = (3 * 2 + 1) * 4 * 4 * 2 * 2 * 3    # 1,344 rows


#: The sweep's bill columns: money and fleet sizes (and the lines that read them).
BILLED = billed([l.name for l in plan.LINES])


def test_bills_are_the_money_and_fleet_lines():
    assert {"gpus_for_qps", "monthly_cost_qps", "cost_per_million_output_tokens", "gpus_total",
            "monthly_cost"} <= BILLED
    assert not BILLED & {"verdict", "max_concurrency", "tokens_per_second", "price_per_gpu_hour", "tpot_seconds"}


def _expected(model, gpu, wd, kd, tp, input_tokens, concurrency):
    """What `inference-ledger plan --json` prints for these options (its own code path)."""
    r = resolve.resolve(model, gpu, weight_dtype=wd, kv_dtype=kd,
                        numbers={"tp": tp, "input_tokens": input_tokens, "concurrency": concurrency})
    inputs, desc = r.inputs, r.describe()
    return plan_json(plan.evaluate(inputs), model=desc["model"], gpu=desc["gpu"], weight_dtype=desc["weight_dtype"],
                     kv_dtype=desc["kv_dtype"])


def _same(expected, got) -> bool:
    if isinstance(expected, bool):
        return got == int(expected)
    if expected is None:
        return got is None or isinstance(got, str)
    return isinstance(got, (int, float)) and math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.libreoffice
def test_sweep_recalculated_by_libreoffice_matches_plan_json_row_by_row(tmp_path, soffice):
    table = sweep.build_sweep(SPEC)
    assert table.n_rows == N_ROWS
    # no cached values: every number below comes from LibreOffice evaluating the formulas
    path = sweep.write(table, tmp_path / "sweep.xlsx", cached=False)
    cols = sweep.columns(table)
    raw = openpyxl.load_workbook(path, read_only=True)["Sweep"]
    row2 = next(raw.iter_rows(min_row=2, max_row=2, values_only=True))
    assert all(str(x).startswith("=") for c, x in zip(cols, row2) if c.kind == "line")

    ws = openpyxl.load_workbook(recalculate(path, tmp_path / "lo"), read_only=True, data_only=True)["Sweep"]
    rows = 0
    for row in ws.iter_rows(min_row=2, values_only=True):
        got = {c.key: x for c, x in zip(cols, row)}
        wd = None if got["weight_dtype"] == catalog.get_model(got["model"]).weight_dtype else got["weight_dtype"]
        exp = _expected(got["model"], got["gpu"], wd, got["kv_dtype"], int(got["tp"]),
                        int(got["input_tokens"]), int(got["concurrency"]))
        # a row that does not start shows no bill (its money and fleet columns read "does not fit")
        words = exp["verdict"] < 1
        bad = [(k, exp[k], got[k]) for k in (l.name for l in plan.LINES)
               if not (got[k] == "does not fit" if words and k in BILLED else _same(exp[k], got[k]))]
        # each family's table columns (the fit test at TP 1, 2, 4, 8): the plan's nested keys
        fam = {f"{f.name}.{c}.{m}": v for f in plan.FAMILIES for c, row in exp[f.name].items()
               for m, v in row.items() if m != f.param}   # the candidate itself is a formula inside, not a column
        assert set(fam) <= set(got) and any(k.endswith(".fits") for k in fam)
        bad += [(k, v, got[k]) for k, v in fam.items() if not _same(v, got[k])]
        assert not bad, (got["model"], got["gpu"], got["tp"], bad[:3], [b[0] for b in bad][-12:])
        # the verdict, from its definition: does not start / queues / misses a target / meets them
        want = 0 if exp["max_concurrency"] < 1 else 1 if not exp["fits"] else 3 if exp["ttft_ok"] and exp["tpot_ok"] else 2
        assert (got["verdict"], got["verdict_words"]) == (want, verdict.WORDS[want])
        rows += 1
    assert rows == N_ROWS


def test_the_verdict_and_the_headers_print_whole(tmp_path):
    """'fits, meets target' was cut at the verdict column's 14 characters, and the 54-point header row (four lines)
    cut 'Active parameters in quantizable layers (bn params)' (five lines at its width).  The width is the longest
    verdict a row can have, not the longest one in this sweep, so one row shows it."""
    table = sweep.build_sweep(sweep.SweepSpec(model=["llama-3.1-70b"], gpu=["h100-sxm"], tp=[4]))
    path = sweep.write(table, tmp_path / "s.xlsx")
    ws = openpyxl.load_workbook(path)["Sweep"]
    cols = sweep.columns(table)
    verdict_col = openpyxl.utils.get_column_letter([c.key for c in cols].index(sweep.VERDICT_WORDS) + 1)
    assert ws.column_dimensions[verdict_col].width >= len("fits below the requested concurrency") + 1
    # "Active / parameters in / quantizable / layers (bn / params)": five lines of 15 characters, 13.5 pt each
    assert any(c.value == "Active parameters in quantizable layers (bn params)" for c in ws[1])
    assert ws.row_dimensions[1].height >= 5 * 13.5


def test_rows_follow_the_lists_and_cached_values_are_the_plans(tmp_path):
    table = sweep.build_sweep(SPEC)
    labels, inputs = next(table.blocks())
    assert [labels[k][0] for k in ("model", "gpu", "weight_dtype", "kv_dtype")] == ["llama-3.1-70b", "h100-sxm", "bf16", "bf16"]
    assert (inputs["tp"][0], inputs["input_tokens"][0], inputs["concurrency"][0]) == (1, 4096 - 512, 1)
    assert (inputs["tp"][5], inputs["input_tokens"][5], inputs["concurrency"][5]) == (1, 32768 - 512, 64)
    assert (inputs["tp"][6], inputs["input_tokens"][6], inputs["concurrency"][6]) == (2, 4096 - 512, 1)
    path = sweep.write(table, tmp_path / "s.xlsx")
    ws = openpyxl.load_workbook(path, read_only=True, data_only=True)["Sweep"]
    cols = sweep.columns(table)
    got = dict(zip([c.key for c in cols], next(ws.iter_rows(min_row=3, max_row=3, values_only=True))))
    exp = _expected("llama-3.1-70b", "h100-sxm", None, "bf16", 1, 4096 - 512, 16)
    assert got["concurrency"] == 16
    assert got["kv_bytes_per_sequence"] == exp["kv_bytes_per_sequence"] == 327_680 * 4096
    assert got["qps_per_replica"] == pytest.approx(exp["qps_per_replica"], rel=1e-12)
    assert got["verdict_words"] == "does not fit"       # 141 GB of BF16 weights on one 80 GB H100
    assert got["monthly_cost_qps"] == got["gpus_for_qps"] == "does not fit"   # and so no bill


ACROSS = "(TP stays within a node: add PP stages or EP across nodes)"


def test_combinations_that_cannot_run_are_listed_with_reason_and_count(tmp_path):
    spec = sweep.SweepSpec(model=["qwen2.5-72b"], gpu=["h100-sxm", "h200"], tp=[3, 4, 16], context=[4096, 65536],
                       concurrency=[1, 16])
    table = sweep.build_sweep(spec)
    assert table.n_rows == 2 * 1 * 1 * 2      # TP 4 at 4096: two GPUs x two concurrencies
    assert table.skipped == [
        ("qwen2.5-72b", "TP 3", "TP 3 does not divide the 64 attention heads of qwen2.5-72b", 8),
        ("h100-sxm", "TP 16", f"TP 16 spans more than one 8-GPU node of h100-sxm {ACROSS}", 4),
        ("h200", "TP 16", f"TP 16 spans more than one 8-GPU node of h200 {ACROSS}", 4),
        ("qwen2.5-72b", "context 65536",
         "context 65,536 exceeds the 32,768-token maximum of qwen2.5-72b (max_position_embeddings)", 4),
    ]
    path = sweep.write(table, tmp_path / "s.xlsx")
    notes = [r for r in openpyxl.load_workbook(path, read_only=True)["Notes"].iter_rows(values_only=True)]
    assert ("qwen2.5-72b", "TP 3", "TP 3 does not divide the 64 attention heads of qwen2.5-72b", 8) in \
        [tuple(r[:4]) for r in notes]


def test_kv_head_rule():
    m = catalog.get_model("qwen3-235b-a22b")                      # 64 attention heads, 4 KV heads
    assert resolve.heads_problem(m, 4) is None
    assert resolve.heads_problem(m, 8) is None                        # 8 % 4 == 0: each KV head on two GPUs
    assert resolve.heads_problem(catalog.get_model("qwen2.5-7b"), 8) == \
        "TP 8 does not divide the 28 attention heads of qwen2.5-7b"
    assert resolve.heads_problem(catalog.get_model("deepseek-v3"), 8) is None


def test_csv_has_the_same_columns_as_values(tmp_path):
    table = sweep.build_sweep(sweep.SweepSpec(model=["llama-3.1-8b"], gpu=["l4"], tp=[1], context=[2048], concurrency=[4]))
    path = sweep.write(table, tmp_path / "s.csv")
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 1
    exp = _expected("llama-3.1-8b", "l4", None, "bf16", 1, 2048 - 512, 4)
    assert float(rows[0]["weights_bytes"]) == exp["weights_bytes"]
    assert float(rows[0]["max_concurrency"]) == exp["max_concurrency"]
    assert rows[0]["verdict_words"] == verdict.WORDS[int(float(rows[0]["verdict"]))]


def test_shared_formulas_once_per_block(tmp_path):
    table = sweep.build_sweep(sweep.SweepSpec(model=["llama-3.1-8b"], gpu=["l4"], tp=[1], context=[2048],
                                      concurrency=list(range(1, sweep.BLOCK_ROWS + 11))))
    path = sweep.write(table, tmp_path / "s.xlsx")
    xml = zipfile.ZipFile(path).read("xl/worksheets/sheet1.xml").decode()
    n_formulas = sum(1 for c in sweep.columns(table) if c.kind == "line")
    assert xml.count('<f t="shared" ref=') == 2 * n_formulas     # two blocks: 2048 + 10 rows
    assert xml.count("<f ") == (sweep.BLOCK_ROWS + 10) * n_formulas


#: blocks of rows the memory test writes: the first holds what a write sets up once, the others only their rows
MEMORY_BLOCKS = 3


def _block_memory(path) -> list[tuple[int, int]]:
    """(traced bytes held, traced peak) after each block of rows a sweep of MEMORY_BLOCKS blocks writes, the peak
    taken afresh for each block: a writer that streams holds and peaks the same for every block, one that keeps
    its rows grows by a block's rows each time."""
    table = sweep.build_sweep(sweep.SweepSpec(model=["llama-3.1-8b"], gpu=["l4"], tp=[1], context=[2048],
                                      concurrency=list(range(1, MEMORY_BLOCKS * sweep.BLOCK_ROWS + 1))),
                              max_rows=10**6)
    marks = []

    def block_done(rows: int) -> None:
        marks.append(tracemalloc.get_traced_memory())
        tracemalloc.reset_peak()

    tracemalloc.start()
    try:
        sweep.write(table, path, progress=block_done)
    finally:
        tracemalloc.stop()
    return marks


def _peaks(folder: Path) -> tuple[list[str], dict]:
    """A child process prints the writer's traced memory block by block (tracing every allocation makes this write
    the costliest part of this file: it runs beside the other tests)."""
    script = ("import sys; sys.path.insert(0, 'tests'); from test_sweep import _block_memory; "
              f"print(*(f'{{held}} {{peak}}' for held, peak in _block_memory({str(folder / 'a.xlsx')!r})))")
    return [sys.executable, "-c", script], dict(os.environ)


#: started with the session (conftest.py)
EARLY_CHILDREN = {"peaks": _peaks}


def test_memory_stays_flat_as_rows_grow(early_child):
    proc, _ = early_child("peaks")
    assert proc.returncode == 0, proc.stderr[-3000:]
    numbers = [int(x) for x in proc.stdout.split()]
    held, peak = numbers[0::2], numbers[1::2]
    assert len(held) == MEMORY_BLOCKS, proc.stdout
    # each block after the first holds and peaks within a quarter of a block's peak of the first block's figures (a
    # writer that kept its rows would hold tens of MB more per block: a 2,048-row block's XML alone is about 6 MB)
    assert max(held) - held[0] < 0.25 * peak[0], (held, peak)
    assert max(peak) < 1.25 * peak[0], (held, peak)


def test_failed_write_leaves_nothing_behind(tmp_path):
    table = sweep.build_sweep(sweep.SweepSpec(model=["llama-3.1-8b"], gpu=["l4"], tp=[1], context=[2048], concurrency=[1, 2]))

    def broken():
        yield from table.blocks()
        raise RuntimeError("disk on fire")

    table.blocks = broken
    with pytest.raises(RuntimeError):
        sweep.write(table, tmp_path / "s.xlsx")
    assert list(tmp_path.iterdir()) == []


# --- command line ---------------------------------------------------------------------------

def _cli(capsys, *argv):
    with pytest.raises(SystemExit) as e:
        run(list(argv))
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


BASE = ("sweep", "--model", "llama-3.1-70b", "--gpu", "h100-sxm,h200")


def test_cli_writes_xlsx_without_progress_when_piped(tmp_path, capsys):
    code, out, err = _cli(capsys, *BASE, "--tp", "2,4,16", "--weight-dtype", "bf16,fp8", "--context", "4096,32768",
                          "--concurrency", "1,16,64", "-o", str(tmp_path / "s.xlsx"))
    assert code == 0
    assert out.strip() == f"wrote {tmp_path / 's.xlsx'}: 48 rows; 24 combinations cannot run (see the Notes sheet)"
    assert err == ""                                   # no progress bar into a pipe


@pytest.mark.parametrize("argv, message", [
    (("--tp", ""), "Invalid value for '--tp': empty list"),
    (("--tp", "1,x"), "Invalid value for '--tp': 'x' is not a number in GPUs"),
    (("--gpu", "h10"), "unknown GPU 'h10': did you mean"),
    (("--model", "llama-3.1-7b"), "unknown model 'llama-3.1-7b': did you mean"),
    (("--weight-dtype", "int4-kv"), "weight dtype 'int4-kv' is not a weight format"),
    (("--concurrency", ",,"), "Invalid value for '--concurrency': empty list"),
    (("--context", "512"), "context 512 must exceed the output tokens 512 (context = input + output tokens)"),
    (("--tp", "3"), "none of the 2 combinations can run: TP 3 does not divide the 64 attention heads of llama-3.1-70b"),
    (("--concurrency", "1,2,3,4,5,6", "--max-rows", "10"),
     "the sweep has 48 rows (48 combinations, 0 cannot run), over the limit of 10 rows"),
])
def test_cli_bad_specs_fail_with_one_line(tmp_path, capsys, argv, message):
    args = dict(zip(BASE[1::2], BASE[2::2]))
    args.update(dict(zip(argv[0::2], argv[1::2])))
    flat = [x for kv in args.items() for x in kv]
    code, out, err = _cli(capsys, "sweep", *flat, "-o", str(tmp_path / "s.xlsx"))
    assert code != 0
    assert message in err
    assert err.count("\n") == 1 and out == ""
    assert not (tmp_path / "s.xlsx").exists()
