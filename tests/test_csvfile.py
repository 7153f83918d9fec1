"""The one commented-CSV reader: comments, blanks, typed cells, and errors naming file, row and field."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import pytest

from inference_ledger.catalogs.catalog import _load_gpus
from inference_ledger.core import csvfile
from inference_ledger.core.args import LedgerInputError
from inference_ledger.formulas.finance import _load as load_costs
from inference_ledger.formulas.serving import load_efficiencies
from inference_ledger.validation.deployments import load as load_deployments

TEXT = """# a source line
#  units: bytes

id,size,note
a, 3 ,hello
  # an indented comment

b,4.5,
"""


def test_comments_blanks_and_stripping():
    t = csvfile.parse(TEXT, "x.csv")
    assert t.header == ("id", "size", "note")
    assert [dict(r) for r in t.rows] == [{"id": "a", "size": "3", "note": "hello"},
                                         {"id": "b", "size": "4.5", "note": ""}]
    assert t.comments == ("a source line", "units: bytes", "an indented comment")
    # row numbers count data rows; lines count the file's lines (comments and blanks included)
    assert [(r.number, r.line) for r in t.rows] == [(1, 5), (2, 8)]
    assert t.where(t.rows[1]) == "x.csv row 2 (b)"


def test_a_hash_is_data_when_comments_are_off():
    t = csvfile.parse("label,x\n#1 choice,2\n", "s.csv", comments=False)
    assert t.rows[0]["label"] == "#1 choice"


def test_duplicate_column_and_extra_cells_are_refused():
    with pytest.raises(LedgerInputError, match=r"d\.csv: column 'a' appears twice"):
        csvfile.parse("a,b,a\n1,2,3\n", "d.csv")
    with pytest.raises(LedgerInputError) as e:
        csvfile.parse("# c\na,b\n1,2\n3,4,surplus\n", "e.csv")
    assert str(e.value).startswith("e.csv row 2 (line 4): 3 cells, more than the 2 columns")
    assert "'surplus'" in str(e.value)


def test_a_short_row_reads_blank_cells():
    assert dict(csvfile.parse("a,b,c\n1\n", "s.csv").rows[0]) == {"a": "1", "b": "", "c": ""}


@dataclass(frozen=True)
class Rec:
    id: str
    n: int
    x: float
    y: Optional[float]
    ok: bool
    tags: tuple[str, ...]


def _rec(line: str) -> Rec:
    t = csvfile.parse("id,n,x,y,ok,tags\n" + line, "r.csv")
    return csvfile.as_dataclass(Rec, csvfile.Cells(t.rows[0], t.where(t.rows[0])))


def test_fields_read_by_their_annotated_types():
    assert _rec("k,7,2.5,,1,a| b||c") == Rec("k", 7, 2.5, None, True, ("a", "b", "c"))
    assert _rec("k,7.0,1e3,0,0,").n == 7 and _rec("k,7.0,1e3,0,0,").y == 0.0


@pytest.mark.parametrize("line, field, why", [
    ("k,seven,1,,1,", "n", "must be a whole number (got 'seven')"),
    ("k,2.5,1,,1,", "n", "must be a whole number (got '2.5')"),
    ("k,1,,,1,", "x", "is empty"),
    ("k,1,abc,,1,", "x", "must be a number (got 'abc')"),
    ("k,1,inf,,1,", "x", "must be a finite number (got 'inf')"),
    ("k,1,1,,yes,", "ok", "must be 1 or 0 (got 'yes')"),
])
def test_a_malformed_cell_names_file_row_and_field(line, field, why):
    with pytest.raises(LedgerInputError) as e:
        _rec(line)
    assert str(e.value) == f"r.csv row 1 (k): field '{field}' {why}"


def _broken_copy(tmp_path, src, column, value, name):
    """The shipped file with one cell of its first data row replaced."""
    lines = src.read_text(encoding="utf-8").splitlines(keepends=True)
    data = [i for i, ln in enumerate(lines) if ln.strip() and not ln.lstrip().startswith("#")]
    cols = csvfile.parse(lines[data[0]], "h").header
    cells = next(csv.reader(io.StringIO(lines[data[1]])))
    cells[cols.index(column)] = value
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(cells)
    lines[data[1]] = buf.getvalue()
    p = tmp_path / name
    p.write_text("".join(lines), encoding="utf-8")
    return p


@pytest.mark.parametrize("loader, src, column, value, expect", [
    (_load_gpus, "gpus.csv", "hbm_bw", "fast", r"gpus\.csv row 1 \(a100-40gb\): field 'hbm_bw' must be a number "
                                               r"\(got 'fast'\)"),
    (_load_gpus, "gpus.csv", "gpus_per_node", "8.5", r"gpus\.csv row 1 \(a100-40gb\): field 'gpus_per_node' must be "
                                                     r"a whole number"),
    (load_costs, "gpu_costs.csv", "price_date", "", r"gpu_costs\.csv row 1 \(\S+\): field 'price_date' is empty"),
    (load_efficiencies, "efficiencies.csv", "quote", "", r"efficiencies\.csv row 1 \(\S+\): field 'quote' is empty"),
    (load_deployments, "measured_deployments.csv", "nodes", "two",
     r"measured_deployments\.csv row 1 \(\S+\): field 'nodes' must be a whole number \(got 'two'\)"),
    (load_deployments, "measured_deployments.csv", "source", "", r"measured_deployments\.csv row 1 \(\S+\): field 'source' is empty"),
])
def test_shipped_loaders_name_file_row_and_field(tmp_path, loader, src, column, value, expect):
    root = Path(csvfile.__file__).resolve().parents[1] / "data"
    p = _broken_copy(tmp_path, root / src, column, value, src)
    with pytest.raises(LedgerInputError, match=expect) as e:
        loader(p)
    assert "\n" not in str(e.value)


def test_an_unreadable_or_undecodable_file_is_one_line(tmp_path):
    with pytest.raises(LedgerInputError, match="cannot read"):
        csvfile.read(tmp_path / "none.csv")
    (tmp_path / "bin.csv").write_bytes(b"a,b\n\xff\xfe,1\n")
    with pytest.raises(LedgerInputError, match=re.escape("bin.csv: not a UTF-8 text CSV (byte 5")):
        csvfile.read(tmp_path / "bin.csv")
