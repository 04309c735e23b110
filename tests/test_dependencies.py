"""Every third-party module the package imports is a declared dependency, so a fresh install has it
(typer stopped depending on click once; a module that still imported click broke only new machines)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _imported_top_level_modules() -> set[str]:
    modules = set()
    for path in (ROOT / "src" / "cdclake").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - {"cdclake", "__future__"}


def _declared() -> set[str]:
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    return {re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0].lower().replace("_", "-") for d in dependencies}


def test_every_imported_package_is_declared() -> None:
    distributions = packages_distributions()
    # py4j ships with pyspark, which loads it; it is never installed on its own.
    provided = {"py4j": "pyspark"}
    undeclared = {}
    for module in _imported_top_level_modules():
        names = distributions.get(module) or [provided.get(module, module)]
        if not {n.lower().replace("_", "-") for n in names} & _declared():
            undeclared[module] = names
    assert not undeclared, f"imported but not in pyproject dependencies: {undeclared}"
