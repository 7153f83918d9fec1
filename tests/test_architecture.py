"""The library reads bottom-up: every module sits in exactly one layer of ``inference_ledger.LAYERS`` and imports only
from its own layer or the layers below it; the installed distribution has no top-level names but the library and
``udfs``."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import inference_ledger

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_layout import _files, _imports, _module  # noqa: E402  (one reading of the import graph)

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "inference_ledger"


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
    for path in _files():
        parts = _module(path).split(".")
        if parts[0] != "inference_ledger" or len(parts) == 1 or parts[1] == "__main__":
            continue   # udfs/, the package's own __init__ (the layer table) and `python -m inference_ledger`
        assert parts[1] in floor, f"{path.relative_to(ROOT)} sits in no layer of inference_ledger.LAYERS"
        out[".".join(parts)] = (path, floor[parts[1]])
    return out


def _imported(path: Path, name: str) -> set[str]:
    """The library modules (or packages) a file imports, absolute."""
    return {m for m in _imports(path) if m.startswith("inference_ledger.")}


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
    import test_layout

    floor = _layer_of()
    planted = tmp_path / "inference_ledger" / "formulas" / "serving.py"
    planted.parent.mkdir(parents=True)
    planted.write_text("from inference_ledger.graph import plan\nfrom inference_ledger.core import expr\n")
    monkeypatch.setattr(test_layout, "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    modules = {"inference_ledger.formulas.serving": (planted, floor["formulas"])}
    where = "inference_ledger/formulas/serving.py (layer 2)"
    assert upward_imports(modules, floor) == [f"{where} imports inference_ledger.graph (layer 4)",
                                              f"{where} imports inference_ledger.graph.plan (layer 4)"]


def test_pyproject_installs_every_sub_package_and_two_top_level_names():
    """setuptools' package list is explicit (workbook/ needs package-dir): it must name every sub-package on disk,
    and nothing but the library and udfs at the top."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {"udfs"} | {".".join(("inference_ledger",) + p.parent.relative_to(LIBRARY).parts).rstrip(".")
                          for p in LIBRARY.rglob("__init__.py")} | {"inference_ledger.workbook"}
    assert set(config["packages"]) == on_disk
    assert {p.split(".")[0] for p in config["packages"]} == {"inference_ledger", "udfs"}
    assert config["package-dir"] == {"inference_ledger.workbook": "workbook"}
