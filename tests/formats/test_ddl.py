"""DDL kinds as every format reads them: TiCDC's event types and the statement's own words."""

from __future__ import annotations

import pytest

from cdclake.formats.ddl import kind_of_sql, kind_of_ticdc_type, ticdc_type
from cdclake.model import DdlKind


@pytest.mark.parametrize(
    ("sql", "kind"),
    [
        ("CREATE DATABASE shop", DdlKind.CREATE_DATABASE),
        ("/* a comment */ drop schema if exists shop", DdlKind.DROP_DATABASE),
        ("-- why\nCREATE TABLE t (id int)", DdlKind.CREATE_TABLE),
        ("create temporary table t (id int)", DdlKind.CREATE_TABLE),
        ("DROP TABLE IF EXISTS t", DdlKind.DROP_TABLE),
        ("RENAME TABLE a TO b, c TO d", DdlKind.RENAME_TABLE),
        ("TRUNCATE t", DdlKind.TRUNCATE_TABLE),
        ("TRUNCATE TABLE t", DdlKind.TRUNCATE_TABLE),
        ("ALTER TABLE t ADD COLUMN c int", DdlKind.ALTER_TABLE),
        ("CREATE UNIQUE INDEX i ON t (c)", DdlKind.CREATE_INDEX),
        ("DROP INDEX i ON t", DdlKind.DROP_INDEX),
        ("CREATE VIEW v AS SELECT 1", DdlKind.OTHER),
        ("ADD COLUMN c int", DdlKind.OTHER),
        ("", DdlKind.OTHER),
    ],
)
def test_kind_of_sql(sql: str, kind: DdlKind) -> None:
    assert kind_of_sql(sql) is kind


def test_a_ticdc_type_names_the_kind_and_query_defers_to_the_sql() -> None:
    assert kind_of_ticdc_type("ERASE", "DROP TABLE t") is DdlKind.DROP_TABLE
    assert kind_of_ticdc_type("CINDEX", "ALTER TABLE t ADD INDEX i (c)") is DdlKind.CREATE_INDEX
    assert kind_of_ticdc_type("QUERY", "drop database if exists test") is DdlKind.DROP_DATABASE
    assert kind_of_ticdc_type("CREATE", "CREATE OR REPLACE VIEW v AS SELECT 1") is DdlKind.OTHER


def test_the_decoded_type_is_written_back_while_it_still_fits() -> None:
    assert ticdc_type(DdlKind.CREATE_INDEX, "ALTER TABLE t ADD INDEX i (c)", "CINDEX") == "CINDEX"
    assert ticdc_type(DdlKind.ALTER_TABLE, "ALTER TABLE t ADD COLUMN c int", None) == "ALTER"
    assert ticdc_type(DdlKind.CREATE_DATABASE, "CREATE DATABASE d", "CREATE") == "QUERY"
