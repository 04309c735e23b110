"""Where Spark gets Iceberg's runtime from.

Where Maven Central is reachable, the official coordinates are simplest (``spark.jars.packages``).
Offline, the runtime comes from the ``snowpark-connect-deps-iceberg`` wheel on PyPI, whose copy of
``iceberg-spark-runtime`` lacks the Jackson classes Iceberg shades under
``org.apache.iceberg.shaded.com.fasterxml.jackson``. PySpark ships the same Jackson release as jars of
its own, so we relocate those into Iceberg's package name — rewriting the class names in each class
file's constant pool, the same renaming the Maven shade plugin does — and cache the result.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zipfile
from collections.abc import Iterable
from pathlib import Path

ICEBERG_VERSION = "1.10.2"
SCALA_VERSION = "2.12"
ICEBERG_PACKAGE = f"org.apache.iceberg:iceberg-spark-runtime-3.5_{SCALA_VERSION}:{ICEBERG_VERSION}"
RUNTIME_JAR = f"iceberg-spark-runtime-3.5_{SCALA_VERSION}-{ICEBERG_VERSION}.jar"

_SHADED_PREFIX = "org/apache/iceberg/shaded/"
_JACKSON = "com/fasterxml/jackson/"
_JACKSON_JARS = ("jackson-core", "jackson-databind", "jackson-annotations")

# Sizes of the fixed-length constant-pool entries, by tag (JVM spec §4.4).
_CONSTANT_SIZES = {
    3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2
}
_UTF8, _LONG, _DOUBLE = 1, 5, 6


def _relocate_text(data: bytes) -> bytes:
    slashed, dotted = _JACKSON.encode(), _JACKSON.replace("/", ".").encode()
    return data.replace(slashed, _SHADED_PREFIX.encode() + slashed).replace(
        dotted, _SHADED_PREFIX.replace("/", ".").encode() + dotted
    )


def relocate_class(data: bytes) -> bytes:
    """The class file with every Jackson name in its constant pool moved under Iceberg's shaded prefix."""
    count = struct.unpack_from(">H", data, 8)[0]
    parts = [data[:10]]
    position, index = 10, 1
    while index < count:
        tag = data[position]
        if tag == _UTF8:
            length = struct.unpack_from(">H", data, position + 1)[0]
            text = _relocate_text(data[position + 3 : position + 3 + length])
            parts.append(bytes([_UTF8]) + struct.pack(">H", len(text)) + text)
            position += 3 + length
        else:
            size = 1 + _CONSTANT_SIZES[tag]
            parts.append(data[position : position + size])
            position += size
            # Longs and doubles take two constant-pool slots.
            index += tag in (_LONG, _DOUBLE)
        index += 1
    parts.append(data[position:])
    return b"".join(parts)


def relocate_jars(sources: Iterable[Path], destination: Path) -> None:
    """One jar with the classes and service files of ``sources``, relocated; multi-release copies
    under META-INF/versions and jar signatures are left out."""
    written: set[str] = set()
    # A per-process name: two jobs starting at once must not write into one file.
    partial = destination.with_name(f"{destination.name}.{os.getpid()}.partial")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as target:
        for source in sources:
            with zipfile.ZipFile(source) as jar:
                for info in jar.infolist():
                    name = info.filename
                    is_service = name.startswith("META-INF/services/")
                    if info.is_dir() or (name.startswith("META-INF/") and not is_service):
                        continue
                    data = jar.read(name)
                    if name.endswith(".class"):
                        data = relocate_class(data)
                    elif is_service:
                        data = _relocate_text(data)
                    name = _relocate_text(name.encode()).decode()
                    if name not in written:
                        written.add(name)
                        target.writestr(name, data)
    partial.replace(destination)


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cdclake" / "jars"


def packaged_iceberg_jars() -> list[str] | None:
    """The Iceberg runtime from the installed wheel plus the relocated Jackson jar (built once and
    cached by the content of PySpark's Jackson jars), or None where the wheel is not installed."""
    try:
        import snowpark_connect_deps_iceberg as wheel
    except ImportError:
        return None
    import pyspark

    runtime = Path(wheel.__file__).parent / "jars" / RUNTIME_JAR
    spark_jars = Path(pyspark.__file__).parent / "jars"
    jackson = sorted(jar for name in _JACKSON_JARS for jar in spark_jars.glob(f"{name}-2.*.jar"))
    digest = hashlib.sha256("|".join(f"{j.name}:{j.stat().st_size}" for j in jackson).encode()).hexdigest()[:16]
    relocated = _cache_dir() / f"iceberg-shaded-jackson-{digest}.jar"
    if not relocated.exists():
        relocated.parent.mkdir(parents=True, exist_ok=True)
        relocate_jars(jackson, relocated)
    return [str(runtime), str(relocated)]
