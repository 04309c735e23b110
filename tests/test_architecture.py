"""DESIGN.md's layer rules, checked on the imports of every module under src/cdclake.

Data flows one way and each layer knows only the ones above it: the codecs (``cdclake.formats``) speak
only the event model, the type system (types and their values) and the errors, and may declare a
compiled fast path (``cdclake._native``, built from native/); the model knows only
the types; the values know only the types; the types know only the errors; Spark stays in the pipeline
(``cdclake.spark``) and the sinks (``cdclake.sinks``). Modules are found on disk, so a new module is
checked without touching this file. Every import counts, including those inside functions and
``if TYPE_CHECKING:`` blocks.

The pipeline does not import the upstream simulator (``cdclake.workload``), nothing outside
``cdclake.formats`` decides by a format id (what differs by format, the format's codec declares), and
no module has more than 600 lines.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from cdclake.formats import FORMAT_NAMES

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "cdclake"

FOUNDATION = {"cdclake.model", "cdclake.types", "cdclake.values", "cdclake.errors"}
NATIVE = "cdclake._native"  # the compiled fast paths (native/src), pure functions of bytes and callbacks
SPARK_PACKAGES = ("pyspark", "py4j")  # py4j is Spark's bridge to the JVM; nothing else has a use for it
SPARK_LAYERS = ("cdclake.spark", "cdclake.sinks")


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES: dict[str, Path] = {_module_name(p): p for p in sorted((SRC / PACKAGE).rglob("*.py"))}


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def imports_of(module: str, source: str, is_package: bool = False) -> set[str]:
    """The dotted names ``source`` imports; relative imports resolved against ``module``, and
    ``from package import submodule`` named as the submodule where it is one of ours."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                # A package's own module is its __init__, so "." is the package itself.
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                found.add(submodule if submodule in MODULES else base)
    return found


def _all_imports(module: str) -> set[str]:
    path = MODULES[module]
    return imports_of(module, path.read_text(encoding="utf-8"), is_package=path.name == "__init__.py")


def _cdclake_imports(module: str) -> set[str]:
    return {name for name in _all_imports(module) if _within(name, PACKAGE) and name != module}


def test_the_modules_are_found() -> None:
    assert {"cdclake.model", "cdclake.types", "cdclake.errors", "cdclake.formats"} <= set(MODULES)
    assert "cdclake.formats.base" in MODULES


@pytest.mark.parametrize("module", [m for m in MODULES if _within(m, "cdclake.formats")])
def test_formats_use_only_the_model_types_errors_and_each_other(module: str) -> None:
    allowed = {*FOUNDATION, NATIVE}
    outside = {m for m in _cdclake_imports(module) if m not in allowed and not _within(m, "cdclake.formats")}
    assert not outside, f"{module} imports {sorted(outside)}; codecs may use only {sorted(allowed)}"


@pytest.mark.parametrize("module", [m for m in MODULES if _within(m, "cdclake.formats")])
def test_formats_import_neither_spark_nor_kafka(module: str) -> None:
    banned = {m for m in _all_imports(module) if m.split(".")[0] in (*SPARK_PACKAGES, "confluent_kafka")}
    assert not banned, f"{module} imports {sorted(banned)}: codecs are pure, without Spark or Kafka"


def test_model_imports_only_types_and_errors() -> None:
    assert _cdclake_imports("cdclake.model") <= {"cdclake.types", "cdclake.errors"}


def test_types_import_only_errors() -> None:
    assert _cdclake_imports("cdclake.types") <= {"cdclake.errors"}


def test_values_import_only_types_and_errors() -> None:
    assert _cdclake_imports("cdclake.values") <= {"cdclake.types", "cdclake.errors"}


@pytest.mark.parametrize("module", [m for m in MODULES if not any(_within(m, layer) for layer in SPARK_LAYERS)])
def test_only_the_spark_layers_import_spark(module: str) -> None:
    spark = {m for m in _all_imports(module) if m.split(".")[0] in SPARK_PACKAGES}
    assert not spark, f"{module} imports {sorted(spark)}; only {', '.join(SPARK_LAYERS)} may"


def test_importing_the_codecs_loads_no_heavy_dependency() -> None:
    # The import rules above cover what the code says; this covers what Python actually loads,
    # e.g. through a third-party package. pyarrow is imported by the functions that need it.
    code = f"""
import importlib, pkgutil, sys
import cdclake.formats as formats
for info in pkgutil.walk_packages(formats.__path__, "cdclake.formats."):
    importlib.import_module(info.name)
loaded = sorted(m for m in ("pyarrow", "confluent_kafka", *{SPARK_PACKAGES!r}) if m in sys.modules)
print(" ".join(loaded))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [], f"importing the codecs loaded {result.stdout}"


# --- the import reader itself -----------------------------------------------------------------------


def test_imports_of_resolves_every_form() -> None:
    source = """
import json, pyspark.sql as ps
from . import base
from .base import Codec
from .. import model
from ..types import MySQLType
from cdclake import errors
def later():
    from confluent_kafka import Consumer
if TYPE_CHECKING:
    from pyspark.sql.functions import col
"""
    assert imports_of("cdclake.formats.canal_json", source) == {
        "json",
        "pyspark.sql",
        "cdclake.formats.base",
        "cdclake.model",
        "cdclake.types",
        "cdclake.errors",
        "confluent_kafka",
        "pyspark.sql.functions",
    }


def test_imports_of_a_package_init_is_relative_to_the_package() -> None:
    assert imports_of("cdclake.formats", "from .base import Codec", is_package=True) == {"cdclake.formats.base"}


# --- modules a reader can hold ----------------------------------------------------------------------

MAX_LINES = 600


def _line_count(module: str) -> int:
    return len(MODULES[module].read_text(encoding="utf-8").splitlines())


@pytest.mark.parametrize("module", list(MODULES))
def test_modules_stay_small(module: str) -> None:
    lines = _line_count(module)
    assert lines <= MAX_LINES, f"{module} has {lines} lines, more than {MAX_LINES}: split it at a seam"


# --- the pipeline does not lean on the simulator ----------------------------------------------------

# The producer rules and topic writers (cdclake.producer) are the transcoder's as much as the simulator's:
# they are the pipeline's, and the simulator imports them.
PIPELINE = ("cdclake.spark", "cdclake.transcode", "cdclake.sources", "cdclake.capture", "cdclake.schema",
            "cdclake.producer")


@pytest.mark.parametrize("module", [m for m in MODULES if any(_within(m, layer) for layer in PIPELINE)])
def test_the_pipeline_does_not_import_the_workload(module: str) -> None:
    uses = sorted(m for m in _cdclake_imports(module) if _within(m, "cdclake.workload"))
    assert not uses, f"{module} imports {uses}: the pipeline does not depend on the upstream simulator"


# --- the sink seam ----------------------------------------------------------------------------------

# The pipeline writes through cdclake.sinks.base.Sink. Who may name the Iceberg sink's modules outside it:
# the Replicator, whose default sink it is, status (which reads that sink's tables), maintain (which compacts
# them), and the comparison of Iceberg tables with the simulator's (verify).
ICEBERG_SINK_USERS = frozenset({"cdclake.spark.replicate", "cdclake.spark.status", "cdclake.spark.maintain",
                                "cdclake.spark.verify"})
# What a sink may use of the pipeline: the job's progress, the change records' columns, and DataFrames of the
# driver's records (cdclake.spark.frames, a Spark helper that knows nothing of the pipeline).
PIPELINE_FOR_SINKS = frozenset({"cdclake.spark.progress", "cdclake.spark.changes", "cdclake.spark.frames"})


@pytest.mark.parametrize("module", [m for m in MODULES if _within(m, "cdclake.spark") and m not in ICEBERG_SINK_USERS])
def test_the_pipeline_writes_through_the_sink_protocol(module: str) -> None:
    iceberg = {m for m in _cdclake_imports(module) if _within(m, "cdclake.sinks.iceberg")}
    assert not iceberg, f"{module} imports {sorted(iceberg)}: the pipeline writes through cdclake.sinks.base.Sink"


@pytest.mark.parametrize("module", [m for m in MODULES if _within(m, "cdclake.sinks")])
def test_sinks_use_only_the_progress_and_change_records_of_the_pipeline(module: str) -> None:
    pipeline = {m for m in _cdclake_imports(module) if _within(m, "cdclake.spark") or _within(m, "cdclake.cli")}
    assert pipeline <= PIPELINE_FOR_SINKS, (
        f"{module} imports {sorted(pipeline - PIPELINE_FOR_SINKS)}: the pipeline calls a sink, not back")


# --- format ids stay in cdclake.formats -------------------------------------------------------------

# The registry's names: a format registered is checked without touching this file.
FORMAT_IDS = frozenset(FORMAT_NAMES)


def _is_format_id(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value in FORMAT_IDS


def _decides_by_format_id(node: ast.expr | ast.pattern) -> bool:
    if isinstance(node, ast.Compare):
        return any(_is_format_id(operand) for operand in (node.left, *node.comparators))
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        strings = all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts)
        return strings and any(_is_format_id(e) for e in node.elts)
    if isinstance(node, ast.Dict):
        return any(_is_format_id(key) for key in node.keys)
    return isinstance(node, ast.MatchValue) and _is_format_id(node.value)


def format_id_switches(source: str) -> list[int]:
    """The lines where ``source`` decides by a format id written out: a comparison with one (``==``,
    ``!=``, ...); a tuple, list or set of string literals holding one (``name in ("simple",
    "simple-avro")``, or a set of formats kept under a name); a dict keyed by one; a ``case`` of one.
    A format id as an argument or a default (``decode_changes(records, "open")``) is no decision."""
    return sorted(node.lineno for node in ast.walk(ast.parse(source))
                  if isinstance(node, (ast.expr, ast.pattern)) and _decides_by_format_id(node))


def _format_switches(module: str) -> list[int]:
    return format_id_switches(MODULES[module].read_text(encoding="utf-8"))


@pytest.mark.parametrize("module", [m for m in MODULES if not _within(m, "cdclake.formats")])
def test_format_ids_are_compared_only_in_the_formats(module: str) -> None:
    lines = _format_switches(module)
    assert not lines, (
        f"{module} decides by a format id on lines {lines}: let the codec say it "
        "(cdclake.formats.base.Codec), so that a new format is a package and a registry line")


def test_format_id_switches_finds_every_form() -> None:
    source = """
if name == "canal-json" or "open" != name:
    pass
if name in ("simple", "simple-avro") or name not in ["dataworks"]:
    pass
BINARY = frozenset({"open", "simple-avro"})
EVERY = {"open": True}
match name:
    case "dataworks":
        pass
decode(records, "open")
def demo(format_name: str = "canal-json") -> None: ...
if mode == "append" or mode in ("r", "w"):
    pass
"""
    assert format_id_switches(source) == [2, 2, 4, 4, 6, 7, 9]
