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


def heads_problem(model: Model, tp: int, kv_heads: Optional[int] = None) -> Optional[str]:
    """Why a model's heads cannot be split over tp GPUs (None when they can).

    Tensor parallelism splits the attention heads across GPUs (Megatron-LM, Shoeybi et al.
    2019), so TP must divide them; the KV heads either split evenly (K % TP = 0) or are
    replicated evenly (TP % K = 0), as vLLM requires.  An MLA latent is not split.
    ``kv_heads`` overrides the model's (``--kv-heads``): the rule is the same for both.
    """
    if model.num_attention_heads % tp:
        return f"TP {tp} does not divide the {model.num_attention_heads} attention heads of {model.id}"
    if model.mla_latent_dim == 0:
        return kv_heads_problem(model.kv_heads if kv_heads is None else kv_heads, tp, model.id)
    return None


def kv_heads_problem(k: int, tp: int, who: str = "the model") -> Optional[str]:
    """Why k KV heads neither split nor replicate evenly over tp GPUs (vLLM's rule; None when they do)."""
    if tp <= k and k % tp:
        return f"TP {tp} does not divide the {k} KV heads of {who}"
    if tp > k and tp % k:
        return f"TP {tp} is not a multiple of the {k} KV heads of {who} (they cannot be replicated evenly)"
    return None


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
    problem = dense_override_problem(model, explicit)
    if problem:
        return problem
    who = model.id if model is not None else "the model"
    for rule in MODEL_RULES:
        why = rule.problem(inputs, who)
        if why:
            return rule.option, why
    return None


def node_problem(gpu: Gpu, tp: int) -> Optional[str]:
    """Why tp GPUs are more than one node of this GPU (None when they fit one)."""
    if tp > gpu.gpus_per_node:
        return (f"TP {tp} spans more than one {gpu.gpus_per_node}-GPU node of {gpu.id} "
                "(TP stays within a node: add PP stages or EP across nodes)")
    return None


def tp_problem(model: Optional[Model], gpu: Optional[Gpu], tp: int, kv_heads: Optional[int] = None) -> Optional[str]:
    """Why this model cannot run at TP ``tp`` on this GPU (None when it can); ``kv_heads`` overrides the model's."""
    return (node_problem(gpu, tp) if gpu is not None else None) or \
        (heads_problem(model, tp, kv_heads) if model is not None else None)


def layout_problem(model: Optional[Model], pp: int, ep: int, dp_attention: int, tp: int,
                   redundant_experts: int = 0) -> Optional[tuple[str, str]]:
    """(setting, why) when the engines refuse this PP/EP/DP-attention layout (None when they run it).

    vLLM and SGLang split the layers over at most as many stages as there are layers; expert parallelism
    places whole experts, so EP divides the routed experts and their redundant copies (SGLang
    ``num_physical_experts % ep_size``, vLLM ``FusedMoE``) and the GPUs of a stage (SGLang: moe_tp = tp / ep; vLLM: EP = TP x DP); DP attention
    shares MoE layers between attention ranks, so a dense model's DP ranks are separate replicas.
    """
    if model is None:
        return None
    if pp > model.num_layers:
        return "pp", f"PP {pp} is more stages than the {model.num_layers} layers of {model.id}"
    if model.num_experts == 0:
        if ep > 1:
            return "ep", f"EP {ep} needs a mixture-of-experts model: {model.id} is dense"
        if dp_attention > 1:
            return "dp_attention", (f"DP attention {dp_attention} needs a mixture-of-experts model: {model.id} is dense "
                                    "(its DP ranks are separate replicas)")
        if redundant_experts:
            return "redundant_experts", f"redundant experts need a mixture-of-experts model: {model.id} is dense"
    physical = model.num_experts + redundant_experts
    if physical % ep:
        extra = f" + {redundant_experts} redundant" if redundant_experts else ""
        return "ep", f"EP {ep} does not divide the {model.num_experts}{extra} routed experts of {model.id}"
    if (tp * dp_attention) % ep:
        return "ep", (f"EP {ep} does not divide the {tp * dp_attention} GPUs of a pipeline stage "
                      f"(TP {tp} x DP attention {dp_attention})")
    return None


def context_problem(model: Optional[Model], context: float) -> Optional[str]:
    """Why a context (input + output tokens) is too long for the model (None when it is not)."""
    if model is not None and context > model.max_position_embeddings:
        return (f"context {int(context):,} exceeds the {model.max_position_embeddings:,}-token maximum of "
                f"{model.id} (max_position_embeddings)")
    return None
