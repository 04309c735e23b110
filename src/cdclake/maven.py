"""Java libraries from Maven Central, resolved once by the machine's Maven client and cached.

cdclake runs on jars that are not Python packages: Iceberg's Spark runtime, Spark's Kafka source and
Apache Kafka's broker (for the tests, the demo and the benchmarks). :func:`resolve` lays the jars of
some Maven coordinates, with everything they need at run time, in one directory of the cache named
after those coordinates, and returns their paths. The first call runs ``mvn`` (Maven's
``dependency:copy-dependencies``), which downloads into Maven's own repository (``~/.m2/repository``);
every later call, in any process, reads the cached directory and starts nothing.

The cache is ``$CDCLAKE_JARS_CACHE``, else ``$XDG_CACHE_HOME/cdclake/jars``, else
``~/.cache/cdclake/jars``. Deleting it costs one more ``mvn`` run, which finds the downloads in
``~/.m2`` again.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from xml.sax.saxutils import escape

from cdclake.errors import CdclakeError

# Pinned so that a cache filled on one machine means the same jars on the next.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"
_COMPLETE = "jars.txt"


class JarsUnavailable(CdclakeError):
    """The jars could not be resolved: no Maven client, or Maven could not fetch them."""


def cache_root() -> Path:
    explicit = os.environ.get("CDCLAKE_JARS_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "cdclake" / "jars"


def resolve(coordinates: Sequence[str]) -> list[Path]:
    """The jars of ``coordinates`` (``group:artifact:version``, or ``group:artifact:version:classifier``
    for a jar published beside the main one, such as ``tests``) and of their run-time dependencies, from
    the cache, resolved by ``mvn`` the first time."""
    directory = cache_root() / _directory_name(coordinates)
    listing = directory / _COMPLETE
    if not listing.exists():
        directory.parent.mkdir(parents=True, exist_ok=True)
        # Several processes (test workers, a job and its bench) may ask at once: one resolves.
        with _locked(directory.with_name(directory.name + ".lock")):
            if not listing.exists():
                _copy_dependencies(coordinates, directory)
    return [directory / name for name in listing.read_text().split()]


def _directory_name(coordinates: Sequence[str]) -> str:
    digest = hashlib.sha256("\n".join(sorted(coordinates)).encode()).hexdigest()[:12]
    first = coordinates[0].split(":")
    return f"{first[1]}-{first[2]}-{digest}"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _copy_dependencies(coordinates: Sequence[str], directory: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise JarsUnavailable(
            f"cdclake needs {', '.join(coordinates)} from Maven Central and found no Maven client (mvn) to "
            "fetch them: install Maven (Debian: apt-get install maven), or name the jars yourself in "
            "spark.jars or spark.jars.packages"
        )
    with tempfile.TemporaryDirectory(prefix="cdclake-mvn-") as work:
        pom = Path(work) / "pom.xml"
        pom.write_text(_pom(coordinates))
        partial = Path(work) / "jars"
        command = [
            mvn, "-q", "-B", "-f", str(pom), f"{DEPENDENCY_PLUGIN}:copy-dependencies",
            f"-DoutputDirectory={partial}", "-DincludeScope=runtime",
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-15:])
            raise JarsUnavailable(f"mvn could not resolve {', '.join(coordinates)}:\n{tail}")
        jars = sorted(p.name for p in partial.glob("*.jar"))
        (partial / _COMPLETE).write_text("\n".join(jars) + "\n")
        # Copied beside the cache entry first, then renamed into place: a run killed half-way leaves a
        # stray folder, never an entry with a listing and half its jars.
        staged = directory.with_name(f"{directory.name}.{os.getpid()}.partial")
        shutil.copytree(partial, staged)
        if directory.exists():  # an entry without its listing: not one this code finished
            shutil.rmtree(directory)
        staged.rename(directory)


def _pom(coordinates: Sequence[str]) -> str:
    dependencies = []
    for coordinate in coordinates:
        group, artifact, version, *classifier = coordinate.split(":")
        extra = "".join(f"<classifier>{escape(c)}</classifier>" for c in classifier)
        dependencies.append(
            f"<dependency><groupId>{escape(group)}</groupId><artifactId>{escape(artifact)}</artifactId>"
            f"<version>{escape(version)}</version>{extra}</dependency>"
        )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>cdclake.jars</groupId><artifactId>resolve</artifactId><version>1</version>"
        f"<packaging>pom</packaging><dependencies>{''.join(dependencies)}</dependencies></project>\n"
    )
