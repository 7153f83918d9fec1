"""The Kernels sheet: each operation's measured kernel figures for the choices the workbook can pick.

The plan's kernel inputs (``kernel_tables`` and each operation's floor and time per unit, read by
:func:`inference_ledger.formulas.kernels.plan_kernel_inputs` from the distilled tables of
``inference_ledger/data/kernels``) depend on the model's shapes, the GPU, TP, EP, the weight and KV formats and the
engine.  This sheet holds them for every catalog model on every GPU with tables, at TP 1, 2, 4 and 8 (no EP), BF16 and
FP8 weights and KV cache, under the default engine, plus the Plan's and each scenario's own choice; the Plan and
Scenarios look their row up by the key model|gpu|tp|ep|weight dtype|KV dtype|engine (INDEX/MATCH), so the book stays
live without Python.  A choice without a row (a GPU without tables, INT4 or MXFP4 weights, BF16 on MI300X / MI325X,
an MLA model under DP attention, another engine's grid) reads 0: the roofline.  The choices come first and are the
sheet's print area; the grid follows on screen only (printed, it was ninety-odd pages of numbers).
"""

from __future__ import annotations

import functools
from dataclasses import make_dataclass

from openpyxl.utils import get_column_letter

from inference_ledger.catalogs import catalog, engines
from inference_ledger.formulas import kernel_tables, kernels
from inference_ledger.graph import plan, resolve
from inference_ledger.core import unit_registry
from inference_ledger.core.args import LedgerInputError

from . import style
from .context import Ctx
from .scenarios_sheet import scenario_inputs
from .tables import KERNEL_INPUTS, KERNEL_PREFIX

FIELD_ROW, HEADER_ROW, FIRST_ROW = 4, 5, 6
GRID_TPS, GRID_FORMATS = (1, 2, 4, 8), ("bf16", "fp8")

KernelRow = make_dataclass("KernelRow", [("id", str), *((n, float) for n in KERNEL_INPUTS)])


def key(model: str, gpu: str, tp: float, ep: float, weight_dtype: str, kv_dtype: str, engine: str) -> str:
    """A row's key, as kernel_key_formula builds it from the choice's cells."""
    return "|".join((model, gpu, f"{tp:g}", f"{ep:g}", weight_dtype, kv_dtype, engine))


def _row(m, gpu, tp, ep, wd, kd, engine, inputs=None, gpu_entry=None):
    """The Kernels row of a catalog model (or a config.json's) on a GPU at a layout and formats; None without tables."""
    if inputs is None:
        try:
            inputs = resolve.plan_inputs(m, gpu_entry or catalog.get_gpu(gpu), weight_dtype=wd, kv_dtype=kd, tp=tp,
                                         ep=ep)
        except LedgerInputError:
            return None
    figures, _ = resolve.engine_kernel_inputs(resolve.kernel_basis(inputs, gpu, wd, m.active_params), gpu,
                                              engines.get_engine(engine), m.num_attention_heads, wd, kd)
    if not figures.get("kernel_tables"):
        return None
    return KernelRow(key(m.id, gpu, tp, ep, wd, kd, engine), *(float(figures.get(n, 0.0)) for n in KERNEL_INPUTS))


@functools.lru_cache(maxsize=None)
def grid_rows() -> tuple:
    """The catalog grid under the default engine (computed once per process)."""
    out = []
    gpus = [g for g in catalog.load_gpus() if kernels.has_tables(g.id)]
    for m in catalog.load_models():
        for g in gpus:
            for tp in GRID_TPS:
                if resolve.tp_problem(m, g, tp):
                    continue
                for wd in GRID_FORMATS:
                    if not kernel_tables.has_gemm_table(g.id, engines.DEFAULT_ENGINE, wd):
                        continue   # no row without a GEMM table (BF16 on MI300X): skip resolving the plan
                    for kd in GRID_FORMATS:
                        r = _row(m, g.id, tp, 1, wd, kd, engines.DEFAULT_ENGINE, gpu_entry=g)
                        if r is not None:
                            out.append(r)
    return tuple(out)


def choice_rows(ctx: Ctx) -> list:
    """Rows for the Plan's choice and each scenario's (any engine, TP, EP), besides the grid."""
    picks = [(ctx.choice, ctx.inputs)] + [scenario_inputs(ctx, sc)[:2] for sc in ctx.scenarios]
    out = []
    for choice, inputs in picks:
        if choice.get("model") is None or choice.get("gpu") is None:
            continue
        m = next(e for e in ctx.tables["Models"].rows if e.id == choice["model"])
        r = _row(m, choice["gpu"], float(inputs["tp"]), float(inputs["ep"]), choice["weight_dtype"] or m.weight_dtype,
                 choice["kv_dtype"], choice["engine"], inputs)
        if r is not None:
            out.append(r)
    return out


def column_format(name: str, values) -> str:
    """A column's number format: a code as a whole number; a time in the unit's format at the column's smallest
    non-zero magnitude (three significant digits of it: a time per byte is a few picoseconds, and a fixed nine
    decimals showed it as 0), never scientific notation."""
    nonzero = [abs(v) for v in values if v]
    return unit_registry.excel_format(plan.INPUT_BY_NAME[name].unit, min(nonzero) if nonzero else None) or "0"


def kernels_sheet(wb, ctx: Ctx) -> None:
    # the rows the Plan and the scenarios look up come first: the printed part (see the module doc)
    chosen = {r.id: r for r in choice_rows(ctx)}
    rows = {**chosen, **{r.id: r for r in grid_rows() if r.id not in chosen}}
    ws = ctx.new_sheet("Kernels", "Kernels: each operation's measured figures by choice (the Plan and Scenarios "
                       "look their row up)", tab="A5A5A5")
    ctx.put(ws, "A3", "From NVIDIA aiconfigurator-core 0.12.0's measured kernel tables (Apache-2.0) and, for AMD, "
            "ROCm/aiter's tuner tables (MIT) and published all-reduce figures (inference_ledger/data/kernels/NOTICE), "
            "read at each row's shapes: key = model|gpu|tp|ep|weight dtype|KV dtype|engine. A choice without a row "
            f"prices the step on the roofline. The first {len(chosen)} rows are the Plan's and the scenarios' "
            "choices (the printed part); the catalog grid below them is on screen only.", style.NOTE)
    ws.merge_cells("A3:L3")
    cols = ("id", *KERNEL_INPUTS)
    for j, name in enumerate(cols):
        L = get_column_letter(j + 1)
        ctx.put(ws, f"{L}{FIELD_ROW}", name, style.NOTE)
        label = "Key" if name == "id" else plan.INPUT_BY_NAME[name].label
        ctx.put(ws, f"{L}{HEADER_ROW}", label, style.HEADER)
        ws.column_dimensions[L].width = 40 if name == "id" else 14
    for i, r in enumerate(rows.values()):
        ctx.put(ws, f"A{FIRST_ROW + i}", r.id, style.INPUT)
    # the figures (a column per input of every row): one block of numbers, written straight into the sheet's XML
    block = [[getattr(r, n) for n in KERNEL_INPUTS] for r in rows.values()]
    ctx.number_block(ws, FIRST_ROW, 2, block, style.INPUT,
                     [column_format(n, [r[j] for r in block]) for j, n in enumerate(KERNEL_INPUTS)])
    last_col, end = get_column_letter(len(cols)), FIRST_ROW + max(len(rows), 1) - 1
    ctx.define(f"{KERNEL_PREFIX}_IDS", ws, f"A{FIRST_ROW}:A{end}")
    ctx.define(f"{KERNEL_PREFIX}_TABLE", ws, f"A{FIRST_ROW}:{last_col}{end}")
    ctx.define(f"{KERNEL_PREFIX}_FIELDS", ws, f"A{FIELD_ROW}:{last_col}{FIELD_ROW}")
    ws.freeze_panes = f"B{FIRST_ROW}"
    ws.print_title_rows = f"{HEADER_ROW}:{HEADER_ROW}"
    ws.print_area = f"A1:{last_col}{FIRST_ROW + max(len(chosen), 1) - 1}"
