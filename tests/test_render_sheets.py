"""The README's pictures of the workbook come from the documented script and are committed."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHEETS = ("summary", "start", "plan", "memory", "compute", "bandwidth", "scenarios", "checks", "forecast")
PNG = b"\x89PNG\r\n\x1a\n"


def test_render_script_writes_one_picture_per_main_sheet(soffice, tmp_path):
    out = subprocess.run(["bash", "scripts/render_sheets.sh", "templates/inference-ledger.xlsx", str(tmp_path)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    for sheet in SHEETS:
        data = (tmp_path / f"{sheet}.png").read_bytes()
        assert data.startswith(PNG) and len(data) > 10_000, sheet
        width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
        assert 600 < width < 2000 and 200 < height < 2000, (sheet, width, height)


def test_readme_shows_every_committed_picture():
    readme = (ROOT / "README.md").read_text()
    shown = set(re.findall(r"\]\((docs/img/[a-z]+\.png)\)", readme))
    assert shown == {f"docs/img/{s}.png" for s in SHEETS}
    assert "scripts/render_sheets.sh" in readme
    sizes = [(ROOT / p).stat().st_size for p in shown]
    assert all((ROOT / p).read_bytes().startswith(PNG) for p in shown)
    assert sum(sizes) < 700_000   # a few hundred KB for the README (nine pictures at 70 dpi)
