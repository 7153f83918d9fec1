"""Sweeps: every combination of models, GPUs, TP, formats, contexts and concurrencies, one row each.

A sweep is a :class:`Table`: label columns (model, GPU, formats), the plan inputs that
change from row to row as value columns, and every line of :mod:`udfs.plan` as a live
formula over the same row (inputs that are the same for every row are named cells on
the Inputs sheet, like the Plan sheet's).  Rows are produced and evaluated a block at a
time (``udfs.plan.evaluate`` over numpy arrays), so memory stays flat at any row count.

The .xlsx is written by a small streaming SpreadsheetML writer rather than openpyxl:

* each plan line's formula is rendered once per block and stored as an OOXML *shared
  formula* (ECMA-376 Part 1, 18.3.1.40: ``<f t="shared" ref=.. si=..>`` on the block's
  first cell, ``<f t="shared" si=../>`` below it), the way Excel itself saves a
  filled-down column; a 100,000-row sheet is then a few hundred MB of XML less to
  write, zip and parse;
* every formula cell carries its cached value (computed by the same plan), so mail
  previews and viewers that never recalculate show numbers;
* rows go straight into the zip stream (Zip64 when the sheet could pass 2 GiB) and the
  file appears atomically (temporary file in the same folder, then ``os.replace``);
* the same inputs give the same bytes: zip entries are stamped with the build date
  (``SOURCE_DATE_EPOCH`` when set, else the newest catalog date, as for the workbook),
  and the document properties (docProps/core.xml, app.xml) carry that date too.

Rules for combinations that cannot run (listed on the Notes sheet with the reason and
the number of rows they would have been, never dropped silently):

* TP > 8: tensor parallelism is kept inside one 8-GPU node (HGX/OAM baseboards); the
  plan has no inter-node term, and engines run TP within a node and pipeline across;
* TP must divide the attention heads (Megatron-LM, Shoeybi et al. 2019, splits heads
  evenly), and the KV heads must split evenly or be replicated evenly: K % TP == 0
  when TP <= K, TP % K == 0 when TP > K (vLLM's rule for GQA);
* the context must not exceed the model's ``max_position_embeddings``.
"""

from __future__ import annotations

import csv
import itertools
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Iterator, Mapping, Optional, Sequence
from xml.sax.saxutils import escape

import numpy as np

from udfs import __version__, catalog, engines, plan
from udfs.args import LedgerInputError
from udfs.expr import and_, eq, where
from udfs.units import CONSTANTS, GPUS_PER_NODE

from .package import MissingCachedValue, check_folder, zip_info
from .style import AMBER, GREEN, RED, number_format, shown_as

MAX_TP_ONE_NODE = int(GPUS_PER_NODE)
DEFAULT_MAX_ROWS = 100_000
XLSX_MAX_ROWS = 1_048_576 - 1          # one header row
BLOCK_ROWS = 2048                      # rows evaluated together and sharing one formula per column
SLICE_ROWS = 256                       # rows turned into XML at a time (bounds the text in memory)

MEETS, MISSES, NO_FIT = "meets targets", "misses targets", "does not fit"
VERDICT = plan.Line(
    "verdict", "Verdict", "", "fit",
    "Fits in memory and meets the TTFT and TPOT targets / fits but misses a target / does not fit.",
    lambda v: where(eq(v.fits, 1), where(and_(eq(v.ttft_ok, 1), eq(v.tpot_ok, 1)), MEETS, MISSES), NO_FIT))

# Plan inputs a sweep row always shows as values: the catalog facts and the swept settings.
_ROW_GROUPS = ("model", "precision", "gpu")
_SWEPT = ("tp", "input_tokens", "concurrency")
_ROW_ALWAYS = ("price_per_gpu_hour", *_SWEPT)


# ----------------------------------------------------------------------------------------
# tables: what the writers write
# ----------------------------------------------------------------------------------------

@dataclass
class Table:
    """Rows to write: labels, per-row plan inputs, and inputs shared by every row.

    ``blocks()`` yields ``(labels, inputs)``: label key -> list of text, and row input
    name -> numpy array, all of one block's length.
    """

    labels: tuple[tuple[str, str], ...]            # (key, header)
    row_inputs: tuple[str, ...]
    fixed: dict[str, float]
    n_rows: int
    blocks: Callable[[], Iterator[tuple[dict[str, list], dict[str, np.ndarray]]]]
    skipped: list[tuple[str, str, str, int]] = field(default_factory=list)  # (model, setting, reason, rows)
    sheet: str = "Sweep"


def evaluate_block(table: Table, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every plan line and the verdict for one block (broadcast to the block's length)."""
    n = len(next(iter(inputs.values())))
    vals = plan.evaluate({**table.fixed, **inputs}, validate=False)
    vals["verdict"] = VERDICT.fn(SimpleNamespace(**vals))
    return {k: np.broadcast_to(np.asarray(v), (n,)) for k, v in vals.items()}


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    unit: str
    kind: str        # label | input | line
    doc: str


def columns(table: Table) -> list[Column]:
    """Labels, the verdict, the row inputs (the swept settings first), then every plan line in plan order."""
    out = [Column(k, h, "", "label", "") for k, h in table.labels]
    out.append(Column("verdict", VERDICT.label, "", "line", VERDICT.doc))
    swept = [n for n in _SWEPT if n in table.row_inputs]
    for name in swept + [n for n in table.row_inputs if n not in swept]:
        i = plan.INPUT_BY_NAME[name]
        out.append(Column(name, i.label, i.unit, "input", i.doc))
    out += [Column(l.name, l.label, l.unit, "line", l.doc) for l in plan.LINES]
    return out


# ----------------------------------------------------------------------------------------
# the sweep: lists of settings -> a Table
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SweepSpec:
    """Lists of settings; every combination is one row (options named as on the command line)."""

    model: Sequence[str]
    gpu: Sequence[str]
    tp: Sequence[int] = (1, 2, 4, 8)
    weight_dtype: Sequence[str] = ("native",)
    kv_dtype: Sequence[str] = ("bf16",)
    context: Sequence[int] = (4096,)
    concurrency: Sequence[int] = (1, 16, 64)
    engine: str = engines.DEFAULT_ENGINE                        # whose memory rule and batching defaults apply
    fixed: Mapping[str, float] = field(default_factory=dict)   # any other plan input, for every row


def tp_skip_reason(model: catalog.Model, tp: int) -> Optional[str]:
    """Why a model cannot run at this TP degree (None when it can)."""
    if tp > MAX_TP_ONE_NODE:
        return f"TP {tp} spans more than one {MAX_TP_ONE_NODE}-GPU node (cross-node TP is not modelled)"
    return catalog.tp_problem(model, tp)


def context_skip_reason(model: catalog.Model, context: int) -> Optional[str]:
    if context > model.max_position_embeddings:
        return f"context {context:,} exceeds the model's {model.max_position_embeddings:,}-token maximum (max_position_embeddings)"
    return None


def _nonempty(option: str, values: Sequence) -> list:
    values = [v for v in values]
    if not values:
        raise LedgerInputError(f"--{option}: empty list")
    return values


def _dedupe(items):
    return list(dict.fromkeys(items))


def build_sweep(spec: SweepSpec, max_rows: int = DEFAULT_MAX_ROWS) -> Table:
    """Resolve ids, validate every setting, count rows and list the combinations that cannot run.

    Each row's inputs are what `plan` would use: the catalog's facts, the engine's defaults
    for that GPU and TP (``udfs.engines.with_engine``), then the options given for every row.
    """
    models = _dedupe(catalog.get_model(m) for m in _nonempty("model", spec.model))
    gpus = _dedupe(catalog.get_gpu(g) for g in _nonempty("gpu", spec.gpu))
    wds = _dedupe(None if str(w).lower() == "native" else catalog.get_dtype(w).id
                  for w in _nonempty("weight-dtype", spec.weight_dtype))
    kds = _dedupe(catalog.get_dtype(k).id for k in _nonempty("kv-dtype", spec.kv_dtype))
    tps = _dedupe(int(plan.INPUT_BY_NAME["tp"].arg.check(t)) for t in _nonempty("tp", spec.tp))
    concs = _dedupe(int(plan.INPUT_BY_NAME["concurrency"].arg.check(c)) for c in _nonempty("concurrency", spec.concurrency))
    engine = engines.get_engine(spec.engine)
    unknown = sorted(set(spec.fixed) - set(plan.INPUT_BY_NAME))
    if unknown:
        raise LedgerInputError(f"not a plan input: {', '.join(unknown)}")
    fixed = {k: plan.INPUT_BY_NAME[k].arg.check(v) for k, v in spec.fixed.items()}
    out_tokens = fixed.get("output_tokens", plan.INPUT_BY_NAME["output_tokens"].default)
    ctxs = []
    for c in _nonempty("context", spec.context):
        c = int(plan.INPUT_BY_NAME["input_tokens"].arg.check(c))
        if c <= out_tokens:
            raise LedgerInputError(f"--context {c} must exceed the output tokens per request ({out_tokens:g}): "
                                   "context = input + output tokens")
        ctxs.append(c)
    ctxs = _dedupe(ctxs)

    # which TP degrees and contexts each model can run; the rest go to the notes
    per_tp_ctx = len(gpus) * len(wds) * len(kds) * len(concs)
    ok_tp, ok_ctx, skipped = {}, {}, []
    for m in models:
        ok_tp[m.id], ok_ctx[m.id] = [], []
        for t in tps:
            reason = tp_skip_reason(m, t)
            if reason:
                skipped.append((m.id, f"TP {t}", reason, per_tp_ctx * len(ctxs)))
            else:
                ok_tp[m.id].append(t)
        for c in ctxs:
            reason = context_skip_reason(m, c)
            if reason:
                skipped.append((m.id, f"context {c}", reason, per_tp_ctx * len(ok_tp[m.id])))
            else:
                ok_ctx[m.id].append(c)

    # base rows: plan inputs for (model, gpu, weight dtype, kv dtype, TP); contexts x concurrencies vary within
    base = [(m, g, wd, kd, t) for m in models for g in gpus for wd in wds for kd in kds for t in ok_tp[m.id]]
    sub = {m.id: len(ok_ctx[m.id]) * len(concs) for m in models}
    n_rows = sum(sub[m.id] for m, *_ in base)
    total = len(models) * len(gpus) * len(wds) * len(kds) * len(tps) * len(ctxs) * len(concs)
    if n_rows == 0:
        raise LedgerInputError(f"none of the {total:,} combinations can run: {skipped[0][0]}: {skipped[0][2]}")
    if n_rows > max_rows:
        raise LedgerInputError(
            f"the sweep has {n_rows:,} rows ({total:,} combinations, {total - n_rows:,} cannot run), over the limit "
            f"of {max_rows:,} rows: shorten a list or raise --max-rows")
    base_inputs = []
    for m, g, wd, kd, t in base:
        v = catalog.plan_inputs(m, g, weight_dtype=wd, kv_dtype=kd, tp=t, **fixed)
        v = engines.with_engine(v, engine, gpu_id=g.id) | fixed
        plan.validate_inputs(v | {"input_tokens": ok_ctx[m.id][0] - out_tokens, "concurrency": concs[0]})
        base_inputs.append(v)
    varying = {k for k in base_inputs[0] if any(b[k] != base_inputs[0][k] for b in base_inputs)}
    row_inputs = tuple(i.name for i in plan.INPUTS
                       if i.group in _ROW_GROUPS or i.name in _ROW_ALWAYS or i.name in varying)
    shared = {k: v for k, v in base_inputs[0].items() if k not in row_inputs}
    base_cols = [n for n in row_inputs if n not in ("input_tokens", "concurrency")]
    matrix = np.array([[b[n] for n in base_cols] for b in base_inputs], dtype=float)
    grids = {m.id: (np.array(ok_ctx[m.id], float), np.array(concs, float)) for m in models}

    labels = (("model", "Model"), ("gpu", "GPU"), ("weight_dtype", "Weight dtype"), ("kv_dtype", "KV dtype"))
    base_labels = {
        "model": np.array([m.id for m, *_ in base], dtype=object),
        "gpu": np.array([g.id for _, g, *_ in base], dtype=object),
        "weight_dtype": np.array([wd or m.weight_dtype for m, _, wd, *_ in base], dtype=object),
        "kv_dtype": np.array([kd for *_, kd, _ in base], dtype=object),
    }

    def pieces() -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(base index, context, concurrency) arrays, a base row at a time, split to blocks."""
        for b, (m, *_rest) in enumerate(base):
            c, k = grids[m.id]
            size = sub[m.id]
            for start in range(0, size, BLOCK_ROWS):
                ci, ki = np.unravel_index(np.arange(start, min(start + BLOCK_ROWS, size)), (len(c), len(k)))
                yield b, c[ci], k[ki]

    def blocks():
        buf, count = [], 0
        for p in itertools.chain(pieces(), [None]):
            if p is not None:
                buf.append(p)
                count += len(p[1])
            if buf and (count >= BLOCK_ROWS or p is None):
                yield _assemble(buf)
                buf, count = [], 0

    def _assemble(buf):
        bidx = np.concatenate([np.full(len(p[1]), p[0]) for p in buf])
        ctx = np.concatenate([p[1] for p in buf])
        conc = np.concatenate([p[2] for p in buf])
        facts = matrix[bidx]
        inputs = {n: facts[:, j] for j, n in enumerate(base_cols)}
        inputs.update(input_tokens=ctx - out_tokens, concurrency=conc)
        labels_ = {k: arr[bidx].tolist() for k, arr in base_labels.items()}
        return labels_, {n: inputs[n] for n in row_inputs}

    return Table(labels, row_inputs, shared, n_rows, blocks, skipped)


# ----------------------------------------------------------------------------------------
# writers
# ----------------------------------------------------------------------------------------

def write(table: Table, path: str | os.PathLike, *, cached: bool = True,
          progress: Optional[Callable[[int], None]] = None) -> Path:
    """Write a .xlsx (live formulas) or .csv (values) atomically; returns the path."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in (".xlsx", ".csv"):
        raise LedgerInputError(f"-o {path.name}: write a .xlsx or a .csv")
    if suffix == ".xlsx" and table.n_rows > XLSX_MAX_ROWS:
        raise LedgerInputError(f"{table.n_rows:,} rows do not fit one .xlsx sheet (at most {XLSX_MAX_ROWS:,}): write a .csv")
    check_folder(path)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        if suffix == ".csv":
            _write_csv(table, tmp, progress)
        else:
            _write_xlsx(table, tmp, cached, progress)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)          # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def _write_csv(table: Table, tmp: str, progress) -> None:
    cols = columns(table)
    with open(tmp, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([c.key for c in cols])
        for labels, inputs in table.blocks():
            vals = evaluate_block(table, inputs)
            data = [labels[c.key] if c.kind == "label" else vals[c.key].tolist() for c in cols]
            w.writerows(zip(*data))
            if progress:
                progress(len(data[0]))


def col_letter(i: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA."""
    s = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        s = chr(65 + r) + s
    return s


# styles.xml: cellXfs 0 = General, 1 = header, 2.. = one per number format used
#: ECMA-376 Part 1, 18.8.30: formats every spreadsheet application knows by id (never declared again)
BUILTIN_FORMATS = {"General": 0, "0": 1, "0.00": 2, "#,##0": 3, "#,##0.00": 4, "0%": 9, "0.00%": 10,
                   "0.00E+00": 11, "@": 49}
_NS = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_NS_R = 'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
_XML = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
_ROW_MARK = "\x00"   # stands for the row number inside a rendered formula


def format_ids(formats: list[str]) -> list[int]:
    """numFmtId of each format: the built-in id where there is one, else 164, 165, ... in order."""
    custom = [f for f in formats if f not in BUILTIN_FORMATS]
    return [BUILTIN_FORMATS[f] if f in BUILTIN_FORMATS else 164 + custom.index(f) for f in formats]


def _styles_xml(formats: list[str]) -> str:
    ids = format_ids(formats)
    custom = [(i, f) for i, f in zip(ids, formats) if i >= 164]
    numfmts = "".join(f'<numFmt numFmtId="{i}" formatCode="{escape(f, {chr(34): "&quot;"})}"/>' for i, f in custom)
    xfs = ('<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
           '<xf numFmtId="0" fontId="1" fillId="2" borderId="0" xfId="0" applyFont="1" applyFill="1" applyAlignment="1">'
           '<alignment wrapText="1" vertical="top"/></xf>'
           + "".join(f'<xf numFmtId="{i}" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/>'
                     for i in ids))
    dxf = "".join(f'<dxf><font><color rgb="FF{fg}"/></font><fill><patternFill><bgColor rgb="FF{bg}"/></patternFill></fill></dxf>'
                  for bg, fg in (GREEN, AMBER, RED))
    return (_XML + f'<styleSheet {_NS}>' + (f'<numFmts count="{len(custom)}">{numfmts}</numFmts>' if custom else "") +
            '<fonts count="2"><font><sz val="10"/><name val="Calibri"/></font>'
            '<font><b/><sz val="10"/><color rgb="FFFFFFFF"/><name val="Calibri"/></font></fonts>'
            '<fills count="3"><fill><patternFill patternType="none"/></fill><fill><patternFill patternType="gray125"/></fill>'
            '<fill><patternFill patternType="solid"><fgColor rgb="FF305496"/><bgColor indexed="64"/></patternFill></fill></fills>'
            '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
            '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
            f'<cellXfs count="{2 + len(formats)}">{xfs}</cellXfs>'
            '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
            f'<dxfs count="3">{dxf}</dxfs></styleSheet>')


def _text_cell(ref: str, text: str, style: int = 0) -> str:
    s = f' s="{style}"' if style else ""
    return f'<c r="{ref}"{s} t="inlineStr"><is><t>{escape(str(text))}</t></is></c>'


def _num_cell(ref: str, value: float, style: int = 0) -> str:
    s = f' s="{style}"' if style else ""
    return f'<c r="{ref}"{s}><v>{float(value)!r}</v></c>'


def _rows_xml(rows: list[list[str]]) -> str:
    return "".join(f'<row r="{r}">{"".join(cells)}</row>' for r, cells in enumerate(rows, start=1))


def _simple_sheet(rows: list[list[tuple]], widths: Sequence[float]) -> str:
    """A small sheet from rows of (kind, value[, style]) with kind 't' text or 'n' number."""
    out = []
    for r, row in enumerate(rows, start=1):
        cells = []
        for j, cell in enumerate(row):
            if cell is None:
                continue
            kind, value, *style = cell
            ref = f"{col_letter(j)}{r}"
            cells.append(_text_cell(ref, value, *style) if kind == "t" else _num_cell(ref, value, *style))
        out.append(cells)
    cols = "".join(f'<col min="{j + 1}" max="{j + 1}" width="{w}" customWidth="1"/>' for j, w in enumerate(widths))
    return _XML + f'<worksheet {_NS} {_NS_R}><cols>{cols}</cols><sheetData>{_rows_xml(out)}</sheetData></worksheet>'


def _cells(prefix: str, rows: list[str], mid: str, values: list, suffix: str) -> list[str]:
    """One column's cells of a block: prefix + row number + mid + value + suffix."""
    return [f"{prefix}{r}{mid}{v}{suffix}" for r, v in zip(rows, values)]


def _value_cells(prefix: str, rows: list[str], mid: str, arr: np.ndarray, formula: bool = False) -> list[str]:
    """Cells ending in a cached value <v>..</v> (left out where an input is not finite).

    A formula whose value is not finite has no cached value a viewer could show: that
    stops the write (:class:`MissingCachedValue`) rather than leave the cell blank.
    """
    if arr.dtype.kind in "USO":
        return _cells(prefix, rows, mid + "<v>", [escape(str(x)) for x in arr.tolist()], "</v></c>")
    a = arr.astype(float)
    bad = ~np.isfinite(a)
    if formula and bad.any():
        cell = prefix.split('"')[1] + rows[int(np.flatnonzero(bad)[0])]
        raise MissingCachedValue(f"{cell}: the formula's value is not a finite number (no cached value to write)")
    whole = not bad.any() and bool(np.all((a == np.round(a)) & (np.abs(a) < 2.0**53)))
    text = a.astype(np.int64).tolist() if whole else [repr(x) for x in a.tolist()]   # ints print 4x faster
    out = _cells(prefix, rows, mid + "<v>", text, "</v></c>")
    if bad.any():
        for i in np.flatnonzero(bad):
            out[i] = f"{prefix}{rows[i]}{mid}</c>"
    return out


def file_date() -> datetime:
    """The date a file carries: SOURCE_DATE_EPOCH when set, else the newest catalog date (as the workbook)."""
    from .build import build_date
    from .tables import load_tables
    return build_date(load_tables())


def _doc_props(table: Table, when: datetime) -> tuple[str, str]:
    """docProps/core.xml and app.xml: title, subject, author and the file's date."""
    at = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    core = (_XML + '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties"'
            ' xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/"'
            ' xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">'
            f'<dc:title>inference-ledger {escape(table.sheet.lower())}: {table.n_rows:,} plans</dc:title>'
            '<dc:subject>LLM inference capacity plans: GPUs, latency, throughput and cost</dc:subject>'
            '<dc:creator>inference-ledger</dc:creator><cp:lastModifiedBy>inference-ledger</cp:lastModifiedBy>'
            f'<dcterms:created xsi:type="dcterms:W3CDTF">{at}</dcterms:created>'
            f'<dcterms:modified xsi:type="dcterms:W3CDTF">{at}</dcterms:modified></cp:coreProperties>')
    app = (_XML + '<Properties xmlns="http://schemas.openxmlformats.org/officeDocument/2006/extended-properties">'
           f'<Application>inference-ledger {escape(__version__)}</Application><DocSecurity>0</DocSecurity></Properties>')
    return core, app


def _write_xlsx(table: Table, tmp: str, cached: bool, progress) -> None:
    cols = columns(table)
    letters = [col_letter(j) for j in range(len(cols))]
    col_of = {c.key: letters[j] for j, c in enumerate(cols)}
    fixed = set(table.fixed)

    def ref(name: str) -> str:
        return name if name in fixed else f"${col_of[name]}{_ROW_MARK}"

    formulas = {c.key: plan.render(VERDICT if c.key == "verdict" else c.key, ref)[0][1:]
                for c in cols if c.kind == "line"}
    formats = list(dict.fromkeys(number_format(c.unit) for c in cols))
    style = {c.key: (2 + formats.index(number_format(c.unit))) if c.kind != "label" else 0 for c in cols}

    def attrs(c: Column) -> str:
        """What follows the cell reference: the closing quote, the style, and t="str" for text results."""
        return '"' + (f' s="{style[c.key]}"' if style[c.key] else "") + (' t="str"' if c.key == "verdict" else "")

    spans = {c.key: (f'<c r="{letters[j]}', attrs(c)) for j, c in enumerate(cols)}
    formula_keys = [c.key for c in cols if c.kind == "line"]

    header = "".join(_text_cell(f"{letters[j]}1", c.header + (f" ({shown_as(c.unit)})" if c.unit else ""), 1)
                     for j, c in enumerate(cols))
    last_row = table.n_rows + 1
    widths = "".join(f'<col min="{j + 1}" max="{j + 1}" width="{16 if c.kind == "label" else 14}" customWidth="1"/>'
                     for j, c in enumerate(cols))
    n_labels = len(table.labels)
    head = (_XML + f'<worksheet {_NS} {_NS_R}><sheetViews><sheetView workbookViewId="0" tabSelected="1">'
            f'<pane xSplit="{n_labels + 1}" ySplit="1" topLeftCell="{letters[n_labels + 1]}2" activePane="bottomRight" state="frozen"/>'
            f'</sheetView></sheetViews><sheetFormatPr defaultRowHeight="13"/><cols>{widths}</cols>'
            f'<sheetData><row r="1" ht="54" customHeight="1">{header}</row>')
    vcol = col_of["verdict"]
    cf = "".join(
        f'<cfRule type="cellIs" dxfId="{k}" priority="{k + 1}" operator="equal"><formula>"{escape(text)}"</formula></cfRule>'
        for k, text in enumerate((MEETS, MISSES, NO_FIT)))
    fits_col = col_of["fits"]
    tail = (f'</sheetData><autoFilter ref="A1:{letters[-1]}{last_row}"/>'
            f'<conditionalFormatting sqref="{vcol}2:{vcol}{last_row}">{cf}</conditionalFormatting>'
            f'<conditionalFormatting sqref="{fits_col}2:{fits_col}{last_row}">'
            f'<cfRule type="cellIs" dxfId="2" priority="4" operator="equal"><formula>0</formula></cfRule>'
            f'</conditionalFormatting></worksheet>')

    def block_xml(r0: int, labels, inputs, si0: int) -> Iterator[str]:
        """A block's rows as XML, a slice at a time; its first row holds each column's shared formula."""
        n = len(next(iter(inputs.values())))
        vals = evaluate_block(table, inputs) if cached else None
        for s in range(0, n, SLICE_ROWS):
            e = min(s + SLICE_ROWS, n)
            rows = [str(r) for r in range(r0 + s, r0 + e)]
            data = []
            for c in cols:
                pre, attrs = spans[c.key]
                if c.kind == "label":
                    data.append(_cells(pre, rows, attrs + ' t="inlineStr"><is><t>',
                                       [escape(str(x)) for x in labels[c.key][s:e]], "</t></is></c>"))
                elif c.kind == "input":
                    data.append(_value_cells(pre, rows, attrs + ">", np.asarray(inputs[c.key][s:e], float)))
                else:
                    si = si0 + formula_keys.index(c.key)
                    follow = f'><f t="shared" si="{si}"/>'
                    col = (_value_cells(pre, rows, attrs + follow, vals[c.key][s:e], formula=True) if cached
                           else _cells(pre, rows, attrs + follow, [""] * (e - s), "</c>"))
                    if s == 0:
                        L = pre[len('<c r="'):]
                        text = escape(formulas[c.key].replace(_ROW_MARK, rows[0]))
                        col[0] = col[0].replace(follow, f'><f t="shared" ref="{L}{r0}:{L}{r0 + n - 1}" si="{si}">'
                                                f"{text}</f>", 1)
                    data.append(col)
            yield "".join([f'<row r="{r}">{"".join(cells)}</row>' for r, cells in zip(rows, zip(*data))])

    sheets = [table.sheet, "Inputs", "Notes"]
    defined = []
    inputs_rows = [[("t", "Inputs shared by every row (change one and every row follows)", 1), ("t", "Value", 1),
                    ("t", "Unit", 1), ("t", "Name", 1)]]
    for name, value in table.fixed.items():
        i = plan.INPUT_BY_NAME[name]
        inputs_rows.append([("t", i.label), ("n", value), ("t", i.unit), ("t", name)])
        defined.append((name, f"Inputs!$B${len(inputs_rows)}"))
    inputs_rows.append([])
    inputs_rows.append([("t", "Named constants", 1), ("t", "Value", 1), ("t", "Unit", 1), ("t", "Name", 1)])
    for k in CONSTANTS:
        inputs_rows.append([("t", k.doc), ("n", float(k)), ("t", k.unit), ("t", k.name)])
        defined.append((k.name, f"Inputs!$B${len(inputs_rows)}"))

    notes = [[("t", "Combinations that cannot run (not in the sheet)", 1), ("t", "Setting", 1), ("t", "Reason", 1),
              ("t", "Rows skipped", 1)]]
    notes += [[("t", m), ("t", s), ("t", why), ("n", rows)] for m, s, why, rows in table.skipped] or [[("t", "none")]]
    notes += [[], [("t", "Rules", 1)],
              [("t", f"TP <= {MAX_TP_ONE_NODE}: tensor parallelism stays within one {MAX_TP_ONE_NODE}-GPU node.")],
              [("t", "TP divides the attention heads; KV heads split evenly (K % TP = 0) or replicate evenly (TP % K = 0).")],
              [("t", "Context <= the model's max_position_embeddings.")],
              [], [("t", "Column", 1), ("t", "Name", 1), ("t", "Unit", 1), ("t", "Meaning", 1)]]
    notes += [[("t", c.header), ("t", c.key), ("t", c.unit), ("t", c.doc)] for c in cols if c.kind != "label"]

    sheet_name = escape(sheets[0], {'"': "&quot;"})
    workbook_xml = (_XML + f'<workbook {_NS} {_NS_R}><bookViews><workbookView activeTab="0"/></bookViews><sheets>'
                    + "".join(f'<sheet name="{escape(s)}" sheetId="{k + 1}" r:id="rId{k + 1}"/>' for k, s in enumerate(sheets))
                    + '</sheets><definedNames>'
                    + f'<definedName name="_xlnm._FilterDatabase" localSheetId="0" hidden="1">'
                      f"'{sheet_name}'!$A$1:${letters[-1]}${last_row}</definedName>"
                    + "".join(f'<definedName name="{n}">{t}</definedName>' for n, t in sorted(defined))
                    + "</definedNames>"
                    + ('<calcPr calcId="191029"/>' if cached else '<calcPr calcId="191029" fullCalcOnLoad="1"/>')
                    + "</workbook>")
    rels = (_XML + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            + "".join(f'<Relationship Id="rId{k + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
                      f'relationships/worksheet" Target="worksheets/sheet{k + 1}.xml"/>' for k in range(len(sheets)))
            + f'<Relationship Id="rId{len(sheets) + 1}" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
              'relationships/styles" Target="styles.xml"/></Relationships>')
    content_types = (_XML + '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                     '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
                     '<Default Extension="xml" ContentType="application/xml"/>'
                     '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.'
                     'spreadsheetml.sheet.main+xml"/>'
                     + "".join(f'<Override PartName="/xl/worksheets/sheet{k + 1}.xml" ContentType="application/'
                               'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>' for k in range(len(sheets)))
                     + '<Override PartName="/xl/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.'
                       'spreadsheetml.styles+xml"/>'
                       '<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.'
                       'core-properties+xml"/>'
                       '<Override PartName="/docProps/app.xml" ContentType="application/vnd.openxmlformats-officedocument.'
                       'extended-properties+xml"/></Types>')
    root_rels = (_XML + '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
                 '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
                 'officeDocument" Target="xl/workbook.xml"/>'
                 '<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/package/2006/relationships/metadata/'
                 'core-properties" Target="docProps/core.xml"/>'
                 '<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
                 'extended-properties" Target="docProps/app.xml"/></Relationships>')
    when = file_date()
    stamp = (max(when.year, 1980), when.month, when.day, when.hour, when.minute, when.second)
    core, app = _doc_props(table, when)

    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, text in (("[Content_Types].xml", content_types), ("_rels/.rels", root_rels),
                           ("docProps/core.xml", core), ("docProps/app.xml", app), ("xl/workbook.xml", workbook_xml),
                           ("xl/_rels/workbook.xml.rels", rels), ("xl/styles.xml", _styles_xml(formats))):
            zf.writestr(zip_info(name, stamp), text)
        r, si0, written = 2, 0, 0
        blocks = table.blocks()
        labels, inputs = next(blocks)
        pieces = block_xml(r, labels, inputs, si0)
        piece = next(pieces)
        # Zip64 only when the sheet could pass 2 GiB (estimated from the first slice, masters included)
        big = len(piece) / min(SLICE_ROWS, table.n_rows) * table.n_rows * 1.5 > zipfile.ZIP64_LIMIT
        sheet = zip_info("xl/worksheets/sheet1.xml", stamp)
        sheet._compresslevel = 1               # fast: a 100,000-row sheet is hundreds of MB of XML
        with zf.open(sheet, "w", force_zip64=big) as f:
            f.write(head.encode())
            f.write(piece.encode())
            while True:
                for piece in pieces:
                    f.write(piece.encode())
                n = len(next(iter(inputs.values())))
                written += n
                r += n
                si0 += len(formula_keys)
                if progress:
                    progress(n)
                nxt = next(blocks, None)
                if nxt is None:
                    break
                labels, inputs = nxt
                pieces = block_xml(r, labels, inputs, si0)
            f.write(tail.encode())
        if written != table.n_rows:
            raise RuntimeError(f"sweep wrote {written} rows, expected {table.n_rows}")
        zf.writestr(zip_info("xl/worksheets/sheet2.xml", stamp), _simple_sheet(inputs_rows, (60, 16, 12, 28)))
        zf.writestr(zip_info("xl/worksheets/sheet3.xml", stamp), _simple_sheet(notes, (40, 28, 90, 14)))
