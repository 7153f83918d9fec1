"""The unit registry: every unit a value is typed or shown in, read from data (pint-style).

``inference_ledger/data/units.csv`` defines each unit as a factor times its base unit (GB = 1e9 B, ms = 1e-3 s,
70B parameters = 70e9) with the spellings the CLI accepts; ``inference_ledger/data/unit_formats.csv`` says how a
value stored in a base unit is shown as text and as an Excel number format.  The CLI's option parser
(:func:`parse`, :func:`option_text`), the plan table (:func:`text`), the catalog lines, the email and the workbook's
formats (:func:`excel_format`, :func:`shown`) all read them here, so a unit is defined once.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from . import csvfile

DATA = Path(__file__).resolve().parents[1] / "data"
UNITS_CSV = DATA / "units.csv"
FORMATS_CSV = DATA / "unit_formats.csv"
#: The Excel format that fixes decimals by the value's size (see :func:`plain`).
PLAIN = "plain"
#: What money formats write for the currency symbol (replaced by the build's, :func:`money_format`).
MONEY_MARK = '"$"'


@dataclass(frozen=True)
class Unit:
    """One unit: ``factor`` base units make one of it."""

    name: str
    base: str
    factor: float
    cli: bool
    accepts: tuple[str, ...]
    option: Optional[int]
    option_from: Optional[float]
    fallback_from: Optional[float]
    source: str


@dataclass(frozen=True)
class Format:
    """How a base unit shows in a medium (text, excel, or also: the workbook's second view) while |value| lies within
    the bounds."""

    unit: str
    medium: str
    above: Optional[float]
    below: Optional[float]
    format: str
    shown: str
    # the units {0} and {1} of a text format are in
    in_: str = ""
    also: str = ""

    def holds(self, value: Optional[float]) -> bool:
        if self.above is None and self.below is None:
            return True
        if value is None:
            return False
        x = abs(value)
        return (self.above is None or x > self.above) and (self.below is None or x < self.below)


@functools.lru_cache(maxsize=None)
def units() -> tuple[Unit, ...]:
    """Every unit of units.csv, in file order."""
    return tuple(csvfile.load(Unit, UNITS_CSV, key="name", required=("name", "base", "source")))


@functools.lru_cache(maxsize=None)
def formats() -> tuple[Format, ...]:
    """Every row of unit_formats.csv, in file order."""
    return tuple(csvfile.load(Format, FORMATS_CSV, key="unit", make=lambda c: csvfile.as_dataclass(
        Format, c, required=("unit", "format"), in_=c.text("in"), also=c.text("also"),
        medium=c.choice("medium", ("text", "excel", "also")))))


def of_base(base: str) -> tuple[Unit, ...]:
    """The units whose values are stored in ``base``, in file order."""
    return tuple(u for u in units() if u.base == base)


def unit(name: str, base: Optional[str] = None) -> Unit:
    """The unit called ``name`` (of ``base`` where two bases share a name: B bytes and B billion parameters)."""
    found = [u for u in units() if u.name == name and (base is None or u.base == base)] \
        or [u for u in units() if u.name == name]
    if not found:
        raise KeyError(f"no unit {name!r} in {UNITS_CSV.name}")
    return found[0]


def value_in(x: float, name: str, base: Optional[str] = None) -> float:
    """A base-unit value in unit ``name``: value_in(80e9, 'GB') = 80, value_in(0.5, 'ms') = 500.

    A unit below its base (ms, %) multiplies by the whole number of it in one base unit (x * 1000 is exact where
    x / 1e-3 is not)."""
    factor = unit(name, base).factor
    per = round(1 / factor) if factor < 1 else 0
    return x * per if per and math.isclose(per * factor, 1, rel_tol=1e-12) else x / factor


def singular(base: str) -> str:
    """A counted unit's noun for one of it (stages -> stage, GPUs -> GPU); any other unit as it is (s, ms, B/token,
    requests/s): a count unit is a plural word that is not in units.csv."""
    counted = base.replace("-", "").isalpha() and len(base) > 2 and base.endswith("s") and not of_base(base) \
        and all(u.name != base for u in units())
    return base[:-1] if counted else base


def counted(x: float, base: str) -> str:
    """The unit a value is written with: the singular at exactly one (1 stage, 2 stages)."""
    return singular(base) if x == 1 else base


def count_text(n: int, plural: str) -> str:
    """A whole count and its noun phrase, the noun singular at one: '1 measured point', '1,024 sequences'."""
    head, _, noun = plural.rpartition(" ")
    return f"{n:,} {head + ' ' if head else ''}{counted(n, noun)}"


# --- the CLI: typed values and shown defaults ----------------------------------------------------------------


def suffixes(base: str) -> dict[str, float]:
    """The suffixes an option in ``base`` accepts (lower case) and their factors, in file order; the unit's own name
    and a money unit's name after '$' (2.50/GPU-h) always among them."""
    table: dict[str, float] = {}
    for u in of_base(base):
        if u.cli:
            for s in (*u.accepts, u.name):
                table.setdefault(s.lower(), u.factor)
    if base:
        table.setdefault(base.lower(), 1)
        table.setdefault(singular(base).lower(), 1)   # '1 stage' as the help shows a default of one
    if base.startswith("$"):
        table.setdefault(base[1:].lower(), 1)
    return table


_NUMBER = re.compile(r"^([-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*(\S*)$", re.IGNORECASE)


def parse(text: str, base: str) -> float:
    """'80GB' -> 8e10, '500ms' -> 0.5, '90%' -> 0.9, '1,024 tokens' -> 1024, '$2.50/GPU-h' -> 2.5.

    ValueError naming the unit and the suffixes it takes."""
    t = str(text).strip()
    if base.startswith("$") and t.startswith("$"):
        t = t[1:]
    t = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", t)
    table = suffixes(base)
    m = _NUMBER.match(t)
    if not m or (m.group(2) and m.group(2).lower() not in table):
        if base in ("code", "1/0"):   # a switch or a code is a bare number: no unit to name, no suffix to list
            raise ValueError(f"{text!r} is not " + ("1 (on) or 0 (off)" if base == "1/0" else "a code number"))
        ok = f" (suffixes: {', '.join(table)})" if table else ""
        raise ValueError(f"{text!r} is not a number in {base or 'plain numbers'}{ok}")
    return float(m.group(1)) * table.get(m.group(2).lower(), 1)


def option_text(x: float, base: str) -> str:
    """A value as an option accepts it (the help's defaults): 79.1875GiB, 80GB, 3.35TB/s, 500ms, 90%, 70B."""
    ranked = sorted((u for u in of_base(base) if u.option is not None), key=lambda u: u.option)
    reach = [u for u in ranked if abs(x) >= u.option_from]
    for u in reach:
        shown = float(f"{x / u.factor:.6g}")
        if abs(shown * u.factor - x) <= 1e-8 * abs(x):
            return f"{x / u.factor:.6g}{u.name}"
    for u in ranked:
        if u.fallback_from is not None and abs(x) >= u.fallback_from:
            return f"{x / u.factor:.6g}{u.name}"
    if base.startswith("$"):
        return f"${x:,.2f}{base[1:]}"
    if ranked:   # a unit with display units, below all of them (12 B)
        return f"{x:.15g} {base}"
    return f"{x:,.15g} {counted(x, base)}".rstrip()


# --- text and Excel views -----------------------------------------------------------------------------------


def _format(base: str, medium: str, value: Optional[float]) -> Optional[Format]:
    return next((f for f in formats() if f.unit == base and f.medium == medium and f.holds(value)), None)


def also(base: str, value: Optional[float]) -> Optional[Format]:
    """The workbook's second view of a base-unit value (its 'Also' column): the row naming the unit ``in_`` it is read
    in and its Excel ``format`` (90 s: min, '#,##0.00" min"'), or None where the unit has none."""
    return _format(base, "also", value)


def money_text(x: float, unit: str, symbol: str = "$") -> str:
    """An amount in a money unit ('$/month'), with the currency's symbol: $12,345/month, $2.50/GPU-h, $0.0123/Mtok."""
    number = f"{x:,.0f}" if abs(x) >= 100 else f"{x:,.2f}" if abs(x) >= 1 else f"{x:.4g}"
    per = unit.split("/", 1)[1] if "/" in unit else ""
    return f"{symbol}{number}" + (f"/{per}" if per else "")


def text(x: float, base: str, symbol: str = "$") -> str:
    """One base-unit value as the plan table shows it: 80.00 GB (74.51 GiB), 3.35 TB/s, 12.50 ms, 90.0%, $1,234/month."""
    if base == "1/0":
        return "yes" if x else "NO"
    if base == "code":   # a code with no list of words (gqa_decode's N): the number alone, never "8 code"
        return f"{x:g}"
    if base.startswith("fraction/"):  # a rate: 8.0%/year, 5.0%/month
        return f"{text(x, 'fraction')}/{base.split('/', 1)[1]}"
    if base.startswith("$/"):
        return money_text(x, base, symbol)
    f = _format(base, "text", x)
    if f is None:
        # a whole number as it is; a fraction to 0.01, or to three significant digits below that (never "-0.00")
        d = 0 if float(x).is_integer() else 2 if abs(x) >= 0.01 else decimals_for(x)
        return f"{x:,.{d}f} {counted(x, base)}".rstrip()
    main = value_in(x, f.in_, base) if f.in_ != base else x   # B/token, params: the base unit itself
    return f.format.format(main, value_in(x, f.also, base) if f.also else None)


def decimals_for(value: Optional[float], significant: int = 3) -> int:
    """Decimals that show ``significant`` digits of a value below 1 (0.0000150 for 1.5e-5), none above 1,000."""
    if value is None or value == 0 or not math.isfinite(value):
        return 2
    return max(0, min(20, significant - 1 - math.floor(math.log10(abs(value)))))


def plain(value: Optional[float], suffix: str = "") -> str:
    """A fixed-decimal Excel format for any magnitude (thousands separators, never scientific notation)."""
    d = decimals_for(value)
    tail = f'" {suffix}"' if suffix else ""
    return ("#,##0." + "0" * d if d else "#,##0") + tail


def excel_format(base: str, value: Optional[float] = None, symbol: str = "$") -> Optional[str]:
    """The Excel number format of a base-unit value (None when the registry has none for the unit)."""
    f = _format(base, "excel", value)
    if f is None:
        return None
    if f.format == PLAIN:
        return plain(value, f.shown or base)
    return f.format.replace(MONEY_MARK, '"' + symbol.replace('"', "") + '"')


def shown(base: str, value: Optional[float] = None) -> str:
    """The unit a reader sees once the Excel format has scaled the value (GB (1e9 B), TB/s, %)."""
    f = _format(base, "excel", value)
    return (f.shown if f is not None and f.shown else base)
