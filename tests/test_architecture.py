"""The library reads bottom-up: every module sits in exactly one layer of ``inference_ledger.LAYERS`` and imports only
from its own layer or the layers below it; the installed distribution has no top-level names but the library and
``udfs``."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import inference_ledger

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "inference_ledger"
#: where each sub-package's files live in the checkout (workbook/ is installed as inference_ledger.workbook)
FOLDERS = {"workbook": ROOT / "workbook"}


def _layer_of() -> dict[str, int]:
    """sub-package -> its layer's floor (1 = the ground)."""
    floor: dict[str, int] = {}
    for i, (_, packages) in enumerate(inference_ledger.LAYERS, 1):
        for name in packages:
            assert name not in floor, f"{name} is declared in two layers"
            floor[name] = i
    return floor


def _modules(floor: dict[str, int]) -> dict[str, tuple[Path, int]]:
    """Every module of the library -> (its file, its floor); a module outside every layer fails here."""
    out = {}
    files = [(p, ("inference_ledger",) + p.relative_to(LIBRARY).with_suffix("").parts) for p in LIBRARY.rglob("*.py")]
    files += [(p, ("inference_ledger", pkg) + p.relative_to(folder).with_suffix("").parts)
              for pkg, folder in FOLDERS.items() for p in folder.rglob("*.py")]
    for path, parts in files:
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if len(parts) == 1 or parts[1] == "__main__":
            continue   # the package's own __init__ (the layer table) and `python -m inference_ledger`
        assert parts[1] in floor, f"{path.relative_to(ROOT)} sits in no layer of inference_ledger.LAYERS"
        out[".".join(parts)] = (path, floor[parts[1]])
    return out


def _imported(path: Path, name: str) -> set[str]:
    """The library modules (or packages) a file imports, absolute."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([node.module] if node.module else []))
            out |= {base} | {f"{base}.{a.name}" for a in node.names}
    return {m for m in out if m.startswith("inference_ledger.")}


def upward_imports(modules: dict[str, tuple[Path, int]], floor: dict[str, int]) -> list[str]:
    bad = []
    for name, (path, own) in sorted(modules.items()):
        for target in sorted(_imported(path, name)):
            sub = target.split(".")[1]
            if sub in floor and floor[sub] > own:
                bad.append(f"{path.relative_to(ROOT)} (layer {own}) imports {target} (layer {floor[sub]})")
    return bad


def test_every_module_sits_in_one_layer_and_imports_only_downward():
    floor = _layer_of()
    modules = _modules(floor)
    assert len(modules) > 60, sorted(modules)          # the walk found the library, not an empty folder
    assert upward_imports(modules, floor) == []


def test_an_upward_import_is_caught(tmp_path, monkeypatch):
    """The check can fail: a formula module that imports the plan (layer 2 -> 4) is reported."""
    floor = _layer_of()
    planted = tmp_path / "serving.py"
    planted.write_text("from inference_ledger.graph import plan\nfrom inference_ledger.core import expr\n")
    modules = {"inference_ledger.formulas.serving": (planted, floor["formulas"])}
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert upward_imports(modules, floor) == ["serving.py (layer 2) imports inference_ledger.graph (layer 4)",
                                              "serving.py (layer 2) imports inference_ledger.graph.plan (layer 4)"]


def test_pyproject_installs_every_sub_package_and_two_top_level_names():
    """setuptools' package list is explicit (workbook/ needs package-dir): it must name every sub-package on disk,
    and nothing but the library and udfs at the top."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {"udfs"} | {".".join(("inference_ledger",) + p.parent.relative_to(LIBRARY).parts).rstrip(".")
                          for p in LIBRARY.rglob("__init__.py")} | {"inference_ledger.workbook"}
    assert set(config["packages"]) == on_disk
    assert {p.split(".")[0] for p in config["packages"]} == {"inference_ledger", "udfs"}
    assert config["package-dir"] == {"inference_ledger.workbook": "workbook"}
