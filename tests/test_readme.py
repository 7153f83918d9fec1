"""The examples of the README and of the pages in docs/ run and print what the pages say, so they cannot go stale.

* Python examples: doctest.
* A ```bash block holding one ``inference-ledger`` command (optionally piped to ``head -n N``) followed by a
  ```text block: the command's output is that block, exactly (its first N lines with ``head``).
* A ```bash block whose command is followed by ``# inference-ledger: error: ...``: that is its error line.
* The sheet table of docs/workbook.md names every sheet of the workbook.

After an intended change, ``python tests/test_readme.py`` rewrites the output blocks from the commands.
"""

from __future__ import annotations

import doctest
import re
import shlex
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
#: the README and the hand-written pages of docs/ (docs/notes/ are design notes without examples)
PAGES = (README, *sorted((ROOT / "docs").glob("*.md")))
OUTPUT_BLOCK = re.compile(r"```bash\n(inference-ledger (?:[^`\n]|\\\n)*?)\n```\n```text\n(.*?)\n```", re.S)
ERROR_LINE = re.compile(r"^(inference-ledger [^\n#]*?)\s*\n# (inference-ledger: error: .*)$", re.M)
HEAD = re.compile(r"\s*\|\s*head -n (\d+)$")


def _ids(pages):
    return [str(p.relative_to(ROOT)) for p in pages]


def _cli(command: str) -> tuple[int, str, str]:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from test_cli_rules import cli

    head = HEAD.search(command)
    command = command[:head.start()] if head else command
    argv = shlex.split(command.replace("\\\n", " "))
    assert argv[0] == "inference-ledger"
    code, out, err = cli(*argv[1:])
    if head:
        out = "".join(out.splitlines(keepends=True)[:int(head.group(1))])
    return code, out, err


#: the workbook docs/workbook.md's example builds, rendered on the other core ahead of its test (conftest.py)
RENDERS_AHEAD = [({"model": "llama-3.1-70b", "gpu": "h200", "tp": 2, "weight_dtype": "fp8"}, False)]


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_python_examples(page, cached_renders):
    """Each page's doctest; a build in an example shares the session's render of its options (tests/renders.py)."""
    result = doctest.testfile(str(page), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_pages_hold_examples():
    """Moving a page's examples elsewhere must not drop them: the README keeps the seed's four, the pages the rest."""
    text = {p.name: p.read_text() for p in PAGES}
    assert text["README.md"].count(">>> ") >= 4
    assert sum(t.count(">>> ") for t in text.values()) >= 30
    assert sum(len(OUTPUT_BLOCK.findall(t)) for t in text.values()) >= 4
    assert any("inference-ledger recommend" in cmd for cmd, _ in OUTPUT_BLOCK.findall(text["README.md"]))


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_command_outputs_are_what_the_commands_print(page):
    for cmd, shown in OUTPUT_BLOCK.findall(page.read_text()):
        code, out, err = _cli(cmd)
        assert code == 0, err
        assert out.rstrip("\n") == shown, \
            f"{page.name}: the output of `{cmd}` is stale: run python tests/test_readme.py"


def test_error_examples_are_the_errors_printed():
    examples = [e for p in PAGES for e in ERROR_LINE.findall(p.read_text())]
    assert examples
    for cmd, line in examples:
        code, _, err = _cli(cmd)
        assert code != 0 and err.strip() == line, (cmd, err)


def test_sheet_table_lists_every_sheet():
    import openpyxl

    text = (ROOT / "docs" / "workbook.md").read_text()
    table = text[text.index("| sheet | what it holds |"):]
    table = table[:table.index("\n\n")]
    named = {n.strip() for row in table.splitlines()[2:] for n in row.split("|")[1].split(",")}
    shipped = openpyxl.load_workbook(ROOT / "templates" / "inference-ledger.xlsx", read_only=True).sheetnames
    assert named == set(shipped)


CALIBRATE_PAGE = ROOT / "docs" / "cli.md"
CALIBRATE_FLOW = re.compile(r"## Calibrate on your own measurements.*?```bash\n(.*?)\n```\n```text\n(.*?)\n```", re.S)


def test_calibration_flow_runs_and_prints_what_the_readme_shows(tmp_path, monkeypatch):
    """The three-command flow: files in, `calibrate`, a calibrated `build` (run where the README's paths hold)."""
    import glob

    block, shown = CALIBRATE_FLOW.search(CALIBRATE_PAGE.read_text()).groups()
    commands = [c for c in block.replace("\\\n", " ").splitlines() if c.startswith("inference-ledger ")]
    assert [shlex.split(c)[1] for c in commands] == ["calibrate", "build"]
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    outputs = []
    for c in commands:
        argv = [m for a in shlex.split(c) for m in (sorted(glob.glob(a)) if "*" in a else [a])]
        outputs.append(_cli(shlex.join(argv)))
    (code1, out1, err1), (code2, out2, err2) = outputs
    assert code1 == 0 and code2 == 0, (err1, err2)
    assert out1.rstrip("\n") == shown, "docs/cli.md: the calibrate example's output is stale: run python tests/test_readme.py"
    assert "calibrated from your measurements: profile.csv" in out2
    assert (tmp_path / "profile.csv").exists() and (tmp_path / "plan.xlsx").exists()


README_FLOW = re.compile(r"## Your benchmark in, a calibrated plan out.*?```bash\n(.*?)\n```", re.S)


def test_the_readme_shows_the_calibration_flow_that_runs():
    """The README's benchmark-in flow is the two commands of docs/cli.md's flow, which the test above runs."""
    def commands(block):
        return [c.split() for c in block.replace("\\\n", " ").splitlines() if c.startswith("inference-ledger ")]

    readme = commands(README_FLOW.search((ROOT / "README.md").read_text()).group(1))
    page = commands(CALIBRATE_FLOW.search(CALIBRATE_PAGE.read_text()).group(1))
    assert [c[1] for c in readme] == ["calibrate", "build"] and readme == page


def _update_page(page: Path) -> None:
    """Rewrite every output block of one page from its command."""
    text = page.read_text()

    def fresh(m: re.Match) -> str:
        code, out, err = _cli(m.group(1))
        if code:
            raise SystemExit(f"`{m.group(1)}` failed: {err}")
        return f"```bash\n{m.group(1)}\n```\n```text\n{out.rstrip(chr(10))}\n```"

    text = OUTPUT_BLOCK.sub(fresh, text)
    m = CALIBRATE_FLOW.search(text)            # the calibration flow's output, run where its paths hold
    if m:
        import glob
        import os
        import tempfile

        cmd = next(c for c in m.group(1).replace("\\\n", " ").splitlines() if c.startswith("inference-ledger calibrate"))
        with tempfile.TemporaryDirectory() as tmp:
            os.symlink(ROOT / "tests", Path(tmp) / "tests")
            here = os.getcwd()
            os.chdir(tmp)
            try:
                code, out, err = _cli(shlex.join([g for a in shlex.split(cmd)
                                                  for g in (sorted(glob.glob(a)) if "*" in a else [a])]))
            finally:
                os.chdir(here)
        if code:
            raise SystemExit(f"`{cmd}` failed: {err}")
        text = text[:m.start(2)] + out.rstrip("\n") + text[m.end(2):]
    if text != page.read_text():
        page.write_text(text)
        print(f"wrote {page.relative_to(ROOT)}")


def update() -> None:
    """Rewrite every output block of the README and the docs pages from its command."""
    for page in PAGES:
        _update_page(page)


if __name__ == "__main__":
    update()
