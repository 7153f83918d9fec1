"""Codes: a plan quantity whose number stands for one of a few named cases (the verdict, the binding limit, the
engine's KV rule, the batching regime ...), in one shape.

A :class:`Codes` is owned by the module that computes the quantity; it lists each code's number (a named constant
where formulas compare against it), its words and the default case.  It answers both ways -- the words of a code,
the code of a word (what ``--batching static`` and a scenario's cell give) -- and renders the words as a formula for a
workbook cell (dual, like the lines: a number in, the words out; an expression in, one IF chain out).
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from .expr import Const, is_sym
from .sheetfuncs import eq, where

#: Every coded quantity, registered where its :class:`Codes` is written (read it as
#: ``inference_ledger.graph.plan.CODES``, taken once the plan has imported every module that owns one).
_REGISTERED: dict[str, "Codes"] = {}


def registered() -> dict[str, "Codes"]:
    """The codes made so far, by quantity."""
    return dict(_REGISTERED)


class Codes:
    """The cases of one coded quantity: (number or named constant, words) in code order; ``default`` is the case
    a formula falls back to (and the words a code outside the list reads as in a formula)."""

    def __init__(self, quantity: str, members: Sequence[tuple[Any, str]], default: Optional[float] = None):
        self.quantity = quantity
        self.members = tuple((c, str(w)) for c, w in members)
        self.default = float(self.members[0][0] if default is None else default)
        self.by_code = {int(c): w for c, w in self.members}
        #: code by word (the words as written)
        self.by_word = {w: int(c) for c, w in self.members}
        _REGISTERED[quantity] = self

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(w for _, w in self.members)

    def word(self, code: float) -> str:
        """The words of one numeric code (ValueError for a number that is no code)."""
        try:
            return self.by_code[int(code)]
        except (KeyError, ValueError, TypeError):
            raise ValueError(f"{self.quantity} code must be one of {', '.join(map(str, self.by_code))} "
                             f"(got {code!r})") from None

    def code(self, word: str) -> int:
        """The code of some words, case-insensitive (ValueError naming the words otherwise)."""
        w = str(word).strip().lower()
        for words, c in self.by_word.items():
            if words.lower() == w:
                return c
        raise ValueError(f"{self.quantity} must be one of {', '.join(self.by_word)} (got {word!r})")

    def render(self, code):
        """The words of a code: a text for a number, an IF chain over the named codes for an expression (a code
        outside the list reads as the default's words, in both)."""
        out: Any = self.by_code[int(self.default)]
        if not is_sym(code):
            return self.by_code.get(int(code), out)
        for c, w in reversed(self.members):
            if float(c) != self.default:
                out = where(eq(code, c if isinstance(c, Const) else int(c)), w, out)
        return out

    def array(self, codes) -> np.ndarray:
        """The words of an array of codes."""
        return np.array([self.by_code[k] for k in sorted(self.by_code)], dtype=object)[
            np.searchsorted(sorted(self.by_code), np.asarray(codes, dtype=int))]
