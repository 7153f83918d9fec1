"""Rewrite every generated file after a change to the model, the data or the CLI, in dependency order.

    python3 scripts/regenerate.py            # everything
    python3 scripts/regenerate.py accuracy   # only the named steps (accuracy, load-table, docs, readme, templates, xlwings)

Each step is the one its staleness test names; the tests fail until it is run, so nothing here is a second definition:
- accuracy: inference_ledger/data/error_bands.csv, fitted_parameters.csv, docs/accuracy.md, the README headline
  (tests/test_accuracy.py);
- load-table: the load-accuracy table of the README or the docs page that holds it (tests/test_validate.py);
- docs: the CLI, Excel-function and plan-line references in docs/ (scripts/gen_docs.py, tests/test_docs.py);
- readme: the command outputs of the README and the docs pages (tests/test_readme.py);
- templates: templates/inference-ledger.xlsx and .xltx (the default build);
- xlwings: tests/xlwings_meta_snapshot.json (the Excel functions' Office.js registration).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def accuracy() -> None:
    import test_accuracy
    test_accuracy.update()


def load_table() -> None:
    from inference_ledger.validation import load_fidelity
    from inference_ledger.cli.validate import _markdown, load_table as table
    body = _markdown(table(load_fidelity.summarize(load_fidelity.checks())))
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = page.read_text()
        if "<!-- load-accuracy -->" in text:
            page.write_text(re.sub(r"(<!-- load-accuracy -->\n).*?(\n<!-- /load-accuracy -->)",
                                   lambda m: m.group(1) + body + m.group(2), text, flags=re.S))
            print("wrote the load table of", page.relative_to(ROOT))


def docs() -> None:
    subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_docs.py")], check=True, cwd=ROOT)
    print("wrote the generated references in docs/")


def readme() -> None:
    import test_readme
    test_readme.update()
    print("wrote the README command outputs")


def templates() -> None:
    for suffix in ("xlsx", "xltx"):
        out = ROOT / "templates" / f"inference-ledger.{suffix}"
        subprocess.run([sys.executable, "-m", "inference_ledger", "build", "-o", str(out), "--force"], check=True,
                       cwd=ROOT)


def xlwings() -> None:
    import test_excel_officejs
    meta = test_excel_officejs.run_child([])["meta"]
    (ROOT / "tests" / "xlwings_meta_snapshot.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    print("wrote tests/xlwings_meta_snapshot.json")


STEPS = {"accuracy": accuracy, "load-table": load_table, "docs": docs, "readme": readme, "templates": templates,
         "xlwings": xlwings}

if __name__ == "__main__":
    names = sys.argv[1:] or list(STEPS)
    unknown = [n for n in names if n not in STEPS]
    if unknown:
        raise SystemExit(f"regenerate: unknown step {unknown[0]!r} (steps: {', '.join(STEPS)})")
    for n in names:
        STEPS[n]()
