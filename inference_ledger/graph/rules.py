"""The resolver's rules, each written once: what the engines refuse to run, and model inputs that contradict each other.

:func:`inference_ledger.graph.resolve.resolve` applies them to every choice (the CLI, the workbook's Plan sheet and
Scenarios rows, sweeps, the Excel functions); :data:`MODEL_RULES` are also rendered as the Checks sheet's formulas
(workbook/checks.py), from the same definitions.  Each ``*_problem`` function answers None when its rule holds,
else the one-line reason (with the setting it names, where that is not TP).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from inference_ledger.catalogs.catalog import Gpu, Model
from inference_ledger.core.sheetfuncs import and_, eq, ge, gt, le, mod, or_


# --- rules between model inputs: one definition, evaluated here on numbers and rendered on the Checks sheet ----


@dataclass(frozen=True)
class Rule:
    """A rule between plan inputs, written once.

    ``condition`` is an :mod:`inference_ledger.core.expr` expression over plan inputs named by its
    parameters: called with numbers it is True when the inputs are consistent (the resolver
    refuses otherwise, with ``message``), called with cell references it is the Checks sheet's formula.
    ``option`` is the setting the refusal names; ``label``/``doc`` are the Checks sheet's words.
    """

    option: str
    label: str
    doc: str
    condition: Any            # (plan inputs by parameter name) -> bool or formula
    message: Any              # (values: Mapping, who: str) -> one line

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(inspect.signature(self.condition).parameters)

    def holds(self, values: Mapping[str, Any]) -> bool:
        return bool(self.condition(*(values[p] for p in self.params)))

    def problem(self, values: Mapping[str, Any], who: str = "the model") -> Optional[str]:
        """The refusal for these values (None when the rule holds)."""
        return None if self.holds(values) else self.message(values, who)


def experts_per_token_ok(num_experts, experts_per_token):
    """A MoE model routes each token to 1..num_experts experts; a dense model (0 experts) to none."""
    return or_(and_(gt(num_experts, 0), ge(experts_per_token, 1), le(experts_per_token, num_experts)),
               and_(eq(num_experts, 0), eq(experts_per_token, 0)))


def moe_layers_ok(num_experts, moe_layers, num_layers):
    """A MoE model has 1..num_layers MoE layers; a dense model none."""
    return or_(and_(gt(num_experts, 0), ge(moe_layers, 1), le(moe_layers, num_layers)),
               and_(eq(num_experts, 0), eq(moe_layers, 0)))


def kv_heads_split_ok(mla_latent_dim, kv_heads, tp):
    """KV heads split evenly over TP (K % TP = 0) or are replicated evenly (TP % K = 0); an MLA latent is not split."""
    return or_(ge(mla_latent_dim, 1), eq(mod(kv_heads, tp), 0), eq(mod(tp, kv_heads), 0))


def _n(x: Any) -> str:
    return f"{float(x):g}"


def _experts_message(v: Mapping[str, Any], who: str) -> str:
    if v["num_experts"] == 0:
        return f"experts per token {_n(v['experts_per_token'])} needs a mixture-of-experts model: {who} is dense"
    return (f"experts per token {_n(v['experts_per_token'])} must be within 1..{_n(v['num_experts'])} "
            f"(the routed experts of {who})")


def _moe_layers_message(v: Mapping[str, Any], who: str) -> str:
    if v["num_experts"] == 0:
        return f"MoE layers {_n(v['moe_layers'])} needs a mixture-of-experts model: {who} is dense"
    return f"MoE layers {_n(v['moe_layers'])} must be within 1..{_n(v['num_layers'])} (the layers of {who})"


#: Rules between model inputs (overrides included), in the order the resolver applies them.
MODEL_RULES: tuple[Rule, ...] = (
    Rule("experts_per_token", "Experts per token within the routed experts",
         "A mixture-of-experts model routes each token to 1..num_experts experts; a dense model (0 experts) to none.",
         experts_per_token_ok, _experts_message),
    Rule("moe_layers", "MoE layers within the layers",
         "A mixture-of-experts model has 1..num_layers MoE layers; a dense model none.", moe_layers_ok,
         _moe_layers_message),
    Rule("kv_heads", "TP valid for the KV heads", "KV heads split evenly over TP, or TP is a multiple of them "
         "(or MLA), as vLLM requires.", kv_heads_split_ok,
         lambda v, who: kv_heads_problem(int(v["kv_heads"]), int(v["tp"]), who)),
)

def active_within_total_ok(active_params, num_params):
    return le(active_params, num_params)


def quantized_within_total_ok(quantized_params, num_params):
    return le(quantized_params, num_params)


def active_quantized_within_active_ok(active_quantized_params, active_params):
    return le(active_quantized_params, active_params)


def windows_within_layers_ok(sliding_layers, num_layers):
    return le(sliding_layers, num_layers)


def _not_above(v: Mapping[str, Any], who: str, part: str, whole: str) -> str:
    return f"{part} must be <= {whole}"


#: Inputs that cannot exceed another input (part <= whole): checked by the plan on every evaluation (numbers or
#: arrays, :func:`inference_ledger.graph.plan.validate_inputs`) and rendered as the Checks sheet's rows.
INPUT_RULES: tuple[Rule, ...] = (
    Rule("active_params", "Active parameters <= total parameters", "A token cannot use more weights than the model "
         "has.", active_within_total_ok, lambda v, who: _not_above(v, who, "active_params", "num_params")),
    Rule("quantized_params", "Quantizable parameters <= total parameters", "The quantizable layers are part of the "
         "model.", quantized_within_total_ok, lambda v, who: _not_above(v, who, "quantized_params", "num_params")),
    Rule("active_quantized_params", "Active quantizable parameters <= active parameters", "The quantizable layers a "
         "token uses are part of what it uses.", active_quantized_within_active_ok,
         lambda v, who: _not_above(v, who, "active_quantized_params", "active_params")),
    Rule("sliding_layers", "Sliding-window layers <= layers", "Only existing layers can use a window.",
         windows_within_layers_ok, lambda v, who: _not_above(v, who, "sliding_layers", "num_layers")),
)


#: Plan inputs that only a mixture-of-experts model has (refused as overrides of a dense catalog model).
MOE_ONLY = ("num_experts", "experts_per_token", "moe_layers")


def dense_override_problem(model: Optional[Model], explicit: Mapping[str, Any]) -> Optional[tuple[str, str]]:
    """(setting, why) when a mixture-of-experts input is given for a dense catalog model (None otherwise)."""
    if model is None or model.num_experts:
        return None
    for name in MOE_ONLY:
        if explicit.get(name):
            return name, (f"{name} {_n(explicit[name])} needs a mixture-of-experts model: {model.id} is dense "
                          "(it has no routed experts)")
    return None


def rules_problem(model: Optional[Model], inputs: Mapping[str, Any],
                  explicit: Mapping[str, Any] = {}) -> Optional[tuple[str, str]]:
    """(setting, why) of the first model rule these inputs break (None when all hold)."""
    return dense_override_problem(model, explicit) or \
        first_problem(MODEL_RULES, inputs, model.id if model is not None else "the model")


# --- rules of the layout: TP within a node and the heads, PP, EP and DP attention -----------------------------


def tp_within_node_ok(tp, gpus_per_node):
    """TP stays inside the GPU's NVLink/xGMI domain (one node)."""
    return le(tp, gpus_per_node)


def tp_divides_heads_ok(attention_heads, tp):
    """Tensor parallelism splits the attention heads across GPUs (Megatron-LM, Shoeybi et al. 2019): TP divides them."""
    return eq(mod(attention_heads, tp), 0)


def pp_within_layers_ok(pp, num_layers):
    """vLLM and SGLang split the layers over at most as many stages as there are layers."""
    return le(pp, num_layers)


def ep_needs_moe_ok(num_experts, ep):
    """Expert parallelism places whole experts: only a mixture-of-experts model has them."""
    return or_(gt(num_experts, 0), eq(ep, 1))


def dp_attention_needs_moe_ok(num_experts, dp_attention):
    """DP attention shares MoE layers between attention ranks, so a dense model's DP ranks are separate replicas."""
    return or_(gt(num_experts, 0), eq(dp_attention, 1))


def redundant_experts_need_moe_ok(num_experts, redundant_experts):
    """Redundant expert copies need routed experts to copy."""
    return or_(gt(num_experts, 0), eq(redundant_experts, 0))


def ep_divides_experts_ok(num_experts, redundant_experts, ep):
    """EP divides the routed experts and their redundant copies (SGLang ``num_physical_experts % ep_size``, vLLM
    ``FusedMoE``)."""
    return eq(mod(num_experts + redundant_experts, ep), 0)


def ep_divides_stage_ok(tp, dp_attention, ep):
    """EP divides the GPUs of a pipeline stage (SGLang: moe_tp = tp / ep; vLLM: EP = TP x DP)."""
    return eq(mod(tp * dp_attention, ep), 0)


def _node_message(v: Mapping[str, Any], who: str) -> str:
    return (f"TP {_n(v['tp'])} spans more than one {_n(v['gpus_per_node'])}-GPU node of {who} "
            "(TP stays within a node: add PP stages or EP across nodes)")


def _experts_text(v: Mapping[str, Any]) -> str:
    extra = f" + {_n(v['redundant_experts'])} redundant" if v["redundant_experts"] else ""
    return f"{_n(v['num_experts'])}{extra} routed experts"


#: TP within the GPU's node (the refusal names the GPU).
NODE_RULE = Rule("tp", "TP within one node", "Tensor parallelism stays inside the GPU's NVLink/xGMI domain "
                 "(gpus_per_node); across nodes use PP stages or EP.", tp_within_node_ok, _node_message)

#: TP and the model's heads (the refusals name the model).
HEADS_RULES: tuple[Rule, ...] = (
    Rule("tp", "TP divides the attention heads", "Tensor parallelism splits the attention heads across GPUs, so TP "
         "divides them.", tp_divides_heads_ok,
         lambda v, who: f"TP {_n(v['tp'])} does not divide the {_n(v['attention_heads'])} attention heads of {who}"),
    MODEL_RULES[-1],
)

#: The PP/EP/DP-attention layouts the engines run, in the order the resolver applies them.
LAYOUT_RULES: tuple[Rule, ...] = (
    Rule("pp", "PP stages within the layers", "vLLM and SGLang split the layers over at most as many stages as "
         "there are layers.", pp_within_layers_ok,
         lambda v, who: f"PP {_n(v['pp'])} is more stages than the {_n(v['num_layers'])} layers of {who}"),
    Rule("ep", "EP only on a mixture-of-experts model", "Expert parallelism places whole experts; a dense model has "
         "none.", ep_needs_moe_ok, lambda v, who: f"EP {_n(v['ep'])} needs a mixture-of-experts model: {who} is dense"),
    Rule("dp_attention", "DP attention only on a mixture-of-experts model", "DP attention shares MoE layers between "
         "attention ranks; a dense model's DP ranks are separate replicas.", dp_attention_needs_moe_ok,
         lambda v, who: (f"DP attention {_n(v['dp_attention'])} needs a mixture-of-experts model: {who} is dense "
                         "(its DP ranks are separate replicas)")),
    Rule("redundant_experts", "Redundant experts only on a mixture-of-experts model", "Redundant copies need routed "
         "experts to copy.", redundant_experts_need_moe_ok,
         lambda v, who: f"redundant experts need a mixture-of-experts model: {who} is dense"),
    Rule("ep", "EP divides the experts", "EP divides the routed experts and their redundant copies (SGLang, vLLM "
         "FusedMoE).", ep_divides_experts_ok,
         lambda v, who: f"EP {_n(v['ep'])} does not divide the {_experts_text(v)} of {who}"),
    Rule("ep", "EP divides the GPUs of a stage", "EP divides TP x DP attention, the GPUs of one pipeline stage.",
         ep_divides_stage_ok,
         lambda v, who: (f"EP {_n(v['ep'])} does not divide the {_n(v['tp'] * v['dp_attention'])} GPUs of a pipeline "
                         f"stage (TP {_n(v['tp'])} x DP attention {_n(v['dp_attention'])})")),
)


def first_problem(rules: tuple[Rule, ...], values: Mapping[str, Any], who: str) -> Optional[tuple[str, str]]:
    """(setting, why) of the first of ``rules`` these values break (None when all hold)."""
    for rule in rules:
        why = rule.problem(values, who)
        if why:
            return rule.option, why
    return None


def kv_heads_problem(k: int, tp: int, who: str = "the model") -> Optional[str]:
    """Why k KV heads neither split nor replicate evenly over tp GPUs (vLLM's rule; None when they do)."""
    if tp <= k and k % tp:
        return f"TP {tp} does not divide the {k} KV heads of {who}"
    if tp > k and tp % k:
        return f"TP {tp} is not a multiple of the {k} KV heads of {who} (they cannot be replicated evenly)"
    return None


def node_problem(gpu: Gpu, tp: int) -> Optional[str]:
    """Why tp GPUs are more than one node of this GPU (None when they fit one)."""
    return NODE_RULE.problem({"tp": tp, "gpus_per_node": gpu.gpus_per_node}, gpu.id)


def heads_problem(model: Model, tp: int, kv_heads: Optional[int] = None) -> Optional[str]:
    """Why a model's heads cannot be split over tp GPUs (None when they can): TP divides the attention heads, and
    the KV heads split evenly (K % TP = 0) or are replicated evenly (TP % K = 0), as vLLM requires; an MLA latent is
    not split.  ``kv_heads`` overrides the model's (``--kv-heads``): the rule is the same for both."""
    values = {"tp": tp, "attention_heads": model.num_attention_heads, "mla_latent_dim": model.mla_latent_dim,
              "kv_heads": model.kv_heads if kv_heads is None else kv_heads}
    problem = first_problem(HEADS_RULES, values, model.id)
    return problem[1] if problem else None


def tp_problem(model: Optional[Model], gpu: Optional[Gpu], tp: int, kv_heads: Optional[int] = None) -> Optional[str]:
    """Why this model cannot run at TP ``tp`` on this GPU (None when it can); ``kv_heads`` overrides the model's."""
    return (node_problem(gpu, tp) if gpu is not None else None) or \
        (heads_problem(model, tp, kv_heads) if model is not None else None)


def layout_problem(model: Optional[Model], pp: int, ep: int, dp_attention: int, tp: int,
                   redundant_experts: int = 0) -> Optional[tuple[str, str]]:
    """(setting, why) when the engines refuse this PP/EP/DP-attention layout (None when they run it):
    :data:`LAYOUT_RULES`, the Checks sheet's rows too."""
    if model is None:
        return None
    values = {"pp": pp, "ep": ep, "dp_attention": dp_attention, "tp": tp, "redundant_experts": redundant_experts,
              "num_layers": model.num_layers, "num_experts": model.num_experts}
    return first_problem(LAYOUT_RULES, values, model.id)


def context_problem(model: Optional[Model], context: float) -> Optional[str]:
    """Why a context (input + output tokens) is too long for the model (None when it is not)."""
    if model is not None and context > model.max_position_embeddings:
        return (f"context {int(context):,} exceeds the {model.max_position_embeddings:,}-token maximum of "
                f"{model.id} (max_position_embeddings)")
    return None


#: engines.csv gpu_vendors of an engine that runs on every vendor's GPUs.
ANY_VENDOR = "any"
#: The Checks sheet's label of the rule below.
ENGINE_VENDOR_LABEL = "Engine runs on the GPU's vendor"


def engine_runs_on(engine_vendors, gpu_vendor):
    """1/True when the engine runs on the GPU's vendor: its engines.csv ``gpu_vendors`` is ``any`` or that vendor
    (TensorRT-LLM NVIDIA, ATOM AMD).  Strings in, a truth value out; Sym in, the Checks sheet's formula out."""
    return or_(eq(engine_vendors, ANY_VENDOR), eq(engine_vendors, gpu_vendor))


def engine_problem(engine, gpu: Optional[Gpu]) -> Optional[str]:
    """Why this engine cannot serve on this GPU (None when it can, or when no catalog GPU is chosen)."""
    if gpu is None or engine_runs_on(engine.gpu_vendors, gpu.vendor):
        return None
    return f"{engine.id} runs on {engine.gpu_vendors} GPUs only, and {gpu.id} is {gpu.vendor}: pick another engine"
