"""What the lake's catalog cannot do, refused before any part of a change is made
(cdclake.sinks.iceberg.catalogs): a Hive metastore's positional column check against DROP COLUMN."""

from __future__ import annotations

import pytest

from cdclake.schema.policy import SchemaEvolutionError
from cdclake.sinks.iceberg.catalogs import HIVE_COLUMN_CHECK, check_lake_changes
from cdclake.sinks.iceberg.evolution import AddLakeColumn, DropLakeColumn, RenameLakeColumn

DROP = [AddLakeColumn("v__cdclake_tmp", "bigint"), DropLakeColumn("v"), RenameLakeColumn("v__cdclake_tmp", "v")]


def test_a_drop_column_on_a_hive_catalog_is_refused_naming_the_metastore_setting() -> None:
    hive = {"spark.sql.catalog.lake.type": "hive"}
    with pytest.raises(SchemaEvolutionError, match=(
            rf"^lake\.shop\.t: dropping column v on the Hive catalog 'lake': .* unless its hive-site\.xml sets "
            rf"{HIVE_COLUMN_CHECK}=false\. .* spark\.hadoop\.{HIVE_COLUMN_CHECK} = \"false\" under \[lake\] spark")):
        check_lake_changes(hive.get, "lake", "lake.shop.t", DROP)


@pytest.mark.parametrize("settings", [
    {"spark.sql.catalog.lake.type": "hive", f"spark.hadoop.{HIVE_COLUMN_CHECK}": "false"},
    {"spark.sql.catalog.lake.type": "hadoop"},
    {"spark.sql.catalog.lake.type": "rest"},
    {"spark.sql.catalog.other.type": "hive"},
])
def test_a_drop_column_goes_ahead_where_the_catalog_takes_it(settings: dict[str, str]) -> None:
    check_lake_changes(settings.get, "lake", "lake.shop.t", DROP)


def test_a_hive_catalog_named_by_its_class_is_one_too_and_other_changes_pass() -> None:
    by_class = {"spark.sql.catalog.lake.catalog-impl": "org.apache.iceberg.hive.HiveCatalog"}
    with pytest.raises(SchemaEvolutionError, match="Hive catalog"):
        check_lake_changes(by_class.get, "lake", "t", [DropLakeColumn("v")])
    check_lake_changes(by_class.get, "lake", "t", [AddLakeColumn("w", "string")])
