"""The PostgreSQL sink's pure parts: its URL, names, types and statements (cdclake.sinks.postgres)."""

from __future__ import annotations

import pytest

from cdclake.errors import OptionError
from cdclake.model import ColumnSchema, IndexSchema, TableSchema
from cdclake.schema.ddl.changes import AddColumn, DropColumn, ModifyColumn, RenameColumn
from cdclake.sinks.postgres.connection import SinkError, check_server, parse
from cdclake.sinks.postgres.statements import alter, create_table, ident, merge
from cdclake.sinks.postgres.types import cast_text, holds, pg_type
from cdclake.types import MySQLType

T = MySQLType.parse
SCHEMA = TableSchema("shop", "orders", (ColumnSchema("id", T("bigint")), ColumnSchema("note", T("varchar(20)"))),
                     (IndexSchema("PRIMARY", ("id",), unique=True, primary=True),))


def test_a_jdbc_url_becomes_libpq_keywords_and_hides_its_password() -> None:
    address = parse("jdbc:postgresql://db.example:6543/mirror?user=cdc&password=s%20e&sslmode=require")
    assert "host=db.example" in address.conninfo and "port=6543" in address.conninfo
    assert "dbname=mirror" in address.conninfo and "sslmode=require" in address.conninfo
    assert "password='s e'" in address.conninfo
    assert address.shown == "jdbc:postgresql://db.example:6543/mirror?user=cdc&password=***&sslmode=require"
    assert "port=5432" in parse("jdbc:postgresql://db/mirror").conninfo


@pytest.mark.parametrize("url", ["jdbc:postgresql://db", "jdbc:postgresql:///mirror", "postgresql://db/mirror"])
def test_a_url_without_host_or_database_is_refused(url: str) -> None:
    with pytest.raises(OptionError, match="sink"):
        parse(url)


def test_names_are_quoted_whatever_they_hold_and_refused_past_63_bytes() -> None:
    assert ident('we"ird; DROP') == '"we""ird; DROP"'
    assert ident("é" * 31) == '"' + "é" * 31 + '"'  # 62 bytes
    with pytest.raises(OptionError, match="more than 63 bytes"):
        ident("é" * 32)
    with pytest.raises(OptionError):
        ident("")


@pytest.mark.parametrize(("mysql", "postgres"), [
    ("tinyint", "smallint"), ("smallint unsigned", "integer"), ("int unsigned", "bigint"),
    ("bigint", "bigint"), ("bigint unsigned", "numeric(20,0)"), ("decimal(65,30)", "numeric(65,30)"),
    ("decimal", "numeric"), ("bit(64)", "numeric(20,0)"), ("bit(3)", "bigint"), ("float", "real"),
    ("varbinary(8)", "bytea"), ("time(3)", "interval"), ("timestamp", "timestamptz"),
    ("datetime(6)", "timestamp"), ("json", "text"), ("enum('a','b')", "text"), ("year", "integer"),
])
def test_every_mysql_type_has_a_column_that_holds_it(mysql: str, postgres: str) -> None:
    assert pg_type(T(mysql)) == postgres


def test_lake_texts_are_cast_exactly() -> None:
    assert cast_text("x", "bytea") == "decode(x, 'base64')"
    assert cast_text("x", "timestamptz") == "((x) || '+00')::timestamptz"
    assert "- 18446744073709551616" in cast_text("x", "bigint")  # 64 unsigned bits, as the lake reads them
    assert cast_text("x", "text") == "x"


def test_a_row_type_its_column_widens_is_no_change() -> None:
    assert holds(T("int"), T("bigint")) and holds(T("float"), T("double"))
    assert not holds(T("bigint"), T("int")) and not holds(T("varchar(3)"), T("int"))


def test_create_and_merge_use_the_key() -> None:
    table, index = create_table('"shop"."orders"', SCHEMA)
    assert table == 'CREATE TABLE IF NOT EXISTS "shop"."orders" ("id" bigint, "note" text)'
    assert index.startswith('CREATE INDEX IF NOT EXISTS "cdclake_key_') and index.endswith(' ON "shop"."orders" ("id")')
    delete, update, insert = merge('"shop"."orders"', "stage", SCHEMA, whole_images=False)
    assert delete.startswith('DELETE FROM "shop"."orders" t USING stage s WHERE s._op = \'delete\' AND t."id" = ')
    assert "CASE WHEN s._image ? 'note' THEN (s._image ->> 'note') ELSE t.\"note\" END" in update
    assert "NOT EXISTS" in insert
    keyless = TableSchema("shop", "log", SCHEMA.columns)
    assert "IS NOT DISTINCT FROM" in merge('"shop"."log"', "stage", keyless, whole_images=True)[0]


def test_column_changes_become_alter_statements() -> None:
    changes = [AddColumn(ColumnSchema("qty", T("int")), fill="0"), RenameColumn("NOTE", "remark"),
               ModifyColumn(ColumnSchema("remark", T("varbinary(20)"))), DropColumn("qty"), DropColumn("gone")]
    assert alter('"shop"."orders"', SCHEMA, changes) == [
        'ALTER TABLE "shop"."orders" ADD COLUMN IF NOT EXISTS "qty" integer DEFAULT (\'0\')::integer',
        'ALTER TABLE "shop"."orders" ALTER COLUMN "qty" DROP DEFAULT',
        'ALTER TABLE "shop"."orders" RENAME COLUMN "note" TO "remark"',
        'ALTER TABLE "shop"."orders" ALTER COLUMN "remark" TYPE bytea USING convert_to("remark"::text, \'UTF8\')',
        'ALTER TABLE "shop"."orders" DROP COLUMN IF EXISTS "qty"',
    ]


def test_a_server_older_than_14_is_refused_by_name() -> None:
    address = parse("jdbc:postgresql://db:5432/shop?user=u&password=secret")
    check_server(140000, address)
    with pytest.raises(SinkError, match=r"sink jdbc:postgresql://db:5432/shop\?user=u&password=\*\*\*: "
                                        r"PostgreSQL 13 is too old for the sink, which needs 14 or newer"):
        check_server(130011, address)
