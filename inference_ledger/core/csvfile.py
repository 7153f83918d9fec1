"""The commented-CSV format, read once: the data files of ``inference_ledger/data/`` and the CSVs users give.

The format: UTF-8 (a byte-order mark is allowed), lines whose first non-blank character is ``#`` are comments
(the file's sources, units and notes), blank lines are skipped, then a header and one row per line; every cell
is stripped of surrounding blanks.  A header must name each column once, and a row must not have more cells than
the header has columns; each problem is one :class:`~inference_ledger.args.LedgerInputError` naming the file
(and the row).

:func:`read` gives the rows; :class:`Cells` reads one row's cells as typed values (errors name the file, the row and
the field); :func:`as_dataclass` fills a dataclass from a row by its field names and annotated types, which is how
each catalog and measurement loader turns rows into records.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

from .args import LedgerInputError, echo
from . import files

#: What a cell is stripped of (blanks and line ends only: a control character stays for the caller to refuse).
BLANKS = " \t\r\n"


class Row(dict):
    """One data row: cells by column name (missing cells read as ''), its 1-based row number and file line."""

    def __init__(self, cells: Mapping[str, str], number: int, line: int):
        super().__init__(cells)
        self.number, self.line = number, line


@dataclass(frozen=True)
class Table:
    """A commented CSV as read: the file's name, its header, its data rows and its comment lines (without '#')."""

    name: str
    header: tuple[str, ...]
    rows: tuple[Row, ...]
    comments: tuple[str, ...]

    def where(self, row: Row, key: str = "id") -> str:
        """How a message names a row: 'gpus.csv row 3 (h100-sxm)' (the row's ``key`` cell when it has one)."""
        tag = row.get(key, "")
        return f"{self.name} row {row.number}" + (f" ({tag})" if tag else "")


def read(path: str | Path, *, kind: Optional[str] = None, comments: bool = True, strip: bool = True) -> Table:
    """The rows of a commented CSV.

    ``kind`` marks a file the user gave (``files.INPUT_LIMITS``: it must be a regular file within that kind's size
    limit, read without blocking); without it the file is one of the project's own.  ``comments=False`` reads a
    file where a line starting with '#' is data (a scenario label may start with one); ``strip=False`` keeps each
    cell as written (text a worksheet shows as given).
    """
    p = Path(path)
    if kind is not None:
        raw = files.read_input(p, kind)   # errors name the file
    else:
        try:
            raw = p.read_bytes()
        except OSError as e:
            raise LedgerInputError(f"cannot read {p}: {e.strerror or e}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise LedgerInputError(f"{p.name}: not a UTF-8 text CSV (byte {e.start + 1} cannot be decoded)") from None
    return parse(text, p.name, comments=comments, strip=strip)


def parse(text: str, name: str, *, comments: bool = True, strip: bool = True) -> Table:
    """:func:`read` of a file's text (``name`` is how messages call the file)."""
    notes: list[str] = []
    kept: list[tuple[int, str]] = []   # (file line number, line) of the header and data lines
    for n, line in enumerate(io.StringIO(text, newline=""), start=1):   # lines end at \n, \r or \r\n only
        s = line.strip()
        if comments and s.startswith("#"):
            notes.append(s[1:].strip())
        elif s or not comments:   # a file without comments keeps its blank lines: they may sit inside a quoted cell
            kept.append((n, line))
    reader = csv.reader(line for _, line in kept)
    try:
        records = []
        consumed = 0
        for cells in reader:
            if cells:   # a blank line is no row
                records.append((kept[consumed][0], cells))
            consumed = reader.line_num
    except csv.Error as e:
        raise LedgerInputError(f"{name}: not a readable CSV ({e})") from None
    if not records:
        return Table(name, (), (), tuple(notes))
    tidy = (lambda c: c.strip(BLANKS)) if strip else (lambda c: c)
    header = tuple(tidy(c) for c in records[0][1])
    twice = [c for k, c in enumerate(header) if c in header[:k]]
    if twice:
        raise LedgerInputError(f"{name}: column {twice[0]!r} appears twice in the header; give each column once")
    rows = []
    for number, (line, cells) in enumerate(records[1:], start=1):
        extra = [v for v in cells[len(header):] if v.strip(BLANKS)]
        if extra:
            raise LedgerInputError(f"{name} row {number} (line {line}): {len(cells)} cells, more than the "
                                   f"{len(header)} columns of the header (first extra cell {echo(extra[0])})")
        values = [tidy(c) for c in cells[:len(header)]]
        rows.append(Row(dict(zip(header, values + [""] * (len(header) - len(values)))), number, line))
    return Table(name, header, tuple(rows), tuple(notes))


class Cells:
    """One row's cells as typed values; every error is one line naming the file, the row and the field."""

    def __init__(self, row: Mapping[str, str], where: str):
        self.row, self.where = row, where

    def fail(self, key: str, why: str) -> LedgerInputError:
        return LedgerInputError(f"{self.where}: field '{key}' {why}")

    def text(self, key: str, required: bool = False) -> str:
        v = self.row.get(key) or ""
        if required and not v:
            raise self.fail(key, "is empty")
        return v

    def _float(self, key: str, required: bool) -> tuple[str, Optional[float]]:
        """The cell's text and its number (NaN when it is not one; None when blank)."""
        v = self.text(key, required)
        if not v:
            return v, None
        try:
            return v, float(v)
        except ValueError:
            return v, math.nan

    def number(self, key: str, required: bool = True) -> Optional[float]:
        v, x = self._float(key, required)
        if x is not None and not math.isfinite(x):
            what = "a number" if math.isnan(x) and v.lower().lstrip("+-") != "nan" else "a finite number"
            raise self.fail(key, f"must be {what} (got {echo(v)})")
        return x

    def whole(self, key: str, required: bool = True, lo: Optional[int] = None) -> Optional[int]:
        """A whole number (at least ``lo`` when given)."""
        v, x = self._float(key, required)
        if x is not None and not (x.is_integer() and (lo is None or x >= lo)):
            raise self.fail(key, f"must be a whole number{'' if lo is None else f' >= {lo}'} (got {echo(v)})")
        return None if x is None else int(x)

    def positive(self, key: str) -> Optional[float]:
        """A number > 0, or None for a blank cell."""
        v, x = self._float(key, False)
        if x is not None and not (x > 0 and math.isfinite(x)):
            raise self.fail(key, f"must be a number > 0 or blank (got {echo(v)})")
        return x

    def choice(self, key: str, allowed: Sequence[str]) -> str:
        """One of ``allowed`` (as written)."""
        v = self.text(key)
        if v not in allowed:
            raise self.fail(key, f"must be one of {', '.join(allowed)} (got {echo(v)})")
        return v

    def flag(self, key: str, required: bool = True) -> Optional[bool]:
        v = self.text(key, required)
        if not v:
            return None
        if v not in ("0", "1"):
            raise self.fail(key, f"must be 1 or 0 (got {echo(v)})")
        return v == "1"

    def words(self, key: str) -> tuple[str, ...]:
        """A '|'-separated list ('a|b|c'), blanks dropped."""
        return tuple(w.strip() for w in self.text(key).split("|") if w.strip())


def _reader(hint: Any) -> Callable[[Cells, str], Any]:
    """How a field of this annotated type is read from its cell."""
    args = typing.get_args(hint)
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), hint) if optional else hint
    if base is float:
        return lambda c, k: c.number(k, not optional)
    if base is int:
        return lambda c, k: c.whole(k, not optional)
    if base is bool:
        return lambda c, k: c.flag(k, not optional)
    if typing.get_origin(base) is tuple:
        return lambda c, k: c.words(k)
    if base is str:
        return lambda c, k: c.text(k)
    raise TypeError(f"no cell reader for a field of type {hint!r}")


def as_dataclass(cls: type, cells: Cells, *, required: Sequence[str] = (), **given: Any):
    """A ``cls`` record from one row: each field from the column of its name, read by its annotated type.

    float and int fields must hold a number (Optional ones may be blank); bool fields hold 1 or 0; a tuple field is
    a '|' list; str fields are the cell's text (``required`` names those that must not be blank).  Fields passed in
    ``given`` are taken as given (computed ones, or columns named otherwise)."""
    hints = typing.get_type_hints(cls)
    for key in required:
        cells.text(key, True)
    values = dict(given)
    for f in dataclasses.fields(cls):
        if f.name not in values and f.init:
            values[f.name] = _reader(hints[f.name])(cells, f.name)
    return cls(**values)


def load(cls: type, path: str | Path, *, key: str = "id", required: Sequence[str] = (),
         make: Optional[Callable[[Cells], Any]] = None, **read_options: Any) -> list:
    """Every row of a commented CSV as a ``cls`` record (:func:`as_dataclass`), or as ``make(cells)`` makes it."""
    table = read(path, **read_options)
    return [make(Cells(r, table.where(r, key))) if make is not None else
            as_dataclass(cls, Cells(r, table.where(r, key)), required=required) for r in table.rows]
