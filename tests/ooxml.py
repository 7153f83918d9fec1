"""Structural checks of written .xlsx/.xltx files, independent of the code that wrote them.

* :func:`formula_cells_without_value`: every formula cell (``<c>`` with an ``<f>``) of every
  worksheet must carry a cached ``<v>``; only a text result (``t="str"``) may be empty;
* :func:`schema_errors`: every XML part validated against the ISO/IEC 29500-4 (transitional)
  schemas vendored in ``tests/schemas/ISO-IEC-29500-4`` (see SOURCE.md there); the OPC parts
  that schema set does not cover (content types, relationships, core properties) are checked
  for their root element and required attributes instead.
"""

from __future__ import annotations

import os
import zipfile
from functools import lru_cache
from pathlib import Path
from xml.etree import ElementTree as ET

SCHEMAS = Path(__file__).resolve().parent / "schemas" / "ISO-IEC-29500-4"
SML = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
#: namespace of a part's root element -> the schema file that defines it
ROOT_SCHEMA = {
    SML: "sml.xsd",
    "http://schemas.openxmlformats.org/drawingml/2006/chart": "dml-chart.xsd",
    "http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing": "dml-spreadsheetDrawing.xsd",
    "http://schemas.openxmlformats.org/drawingml/2006/main": "dml-main.xsd",
    "http://schemas.openxmlformats.org/officeDocument/2006/extended-properties": "shared-documentPropertiesExtended.xsd",
}
#: OPC parts (ECMA-376 Part 2, not in the Part 4 schema set): root element -> required attributes of its children
OPC = {
    "{http://schemas.openxmlformats.org/package/2006/content-types}Types": {
        "{http://schemas.openxmlformats.org/package/2006/content-types}Default": ("Extension", "ContentType"),
        "{http://schemas.openxmlformats.org/package/2006/content-types}Override": ("PartName", "ContentType")},
    "{http://schemas.openxmlformats.org/package/2006/relationships}Relationships": {
        "{http://schemas.openxmlformats.org/package/2006/relationships}Relationship": ("Id", "Type", "Target")},
    "{http://schemas.openxmlformats.org/package/2006/metadata/core-properties}coreProperties": {},
}


def sheet_parts(path) -> list[str]:
    with zipfile.ZipFile(path) as z:
        return [n for n in z.namelist() if n.startswith("xl/worksheets/") and n.endswith(".xml")]


def formula_cells_without_value(path) -> list[str]:
    """'part!ref' of every formula cell without a cached value."""
    return list(_formula_cells(*_file_key(path))[1])


def formula_cell_count(path) -> int:
    return _formula_cells(*_file_key(path))[0]


def _file_key(path) -> tuple[str, int, int]:
    st = os.stat(path)
    return str(path), st.st_mtime_ns, st.st_size


@lru_cache(maxsize=32)
def _formula_cells(path: str, mtime_ns: int, size: int) -> tuple[int, tuple[str, ...]]:
    """(formula cells, 'part!ref' of those without a cached value) of a file, read once while it is unchanged (what
    a file holds is a function of its bytes; the session's workbooks are read by several tests)."""
    count, bad = 0, []
    with zipfile.ZipFile(path) as z:
        for name in sheet_parts(path):
            for _, c in ET.iterparse(z.open(name)):
                if c.tag != f"{{{SML}}}c" or c.find(f"{{{SML}}}f") is None:
                    continue
                count += 1
                v = c.find(f"{{{SML}}}v")
                if v is None or (not v.text and c.get("t") != "str"):
                    bad.append(f"{name}!{c.get('r')}")
    return count, tuple(bad)


@lru_cache(maxsize=None)
def _schema(file: str):
    from lxml import etree
    return etree.XMLSchema(etree.parse(str(SCHEMAS / file)))


def schema_errors(path) -> list[str]:
    """One line per XML part that does not validate (empty when every part does)."""
    from lxml import etree
    out = []
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            if not name.endswith((".xml", ".rels")):
                continue
            root = etree.fromstring(z.read(name))
            tag = etree.QName(root)
            if tag.namespace in ROOT_SCHEMA:
                schema = _schema(ROOT_SCHEMA[tag.namespace])
                if not schema.validate(root):
                    out.append(f"{name}: {schema.error_log.last_error}")
            elif root.tag in OPC:
                for child in root:
                    need = OPC[root.tag].get(child.tag, ())
                    missing = [a for a in need if not child.get(a)]
                    if missing:
                        out.append(f"{name}: <{etree.QName(child).localname}> lacks {missing}")
            else:
                out.append(f"{name}: no schema for root element {root.tag}")
    return out
