"""The MariaDB sink's pure parts: its URL, names, types, loading format and statements (cdclake.sinks.mariadb)."""

from __future__ import annotations

import pytest

from cdclake.errors import OptionError
from cdclake.model import ColumnSchema, IndexSchema, TableSchema
from cdclake.schema.ddl.changes import AddColumn, DropColumn, ModifyColumn, RenameColumn, SetKey
from cdclake.sinks import check_url
from cdclake.sinks.mariadb.connection import is_loopback, parse
from cdclake.sinks.mariadb.loading import field
from cdclake.sinks.mariadb.statements import (
    alter,
    create_table,
    ident,
    literal,
    merge,
    split_target,
    stage_table,
    table_name,
)
from cdclake.sinks.mariadb.types import UnstorableValue, holds, loader, mariadb_type, normalized
from cdclake.types import MySQLType

T = MySQLType.parse
SCHEMA = TableSchema("shop", "orders", (ColumnSchema("id", T("bigint")), ColumnSchema("note", T("varchar(20)"))),
                     (IndexSchema("PRIMARY", ("id",), unique=True, primary=True),))
TARGET = "`shop`.`orders`"


def test_a_jdbc_url_becomes_pymysql_arguments_and_hides_its_password() -> None:
    address = parse("jdbc:mariadb://db.example:3307/mirror?user=cdc&password=s%20e&connectTimeout=5")
    assert address.arguments == {"host": "db.example", "port": 3307, "database": "mirror", "user": "cdc",
                                 "password": "s e", "connect_timeout": 5}
    assert address.shown == "jdbc:mariadb://db.example:3307/mirror?user=cdc&password=***&connectTimeout=5"
    assert parse("jdbc:mysql://db/mirror").arguments["port"] == 3306
    check_url("jdbc:mysql://db/mirror")  # both prefixes are registered


def test_only_a_loopback_host_connects_without_tls() -> None:
    assert [is_loopback(h) for h in ("localhost", "LOCALHOST", "127.0.0.1", "127.8.0.1", "::1", "[::1]")] == [True] * 6
    assert not any(is_loopback(h) for h in ("db.example.com", "10.0.0.5", "::2", "", "localhost.example.com"))


@pytest.mark.parametrize(("url", "says"), [
    ("jdbc:mariadb://db", "no host or no database"), ("jdbc:mariadb:///mirror", "no host or no database"),
    ("mariadb://db/mirror", "no sink takes"), ("jdbc:mariadb://db:x/mirror", "port is not a number"),
    ("jdbc:mysql://db/mirror?sslmode=require", "unknown parameter 'sslmode'"),
])
def test_a_malformed_url_is_refused_saying_why(url: str, says: str) -> None:
    with pytest.raises(OptionError, match=says):
        check_url(url)


def test_names_are_backquoted_whatever_they_hold_and_refused_past_64_characters() -> None:
    assert ident("we`ird; DROP") == "`we``ird; DROP`"
    assert ident("é" * 64) == "`" + "é" * 64 + "`"  # characters, not bytes
    with pytest.raises(OptionError, match="more than 64 characters"):
        ident("x" * 65)
    for bad in ("", "a\0b", "trailing "):
        with pytest.raises(OptionError, match="cannot be a MariaDB identifier"):
            ident(bad)
    assert split_target(table_name("a`b", "c.d")) == ("a`b", "c.d")


@pytest.mark.parametrize(("mysql", "mariadb"), [
    ("tinyint(1)", "tinyint"), ("smallint unsigned", "smallint unsigned"), ("bigint unsigned", "bigint unsigned"),
    ("decimal(65,30)", "decimal(65,30)"), ("decimal", "decimal(65,30)"), ("bit(64)", "bigint unsigned"),
    ("char(3)", "varchar(3)"), ("text", "longtext"), ("binary(4)", "varbinary(4)"), ("blob", "longblob"),
    ("time", "time(6)"), ("time(0)", "time(0)"), ("timestamp(3)", "timestamp(3)"), ("datetime", "datetime(6)"),
    ("json", "longtext"), ("enum('a','bcd')", "varchar(3)"), ("set('a','bcd')", "varchar(5)"),
    ("enum", "smallint unsigned"), ("set", "bigint unsigned"), ("year", "year"), ("point", "longblob"),
])
def test_every_mysql_type_has_a_column_that_holds_it(mysql: str, mariadb: str) -> None:
    assert mariadb_type(T(mysql)) == mariadb


def test_lake_texts_are_loaded_exactly() -> None:
    assert loader("varbinary(4)", "t.b")("AAD/") == b"\x00\x00\xff"
    assert loader("bigint(20)", "t.n")("18446744073709551615") == "-1"  # 64 unsigned bits, as the lake reads them
    assert loader("bigint(20) unsigned", "t.n")("18446744073709551615") == "18446744073709551615"
    assert loader("year(4)", "t.y")("0") == "0000"
    assert loader("time(6)", "t.t")("-838:59:59.000000") == "-838:59:59.000000"
    with pytest.raises(UnstorableValue, match=r"t\.f: NaN cannot be stored"):
        loader("double", "t.f")("NaN")
    assert normalized("int(11) unsigned") == "int unsigned"


def test_load_data_fields_escape_what_the_format_reads_specially() -> None:
    assert field(None) == b"\\N"
    assert field("a\tb\nc\\d\0") == b"a\\tb\\nc\\\\d\\0"
    assert field(b"\x00\xff") == b"\\0\xff"
    assert field(7) == b"7"
    assert literal("it's \\ \0") == "'it''s \\\\ \\0'" and literal(b"\x01") == "X'01'"


def test_a_row_type_its_column_widens_is_no_change() -> None:
    assert holds(T("int"), T("bigint")) and holds(T("float"), T("double")) and holds(T("int unsigned"), T("bigint"))
    assert holds(T("decimal(5,2)"), T("decimal(10,3)")) and holds(T("varchar(3)"), T("text"))
    assert holds(T("time(0)"), T("time(6)")) and holds(T("varchar(3)"), T("varchar(9)"))
    assert not holds(T("bigint"), T("int")) and not holds(T("int unsigned"), T("int"))
    assert not holds(T("decimal(10,3)"), T("decimal(10,2)")) and not holds(T("varchar(3)"), T("int"))
    assert not holds(T("blob"), T("text"))


def test_create_and_merge_use_the_unique_key() -> None:
    assert create_table(TARGET, SCHEMA, "utf8mb4_nopad_bin") == (
        "CREATE TABLE IF NOT EXISTS `shop`.`orders` (`id` bigint NULL, `note` varchar(20) NULL, "
        "UNIQUE KEY cdclake_key (`id`)) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_nopad_bin")
    delete, upsert = merge(TARGET, "stage", SCHEMA, whole_images=False)
    assert delete == ("DELETE t FROM `shop`.`orders` AS t JOIN stage AS s ON t.`id` = s.c0 "
                      "WHERE s.cdclake_op = 'delete'")
    assert upsert == ("INSERT INTO `shop`.`orders` (`id`, `note`) SELECT s.c0, s.c1 FROM stage AS s "
                      "WHERE s.cdclake_op <> 'delete' ON DUPLICATE KEY UPDATE "
                      "`note` = IF(SUBSTRING(s.cdclake_given, 2, 1) = '1', s.c1, `shop`.`orders`.`note`)")
    assert merge(TARGET, "stage", SCHEMA, whole_images=True)[1].endswith("UPDATE `note` = s.c1")


def test_a_stage_is_indexed_on_the_first_key_column_a_long_string_by_its_prefix() -> None:
    keyed_by_text = TableSchema("shop", "codes", (ColumnSchema("n", T("int")), ColumnSchema("code", T("text"))),
                                (IndexSchema("PRIMARY", ("Code",), unique=True, primary=True),))
    assert stage_table("stage", SCHEMA, "c").endswith("c1 varchar(20) NULL, KEY cdclake_lookup (c0)) "
                                                      "ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=c")
    assert "c1 longtext NULL, KEY cdclake_lookup (c1(64)))" in stage_table("stage", keyed_by_text, "c")
    keyless = TableSchema("shop", "log", tuple(reversed(keyed_by_text.columns)))
    assert "KEY cdclake_lookup (c0(64)))" in stage_table("stage", keyless, "c", ("extra int NULL",))


def test_a_table_without_a_key_matches_every_column_and_one_of_only_keys_updates_nothing() -> None:
    keyless = TableSchema("shop", "log", SCHEMA.columns)
    delete, insert = merge(TARGET, "stage", keyless, whole_images=True)
    assert delete == "DELETE t FROM `shop`.`orders` AS t JOIN stage AS s ON t.`id` <=> s.c0 AND t.`note` <=> s.c1"
    assert insert.endswith("SELECT s.c0, s.c1 FROM stage AS s WHERE s.cdclake_op <> 'delete'")
    only_keys = TableSchema("shop", "tags", SCHEMA.columns,
                            (IndexSchema("PRIMARY", ("id", "note"), unique=True, primary=True),))
    assert merge(TARGET, "stage", only_keys, whole_images=True)[1].endswith(
        "ON DUPLICATE KEY UPDATE `id` = `shop`.`orders`.`id`")


def test_column_changes_are_planned_against_the_table_as_it_is() -> None:
    changes = [AddColumn(ColumnSchema("qty", T("int")), fill="0"), RenameColumn("NOTE", "remark"),
               ModifyColumn(ColumnSchema("remark", T("varbinary(20)"))), DropColumn("qty"), DropColumn("gone"),
               SetKey(("id", "remark"))]
    held = {"id": "bigint(20)", "note": "varchar(20)"}
    assert alter(TARGET, changes, held, ["id"]) == [
        "ALTER TABLE `shop`.`orders` ADD COLUMN `qty` int NULL DEFAULT ('0')",
        "ALTER TABLE `shop`.`orders` RENAME COLUMN `note` TO `remark`",
        "ALTER TABLE `shop`.`orders` MODIFY COLUMN `remark` varbinary(20) NULL",
        "ALTER TABLE `shop`.`orders` DROP COLUMN `qty`",
        "ALTER TABLE `shop`.`orders` DROP KEY cdclake_key, ADD UNIQUE KEY cdclake_key (`id`, `remark`)",
    ]
    # Run again after a crash, a change the table has is nothing to do.
    done = {"id": "bigint(20)", "remark": "varbinary(20)", "qty": "int(11)"}
    assert alter(TARGET, [*changes[:3], changes[-1]], done, ["id", "remark"]) == []
