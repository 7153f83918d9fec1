"""The pictures of the workbook (docs/workbook.md, the README's Summary) come from the documented script and are
committed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHEETS = ("summary", "start", "plan", "memory", "compute", "bandwidth", "scenarios", "checks", "forecast")
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.mark.libreoffice
def test_render_script_writes_one_picture_per_main_sheet(soffice, tmp_path):
    out = subprocess.run(["bash", "scripts/render_sheets.sh", "templates/inference-ledger.xlsx", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for sheet in SHEETS:
        data = (tmp_path / f"{sheet}.png").read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, sheet
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert 600 < width < 2000 and 200 < height < 2000, (sheet, width, height)


def test_the_docs_show_every_committed_picture_and_the_readme_the_summary_first():
    page = (ROOT / "docs" / "workbook.md").read_text()
    shown = {f"docs/{p}" for p in re.findall(r"\]\((img/[a-z]+\.png)\)", page)}
    assert shown == {f"docs/img/{s}.png" for s in SHEETS}
    assert "scripts/render_sheets.sh" in page
    readme = re.findall(r"!\[[^]]*\]\((docs/img/[a-z]+\.png)\)", (ROOT / "README.md").read_text())
    assert readme[:1] == ["docs/img/summary.png"]
    sizes = [(ROOT / p).stat().st_size for p in shown]
    assert all((ROOT / p).read_bytes().startswith(PNG) for p in shown)
    assert sum(sizes) < 700_000   # a few hundred KB for the docs (nine pictures at 70 dpi)
