"""Build the inference-ledger workbook: live, portable formulas that need no Python.

One module per sheet (as XlsxWriter has one module per part of the file), each a
``builder(wb, ctx)`` function; this module keeps only the plan the workbook opens on
(:func:`make_context`), the ordered sheet list :data:`SHEET_BUILDERS` and the entry points:

* :mod:`inference_ledger.workbook.start`, :mod:`inference_ledger.workbook.plan_sheet`
  (+ :mod:`inference_ledger.workbook.plan_charts`), :mod:`inference_ledger.workbook.ledgers`,
  :mod:`inference_ledger.workbook.scenarios_sheet`, :mod:`inference_ledger.workbook.tco`,
  :mod:`inference_ledger.workbook.forecast`, :mod:`inference_ledger.workbook.sensitivity`,
  :mod:`inference_ledger.workbook.checks`, :mod:`inference_ledger.workbook.calibration`,
  :mod:`inference_ledger.workbook.catalogs`: the sheets;
* :mod:`inference_ledger.workbook.cells` (headers, formats, validations, names, row heights),
  :mod:`inference_ledger.workbook.context` (the builders' shared state), :mod:`inference_ledger.workbook.tables`
  (catalog lookups) and :mod:`inference_ledger.workbook.style`, below every sheet;
* :mod:`inference_ledger.workbook.package` writes each formula's cached value (the value Python computed
  as the sheet was written), so a mail preview shows what Excel or LibreOffice recompute.

Every computed cell comes from one definition: ledger lines from
:func:`inference_ledger.graph.plan.render`, catalog-derived inputs from
:func:`inference_ledger.workbook.tables.lookup`, checks from :mod:`inference_ledger.workbook.checks`.

Adding a sheet: write its module with a ``builder(wb, ctx)`` and add one line to
:data:`SHEET_BUILDERS`; another program passes ``extra_sheets=[my_builder]`` to
:func:`build_workbook` or calls :func:`register_sheet`.
"""

from __future__ import annotations

import dataclasses
import io
import os
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence

from openpyxl import Workbook

from inference_ledger import __version__
from inference_ledger.graph import concurrency, plan, resolve
from inference_ledger.catalogs import engines
from inference_ledger.validation.calibrate_profile import read_profile
from inference_ledger.core.files import check_target, write_bytes, writing
from inference_ledger.formulas.finance import finance_options

from . import style
from .calibration import add_calibration_sheet
from .catalogs import catalog_sheet
from .kernels_sheet import kernels_sheet
from .cells import DEFAULT_CHOICE, SELECTOR_NAMES, build_date, fit_rows, named, py_value
from .checks import check_rows
from .checks_sheet import checks_sheet, standing
from .context import Ctx, SheetBuilder
from .disaggregated import disaggregated_sheet
from .forecast import add_forecast_sheet
from .ledgers import ledger_sheet
from .load_chart import load_sheet
from .package import package, streamed_cells
from .plan_sheet import plan_sheet
from .printing import finish
from .scenarios import DEFAULT_SCENARIOS, Scenario, read_scenarios
from .scenarios_sheet import scenarios_sheet
from .sensitivity import add_sensitivity_sheet
from .start import DESCRIPTION, TITLE, start_sheet
from .summary import BUILD_LAST, summary_sheet
from .tables import is_lookup, load_tables, lookup
from .tco import add_tco_sheet

#: The public names other modules and tests import from here.
__all__ = ["SHEET_BUILDERS", "SELECTOR_NAMES", "build_date", "build_workbook", "check_rows", "make_context", "named",
           "register_sheet", "render_workbook", "resolve_build"]


#: The workbook, sheet by sheet, in display order (one line per sheet: add a sheet by adding its line).
SHEET_BUILDERS: list[SheetBuilder] = [
    summary_sheet,
    start_sheet,
    plan_sheet,
    ledger_sheet("memory", "Memory"),
    ledger_sheet("compute", "Compute"),
    ledger_sheet("bandwidth", "Bandwidth"),
    ledger_sheet("cost", "Cost"),
    scenarios_sheet,
    load_sheet,
    disaggregated_sheet,
    add_tco_sheet,
    add_forecast_sheet,
    add_sensitivity_sheet,
    checks_sheet,
    add_calibration_sheet,
    catalog_sheet("GPUs"),
    catalog_sheet("Models"),
    catalog_sheet("Dtypes"),
    catalog_sheet("Engines"),
    catalog_sheet("GPU costs"),
    kernels_sheet,
]


def register_sheet(builder: SheetBuilder, after: Optional[str] = None) -> None:
    """Add a sheet builder (after the builder named ``after``, else at the end)."""
    names = [b.__name__ for b in SHEET_BUILDERS]
    SHEET_BUILDERS.insert(names.index(after) + 1 if after in names else len(SHEET_BUILDERS), builder)


# --- entry point -------------------------------------------------------------------------------


def resolve_build(model=None, gpu=None, weight_dtype=None, kv_dtype=None, *, config=None, context=None,
                  engine=None, numbers: Optional[Mapping[str, Any]] = None) -> resolve.Resolved:
    """The workbook's plan as the resolver gives it; a model or GPU not given is the default one.  A model given by
    its numbers alone is the default model's row with those numbers as overrides, sized as the resolver sizes a
    model of numbers (:func:`inference_ledger.graph.resolve.generic_sizes`: ``--params 8B`` is all active)."""
    if model is None and config is None:
        model = DEFAULT_CHOICE["model"]
        if numbers is not None and resolve.figures_given(numbers):
            numbers = resolve.generic_sizes(numbers)
    return resolve.resolve(model, DEFAULT_CHOICE["gpu"] if gpu is None else gpu, weight_dtype=weight_dtype,
                           kv_dtype=DEFAULT_CHOICE["kv_dtype"] if kv_dtype is None else kv_dtype,
                           engine=engine or engines.DEFAULT_ENGINE, context=context, config=config, numbers=numbers)


def make_context(model=None, gpu=None, weight_dtype=None, kv_dtype=None, *, config=None, context=None,
                 engine=None, scenarios: Optional[Sequence[Scenario] | str | os.PathLike] = None,
                 forecast_months: Optional[int] = None, currency: Optional[str] = None,
                 currency_symbol: Optional[str] = None, profile=None, **numbers) -> Ctx:
    """The plan the workbook opens on, assembled as ``inference-ledger plan`` does.

    Catalog lookups and defaults, then the engine's defaults for this GPU and TP
    (:func:`inference_ledger.graph.resolve.resolve`), then the numbers given.  Takes what
    :func:`inference_ledger.cli.build.build_options` collects: ``config`` (a
    config.json whose model joins the Models sheet and is selected), ``context`` (prompt
    + output tokens), ``engine``, ``scenarios`` (a CSV path or Scenario rows) and plan
    input names; None means "not given".  ``profile`` (a path or an
    :class:`inference_ledger.validation.calibrate_profile.Profile`) puts its fitted inputs beneath the numbers given; the
    Calibration sheet then shows its measured rows against the catalog and calibrated predictions.
    """
    if isinstance(profile, (str, os.PathLike)):
        profile = read_profile(profile)
    given = dict(numbers)
    if profile is not None:
        numbers = {**numbers, **{k: v for k, v in profile.values.items() if numbers.get(k) is None}}
    r = resolve_build(model, gpu, weight_dtype, kv_dtype, config=config, context=context, engine=engine,
                      numbers=numbers)
    explicit, inputs = r.explicit, r.inputs
    tables = load_tables()
    if config is not None:
        # the sheet may be mailed: name the file, not where it lives on this machine
        m = dataclasses.replace(r.model, source=f"config.json given to the build ({Path(config).name})")
        models = tables["Models"]
        models.rows = [e for e in models.rows if e.id != m.id] + [m]
    eng = engines.get_engine(r.engine)
    choice = {"model": r.model.id, "gpu": r.gpu.id, "weight_dtype": r.weight_dtype, "kv_dtype": r.kv_dtype,
              "engine": eng.id}
    if scenarios is None:
        scenarios = DEFAULT_SCENARIOS
    elif isinstance(scenarios, (str, os.PathLike)):
        scenarios = read_scenarios(scenarios)
    over = {k: v for k, v in explicit.items() if lookup(k, tables, SELECTOR_NAMES, choice) is not None}
    # the concurrency the plan runs at: the one given, else the largest meeting the targets (the Load sheet's
    # candidates and a MAX over them keep that choice live in the workbook)
    values = concurrency.evaluate(inputs, explicit.get("concurrency"))
    inputs = dict(inputs) | {"concurrency": values["concurrency"]}
    ctx = Ctx(wb=None, tables=tables, choice=choice, inputs=inputs, overrides=over, values=values,
              scenarios=tuple(scenarios), build_date=build_date(tables), version=__version__, engine=eng.id,
              engine_inputs=tuple(n for n in plan.NAMES if n in _engine_names(eng) and not is_lookup(n, tables)),
              explicit=explicit)
    # a family's table has a column for each candidate of the largest bound in the GPUs table (e.g. TP 1 ... 64 for a
    # 72-GPU node): whichever GPU the Plan's dropdown picks, its own candidates are columns (the rest are masked)
    ctx.family_candidates = {f.name: f.candidates(max([inputs[f.bound]] + [getattr(g, f.bound) for g in
                                                                         tables["GPUs"].rows]))
                             for f in plan.FAMILIES}
    ctx.forecast_months, ctx.currency_code, ctx.currency_symbol = finance_options(forecast_months, currency,
                                                                                   currency_symbol)
    st = standing(ctx, ctx.values["verdict"])
    ctx.master_value, ctx.checks_pass, ctx.rule_broken = st.master, st.checks_pass, st.rule_broken
    ctx.profile = profile
    # the same choice without the profile: what the Calibration sheet calls the catalog prediction
    ctx.catalog_inputs = resolve_build(model, gpu, weight_dtype, kv_dtype, config=config, context=context,
                                       engine=engine, numbers=given).inputs if profile is not None else inputs
    return ctx


def _engine_names(eng) -> set[str]:
    """Plan inputs an engine sets (its defaults depend on the GPU and TP, so rows get their own)."""
    return set(engines.engine_inputs(eng, gpu_memory_bytes=plan.INPUT_BY_NAME["gpu_memory_bytes"].default))


def render_workbook(ctx: Ctx, extra_sheets: Iterable[SheetBuilder] = (), template: bool = False) -> bytes:
    wb = Workbook()
    wb.remove(wb.active)
    ctx.wb = wb
    style.register(wb)
    style.set_currency(ctx.currency_code, ctx.currency_symbol)
    builders = list(SHEET_BUILDERS) + list(extra_sheets)
    made: dict[int, list] = {}
    try:
        # a sheet that reads the others (the Summary) is built last and put back in its place in the list
        for k, builder in sorted(enumerate(builders), key=lambda kb: kb[1] in BUILD_LAST):
            before = set(wb.sheetnames)
            builder(wb, ctx)
            made[k] = [ws for ws in wb.worksheets if ws.title not in before]
        wb._sheets = [ws for k in sorted(made) for ws in made[k]]
        finish(wb, ctx, TITLE)   # every sheet's print setup and link back to the Summary, in one pass
    finally:
        style.set_currency("USD", "$")
    for ws in wb.worksheets:
        fit_rows(ws, ctx.cached, ctx.blocks.get(ws.title, ()))
    wb.active = 0  # open on the Summary
    for ws in wb.worksheets:
        ws.sheet_view.tabSelected = ws is wb.worksheets[0]
    wb.calculation.fullCalcOnLoad = True
    p = wb.properties
    p.creator = "inference-ledger"
    p.lastModifiedBy = "inference-ledger"
    p.title = TITLE
    p.subject = "LLM inference capacity plan: GPUs, latency, throughput and cost"
    p.description = DESCRIPTION
    p.keywords = "LLM inference, KV cache, GPU memory, TPOT, TTFT"
    p.created = p.modified = ctx.build_date
    p.lastPrinted = None
    raw = io.BytesIO()
    wb.save(raw)
    return package(raw.getvalue(), ctx.cached, ctx.build_date, template=template, streamed=streamed_cells(wb, ctx))


def build_workbook(path: str | os.PathLike = "inference-ledger.xlsx", *, extra_sheets: Iterable[SheetBuilder] = (),
                   template: Optional[bool] = None, **options) -> tuple[Path, dict[str, Any]]:
    """Write the workbook atomically; return its path and the Plan's evaluated values.

    options: model, gpu, weight_dtype, kv_dtype, scenarios (a sequence of Scenario), and
    any plan input name (tp=2, concurrency=32 ...) to override its default or catalog value.
    A path ending in .xltx is written as an Excel template.
    """
    check_target(path, "xlsx")   # a wrong name or a target that must not be replaced fails before any work
    path = Path(path)
    if template is None:
        template = path.suffix.lower() == ".xltx"
    ctx = make_context(**options)
    with writing(path):   # a full temp folder or a file-size limit: one line naming the workbook, target untouched
        data = render_workbook(ctx, extra_sheets, template=template)
    write_bytes(path, data, "xlsx")
    return path, {k: py_value(v) for k, v in ctx.values.items()}
