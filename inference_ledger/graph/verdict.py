"""The one verdict of a plan: a code and its words, for every adapter (Plan sheet, Scenarios,
sweeps, recommend, ``plan``, ``email`` and the Excel functions).

0. **does not fit**: the engine refuses to start, because weights + workspace + ONE
   sequence's KV are over its budget (``max_concurrency`` < 1);
1. **fits below the requested concurrency**: it runs, but the KV budget holds fewer
   sequences than asked for, so the rest queue (``fits`` = 0);
2. **fits, misses targets**: the requested concurrency fits, but TTFT or TPOT misses its target;
3. **fits, meets targets**;

and, in the workbook only (the CLI refuses such inputs before any plan is computed):

-1. **invalid input**: a value typed into the workbook breaks a rule the resolver enforces (a range, a
    layout or model rule, a catalog id): the Checks sheet names the rule, and no plan is claimed.

Written with :mod:`inference_ledger.core.expr` helpers: numbers in, numbers out; Sym in, one
short Excel formula out.  The code is the plan line ``verdict``; :func:`words` turns it into text.
"""

from __future__ import annotations

from inference_ledger.core.codes import Codes
from inference_ledger.core.expr import Const
from inference_ledger.core.line import FIT, line
from inference_ledger.core.sheetfuncs import ge, where
from inference_ledger.core.units import VERDICT_MEETS, VERDICT_MISSES

DOES_NOT_FIT, BELOW_CONCURRENCY, MISSES_TARGETS, MEETS_TARGETS = 0, 1, 2, 3
#: The verdict codes and their words (a formula reads any other code as 'does not fit').
VERDICT = Codes("verdict", [(DOES_NOT_FIT, "does not fit"), (BELOW_CONCURRENCY, "fits below the requested concurrency"),
                            (VERDICT_MISSES, "fits, misses targets"), (VERDICT_MEETS, "fits, meets targets")])
#: The words of each code, in code order.
WORDS = VERDICT.words
#: The workbook's code for a typed input that breaks a rule (its words name the rule: see :func:`invalid_words`).
INVALID_INPUT = -1
INVALID_WORDS = "invalid input"
#: What a fleet's figures are titled with when the plan does not fit (they are a what-if: no replica starts).
NO_FLEET = ": the plan does not fit, so no fleet runs these figures"
#: The ledgers whose figures are a fleet's (a bill, its finance, its bands): titled with NO_FLEET when it does not fit.
FLEET_LEDGERS = ("cost", "finance", "accuracy")
VERDICT_INVALID = Const(INVALID_INPUT, "VERDICT_INVALID", "verdict code: a typed input breaks a rule (the Checks sheet "
                        "names it), so no plan is claimed", "code")


@line("Verdict", "code", FIT,
      "0 does not fit (one sequence is over the engine's KV budget), 1 fits below the requested concurrency"
      " (the rest queue), 2 fits but misses a target, 3 fits and meets the targets.")
def verdict(fits, max_concurrency, ttft_ok, tpot_ok):
    """The verdict code: starts (0/1) + fits at the requested concurrency (0/1) + meets both targets (0/1).

    Fitting the requested concurrency (at least one sequence) implies starting, so the sum is 0..3.
    """
    starts = where(ge(max_concurrency, 1), 1, 0)
    return starts + fits + fits * ttft_ok * tpot_ok


#: The verdict's words: a text for a number, an IF formula for a Sym (codes 0..3; the workbook's Plan puts
#: the invalid-input words in front, see inference_ledger.workbook.plan_sheet).
words = VERDICT.render


def words_of(code: float) -> str:
    """The words of one numeric code."""
    if code < 0:
        return INVALID_WORDS
    return VERDICT.word(code)


def invalid_words(rule: str) -> str:
    """The words of the invalid-input verdict: which rule the typed inputs break."""
    return f"{INVALID_WORDS}: {rule}"
