"""Iceberg on Spark offline: the relocated Jackson jar, MERGE INTO, and commit properties on MERGE."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pyspark
import pytest

from cdclake.spark.commit import with_commit_properties
from cdclake.spark.jars import relocate_class, relocate_jars


def _jackson_jar(name: str) -> Path:
    return next((Path(pyspark.__file__).parent / "jars").glob(f"{name}-2.*.jar"))


def test_relocated_class_is_valid_and_names_only_shaded_jackson(tmp_path: Path) -> None:
    with zipfile.ZipFile(_jackson_jar("jackson-databind")) as jar:
        original = jar.read("com/fasterxml/jackson/databind/ObjectMapper.class")
    (tmp_path / "ObjectMapper.class").write_bytes(relocate_class(original))
    # javap parses the whole class file: a corrupt constant pool fails here.
    listing = subprocess.run(
        ["javap", "-v", str(tmp_path / "ObjectMapper.class")], capture_output=True, text=True, check=True
    ).stdout
    shaded = "org/apache/iceberg/shaded/com/fasterxml/jackson"
    assert f"class {shaded.replace('/', '.')}.databind.ObjectMapper" in listing
    assert f"{shaded}/core/JsonParser" in listing
    assert "com/fasterxml/jackson" not in listing.replace(shaded, "")


def test_relocated_jar_moves_classes_and_services(tmp_path: Path) -> None:
    target = tmp_path / "shaded.jar"
    relocate_jars([_jackson_jar("jackson-core")], target)
    with zipfile.ZipFile(target) as jar:
        names = jar.namelist()
        services = [n for n in names if n.startswith("META-INF/services/")]
        assert "org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactory.class" in names
        assert not [n for n in names if n.startswith("com/")]
        assert services == ["META-INF/services/org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonFactory"]
        assert jar.read(services[0]).strip() == b"org.apache.iceberg.shaded.com.fasterxml.jackson.core.JsonFactory"


def test_merge_commit_carries_properties(spark: Any) -> None:
    spark.sql("CREATE TABLE lake.session_test.t (id bigint, v string) USING iceberg")
    spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, v string").createOrReplaceTempView("changes")
    merge = "MERGE INTO lake.session_test.t t USING changes s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *"
    with_commit_properties(spark, {"cdclake.test": "offsets-1"}, lambda: spark.sql(merge))
    rows = spark.sql("SELECT summary['cdclake.test'] AS p FROM lake.session_test.t.snapshots").collect()
    assert [r.p for r in rows] == ["offsets-1"]
    assert spark.table("lake.session_test.t").count() == 2


def test_failed_statement_raises_its_own_error(spark: Any) -> None:
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException, match="TABLE_OR_VIEW_NOT_FOUND"):
        with_commit_properties(spark, {"k": "v"}, lambda: spark.sql("DELETE FROM lake.session_test.missing"))
