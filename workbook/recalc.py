"""Recalculate a workbook with LibreOffice headless (the test suite's spreadsheet engine).

Each call uses its own throw-away LibreOffice profile, so parallel calls do not fight
over one profile lock, and that profile tells Calc to recalculate every formula on
load (OOXMLRecalcMode = 0, "always"); by default Calc trusts cached values in .xlsx.

It also turns off Calc's threaded calculation of formula groups
(``UseThreadedCalculationForFormulaGroups``): with it on, LibreOffice 7.4 reports a
circular reference (written to .xlsx as ``#VALUE!``) in the first cell of a long column of
shared formulas whose row has no cycle at all (the Sweep sheet's ``qps_per_replica`` on its
first row: the same formula typed into another cell of that row computes).  The single-threaded
interpreter evaluates the same formulas, so the test engine answers what Excel answers.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

_XCU = """<?xml version="1.0" encoding="UTF-8"?>
<oor:items xmlns:oor="http://openoffice.org/2001/registry" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="OOXMLRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Load"><prop oor:name="ODFRecalcMode" oor:op="fuse"><value>0</value></prop></item>
<item oor:path="/org.openoffice.Office.Calc/Formula/Calculation"><prop oor:name="UseThreadedCalculationForFormulaGroups" oor:op="fuse"><value>false</value></prop></item>
</oor:items>
"""


class LibreOfficeMissing(RuntimeError):
    pass


def soffice() -> str:
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    if not exe:
        raise LibreOfficeMissing(
            "LibreOffice (soffice) is not installed: apt-get install libreoffice-calc-nogui"
        )
    return exe


def convert(src: str | os.PathLike, out_dir: str | os.PathLike, fmt: str = "xlsx", timeout: float = 600) -> Path:
    """Open src in LibreOffice, recalculate everything, and save it as fmt in out_dir."""
    src = Path(src).resolve()
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    profile = Path(tempfile.mkdtemp(prefix="lo-profile-"))
    try:
        (profile / "user").mkdir(parents=True)
        (profile / "user" / "registrymodifications.xcu").write_text(_XCU)
        cmd = [
            soffice(),
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--norestore",
            "--nolockcheck",
            "--convert-to",
            fmt,
            "--outdir",
            str(out_dir),
            str(src),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        out = out_dir / (src.stem + "." + fmt.split(":")[0])
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(
                f"LibreOffice failed on {src.name} (exit {proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}"
            )
        return out
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def recalculate(src: str | os.PathLike, out_dir: str | os.PathLike | None = None, timeout: float = 600) -> Path:
    """Recalculated copy of an .xlsx (in out_dir, or a new temporary folder)."""
    if out_dir is None:
        out_dir = tempfile.mkdtemp(prefix="lo-recalc-")
    return convert(src, out_dir, "xlsx", timeout=timeout)
