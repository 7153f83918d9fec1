"""Catalog facts as plan inputs: the one mapping from a model's and a GPU's catalog rows to the plan's inputs.

The resolver fills a chosen model and GPU through it (:func:`inference_ledger.graph.resolve.plan_inputs`), and the
plan's own defaults (:data:`inference_ledger.graph.plan.INPUTS`) are it at the default model and GPU, so ``plan`` with
no ``--model`` or ``--gpu`` starts from the same numbers as ``plan --model llama-3.1-70b --gpu h100-sxm``: no
input default is a hand copy of a catalog row.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Optional

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
#: row holds it, its field). Every other field of the model's and the GPU's rows fills the input of its own name. The
#: workbook renders the same entries as INDEX/MATCH lookups on the catalog sheets (inference_ledger.workbook.tables).
NAMED_FACTS: dict[str, tuple[str, str]] = {
    "gpu_memory_bytes": ("gpu", "memory_runtime_bytes"),
    "weight_bytes": ("weight_dtype", "bytes_per_element"),
    "kv_bytes": ("kv_dtype", "bytes_per_element"),
    "moe_kernel_pads": ("weight_dtype", "moe_kernel_pads"),
}


def unquantized_bytes_of(weight_bytes_per_element, unquantized_bytes_per_element):
    """Bytes of the modules left unquantized: BF16, or the weight format where it is wider (an FP32 checkpoint keeps
    its embeddings and norms in FP32)."""
    return maximum(weight_bytes_per_element, unquantized_bytes_per_element)


def peak_flops_of(unit_flops, fallback_flops):
    """Dense FLOP/s the weight format computes at: its unit's, never below BF16's (BF16 where the chip lacks the unit,
    a blank reading 0; no format computes slower than BF16 on a chip that has its unit)."""
    return maximum(unit_flops, fallback_flops)


def peak_flops(gpu: Gpu, weight_dtype: Dtype) -> float:
    """:func:`peak_flops_of` for a GPU row and a weight format."""
    return peak_flops_of(getattr(gpu, weight_dtype.compute_field, None) or 0,
                         getattr(gpu, catalog.FALLBACK_COMPUTE_FIELD))


def catalog_facts(model: Optional[Model], gpu: Optional[Gpu], weight: Dtype, kv: Dtype) -> dict[str, Any]:
    """Every catalog fact that a plan input of the same name takes (the caller keeps its plan's inputs).

    The model's fields and the GPU's (a blank GPU field gives none); ``weight_bytes`` from the weight format,
    ``unquantized_bytes`` BF16 or the weight format where it is wider (an FP32 checkpoint keeps its embeddings and
    norms in FP32), ``kv_bytes`` from the KV format; ``gpu_memory_bytes`` the GPU's runtime memory, ``peak_flops``
    its unit for the weight format, and its server price and power (data/gpu_costs.csv).
    """
    v: dict[str, Any] = {}
    rows = {"model": model, "gpu": gpu, "weight_dtype": weight, "kv_dtype": kv}
    if model is not None:
        v.update({name: getattr(model, name) for name in _MODEL_FIELDS})
    if gpu is not None:
        v.update({name: getattr(gpu, name) for name in _GPU_FIELDS if getattr(gpu, name) is not None})
    v.update({name: getattr(rows[choice], field) for name, (choice, field) in NAMED_FACTS.items()
              if rows[choice] is not None})
    v["unquantized_bytes"] = unquantized_bytes_of(weight.bytes_per_element,
                                                  catalog.get_dtype(catalog.UNQUANTIZED_DTYPE).bytes_per_element)
    if gpu is not None:
        v["peak_flops"] = peak_flops(gpu, weight)
        v.update(finance.gpu_cost_inputs(gpu.id))
    return v


@functools.lru_cache(maxsize=None)
def _default_facts() -> tuple[tuple[str, Any], ...]:
    m, g = catalog.get_model(DEFAULT_MODEL), catalog.get_gpu(DEFAULT_GPU)
    return tuple(catalog_facts(m, g, catalog.get_dtype(m.weight_dtype),
                               catalog.get_dtype(catalog.UNQUANTIZED_DTYPE)).items())


def default_facts() -> dict[str, Any]:
    """The catalog facts of the default model (its checkpoint's weight format, a BF16 KV cache) on the default GPU."""
    return dict(_default_facts())
