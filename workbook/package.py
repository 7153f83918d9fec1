"""Turn openpyxl's output into a mail-ready, reproducible .xlsx.

openpyxl writes formula cells with an empty value (``<v/>`` with the standard library's
XML writer, ``<v></v>`` with lxml's), so a mail preview, Quick Look or a phone (which
never recalculate) would show blanks.  This module rewrites the package once, parsing
every XML part (never matching one serialization with a pattern):

* every formula cell gets its cached value (``<v>``), computed by the same Python
  formulas while the sheet was built; ``t="str"`` marks text, ``t="b"`` booleans.  A
  formula cell without a recorded value is a builder bug and stops the build, and a
  final structural check stops it on any formula cell left without a value (only a
  text result may be empty);
* every chart series carries a data cache (``c:numCache``/``c:strCache``, ECMA-376
  Part 1, 21.2.2.120/21.2.2.199) filled from those values, so a viewer that does not
  recalculate still draws the charts;
* every part is written again by one serializer, so the bytes do not depend on
  which XML backend openpyxl used;
* zip members keep openpyxl's order, with one fixed timestamp and fixed permissions,
  so the same inputs give the same bytes;
* the numbers of a sheet's number blocks (:meth:`inference_ledger.workbook.context.Ctx.number_block`: the Kernels
  sheet's figures) are written into their rows as openpyxl writes a styled number, with the styles of the row
  above them, without ever being openpyxl cells (tens of thousands of them would cost seconds per build);
* ``template=True`` turns the package into an Excel template (.xltx) by changing the
  workbook part's content type (ECMA-376 Part 1, 12.3.23).
"""

from __future__ import annotations

import io
import math
import re
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping
from xml.etree import ElementTree as ET

from openpyxl.compat.strings import safe_string
from openpyxl.utils.cell import range_boundaries, get_column_letter

_MAIN = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
_TEMPLATE = "application/vnd.openxmlformats-officedocument.spreadsheetml.template.main+xml"
SML = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
CHART = "http://schemas.openxmlformats.org/drawingml/2006/chart"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_CT = "http://schemas.openxmlformats.org/package/2006/content-types"
_DCTERMS = "http://purl.org/dc/terms/"
_XML_NS = "http://www.w3.org/XML/1998/namespace"
XML_DECLARATION = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'


class MissingCachedValue(RuntimeError):
    """A formula cell was written without the value it computes."""


# --- parse and write XML parts -------------------------------------------------------------


class Part:
    """One parsed XML part, written back with every namespace declared once on the root.

    openpyxl declares namespaces on different elements with lxml and with the standard
    library; declaring the ones the part uses on its root, default namespace first and
    the rest by prefix, makes the bytes the same whichever backend wrote them.
    """

    def __init__(self, data: bytes):
        self.prefixes: dict[str, str] = {}          # prefix -> uri, as the writer bound them
        events = ET.iterparse(io.BytesIO(data), events=("start-ns",))   # the tree is built in C; only the
        for _, (prefix, uri) in events:                                  # declarations come back one by one
            if self.prefixes.setdefault(prefix, uri) != uri:
                raise ValueError(f"prefix {prefix!r} is bound to two namespaces")
        self.root = events.root

    def to_bytes(self, rows_end: Mapping[str, str] = {}) -> bytes:  # noqa: B006 (read only)
        """The part's XML; ``rows_end``: a sheet's row number -> cells written at the end of that row, as they are."""
        names: set[str] = set()              # every element and attribute name of the part
        for el in self.root.iter():
            names.add(el.tag)
            if el.attrib:
                names.update(el.attrib)
        used = {_uri(n) for n in names}
        if any(n.endswith("}Ignorable") for n in names):
            for el in self.root.iter():
                ignorable = next((v for k, v in el.attrib.items() if k.endswith("}Ignorable")), "")
                used.update(self.prefixes.get(p) for p in ignorable.split())
        decls = sorted(((p, u) for p, u in self.prefixes.items() if u in used), key=lambda pu: (pu[0] != "", pu[0]))
        out: list[str] = []
        writer = _Writer(dict(decls), out, rows_end)
        writer.write(self.root, decls)
        if writer.rows_end:
            raise ValueError(f"rows {', '.join(sorted(writer.rows_end, key=int)[:5])} are not in the sheet")
        return XML_DECLARATION + "".join(out).encode("utf-8")


def _uri(name: str):
    return name[1:].split("}", 1)[0] if name[0] == "{" else None


def _esc(s: str, attr: bool = False) -> str:
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if attr:
        s = s.replace('"', "&quot;").replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")
    return s


def _qname(tag: str, scope: Mapping[str, str], attr: bool) -> str:
    if tag[0] != "{":
        return tag
    uri, local = tag[1:].split("}", 1)
    if uri == _XML_NS:
        return "xml:" + local
    if not attr and scope.get("") == uri:
        return local
    for prefix, u in scope.items():
        if u == uri and prefix:
            return f"{prefix}:{local}"
    raise ValueError(f"namespace {uri} of <{local}> is not declared")


class _Writer:
    """Writes a parsed part's elements in one scope of namespace declarations; each element and attribute name is
    turned into its qualified name once per part (a sheet repeats a handful of names tens of thousands of times)."""

    def __init__(self, scope: Mapping[str, str], out: list[str], rows_end: Mapping[str, str] = {}):  # noqa: B006
        self.scope, self.out = scope, out
        self.rows_end = dict(rows_end)   # what is left to write
        self.tags: dict[str, str] = {}
        self.attrs: dict[str, str] = {}

    def write(self, el, decls=()) -> None:
        out, tags, attrs, scope = self.out, self.tags, self.attrs, self.scope
        name = tags.get(el.tag)
        if name is None:
            name = tags[el.tag] = _qname(el.tag, scope, False)
        out.append("<" + name)
        for prefix, uri in decls:
            out.append(f' xmlns{":" + prefix if prefix else ""}="{_esc(uri, True)}"')
        for k, v in el.attrib.items():
            q = attrs.get(k)
            if q is None:
                q = attrs[k] = _qname(k, scope, True)
            out.append(f' {q}="{_esc(v, True) if _ATTR_SPECIAL.search(v) else v}"')
        text = el.text
        if text is not None and _TEXT_SPECIAL.search(text):
            text = _esc(text)
        if len(el) == 0:
            if text is None:      # a value set to "" (an empty text result) stays <v></v>
                out.append("/>")
            else:
                out.append(f">{text}</{name}>")
        else:
            out.append(">" + (text or ""))
            write = self.write
            for child in el:
                write(child)
            if self.rows_end and el.tag == _ROW:
                out.append(self.rows_end.pop(el.get("r"), ""))
            out.append(f"</{name}>")
        if el.tail:
            out.append(_esc(el.tail))


#: characters _esc replaces (in text; in an attribute value): a name or number without them is written as it is
_TEXT_SPECIAL = re.compile(r"[&<>]")
_ATTR_SPECIAL = re.compile(r'[&<>"\n\r\t]')


def _sml(tag: str) -> str:
    return f"{{{SML}}}{tag}"


def _chart(tag: str) -> str:
    return f"{{{CHART}}}{tag}"


_ROW = _sml("row")


# --- cells -------------------------------------------------------------------------------------


def _number_text(v: Any) -> str:
    f = float(v)
    if not math.isfinite(f):
        raise ValueError(f"cached value {v!r} is not a finite number")
    return repr(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)


def _value_xml(v: Any) -> tuple[str | None, str]:
    """(t attribute or None, <v> text) of a cached value."""
    if isinstance(v, bool):
        return "b", "1" if v else "0"
    if isinstance(v, str):
        return "str", v
    return None, _number_text(v)


def formula_cells_without_value(root) -> list[str]:
    """References of formula cells with no cached value (a text result alone may be empty)."""
    bad = []
    for c in root.iter(_sml("c")):
        if c.find(_sml("f")) is None:
            continue
        v = c.find(_sml("v"))
        if v is None or (not v.text and c.get("t") != "str"):
            bad.append(c.get("r", "?"))
    return bad


def fill_cached_values(root, sheet: str, cached: Mapping[tuple[str, str], Any]) -> None:
    """Give every formula cell of a parsed sheet its cached value; stop on one that has none."""
    for c in root.iter(_sml("c")):
        f = c.find(_sml("f"))
        if f is None:
            continue
        ref = c.get("r")
        if (sheet, ref) not in cached:
            raise MissingCachedValue(f"{sheet}!{ref} has a formula but no cached value: ={f.text or ''}")
        t, text = _value_xml(cached[(sheet, ref)])
        if t is None:
            c.attrib.pop("t", None)
        else:
            c.set("t", t)
        v = c.find(_sml("v"))
        if v is None:
            v = ET.Element(_sml("v"))
            c.insert(list(c).index(f) + 1, v)
        v.text = text
    bad = formula_cells_without_value(root)
    if bad:
        raise MissingCachedValue(f"{sheet}: formula cells without a cached value: {', '.join(bad[:10])}")


def _shared_strings(parts: Mapping[str, Any]) -> list[str]:
    if "xl/sharedStrings.xml" not in parts:
        return []
    root = parts["xl/sharedStrings.xml"].root
    return ["".join(t.text or "" for t in si.iter(_sml("t"))) for si in root.iter(_sml("si"))]


def cell_values(root, strings: list[str]) -> dict[str, Any]:
    """Reference -> value (number, text or bool) of every cell of a parsed sheet that has one."""
    out: dict[str, Any] = {}
    for c in root.iter(_sml("c")):
        t, v = c.get("t", "n"), c.find(_sml("v"))
        if t == "inlineStr":
            out[c.get("r")] = "".join(x.text or "" for x in c.iter(_sml("t")))
        elif v is None:
            continue
        elif t == "s":
            out[c.get("r")] = strings[int(v.text)]
        elif t in ("str", "e"):
            out[c.get("r")] = v.text or ""
        elif t == "b":
            out[c.get("r")] = v.text == "1"
        elif v.text:
            out[c.get("r")] = float(v.text)
    return out


# --- charts ------------------------------------------------------------------------------------


def _range_values(formula: str, values: Mapping[tuple[str, str], Any]) -> list[Any]:
    """The values of a chart reference such as 'Plan'!$O$7:$O$9, row by row (None where blank)."""
    sheet, _, rng = formula.rpartition("!")
    if sheet.startswith("'"):
        sheet = sheet[1:-1].replace("''", "'")
    lo_c, lo_r, hi_c, hi_r = range_boundaries(rng.replace("$", ""))
    return [values.get((sheet, f"{get_column_letter(c)}{r}"))
            for r in range(lo_r, hi_r + 1) for c in range(lo_c, hi_c + 1)]


def fill_chart_caches(root, values: Mapping[tuple[str, str], Any]) -> None:
    """Give every numRef/strRef of a parsed chart its cache; a reference to text becomes a strRef, except a series'
    values: they stay numbers, and a text among them (a bill's "does not fit") is a point left out (a gap)."""
    parent = {child: el for el in root.iter() for child in el}
    values_tags = {_chart(t) for t in ("val", "xVal", "yVal", "bubbleSize")}
    refs = [el for el in root.iter() if el.tag in (_chart("numRef"), _chart("strRef"))]
    for ref in refs:
        f = ref.find(_chart("f"))
        data = _range_values(f.text, values)
        for old in [x for x in ref if x.tag in (_chart("numCache"), _chart("strCache"))]:
            ref.remove(old)
        if ref.tag == _chart("numRef") and parent.get(ref) is not None and parent[ref].tag in values_tags:
            pass
        elif ref.tag == _chart("numRef") and any(isinstance(x, str) for x in data):
            ref.tag = _chart("strRef")
        text = ref.tag == _chart("strRef")
        cache = ET.Element(_chart("strCache" if text else "numCache"))
        if not text:
            ET.SubElement(cache, _chart("formatCode")).text = "General"
        ET.SubElement(cache, _chart("ptCount"), {"val": str(len(data))})
        for i, x in enumerate(data):
            if x is None or (not text and isinstance(x, (str, bool))):
                continue
            pt = ET.SubElement(cache, _chart("pt"), {"idx": str(i)})
            ET.SubElement(pt, _chart("v")).text = x if isinstance(x, str) else _number_text(x)
        ref.insert(list(ref).index(f) + 1, cache)


# --- the package ---------------------------------------------------------------------------------


def _sheet_parts(parts: Mapping[str, Any]) -> dict[str, str]:
    """Sheet title -> zip member of its XML part."""
    wb, rels = parts["xl/workbook.xml"].root, parts["xl/_rels/workbook.xml.rels"].root
    targets = {r.get("Id"): r.get("Target") for r in rels.iter(f"{{{_PKG_REL}}}Relationship")}
    out = {}
    for s in wb.iter(_sml("sheet")):
        target = targets[s.get(f"{{{_REL}}}id")].lstrip("/")
        out[s.get("name")] = target if target.startswith("xl/") else "xl/" + target
    return out


def _is_xml(name: str) -> bool:
    return name.endswith((".xml", ".rels"))


def streamed_cells(wb, ctx) -> dict[str, dict[str, str]]:
    """Sheet title -> row number -> the cells of its number blocks (:meth:`inference_ledger.workbook.context.Ctx.
    number_block`) in that row, as openpyxl writes a styled number (after ``wb.save``: the styles have their ids).
    A block's row must have no cell of its own at or right of the block's first column."""
    out: dict[str, dict[str, str]] = {}
    for title, blocks in ctx.blocks.items():
        ws, rows = wb[title], out.setdefault(title, {})
        for b in blocks:
            above = [ws.cell(b.first_row, b.first_col + j) for j in range(b.width)]
            if any(c.data_type != "n" for c in above):
                raise ValueError(f"{title}: the row above a number block must hold its first numbers")
            heads = [(get_column_letter(c.column), (f'" s="{c.style_id}"' if c.has_style else '"') + ' t="n"><v>')
                     for c in above]
            taken = sorted(r for (r, col), c in ws._cells.items()
                           if r in b.rows and col >= b.first_col and (c.value is not None or c.has_style))
            if taken:
                raise ValueError(f"{title}: row {taken[0]} has a cell of its own where its number block is")
            for r, values in b.rows.items():
                rows[str(r)] = rows.get(str(r), "") + "".join(
                    f'<c r="{L}{r}{head}{safe_string(v)}</v></c>' for (L, head), v in zip(heads, values))
    return out


def package(raw: bytes, cached: Mapping[tuple[str, str], Any], when: datetime, template: bool = False,
            streamed: Mapping[str, Mapping[str, str]] = {}) -> bytes:  # noqa: B006 (read only)
    """Rewrite an openpyxl package: cached values and chart caches in, fixed timestamps, optional template type;
    ``streamed`` (:func:`streamed_cells`): cells written straight into their sheets' rows."""
    with zipfile.ZipFile(io.BytesIO(raw)) as zin:
        names = zin.namelist()
        parts = {n: Part(zin.read(n)) if _is_xml(n) else zin.read(n) for n in names}
    strings = _shared_strings(parts)
    values: dict[tuple[str, str], Any] = {}
    for title, name in _sheet_parts(parts).items():
        fill_cached_values(parts[name].root, title, cached)
        values.update({(title, ref): v for ref, v in cell_values(parts[name].root, strings).items()})
    for name in names:
        if name.startswith("xl/charts/chart") and _is_xml(name):
            fill_chart_caches(parts[name].root, values)
    # openpyxl stamps "modified" with the clock at save time: pin it to the build date
    for el in parts["docProps/core.xml"].root.iter(f"{{{_DCTERMS}}}modified"):
        el.text = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    if template:
        for el in parts["[Content_Types].xml"].root.iter(f"{{{_CT}}}Override"):
            if el.get("ContentType") == _MAIN:
                el.set("ContentType", _TEMPLATE)
    rows_end = {_sheet_parts(parts)[title]: cells for title, cells in streamed.items() if cells}
    return zip_parts([(n, p.to_bytes(rows_end.get(n, {})) if isinstance(p, Part) else p) for n, p in parts.items()],
                     when)


def zip_parts(members: Iterable[tuple[str, bytes]], when: datetime) -> bytes:
    """Zip members in the given order, each stamped with ``when`` and read-write permissions."""
    stamp = (max(when.year, 1980), when.month, when.day, when.hour, when.minute, when.second)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zout:
        for n, data in members:
            zout.writestr(zip_info(n, stamp), data, compresslevel=9)
    return buf.getvalue()


def zip_info(name: str, stamp: tuple) -> zipfile.ZipInfo:
    """A zip entry with a fixed timestamp, deflated, rw-r--r-- (the same bytes on every machine)."""
    info = zipfile.ZipInfo(name, date_time=stamp)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    info.create_system = 3
    return info
