"""The catalogs as workbook tables, and the one place catalog facts become plan inputs.

The GPUs, Models and Dtypes sheets hold the catalogs of :mod:`inference_ledger.catalogs.catalog` as plain
tables: a row of field ids (what formulas MATCH on), a header row of labels, a row of
units, then one row per entry.  Every catalog-derived plan input (``num_params``,
``kv_heads``, ``gpu_memory_bytes``, ``hbm_bw``, ``peak_flops``, ``weight_bytes`` ...) is
an ``INDEX/MATCH`` into those tables keyed by the dropdown choices; :func:`lookup`
writes that formula and computes the same value in Python, so the Plan sheet, every
Scenarios row and the cached values share one mapping.

The mapping is :func:`inference_ledger.catalogs.catalog_facts.fact`, the resolver's own: each catalog fact is a
field of a chosen row or a formula over such fields, and :func:`lookup` renders it with an ``INDEX/MATCH`` for each
field it reads (the Models, GPUs and Dtypes rows of the chosen model, GPU and formats, the GPU costs row of the
chosen GPU, the BF16 row for the unquantized modules).  The workbook adds one kind of its own: the engine's
constants (``kv_budget_rule``, ``sampler_bytes_per_logit``, ``cuda_context_bytes``, ``moe_pad_hidden``,
``moe_pad_intermediate``, ``gqa_decode``, and the error-band multipliers of its family: :data:`ENGINE_LOOKUPS`) read
the chosen engine's row of the Engines sheet (``inference_ledger/data/engines.csv``, with the band of each engine's
family), so the engine is picked by name and the plan computes from its rule code and carries its engine's band;
its defaults that depend on the GPU and TP (memory fraction, batch limits, NCCL buffers) stay numbers the build
fills.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Optional

from openpyxl.utils import get_column_letter

from inference_ledger.catalogs import bands, catalog, catalog_facts, engines
from inference_ledger.formulas import kernels, ledger
from inference_ledger.catalogs.catalog import FALLBACK_COMPUTE_FIELD, UNQUANTIZED_DTYPE
from inference_ledger.core.expr import NA, NOVALUE, Sym
from inference_ledger.core.sheetfuncs import concat, literal
from inference_ledger.core.refs import cell, iferror, index, match, span
from inference_ledger.core.refs import name as defined_name
from inference_ledger.formulas.finance import GPU_COST_FIELDS, GpuCost, load_gpu_costs

#: Rows reserved per catalog table: user rows added below the shipped ones still fall
#: inside every lookup range and dropdown.
TABLE_ROWS = 500
#: Worksheet layout of a catalog sheet (1-based rows).
FIELD_ROW, HEADER_ROW, UNIT_ROW, FIRST_ROW = 4, 5, 6, 7


@dataclass(frozen=True)
class Column:
    field: str
    label: str
    unit: str


@dataclass
class Table:
    """One catalog as a sheet: its columns, its entries and the workbook names of its ranges."""

    sheet: str  # GPUs | Models | Dtypes
    prefix: str  # GPU | MODEL | DTYPE: defined names GPU_IDS, GPU_TABLE, GPU_FIELDS
    title: str
    columns: list[Column]
    rows: list[Any]  # catalog dataclass instances
    formulas: dict[str, Callable[[Callable[[str], Sym]], Sym]] = dataclasses.field(default_factory=dict)

    @property
    def ids(self) -> str:
        return f"{self.prefix}_IDS"

    @property
    def table(self) -> str:
        return f"{self.prefix}_TABLE"

    @property
    def fields_name(self) -> str:
        return f"{self.prefix}_FIELDS"

    def field_index(self, field: str) -> int:
        for i, c in enumerate(self.columns):
            if c.field == field:
                return i
        raise KeyError(f"{self.sheet} has no field {field!r}")

    def has(self, field: str) -> bool:
        return any(c.field == field for c in self.columns)

    def entry(self, key: str):
        for r in self.rows:
            if r.id == key:
                return r
        raise KeyError(f"{self.sheet}: no entry {key!r}")

    def value(self, key: str, field: str):
        """The Python value of one table cell (what the INDEX/MATCH returns)."""
        if field in self.formulas:
            row = self.entry(key)
            return self.formulas[field](lambda f: _py(getattr(row, f)))
        return cell_value(getattr(self.entry(key), field))

    def index_match(self, key_ref: str | Sym, field: str | Sym) -> Sym:
        """INDEX(table, MATCH(key, ids), MATCH(field, fields)): one cell of the chosen row, carrying its value when the
        key and the field carry theirs (an id not in the table: #N/A)."""
        key = key_of(key_ref)
        expr = index(defined_name(self.table), match(key, defined_name(self.ids)), match(field, defined_name(self.fields_name)))
        k, f = key.value, field.value if isinstance(field, Sym) else field
        if k is NOVALUE or f is NOVALUE:
            return expr
        try:
            return expr.at(self.value(k, f) if f and self.has(f) else NA)
        except KeyError:
            return expr.at(NA)

    def ids_expr(self) -> Sym:
        """The ids column (its defined name), carrying the ids of the table's rows."""
        return defined_name(self.ids, [e.id for e in self.rows])

    def column_span(self, field: str, first: int, rows: int) -> Sym:
        """One column of the table's sheet over its reserved rows ($C$7:$C$506), carrying the rows' values."""
        col = get_column_letter(self.field_index(field) + 1)
        vals = [cell_value(getattr(e, field)) for e in self.rows] + [None] * (rows - len(self.rows))
        return span(cell(f"{col}{first}", sheet=self.sheet, fix="both"),
                      cell(f"{col}{first + rows - 1}", fix="both"), vals)


def key_of(ref: str | Sym) -> Sym:
    """A chosen id's reference: a Sym as given, a defined name's text as its name."""
    return ref if isinstance(ref, Sym) else defined_name(ref)


def _py(v):
    return 0.0 if v is None else v


def cell_value(v):
    """A catalog value as a worksheet cell holds it (tuples joined, None blank)."""
    if v is None:
        return None
    if isinstance(v, (tuple, list)):  # pairs (an engine's memory fraction by TP) as "tp:fraction"
        return "|".join(":".join(f"{y:g}" for y in x) if isinstance(x, tuple) else str(x) for x in v)
    if isinstance(v, bool):
        return int(v)
    return v


def _columns(cls, declared) -> list[Column]:
    """Declared (field, label, unit) first, then any other dataclass field (so lookups find it)."""
    cols = [Column(*c) for c in declared]
    seen = {c.field for c in cols}
    for f in dataclasses.fields(cls):
        if f.name not in seen:
            cols.append(Column(f.name, f.name.replace("_", " "), ""))
    if cols[0].field != "id":
        cols = [c for c in cols if c.field == "id"] + [c for c in cols if c.field != "id"]
    return cols


def load_tables() -> dict[str, Table]:
    """GPUs, Models and Dtypes from :mod:`inference_ledger.catalogs.catalog`, GPU costs from
    :mod:`inference_ledger.formulas.finance`, in file order."""
    dtype_cols = [Column("id", "Format", ""), Column("aliases", "Aliases", ""), Column("bits", "Bits", "bit"),
                  Column("group_size", "Group size", "elements"), Column("scale_bits", "Scale bits", "bit"),
                  Column("bytes_per_element", "Bytes per element", "B"), Column("use", "Use", ""),
                  Column("compute_field", "Computes at (GPU column)", ""),
                  Column("moe_kernel_pads", "MoE kernels pad the experts", "1/0"), Column("source", "Source", ""),
                  Column("date", "Date", ""), Column("notes", "Notes", "")]
    dtypes = Table("Dtypes", "DTYPE", "Number formats: bytes per element, group scales included",
                   dtype_cols, list(catalog.load_dtypes()),
                   # bytes per element is a live formula over the row's bits and scales
                   formulas={"bytes_per_element": lambda c: ledger.bytes_per_element(c("bits"), c("group_size"),
                                                                                  c("scale_bits"))})
    return {
        "GPUs": Table("GPUs", "GPU", "GPU catalog (dense FLOP/s; memory in bytes; one source per row)",
                      _columns(catalog.Gpu, catalog.GPU_FIELDS), list(catalog.load_gpus())),
        "Models": Table("Models", "MODEL", "Model catalog (from Hugging Face config.json files, with sources)",
                        _columns(catalog.Model, catalog.MODEL_FIELDS), list(catalog.load_models())),
        "Dtypes": dtypes,
        "Engines": Table("Engines", "ENGINE", "Serving engines: KV budget rule, memory-profile defaults and error "
                         "bands (one source per row)", _columns(EngineRow, ENGINE_FIELDS), engine_rows()),
        "GPU costs": Table("GPU costs", "GPUCOST", "GPU costs: server price and power per GPU (own vs rent)",
                           _columns(GpuCost, GPU_COST_FIELDS), load_gpu_costs()),
    }


#: The error-band multipliers (plan inputs), kept on each engine's row: a band's segment is the engine family
#: (inference_ledger.catalogs.bands), so the Plan and Scenarios look them up by engine like its constants.
BAND_LOOKUPS = tuple(n for pair in bands.BAND_INPUTS.values() for n in pair)
EngineRow = dataclasses.make_dataclass("EngineRow", [(f.name, f.type) for f in dataclasses.fields(engines.Engine)]
                                       + [(n, float) for n in BAND_LOOKUPS], frozen=True)


def engine_rows() -> list:
    """The Engines sheet's rows: each engine of engines.csv with the error band of its family."""
    return [EngineRow(**{f.name: getattr(e, f.name) for f in dataclasses.fields(engines.Engine)},
                      **bands.engine_band_inputs(e.id)) for e in engines.load_engines()]


#: Engines sheet columns shown first: (field, label, unit); the other fields follow.
ENGINE_FIELDS = (("id", "Engine", ""), ("name", "Name", ""), ("kv_budget_rule", "KV budget rule (code)", "code"),
                 ("memory_fraction", "Memory fraction", "fraction"),
                 ("sampler_bytes_per_logit", "Sampler bytes per logit", "B"),
                 ("cuda_context_bytes", "CUDA context and cuBLAS", "B"))


# --- catalog facts -> plan inputs ---------------------------------------------------------

#: Selections the lookups are keyed by: (key, label, table sheet).
SELECTORS = (
    ("model", "Model", "Models"),
    ("gpu", "GPU", "GPUs"),
    ("weight_dtype", "Weight dtype", "Dtypes"),
    ("kv_dtype", "KV-cache dtype", "Dtypes"),
    ("engine", "Serving engine", "Engines"),
)
#: Engine inputs that are the engine's own constants (the same on every GPU and TP): lookups by engine name.
ENGINE_LOOKUPS = ("kv_budget_rule", "sampler_bytes_per_logit", "cuda_context_bytes", "moe_pad_hidden",
                  "moe_pad_intermediate", "gqa_decode", *BAND_LOOKUPS)
#: The sheet of each choice's catalog (catalog_facts.Get's and the engine): the GPU costs row is the chosen GPU's,
#: the unquantized modules' format the Dtypes row of UNQUANTIZED_DTYPE.
_SHEET_OF = {**{key: sheet for key, _, sheet in SELECTORS}, "gpu_cost": "GPU costs", "unquantized": "Dtypes"}


#: Kernel inputs looked up on the Kernels sheet (inference_ledger.workbook.kernels_sheet) by model|gpu|tp|ep|weight
#: dtype|KV dtype|engine, in its column order (kernel_tables first).
KERNEL_INPUTS = ("kernel_tables", *(n for op in kernels.OPS for n in kernels.op_input_names(op)),
                 "moe_kernel_launch_seconds", "moe_kernel_table", "kernel_hbm_bw", "kernel_peak_flops",
                 "kernel_active_params")
KERNEL_PREFIX = "KERNEL"


def kernel_key_formula(refs: dict[str, str | Sym]) -> Sym:
    """model|gpu|tp|ep|weight dtype|KV dtype|engine, from the cells (or names) holding each choice."""
    parts = [key_of(refs[k]) if k in refs else defined_name(k)
             for k in ("model", "gpu", "tp", "ep", "weight_dtype", "kv_dtype", "engine")]
    joined: list = []
    for p in parts:
        joined += ([] if not joined else ["|"]) + [p]
    return concat(*joined)


def kernel_lookup_formula(name: str, refs: dict[str, str | Sym]) -> Sym:
    """The kernel input ``name`` of the chosen row, 0 where no row has the key (the roofline)."""
    return iferror(index(defined_name(f"{KERNEL_PREFIX}_TABLE"), match(kernel_key_formula(refs), defined_name(f"{KERNEL_PREFIX}_IDS")),
                         match(name, defined_name(f"{KERNEL_PREFIX}_FIELDS"))), 0)


def _fact(name: str) -> Optional[catalog_facts.Fact]:
    """The catalog fact a plan input is (:func:`inference_ledger.catalogs.catalog_facts.fact`), or the chosen
    engine's constant of that name; None for a plain input."""
    if name in ENGINE_LOOKUPS:
        return catalog_facts.Fact("engine", name)
    return catalog_facts.fact(name)


def is_lookup(name: str, tables: dict[str, Table]) -> bool:
    return name in KERNEL_INPUTS or _fact(name) is not None


def lookup(name: str, tables: dict[str, Table], keys: dict[str, str], choice: dict[str, str]):
    """(formula Sym, python value) of a catalog-derived input, or None for a plain input.

    The fact (:func:`_fact`) rendered twice from the same definition: its INDEX/MATCH lookups on the catalog sheets,
    and the value those cells hold (a blank reads 0), which the formula carries.
    keys: selector -> Excel reference text of the chosen id (a defined name or a cell);
    choice: selector -> the chosen id (for the Python value).
    """
    if name in KERNEL_INPUTS:  # the Kernels sheet's row (its Python value: the resolver's, kept by the caller)
        return kernel_lookup_formula(name, keys), 0.0
    f = _fact(name)
    if f is None:
        return None

    def row(c: str) -> tuple[Table, str | Sym, str]:
        """The table of the row a choice selects, the reference to its key and the key."""
        if c == "unquantized":
            return tables["Dtypes"], literal(UNQUANTIZED_DTYPE), UNQUANTIZED_DTYPE
        by = "gpu" if c == "gpu_cost" else c
        return tables[_SHEET_OF[c]], keys[by], choice[by]

    def value(c: str, field: str):
        t, _, key = row(c)
        return _py(t.value(key, field) if t.has(field) else None)

    def formula(c: str, field: str | Sym) -> Sym:
        t, ref, _ = row(c)
        return t.index_match(ref, field)

    v = f.of(value)
    return f.of(formula).at(v), v
