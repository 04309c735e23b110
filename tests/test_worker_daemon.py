"""The Python daemon of local sessions: Spark's copies of PySpark left off the workers' path."""

from __future__ import annotations

from pathlib import Path

from cdclake.spark.worker_daemon import without_copies


def _installed(site: Path, *packages: str) -> None:
    for package in packages:
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text("")


def _spark_path(site: Path) -> list[str]:
    home = site / "pyspark"
    return [str(home / "python" / "lib" / "pyspark.zip"), str(home / "python" / "lib" / "py4j-src.zip"),
            str(home / "jars" / "spark-core.jar"), "", str(site)]


def test_spark_copies_of_an_installed_pyspark_are_left_off(tmp_path: Path) -> None:
    _installed(tmp_path, "pyspark", "py4j")
    assert without_copies(_spark_path(tmp_path)) == ["", str(tmp_path)]


def test_the_path_stays_whole_without_an_installed_py4j_or_pyspark(tmp_path: Path) -> None:
    _installed(tmp_path / "a", "pyspark")
    _installed(tmp_path / "b", "py4j")
    assert without_copies(_spark_path(tmp_path / "a")) == _spark_path(tmp_path / "a")
    assert without_copies(_spark_path(tmp_path / "b")) == _spark_path(tmp_path / "b")


def test_a_spark_distribution_beside_the_installed_pyspark_keeps_its_path(tmp_path: Path) -> None:
    _installed(tmp_path / "site", "pyspark", "py4j")
    distribution = [str(tmp_path / "spark-4.1" / "python" / "lib" / "pyspark.zip"), str(tmp_path / "site")]
    assert without_copies(distribution) == distribution
