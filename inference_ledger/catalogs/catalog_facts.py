"""Catalog facts as plan inputs: the one mapping from a model's and a GPU's catalog rows to the plan's inputs.

:func:`fact` says, for each plan input a catalog gives, which chosen row's field it is or the formula over those
fields it is (:class:`Fact`).  The resolver evaluates it on the rows (:func:`catalog_facts`, through
:func:`inference_ledger.graph.resolve.plan_inputs`); the workbook renders the same facts as INDEX/MATCH lookups on
its catalog sheets (:func:`inference_ledger.workbook.tables.lookup`).  The plan's own defaults
(:data:`inference_ledger.graph.plan.INPUTS`) are it at the default model and GPU, so ``plan`` with no ``--model`` or
``--gpu`` starts from the same numbers as ``plan --model llama-3.1-70b --gpu h100-sxm``: no input default is a hand
copy of a catalog row.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, NamedTuple, Optional

from inference_ledger.catalogs import catalog
from inference_ledger.formulas import finance
from inference_ledger.catalogs.catalog import Dtype, Gpu, Model
from inference_ledger.core.sheetfuncs import maximum

#: The model and GPU a plan, a workbook or a sweep takes when none is chosen (catalog ids).
DEFAULT_MODEL = "llama-3.1-70b"
DEFAULT_GPU = "h100-sxm"

_MODEL_FIELDS = tuple(f.name for f in dataclasses.fields(Model))
_GPU_FIELDS = tuple(f.name for f in dataclasses.fields(Gpu))

#: Plan inputs that a catalog row gives under another name, or that a number format gives: input -> (the choice whose
#: row holds it, its field). Every other field of the model's and the GPU's rows fills the input of its own name, and
#: so does each of the GPU cost row's fields that is a plan input.
NAMED_FACTS: dict[str, tuple[str, str]] = {
    "gpu_memory_bytes": ("gpu", "memory_runtime_bytes"),
    "weight_bytes": ("weight_dtype", "bytes_per_element"),
    "kv_bytes": ("kv_dtype", "bytes_per_element"),
    "moe_kernel_pads": ("weight_dtype", "moe_kernel_pads"),
}

#: ``get(choice, field)``: one field of a chosen row, as a worksheet cell reads it (a blank reads 0) -- the row's
#: value for the resolver, the INDEX/MATCH lookup of that cell for the workbook.  The choices: ``model``, ``gpu``,
#: ``weight_dtype``, ``kv_dtype``, the GPU's row of data/gpu_costs.csv (``gpu_cost``) and the format the unquantized
#: modules keep (``unquantized``: catalog.UNQUANTIZED_DTYPE).
Get = Callable[[str, Any], Any]


class Fact(NamedTuple):
    """How one plan input comes from the chosen catalog rows: a ``field`` of the ``choice``'s row, or a ``formula``
    of :data:`Get` over the rows' fields (``choice`` then the choice it follows: the option the help names)."""

    choice: str
    field: Optional[str] = None
    formula: Optional[Callable[[Get], Any]] = None

    def of(self, get: Get) -> Any:
        """The fact through ``get``: its value, or its formula."""
        return self.formula(get) if self.formula else get(self.choice, self.field)


def unquantized_bytes_of(weight_bytes_per_element, unquantized_bytes_per_element):
    """Bytes of the modules left unquantized: BF16, or the weight format where it is wider (an FP32 checkpoint keeps
    its embeddings and norms in FP32)."""
    return maximum(weight_bytes_per_element, unquantized_bytes_per_element)


def peak_flops_of(unit_flops, fallback_flops):
    """Dense FLOP/s the weight format computes at: its unit's, never below BF16's (BF16 where the chip lacks the unit,
    a blank reading 0; no format computes slower than BF16 on a chip that has its unit)."""
    return maximum(unit_flops, fallback_flops)


#: Plan inputs that are a formula over the chosen rows.
DERIVED: dict[str, Fact] = {
    # the modules outside the quantized layers: BF16, or the weight format where it is wider
    "unquantized_bytes": Fact("weight_dtype", formula=lambda get: unquantized_bytes_of(
        get("weight_dtype", "bytes_per_element"), get("unquantized", "bytes_per_element"))),
    # the GPU column the weight format computes at (its compute_field), never below BF16's
    "peak_flops": Fact("gpu", formula=lambda get: peak_flops_of(
        get("gpu", get("weight_dtype", "compute_field")), get("gpu", catalog.FALLBACK_COMPUTE_FIELD))),
}


def fact(name: str) -> Optional[Fact]:
    """How the catalog gives the plan input ``name`` (None: no catalog row gives it): :data:`DERIVED`, then
    :data:`NAMED_FACTS`, then the model's, the GPU's or the GPU cost row's field of the same name."""
    if name in DERIVED:
        return DERIVED[name]
    if name in NAMED_FACTS:
        return Fact(*NAMED_FACTS[name])
    for choice, fields in (("model", _MODEL_FIELDS), ("gpu", _GPU_FIELDS), ("gpu_cost", finance.GPU_COST_INPUTS)):
        if name in fields and name != "id":
            return Fact(choice, name)
    return None


#: Every name :func:`fact` answers, in the order :func:`catalog_facts` fills them.
FACT_NAMES = tuple(dict.fromkeys(n for n in (*_MODEL_FIELDS, *_GPU_FIELDS, *NAMED_FACTS, *DERIVED,
                                             *finance.GPU_COST_INPUTS) if n != "id"))


@functools.lru_cache(maxsize=None)
def _facts() -> tuple[tuple[str, Fact], ...]:
    """(name, :func:`fact`) of every name in :data:`FACT_NAMES`, made once (a plan resolves them thousands of times:
    the Kernels sheet's grid)."""
    return tuple((n, fact(n)) for n in FACT_NAMES)


class _NoRow(Exception):
    """A fact reads a row that was not chosen (no model, no GPU, a GPU without a cost row)."""


def _reader(rows: dict[str, Any], blank: Any = None) -> Get:
    """:data:`Get` over catalog rows: a field's value, ``blank`` for a blank one."""
    def get(choice: str, name: str) -> Any:
        if rows.get(choice) is None:
            raise _NoRow(choice)
        v = getattr(rows[choice], name, None)
        return blank if v is None else v

    return get


def peak_flops(gpu: Gpu, weight_dtype: Dtype) -> float:
    """The ``peak_flops`` fact of a GPU row and a weight format."""
    return DERIVED["peak_flops"].of(_reader({"gpu": gpu, "weight_dtype": weight_dtype}, blank=0))


def catalog_facts(model: Optional[Model], gpu: Optional[Gpu], weight: Dtype, kv: Dtype) -> dict[str, Any]:
    """Every catalog fact (:func:`fact`) of the chosen rows that a plan input of the same name takes (the caller keeps
    its plan's inputs).

    A fact of a row not chosen is left out (no model, no GPU, a GPU without a row in data/gpu_costs.csv), and so is a
    blank field (the input keeps its default); a formula reads a blank field as 0, as the worksheet does.
    """
    rows = {"model": model, "gpu": gpu, "weight_dtype": weight, "kv_dtype": kv,
            "gpu_cost": finance.gpu_cost(gpu.id) if gpu is not None else None,
            "unquantized": catalog.get_dtype(catalog.UNQUANTIZED_DTYPE)}

    field, cell = _reader(rows), _reader(rows, blank=0)
    v: dict[str, Any] = {}
    for name, f in _facts():
        try:
            value = f.of(cell if f.formula else field)
        except _NoRow:
            continue
        if value is not None:
            v[name] = value
    return v


@functools.lru_cache(maxsize=None)
def _default_facts() -> tuple[tuple[str, Any], ...]:
    m, g = catalog.get_model(DEFAULT_MODEL), catalog.get_gpu(DEFAULT_GPU)
    return tuple(catalog_facts(m, g, catalog.get_dtype(m.weight_dtype),
                               catalog.get_dtype(catalog.UNQUANTIZED_DTYPE)).items())


def default_facts() -> dict[str, Any]:
    """The catalog facts of the default model (its checkpoint's weight format, a BF16 KV cache) on the default GPU."""
    return dict(_default_facts())
