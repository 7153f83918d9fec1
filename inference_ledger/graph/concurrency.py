"""The concurrency a deployment runs at: the largest that meets the TTFT and TPOT targets (``--concurrency auto``).

Every fleet sizer that searches a batch does the same (NVIDIA aiconfigurator sweeps the batch
size and keeps the largest that meets its TTFT/TPOT limits): a replica serves the most QPS at the
largest concurrency whose latencies still meet the targets, so that concurrency needs the fewest
replicas for a target QPS (QPS per replica, B / (TTFT + (T - 1) x TPOT(B)), grows with B).

How it is chosen, once for every adapter (``plan``, ``build``, ``sweep``, ``email``, ``=PLAN``,
``recommend`` and the workbook):

* **Candidates** (:func:`candidates`): the most the deployment can hold, :func:`cap` = min(the
  sequences the KV cache holds at full context ``max_concurrency``, the engine's batch limit
  ``max_running_sequences`` = max_num_seqs x DP-attention ranks), then the fixed family
  :data:`FAMILY` below it: round(2^(k/4)), four steps per doubling (1, 2, 3, 4, 5, 6, 7, 8, 10, 11,
  13, 16, 19, 23, 27, 32, ... 32,768), so the choice is within a step (about 20%) of the largest concurrency
  meeting the targets, and exact where the KV cache or the engine limit binds.
* **The plan's own lines at every candidate**: ``plan.evaluate`` over the candidate array (the
  same lines a sweep evaluates), whichever step model they hold.  A candidate qualifies
  (:func:`meets`) when ``ttft_ok`` and ``tpot_ok`` are 1, the KV cache holds it (``kv_fits``) and
  it is within the engine's batch limit.
* **The choice** is the largest qualifying candidate (:func:`chosen`), 1 when none qualifies (the
  verdict then reports the missed target); :func:`reason` says which limit chose it, in words by
  :func:`reason_words`.  A concurrency given explicitly is used as given ("requested").

The workbook writes the same family as the Load sheet's table (one row per candidate, the plan's
lines rendered with the row's concurrency) and the choice as MAX over a column, so editing a target,
the GPU or the prompt length on Plan moves the chosen concurrency and the bill on recalculation.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

import numpy as np

from inference_ledger.graph import plan
from inference_ledger.core.expr import is_sym
from inference_ledger.core.sheetfuncs import ge, le, lt, maximum, minimum, where
from inference_ledger.core.units import CONC_ENGINE, CONC_KV, CONC_NONE, CONC_REQUESTED, CONC_TPOT, CONC_TTFT

#: The word that asks for the choice (``--concurrency auto``, a blank =PLAN argument).
AUTO = "auto"
#: Steps per doubling of the candidate family, and the largest candidate of the family (2^15).
STEPS_PER_DOUBLING, FAMILY_TOP_DOUBLINGS = 4, 15
#: The fixed candidates below the cap, largest first: round(2^(k/4)) for k = 60 .. 0, each once.
FAMILY: tuple[int, ...] = tuple(sorted({int(round(2 ** (k / STEPS_PER_DOUBLING)))
                                        for k in range(STEPS_PER_DOUBLING * FAMILY_TOP_DOUBLINGS + 1)},
                                       reverse=True))
#: The lines a candidate's test reads (by name; whatever step model computes them).
TESTS = ("ttft_ok", "tpot_ok", "kv_fits")
#: The words of each reason code, in code order.
REASON_WORDS = ("requested", "KV cache", "engine batch limit", "TPOT target", "TTFT target",
                "no concurrency meets the targets: 1")


def is_auto(value: Any) -> bool:
    """Whether a concurrency option asks for the choice: None, blank or the word auto."""
    return value is None or (isinstance(value, str) and value.strip().lower() in ("", AUTO))


def cap(max_concurrency, max_running_sequences):
    """The most sequences the deployment holds: min(KV cache at full context, engine batch limit), at least 1."""
    return maximum(minimum(max_concurrency, max_running_sequences), 1)


def holds(concurrency, kv_fits, max_running_sequences):
    """1 when the KV cache holds the candidate and the engine's schedulers run it."""
    return kv_fits * where(le(concurrency, max_running_sequences), 1, 0)


def meets(ttft_ok, tpot_ok, holds):
    """1 when a candidate meets both targets and the deployment holds it."""
    return ttft_ok * tpot_ok * holds


def chosen(best):
    """The concurrency used: the largest qualifying candidate (``best``, 0 when none), at least 1."""
    return maximum(best, 1)


def reason(requested, best, cap, max_concurrency, max_running_sequences, best_tpot, best_ttft):
    """Which limit chose the concurrency: 0 requested, 1 KV cache, 2 engine batch limit, 3 TPOT target,
    4 TTFT target, 5 none meets the targets (1 used).

    ``best_tpot`` / ``best_ttft``: the largest held candidate meeting that target alone; when the
    cap does not qualify, the target whose largest is smaller is the one that binds."""
    return where(requested, CONC_REQUESTED, where(lt(best, 1), CONC_NONE, where(
        ge(best, cap), where(le(max_concurrency, max_running_sequences), CONC_KV, CONC_ENGINE),
        where(le(best_tpot, best_ttft), CONC_TPOT, CONC_TTFT))))


def reason_words(code):
    """The reason's words: a text for a number, an IF formula for a Sym."""
    if not is_sym(code):
        return REASON_WORDS[int(code)]
    out = REASON_WORDS[-1]
    for k, c in reversed(list(enumerate((CONC_REQUESTED, CONC_KV, CONC_ENGINE, CONC_TPOT, CONC_TTFT)))):
        out = where(le(code, c), REASON_WORDS[k], out)
    return out


# ----------------------------------------------------------------------------------------
# Python: the plan over the candidates
# ----------------------------------------------------------------------------------------


def candidates(cap_value) -> np.ndarray:
    """The candidate concurrencies, largest first: the cap, then :data:`FAMILY` (shape cap.shape + (rows,))."""
    c = np.asarray(cap_value, dtype=float)
    fam = np.broadcast_to(np.array(FAMILY, dtype=float), c.shape + (len(FAMILY),))
    return np.concatenate([c[..., None], fam], axis=-1)


def _expanded(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """Inputs with a trailing axis, so a row's inputs broadcast over its candidates."""
    return {k: (np.asarray(v)[..., None] if np.ndim(v) else v) for k, v in inputs.items()}


def choose(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The choice for plan inputs (numbers or equally shaped 1-D arrays; ``concurrency`` is ignored).

    Returns ``concurrency_used``, ``concurrency_reason`` (code), ``concurrency_cap`` and the candidates'
    table (``candidates``: the concurrencies, and every plan line over them, a trailing axis each)."""
    base = plan.evaluate({**inputs, "concurrency": 1.0}, validate=False)
    top = cap(base["max_concurrency"], base["max_running_sequences"])
    cands = candidates(top)
    vals = plan.evaluate({**_expanded(inputs), "concurrency": cands}, validate=False)
    mrs = np.asarray(base["max_running_sequences"])[..., None] if np.ndim(base["max_running_sequences"]) \
        else base["max_running_sequences"]
    held = holds(cands, np.asarray(vals["kv_fits"]), mrs)
    ok = meets(np.asarray(vals["ttft_ok"]), np.asarray(vals["tpot_ok"]), held)
    best = np.max(cands * ok, axis=-1)
    best_tpot = np.max(cands * np.asarray(vals["tpot_ok"]) * held, axis=-1)
    best_ttft = np.max(cands * np.asarray(vals["ttft_ok"]) * held, axis=-1)
    code = reason(0, best, top, base["max_concurrency"], base["max_running_sequences"], best_tpot, best_ttft)
    return {"concurrency_used": chosen(best), "concurrency_reason": code, "concurrency_cap": top,
            "candidates": cands, "candidate_values": vals, "candidate_meets": ok}


def evaluate(inputs: Mapping[str, Any], requested: Optional[Any] = None, validate: bool = True) -> dict[str, Any]:
    """The plan at the concurrency it runs at: ``requested`` when a number, else the choice (:func:`choose`).

    The values are :func:`inference_ledger.graph.plan.evaluate` at that concurrency, with ``concurrency_used``,
    ``concurrency_reason`` and ``concurrency_reason_words`` added."""
    if not is_auto(requested):
        vals = plan.evaluate({**inputs, "concurrency": requested}, validate=validate)
        vals.update(concurrency_used=vals["concurrency"], concurrency_reason=float(CONC_REQUESTED))
    else:
        if validate:
            plan.validate_inputs(inputs)
        c = choose(inputs)
        vals = plan.evaluate({**inputs, "concurrency": c["concurrency_used"]}, validate=False)
        vals.update(concurrency_used=c["concurrency_used"], concurrency_reason=c["concurrency_reason"])
    code = vals["concurrency_reason"]
    vals["concurrency_reason_words"] = reason_words(code) if not np.ndim(code) else \
        np.array(REASON_WORDS, dtype=object)[np.asarray(code, dtype=int)]
    return vals
