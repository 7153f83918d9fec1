"""The one resolver: what a user chose -> the plan's inputs, with every rule applied once.

A choice is a model (catalog id, alias, Hugging Face repo, or a parsed config.json), a GPU,
the weight and KV-cache formats, the serving engine, the context and any plan input by
name (``tp``, ``concurrency``, ``gpu_memory_utilization`` ...).  :func:`resolve` turns it
into the inputs of :func:`inference_ledger.graph.plan.evaluate` and refuses, with one line that
names the setting, what cannot run:

* an empty or unknown id (unknown ids get the closest matches);
* a value out of its range (:mod:`inference_ledger.core.args`), a name that is no plan input;
* a TP degree that does not divide the attention heads, or whose KV heads neither split nor
  replicate evenly (vLLM's rule; Megatron-LM splits heads evenly);
* a TP degree larger than one node of the GPU (``gpus_per_node`` in the GPU catalog):
  engines run TP within a node and pipeline (``pp``) or expert-parallel (``ep``) across;
* a layout the engines refuse (:func:`layout_problem`): more PP stages than layers, EP or
  DP attention on a dense model, an EP degree that does not divide the routed experts or the
  GPUs of a stage;
* a context (input + output tokens) above the model's ``max_position_embeddings``;
* model overrides that contradict each other (:data:`inference_ledger.graph.rules.MODEL_RULES`): experts per
  token outside 1..routed experts on a mixture-of-experts model, routed experts, experts per token or MoE layers
  on a dense model, more MoE layers than layers, KV heads that TP neither splits nor replicates
  evenly (the same shape a config.json is refused for).

``plan``, ``build`` (its Plan sheet and every Scenarios row), ``sweep``, ``recommend``,
``validate``, ``email`` and the Excel functions all call this module, so the same choice
is accepted or refused everywhere with the same message.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

from inference_ledger.catalogs import bands, catalog, engines
from inference_ledger.formulas import kernels, serving
from inference_ledger.graph import plan
from inference_ledger.core.args import LedgerInputError
from inference_ledger.catalogs.catalog import Dtype, Gpu, Model
# peak_flops: the resolver's API too
from inference_ledger.catalogs.catalog_facts import (DEFAULT_GPU, DEFAULT_MODEL, NAMED_FACTS,  # noqa: F401
                                                     catalog_facts, peak_flops)
from inference_ledger.catalogs.catalog_facts import fact as catalog_fact
from inference_ledger.graph.rules import (MODEL_RULES, MOE_ONLY, Rule, context_problem,  # noqa: F401
                                          dense_override_problem, experts_per_token_ok, heads_problem,
                                          kv_heads_problem, kv_heads_split_ok, layout_problem, moe_layers_ok,
                                          node_problem, rules_problem, tp_problem, engine_problem)

#: Plan inputs read from the Model / Gpu field of the same name (the workbook's lookups follow the same rule).
MODEL_INPUTS = tuple(i.name for i in plan.INPUTS if i.name in {f.name for f in dataclasses.fields(Model)})
GPU_INPUTS = tuple(i.name for i in plan.INPUTS if i.name in {f.name for f in dataclasses.fields(Gpu)})
#: Inputs the catalog fills when a model or a GPU is chosen (catalog_facts.fact).
FROM_CATALOG = frozenset(i.name for i in plan.INPUTS if catalog_fact(i.name) is not None)
#: Derived model fields model_spec also answers.
MODEL_DERIVED = ("kv_bytes_per_token", "weights_bytes")
#: A weight format meaning "the checkpoint's own".
NATIVE = "native"


class ChoiceError(LedgerInputError):
    """A choice that cannot run; ``option`` names the setting (``tp``, ``gpu``, ``context`` ...)."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option


# ----------------------------------------------------------------------------------------
# ids
# ----------------------------------------------------------------------------------------


#: The refusal of an empty id, by what it names (the same words wherever an id is read: options, CSV cells, Excel).
EMPTY_ID = {
    "model": "model is empty: give a model id (see `inference-ledger models`)",
    "gpu": "gpu is empty: give a GPU id (see `inference-ledger gpus`)",
}


def _empty(value: Any) -> bool:
    return value is not None and not str(value).strip()


def find_model(name: Model | str, extra: Sequence[Model] = ()) -> Model:
    """A catalog model by id/alias/repo (or one of ``extra``, e.g. a config.json's); empty is an error."""
    if isinstance(name, Model):
        return name
    if name is None or _empty(name):
        raise ChoiceError("model", EMPTY_ID["model"])
    for m in extra:
        if m.id == str(name).strip().lower():
            return m
    return catalog.get_model(name)


def find_gpu(name: Gpu | str) -> Gpu:
    """A catalog GPU by id or alias; empty is an error."""
    if isinstance(name, Gpu):
        return name
    if name is None or _empty(name):
        raise ChoiceError("gpu", EMPTY_ID["gpu"])
    return catalog.get_gpu(name)


def find_dtype(name: str, use: str) -> Dtype:
    """A number format for weights or the KV cache; empty is an error."""
    if name is None or _empty(name):
        raise ChoiceError(f"{use}_dtype", f"{use}_dtype is empty: give a format id (bf16, fp8, ...)")
    d = catalog.get_dtype(name)
    if use not in d.use.split("|"):
        fits = [x.id for x in catalog.load_dtypes() if use in x.use.split("|")]
        near = [x for x in fits if x.startswith(d.id)]
        hint = f"; did you mean {', '.join(near)}?" if near else f" ({use} formats: {', '.join(fits)})"
        raise ChoiceError(f"{use}_dtype", f"{use} dtype {d.id!r} is not a {use} format "
                                          f"(it is for: {d.use.replace('|', ', ')}){hint}")
    return d


def weight_format(model: Optional[Model], weight_dtype: Optional[str]) -> Dtype:
    """The weight format: the one named, else the checkpoint's (``native`` or blank), else BF16."""
    if weight_dtype is None or str(weight_dtype).strip().lower() in ("", NATIVE):
        return find_dtype(model.weight_dtype if model else catalog.UNQUANTIZED_DTYPE, "weight")
    return find_dtype(weight_dtype, "weight")


# ----------------------------------------------------------------------------------------
# checked numbers (the rules themselves: inference_ledger.graph.rules, each written once, applied in resolve())
# ----------------------------------------------------------------------------------------


def input_tokens_of(context: Any, output_tokens: float) -> float:
    """Input tokens of a context (input + output tokens); the context must exceed the output."""
    c = check_number("input_tokens", context)
    if c <= output_tokens:
        raise ChoiceError("context", f"context {c:g} must exceed the output tokens {output_tokens:g} "
                                     "(context = input + output tokens)")
    return float(c - output_tokens)


def batching_code(word: Any) -> int:
    """The plan input ``batching`` of a word: continuous (1) or static (2); blank is continuous."""
    if word is None or not str(word).strip():
        return serving.BATCHING.code("continuous")
    try:
        return serving.batching_code(word)
    except ValueError as e:
        raise ChoiceError("batching", str(e)) from None


def figures_given(numbers: Mapping[str, Any]) -> int:
    """How many model figures (``num_params``, ``num_layers``, ...) the numbers give: those of a catalog model they
    replace (the Plan sheet's model overrides); without a model, any at all describe a model of their own."""
    return sum(numbers.get(k) is not None for k in MODEL_INPUTS)


def generic_sizes(numbers: Mapping[str, Any]) -> dict[str, Any]:
    """A model given by its numbers: a size given is all active and all quantizable unless said otherwise
    (``active_params``, ``quantized_params`` and ``active_quantized_params`` follow ``num_params``)."""
    out = {k: v for k, v in numbers.items() if v is not None}
    out.setdefault("active_params", out.get("num_params", plan.INPUT_BY_NAME["active_params"].default))
    out.setdefault("quantized_params", out.get("num_params", plan.INPUT_BY_NAME["quantized_params"].default))
    out.setdefault("active_quantized_params", out["active_params"])
    return out


def check_number(name: str, value: Any) -> float:
    """One plan input checked against its range (ChoiceError naming it)."""
    if name not in plan.INPUT_BY_NAME:
        raise ChoiceError(name, f"not a plan input: {name}")
    try:
        return plan.INPUT_BY_NAME[name].arg.check(value)
    except ChoiceError:
        raise
    except LedgerInputError as e:
        raise ChoiceError(name, str(e)) from None


# ----------------------------------------------------------------------------------------
# choice -> inputs
# ----------------------------------------------------------------------------------------


def plan_inputs(model: Model | str | None, gpu: Gpu | str | None, *, weight_dtype: Optional[str] = None,
                kv_dtype: str = "bf16", **overrides: Any) -> dict[str, Any]:
    """Catalog facts as plan inputs, no rules applied (:func:`resolve` applies them).

    Model and GPU fields named like plan inputs fill them (MODEL_INPUTS, GPU_INPUTS; a blank
    GPU field keeps the default); ``gpu_memory_bytes`` is the GPU's runtime memory; the weight
    format (default: the checkpoint's) gives ``weight_bytes`` and the compute unit
    (``peak_flops``); modules outside the quantized layers count at BF16, or at the weight format where it is
    wider (an FP32 checkpoint keeps its embeddings and norms in FP32).  Everything else is
    :func:`inference_ledger.graph.plan.defaults`, and ``overrides`` (plan input names) win.
    """
    unknown = sorted(set(overrides) - set(plan.INPUT_BY_NAME))
    if unknown:
        raise ChoiceError(unknown[0], f"not a plan input: {', '.join(unknown)}")
    v = plan.defaults()
    m = find_model(model) if isinstance(model, str) else model
    g = find_gpu(gpu) if isinstance(gpu, str) else gpu
    facts = catalog_facts(m, g, weight_format(m, weight_dtype), find_dtype(kv_dtype, "kv"))
    v.update({k: x for k, x in facts.items() if k in plan.INPUT_BY_NAME})
    v.update(overrides)
    return v


def kernel_basis(inputs: Mapping[str, Any], gpu_id: Optional[str], weight_dtype: Optional[str],
                 active_params: Optional[float] = None) -> dict[str, Any]:
    """The inputs the kernel tables are read for: the plan's, at the catalog GPU's HBM bandwidth and dense peak (the
    figures the tables were measured at) and the catalog model's active parameters (``active_params``: the model whose
    shapes they are read at), which ``kernel_hbm_bw`` / ``kernel_peak_flops`` / ``kernel_active_params`` record; a
    plan whose own differ (a what-if) is priced on the roofline (``kernel_priced``)."""
    out = dict(inputs)
    if gpu_id and weight_dtype:
        g = catalog.get_gpu(gpu_id)
        out.update(hbm_bw=g.hbm_bw, peak_flops=peak_flops(g, find_dtype(weight_dtype, "weight")))
    if active_params is not None:
        out["active_params"] = active_params
    return out


def with_engine(inputs: Mapping[str, Any], engine: engines.Engine | str = engines.DEFAULT_ENGINE, *,
                gpu_id: str = "", max_model_len: Optional[int] = None, heads: Optional[float] = None,
                weight_dtype: Optional[str] = None, kv_dtype: Optional[str] = None,
                active_params: Optional[float] = None) -> dict[str, Any]:
    """Plan inputs with an engine's numeric inputs filled in from the inputs' own GPU memory,
    interconnect and TP (what ``--engine`` does; apply explicit user values after this), and each operation's
    measured kernel figures for that GPU and engine at the inputs' shapes (:func:`with_kernels`; ``heads`` the query
    heads, hidden / head dim when not given; the dtypes from the bytes when not given)."""
    out = dict(inputs)
    eng = engines.get_engine(engine) if isinstance(engine, str) else engine
    out.update(engines.engine_inputs(eng, gpu_memory_bytes=out["gpu_memory_bytes"],
                                     interconnect_bw=out["interconnect_bw"], gpu_id=gpu_id, tp=int(out["tp"]),
                                     max_model_len=max_model_len))
    wd = weight_dtype or {2.0: "bf16", 1.0: "fp8"}.get(float(out["weight_bytes"]))
    kd = kv_dtype or ("fp8" if float(out["kv_bytes"]) == 1 else "bf16")
    figures, _ = engine_kernel_inputs(kernel_basis(out, gpu_id, wd, active_params), gpu_id, eng, heads, wd, kd)
    out.update(figures)
    return out


def engine_kernel_inputs(v: Mapping[str, Any], gpu_id: Optional[str], eng: engines.Engine, heads: Optional[float],
                         weight_dtype: Optional[str], kv_dtype: str) -> tuple[dict[str, float], dict[str, str]]:
    """:func:`inference_ledger.formulas.kernels.plan_kernel_inputs` (figures, sources) read the way an engine reads
    the tables: its kernel-table engine and version, and whether its small all-reduces are its own kernel's."""
    return kernels.plan_kernel_inputs(v, gpu_id or None, eng.kernel_table_engine, heads, weight_dtype, kv_dtype,
                                      eng.kernel_table_version, catalog.fp4_tensor_cores(gpu_id),
                                      bool(eng.custom_allreduce))


@dataclass(frozen=True)
class Resolved:
    """A choice made concrete: the plan's inputs and the catalog entries behind them."""

    inputs: dict[str, Any]
    model: Optional[Model]
    gpu: Optional[Gpu]
    weight_dtype: Optional[str]     # format id (None: a generic model given as numbers)
    kv_dtype: str
    engine: str
    batching: str = "continuous"
    explicit: dict[str, float] = field(default_factory=dict)   # the numbers given, checked

    def describe(self) -> dict[str, Any]:
        """Ids and names for titles and JSON."""
        m, g = self.model, self.gpu
        return {"model": m.id if m else None, "model_name": m.name if m else None,
                "model_figures_given": figures_given(self.explicit) if m else 0,
                "gpu": g.id if g else None, "gpu_name": g.name if g else None,
                "weight_dtype": self.weight_dtype, "kv_dtype": self.kv_dtype, "engine": self.engine,
                "batching": self.batching}


def resolve(model: Model | str | None = None, gpu: Gpu | str | None = None, *, weight_dtype: Optional[str] = None,
            kv_dtype: str = "bf16", engine: str = engines.DEFAULT_ENGINE, context: Optional[float] = None,
            config: str | Path | None = None, extra_models: Sequence[Model] = (), max_model_len: Optional[int] = None,
            numbers: Mapping[str, Any] | None = None, validate: bool = True,
            batching: Optional[str] = None) -> Resolved:
    """The plan's inputs for a choice, every rule applied (ChoiceError/UnknownId with one line otherwise).

    ``model``/``gpu`` None means "not chosen" (a generic model or GPU from the numbers and the
    defaults); an empty string is an error.  ``numbers`` are plan inputs by name; they win over
    the catalog and the engine.  ``context`` is input + output tokens.  ``max_model_len`` is the
    engine's (its prefill chunk may follow it).  ``batching`` is continuous (default) or static.
    """
    if config is not None and model is not None:
        raise ChoiceError("model", "give a model or a config, not both")
    numbers = dict(numbers or {})
    if isinstance(numbers.get("batching"), str):  # the word, as options and CSV cells give it
        batching = numbers.pop("batching")
    explicit = {k: check_number(k, v) for k, v in numbers.items() if v is not None}
    if batching is not None:
        explicit["batching"] = float(batching_code(batching))
    if context is not None:
        if "input_tokens" in explicit:
            raise ChoiceError("context", "give context or input_tokens, not both")
        out_tokens = explicit.get("output_tokens", plan.INPUT_BY_NAME["output_tokens"].default)
        explicit["input_tokens"] = input_tokens_of(context, out_tokens)
    # nothing said of the model (or the GPU): the default one, so a bare plan is the default deployment the workbook
    # opens on; numbers of its own describe a generic one instead
    if model is None and config is None and not figures_given(explicit):
        model = DEFAULT_MODEL
    if gpu is None and not explicit.keys() & {*GPU_INPUTS, "gpu_memory_bytes"}:
        gpu = DEFAULT_GPU
    m = catalog.model_from_config(config) if config is not None else \
        find_model(model, extra_models) if model is not None else None
    g = find_gpu(gpu) if gpu is not None else None
    if m is None:
        explicit = generic_sizes(explicit)
    wd = weight_format(m, weight_dtype)
    kd = find_dtype(kv_dtype, "kv")
    eng = engines.get_engine(engine)
    inputs = plan_inputs(m, g, weight_dtype=wd.id, kv_dtype=kd.id, **explicit)
    experts = m.num_experts if m is not None else explicit.get("num_experts")
    segment = (experts, g.id if g else None, eng.id)
    inputs = with_engine(inputs, eng, gpu_id=g.id if g else "", max_model_len=max_model_len,
                         heads=m.num_attention_heads if m else None, weight_dtype=wd.id, kv_dtype=kd.id,
                         active_params=m.active_params if m else None) \
        | ({} if m is not None else {"kernel_tables": 0}) | bands.band_inputs(*segment) \
        | bands.fitted_inputs(*segment) | explicit   # a model of numbers alone has no shapes to read tables at
    problem = engine_problem(eng, g)
    if problem:
        raise ChoiceError("engine", problem)
    problem = tp_problem(m, g, int(inputs["tp"]), int(inputs["kv_heads"]))
    if problem:
        raise ChoiceError("tp", problem)
    problem = rules_problem(m, inputs, explicit)
    if problem:
        raise ChoiceError(*problem)
    layout = layout_problem(m, int(inputs["pp"]), int(inputs["ep"]), int(inputs["dp_attention"]), int(inputs["tp"]),
                            int(inputs["redundant_experts"]))
    if layout:
        raise ChoiceError(*layout)
    problem = context_problem(m, inputs["input_tokens"] + inputs["output_tokens"])
    if problem:
        raise ChoiceError("context", problem)
    if validate:
        plan.validate_inputs(inputs)
    return Resolved(inputs, m, g, wd.id if (m is not None or weight_dtype) else None, kd.id, eng.id,
                    serving.batching_word(inputs["batching"]), explicit)


# ----------------------------------------------------------------------------------------
# single facts (the Excel MODEL_SPEC / GPU_SPEC)
# ----------------------------------------------------------------------------------------


def gpu_spec(gpu_id: str, field: str) -> Any:
    """One GPU fact by field name, base units (None where the chip has no such unit)."""
    find_gpu(gpu_id)
    return catalog.gpu_spec(gpu_id, field)


def model_spec(model_id: str, field: str) -> Any:
    """One model fact by field name, or a derived one: kv_bytes_per_token (BF16 KV), weights_bytes (native format)."""
    m = find_model(model_id)
    f = catalog.field_name("model", [x.name for x in dataclasses.fields(Model)] + list(MODEL_DERIVED), field)
    if f in MODEL_DERIVED:
        return float(plan.evaluate(plan_inputs(m, None))[f])
    return getattr(m, f)
