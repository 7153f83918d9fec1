"""Turn openpyxl's output into a mail-ready, reproducible .xlsx.

openpyxl writes formula cells with an empty value (``<f>..</f><v/>``), so a mail
preview, Quick Look or a phone (which never recalculate) would show blanks.  This
module rewrites the package once:

* every formula cell gets its cached value (``<v>``), computed by the same Python
  formulas while the sheet was built; ``t="str"`` marks text, ``t="b"`` booleans.  A
  formula cell without a recorded value is a builder bug and stops the build;
* zip members keep openpyxl's order, with one fixed timestamp and fixed permissions,
  so the same inputs give the same bytes;
* ``as_template`` turns the package into an Excel template (.xltx) by changing the
  workbook part's content type (ECMA-376 Part 1, 12.3.23).
"""

from __future__ import annotations

import io
import math
import re
import zipfile
from datetime import datetime
from typing import Any, Mapping
from xml.sax.saxutils import escape

_MAIN = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"
_TEMPLATE = "application/vnd.openxmlformats-officedocument.spreadsheetml.template.main+xml"

# openpyxl writes <c r=".." [s=".."]><f>text</f><v /></c> for a formula cell (<v></v> when lxml is installed).
_FORMULA_CELL = re.compile(r'<c r="([A-Z]+[0-9]+)"((?: [a-z]+="[^"]*")*)><f>([^<]*)</f>(?:<v ?/>|<v></v>)</c>')


class MissingCachedValue(RuntimeError):
    """A formula cell was written without the value it computes."""


def _sheet_parts(files: Mapping[str, bytes]) -> dict[str, str]:
    """Sheet title -> zip member of its XML part."""
    wb = files["xl/workbook.xml"].decode()
    rels = files["xl/_rels/workbook.xml.rels"].decode()
    targets = dict(re.findall(r'<Relationship[^>]*?Id="([^"]+)"[^>]*?Target="([^"]+)"', rels))
    targets.update({k: v for v, k in re.findall(r'<Relationship[^>]*?Target="([^"]+)"[^>]*?Id="([^"]+)"', rels)})
    out = {}
    for attrs in re.findall(r"<sheet ([^>]*)/>", wb):
        name = re.search(r'name="([^"]*)"', attrs).group(1)
        rid = re.search(r'r:id="([^"]*)"|id="([^"]*)"', attrs)
        rid = rid.group(1) or rid.group(2)
        target = targets[rid].lstrip("/")
        out[_unescape(name)] = target if target.startswith("xl/") else "xl/" + target
    return out


def _unescape(s: str) -> str:
    return s.replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"').replace("&apos;", "'").replace("&amp;", "&")


def _value_xml(v: Any) -> tuple[str, str]:
    """(t attribute, <v> text) of a cached value."""
    if isinstance(v, bool):
        return ' t="b"', "1" if v else "0"
    if isinstance(v, str):
        return ' t="str"', escape(v)
    f = float(v)
    if not math.isfinite(f):
        raise ValueError(f"cached value {v!r} is not a finite number")
    return "", repr(int(f)) if f.is_integer() and abs(f) < 1e15 else repr(f)


def fill_cached_values(xml: str, sheet: str, cached: Mapping[tuple[str, str], Any]) -> str:
    def sub(m: re.Match) -> str:
        ref, attrs, formula = m.groups()
        if (sheet, ref) not in cached:
            raise MissingCachedValue(f"{sheet}!{ref} has a formula but no cached value: ={_unescape(formula)}")
        t, text = _value_xml(cached[(sheet, ref)])
        attrs = re.sub(r' t="[^"]*"', "", attrs)
        return f'<c r="{ref}"{attrs}{t}><f>{formula}</f><v>{text}</v></c>'

    out, n = _FORMULA_CELL.subn(sub, xml)
    if len(re.findall(r"</f>(?:<v ?/>|<v></v>)", xml)) != n:
        raise MissingCachedValue(f"{sheet}: a formula cell was written in a form this step does not know")
    return out


def package(raw: bytes, cached: Mapping[tuple[str, str], Any], when: datetime, template: bool = False) -> bytes:
    """Rewrite an openpyxl package: cached values in, fixed timestamps, optional template type."""
    with zipfile.ZipFile(io.BytesIO(raw)) as zin:
        names = zin.namelist()
        files = {n: zin.read(n) for n in names}
    for title, part in _sheet_parts(files).items():
        files[part] = fill_cached_values(files[part].decode("utf-8"), title, cached).encode("utf-8")
    # openpyxl stamps "modified" with the clock at save time: pin it to the build date
    core = files["docProps/core.xml"].decode()
    files["docProps/core.xml"] = re.sub(r"(<dcterms:modified[^>]*>)[^<]*(</dcterms:modified>)",
                                        r"\g<1>" + when.strftime("%Y-%m-%dT%H:%M:%SZ") + r"\g<2>", core).encode()
    if template:
        ct = files["[Content_Types].xml"].decode()
        files["[Content_Types].xml"] = ct.replace(_MAIN, _TEMPLATE).encode()
    stamp = (max(when.year, 1980), when.month, when.day, when.hour, when.minute, when.second)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zout:
        for n in names:
            info = zipfile.ZipInfo(n, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3
            zout.writestr(info, files[n], compresslevel=9)
    return buf.getvalue()
