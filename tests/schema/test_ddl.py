"""DDL statements read into schema changes: the DDLs of the third-party vectors as the codecs decode them,
every statement form the reader follows, the Simple protocol's schemas, and schema tracking."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cdclake.formats import get_codec
from cdclake.model import ColumnSchema, Ddl, DdlKind, IndexSchema, Origin, RawMessage, TableSchema
from cdclake.schema.ddl import DdlInterpretError, interpret, table_before
from cdclake.schema.ddl.changes import (
    AddColumn,
    CreateTable,
    DropColumn,
    DropDatabase,
    DropTable,
    ModifyColumn,
    RenameColumn,
    RenameTable,
    SchemaChange,
    SetKey,
    TruncateTable,
    schema_after,
)
from cdclake.types import MySQLType

T = MySQLType.parse


def ddl(sql: str, database: str = "shop", table: str = "t", **fields: Any) -> Ddl:
    return Ddl(DdlKind.OTHER, database, table, sql, commit_ts=450000000000000001, **fields)


def column(name: str, type_text: str, nullable: bool = True, default: str | None = None) -> ColumnSchema:
    return ColumnSchema(name, T(type_text), nullable, default)


def table(*columns: ColumnSchema, key: tuple[str, ...] = ("id",), name: str = "t") -> TableSchema:
    indexes = (IndexSchema("PRIMARY", key, unique=True, primary=True),) if key else ()
    return TableSchema("shop", name, columns, indexes)


BASE = table(column("id", "int", nullable=False), column("name", "varchar(20)"), column("price", "decimal(10,2)"))


def created(sql: str) -> TableSchema:
    changes = interpret(ddl(sql), None)
    assert len(changes) == 1 and isinstance(changes[0], CreateTable), changes
    return changes[0].schema


# --- the vectors ----------------------------------------------------------------------------------------


def _canal_ddls(path: Path) -> list[Ddl]:
    """The DDL messages of a Canal-JSON vector file, decoded (some files hold rows meant not to decode)."""
    decoder = get_codec("canal-json").decoder()
    found = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if _is_ddl_message(line):
            events = decoder.decode(RawMessage(None, line.strip(), Origin(file=path.name, line=number)))
            found += [event for event in events if isinstance(event, Ddl)]
    return found


def _is_ddl_message(line: bytes) -> bool:
    try:
        message = json.loads(line)
    except ValueError:
        return False  # a licence line, a pretty-printed part, or a message broken on purpose
    return isinstance(message, dict) and message.get("isDdl") is True


def test_every_ddl_of_the_canal_vectors_is_read(vectors: Path) -> None:
    """Each file's DDLs in order, each table's schema tracked from its CREATE TABLE or, for the Paimon
    files that only alter, from an empty table."""
    read = 0
    for path in sorted((vectors / "canal").glob("*.*")):
        schemas: dict[tuple[str, str], TableSchema | None] = {}
        for event in _canal_ddls(path):
            key = (event.database, event.table)
            current = schemas.get(key, TableSchema(*key, ()))
            schemas[key] = schema_after(current, interpret(event, current))
            read += 1
    assert read >= 30


def test_a_multi_specification_alter_from_the_vectors(vectors: Path) -> None:
    (event,) = _canal_ddls(vectors / "canal" / "paimon__canal__table__schemaevolutionmultiple__canal-data-2.txt")
    current = table(column("id", "int", nullable=False), column("v1", "varchar(10)"), column("v2", "int"))
    assert interpret(event, current) == [
        AddColumn(column("v4", "int")),
        ModifyColumn(column("v1", "varchar(20)")),
        AddColumn(column("v5", "double")),
        AddColumn(column("v6", "decimal(5,3)")),
        AddColumn(column("$% ^,& *(", "varchar(10)")),
        ModifyColumn(column("v2", "bigint")),
    ]


def test_a_create_table_from_the_vectors(vectors: Path) -> None:
    events = _canal_ddls(vectors / "canal" / "seatunnel__kafka-e2e__canal_data.txt")
    assert [interpret(event, None) for event in events if event.kind is not DdlKind.CREATE_TABLE] == [[], []]
    (create,) = (event for event in events if event.kind is DdlKind.CREATE_TABLE)
    assert interpret(create, None) == [CreateTable(TableSchema(
        "canal_hvygfc", "products",
        (column("id", "int", nullable=False), column("name", "varchar(255)", False, "SeaTunnel"),
         column("description", "varchar(512)"), column("weight", "varchar(512)")),
        (IndexSchema("PRIMARY", ("id",), unique=True, primary=True),),
    ))]


def test_drop_database_from_the_vectors(vectors: Path) -> None:
    (event,) = _canal_ddls(vectors / "canal" / "docs-cn__ticdc-canal-json.jsonl")
    assert interpret(event, None) == [DropDatabase("test")]


def test_the_simple_protocol_alter_takes_the_schema_after(vectors: Path) -> None:
    decoder = get_codec("simple").decoder()
    lines = (vectors / "ticdc-simple" / "docs-cn__ticdc-simple-protocol.jsonl").read_bytes().splitlines()
    (event,) = decoder.decode(RawMessage(None, lines[0], Origin(file="simple", line=1)))
    assert isinstance(event, Ddl) and event.schema_after is not None
    (change,) = interpret(event, None)
    assert change == AddColumn(event.schema_after.column("createTime"), None, False)
    tracked = schema_after(event.schema_before, [change])
    assert tracked is not None
    assert (tracked.columns, tracked.indexes) == (event.schema_after.columns, event.schema_after.indexes)


# --- CREATE TABLE -------------------------------------------------------------------------------------------


def test_create_table_reads_types_as_written_with_mysqls_defaults() -> None:
    schema = created(
        "CREATE TABLE IF NOT EXISTS `shop`.`t` (c1 bigint(20) unsigned zerofill, c2 real, c3 int8, c4 long, "
        "c5 double precision, c6 float(53), c7 float(10), c8 decimal, c9 numeric(12), c10 bit, c11 time, "
        "c12 datetime(3), c13 national varchar(10), c14 varchar(8) character set binary, c15 point, "
        "c16 enum('a','it''s','c,d'), c17 set('x') CHARSET utf8mb4 COLLATE utf8mb4_bin, c18 bool, "
        "c19 char(4) binary, c20 serial)"
    )
    assert [str(c.type) for c in schema.columns] == [
        "bigint(20) unsigned zerofill", "double", "bigint", "mediumtext", "double", "double", "float",
        "decimal(10,0)", "decimal(12,0)", "bit(1)", "time(0)", "datetime(3)", "varchar(10)", "varbinary(8)",
        "point", "enum('a','it''s','c,d')", "set('x')", "tinyint(1)", "char(4)", "bigint unsigned",
    ]
    assert (schema.columns[16].charset, schema.columns[16].collation) == ("utf8mb4", "utf8mb4_bin")


def test_create_table_reads_nullability_defaults_and_keys() -> None:
    schema = created(
        "CREATE TABLE t (\n"
        "  id int /*T![auto_rand] AUTO_RANDOM(5) */ NOT NULL AUTO_INCREMENT COMMENT 'the, key',\n"
        "  a varchar(5) DEFAULT 'it''s' NOT NULL,\n"
        "  b decimal(5,2) DEFAULT -1.5,\n"
        "  c bit(3) DEFAULT b'101',\n"
        "  d timestamp(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6) ON UPDATE CURRENT_TIMESTAMP(6),\n"
        "  e varchar(3) DEFAULT _utf8mb4'x' NULL,\n"
        "  f int GENERATED ALWAYS AS (id + 1) VIRTUAL,\n"
        "  g tinyint(1) DEFAULT TRUE,\n"
        "  h char(36) DEFAULT (uuid()),\n"
        "  i int DEFAULT NULL UNIQUE,\n"
        "  j int CHECK (j > 0) REFERENCES other (k) ON DELETE CASCADE,\n"
        "  PRIMARY KEY (id) /*T![clustered_index] CLUSTERED */,\n"
        "  UNIQUE KEY uk (a(3), b DESC),\n"
        "  KEY ix (c),\n"
        "  CONSTRAINT fk FOREIGN KEY (j) REFERENCES other (k)\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 PARTITION BY HASH(id) PARTITIONS 4"
    )
    assert [(c.name, c.nullable, c.default) for c in schema.columns] == [
        ("id", False, None), ("a", False, "it's"), ("b", True, "-1.5"), ("c", True, "5"),
        ("d", False, "CURRENT_TIMESTAMP(6)"), ("e", True, "x"), ("f", True, None), ("g", True, "1"),
        ("h", True, "(uuid())"), ("i", True, None), ("j", True, None),
    ]
    assert schema.indexes == (
        IndexSchema("PRIMARY", ("id",), unique=True, primary=True),
        IndexSchema("i", ("i",), unique=True),
        IndexSchema("uk", ("a", "b"), unique=True),
    )
    assert schema.key_columns == ("id",)


def test_an_inline_primary_key_makes_its_column_not_null() -> None:
    schema = created("CREATE TABLE t (id int PRIMARY KEY, v varchar(16))")
    assert schema.column("id").nullable is False
    assert schema.key_columns == ("id",)


def test_create_table_takes_the_producers_names() -> None:
    (change,) = interpret(ddl("CREATE TABLE `other`.`x` (id int)", "shop", "t"), None)
    assert isinstance(change, CreateTable) and (change.schema.database, change.schema.table) == ("shop", "t")


def test_the_simple_protocol_create_table_is_its_schema_after() -> None:
    assert interpret(ddl("CREATE TABLE t LIKE u", schema_after=BASE), None) == [CreateTable(BASE)]


@pytest.mark.parametrize("sql", ["CREATE TABLE t LIKE u", "create table a"])
def test_a_create_table_without_columns_needs_another_schema(sql: str) -> None:
    with pytest.raises(DdlInterpretError, match="another table's schema"):
        interpret(ddl(sql), None)


# --- ALTER TABLE --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "changes"),
    [
        ("ALTER TABLE t ADD COLUMN c int", [AddColumn(column("c", "int"))]),
        ("ALTER TABLE t ADD c int FIRST", [AddColumn(column("c", "int"), first=True)]),
        ("ALTER TABLE t ADD c int AFTER NAME", [AddColumn(column("c", "int"), after="name")]),
        ("ALTER TABLE t ADD COLUMN IF NOT EXISTS Name int", []),
        ("ALTER TABLE t ADD COLUMN (a int, b text)", [AddColumn(column("a", "int")), AddColumn(column("b", "text"))]),
        ("ALTER TABLE t ADD c int NOT NULL", [AddColumn(column("c", "int", nullable=False), fill="0")]),
        ("ALTER TABLE t ADD c varchar(3) NOT NULL", [AddColumn(column("c", "varchar(3)", nullable=False), fill="")]),
        ("ALTER TABLE t ADD c enum('x','y') NOT NULL",
         [AddColumn(column("c", "enum('x','y')", nullable=False), fill="x")]),
        ("ALTER TABLE t ADD c int DEFAULT 7", [AddColumn(column("c", "int", default="7"), fill="7")]),
        ("ALTER TABLE t ADD c datetime DEFAULT NOW()", [AddColumn(column("c", "datetime(0)", default="NOW()"))]),
        ("ALTER TABLE t ADD c date NOT NULL", [AddColumn(column("c", "date", nullable=False))]),
        ("ALTER TABLE t ADD c int PRIMARY KEY", [AddColumn(column("c", "int")), SetKey(("c",))]),
        ("ALTER TABLE t DROP COLUMN NAME", [DropColumn("name")]),
        ("ALTER TABLE t DROP price", [DropColumn("price")]),
        ("ALTER TABLE t DROP COLUMN IF EXISTS gone", []),
        ("ALTER TABLE t MODIFY COLUMN price decimal(12,2) NOT NULL",
         [ModifyColumn(column("price", "decimal(12,2)", nullable=False))]),
        ("ALTER TABLE t MODIFY name varchar(40) FIRST", [ModifyColumn(column("name", "varchar(40)"))]),
        ("ALTER TABLE t CHANGE COLUMN name title varchar(40)",
         [RenameColumn("name", "title"), ModifyColumn(column("title", "varchar(40)"))]),
        ("ALTER TABLE t CHANGE price price decimal(10,3)", [ModifyColumn(column("price", "decimal(10,3)"))]),
        ("ALTER TABLE t RENAME COLUMN Name TO title", [RenameColumn("name", "title")]),
        ("ALTER TABLE t ALTER COLUMN name SET DEFAULT 'x'", [ModifyColumn(column("name", "varchar(20)", default="x"))]),
        ("ALTER TABLE t ALTER name DROP DEFAULT", [ModifyColumn(column("name", "varchar(20)"))]),
        ("ALTER TABLE t ALTER COLUMN name SET INVISIBLE", []),
        ("ALTER TABLE t ADD PRIMARY KEY (id, name)", [SetKey(("id", "name"))]),
        ("ALTER TABLE t ADD CONSTRAINT pk PRIMARY KEY CLUSTERED (name)", [SetKey(("name",))]),
        ("ALTER TABLE t DROP PRIMARY KEY", [SetKey(())]),
        ("ALTER TABLE t DROP INDEX `PRIMARY`", [SetKey(())]),
        ("ALTER TABLE t ADD UNIQUE KEY uk (name), ADD INDEX ix (price), DROP INDEX old, RENAME INDEX a TO b", []),
        ("ALTER TABLE t ADD CONSTRAINT fk FOREIGN KEY (id) REFERENCES u (id), DROP FOREIGN KEY fk2", []),
        ("ALTER TABLE t RENAME TO u", [RenameTable("shop", "u")]),
        ("ALTER TABLE t RENAME AS other.u", [RenameTable("other", "u")]),
        ("ALTER TABLE t COMMENT 'x', AUTO_INCREMENT = 5, ENGINE = InnoDB, ALGORITHM = INSTANT, LOCK = NONE", []),
        ("ALTER TABLE t CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", []),
        ("ALTER TABLE t SET TIFLASH REPLICA 1", []),
        ("ALTER TABLE t ADD PARTITION (PARTITION p9 VALUES LESS THAN (900))", []),
        ("ALTER TABLE t REORGANIZE PARTITION p0 INTO (PARTITION a VALUES LESS THAN (5))", []),
        ("ALTER TABLE t PARTITION BY HASH(id) PARTITIONS 4", []),
    ],
)
def test_alter_table(sql: str, changes: list[SchemaChange]) -> None:
    assert interpret(ddl(sql), BASE) == changes


def test_an_alter_reads_each_specification_against_the_schema_the_earlier_ones_left() -> None:
    sql = "ALTER TABLE t RENAME COLUMN name TO title, MODIFY TITLE varchar(50), DROP COLUMN Title"
    assert interpret(ddl(sql), BASE) == [
        RenameColumn("name", "title"), ModifyColumn(column("title", "varchar(50)")), DropColumn("title"),
    ]


@pytest.mark.parametrize(
    "sql", ["ALTER TABLE t DROP PARTITION p0", "ALTER TABLE t TRUNCATE PARTITION p0, p1",
            "ALTER TABLE t EXCHANGE PARTITION p0 WITH TABLE u", "FLASHBACK TABLE t TO t2", "RECOVER TABLE t"],
)
def test_statements_that_change_rows_without_row_events_are_refused(sql: str) -> None:
    with pytest.raises(DdlInterpretError, match="450000000000000001") as raised:
        interpret(ddl(sql, schema_before=BASE, schema_after=BASE), BASE)
    assert sql in str(raised.value)


# --- other statements ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sql", "changes"),
    [
        ("DROP TABLE t", [DropTable()]),
        ("DROP TABLE IF EXISTS shop.a, `T` CASCADE", [DropTable()]),
        ("DROP TABLE a, b", []),
        ("TRUNCATE t", [TruncateTable()]),
        ("truncate table shop.t", [TruncateTable()]),
        ("DROP DATABASE IF EXISTS shop", [DropDatabase("shop")]),
        ("CREATE DATABASE IF NOT EXISTS shop", []),
        ("CREATE UNIQUE INDEX ix ON t (name)", []),
        ("DROP INDEX ix ON t", []),
        ("DROP INDEX `PRIMARY` ON t", [SetKey(())]),
        ("CREATE ALGORITHM=UNDEFINED DEFINER=`root`@`%` SQL SECURITY DEFINER VIEW v AS SELECT * FROM t", []),
        ("CREATE OR REPLACE VIEW v AS SELECT 1", []),
        ("DROP VIEW IF EXISTS v", []),
        ("CREATE SEQUENCE s", []),
        ("ALTER DATABASE shop CHARACTER SET utf8mb4", []),
        ("/* DMS */ -- note\n ALTER TABLE t ADD c int;", [AddColumn(column("c", "int"))]),
    ],
)
def test_other_statements(sql: str, changes: list[SchemaChange]) -> None:
    assert interpret(ddl(sql), BASE) == changes


def test_several_statements_keep_those_naming_the_table() -> None:
    sql = "ALTER TABLE other ADD x int; ALTER TABLE t ADD y int; CREATE TABLE z (a int); TRUNCATE shop.t"
    assert interpret(ddl(sql), BASE) == [AddColumn(column("y", "int")), TruncateTable()]


@pytest.mark.parametrize("sql", ["SELECT 1", "GARBAGE", "select 'unterminated", "ALTER TABLE"])
def test_what_cannot_be_read_is_an_error_naming_the_statement_and_the_commit_ts(sql: str) -> None:
    with pytest.raises(DdlInterpretError) as raised:
        interpret(ddl(sql), BASE)
    assert "commit ts 450000000000000001" in str(raised.value) and repr(sql) in str(raised.value)


# --- renames ------------------------------------------------------------------------------------------------

RENAMES = "RENAME TABLE a TO b, shop.t TO archive.t_old, c TO d"


@pytest.mark.parametrize(
    ("database", "name", "renamed", "before"),
    [
        ("archive", "t_old", RenameTable("archive", "t_old"), ("shop", "t")),  # TiCDC: the new name
        ("shop", "t", RenameTable("archive", "t_old"), ("shop", "t")),  # a producer naming the old one
        ("shop", "D", RenameTable("shop", "d"), ("shop", "c")),  # unqualified: the Ddl's database
    ],
)
def test_rename_tables_picks_the_pair_of_the_ddls_table(
    database: str, name: str, renamed: RenameTable, before: tuple[str, str]
) -> None:
    event = ddl(RENAMES, database, name)
    assert interpret(event, BASE) == [renamed]
    assert table_before(event) == before


def test_a_rename_of_other_tables_is_an_error() -> None:
    with pytest.raises(DdlInterpretError, match=r"renames no table named shop\.t"):
        interpret(ddl("RENAME TABLE a TO b"), BASE)


def test_table_before() -> None:
    assert table_before(ddl("ALTER TABLE t ADD x int, RENAME TO u", "shop", "u")) == ("shop", "t")
    assert table_before(ddl("ALTER TABLE t RENAME COLUMN a TO b")) == ("shop", "t")
    assert table_before(ddl("RENAME TABLE a TO b", "s", "x", schema_before=BASE)) == ("shop", "t")
    assert table_before(ddl("not sql '")) == ("shop", "t")


# --- Simple protocol: SQL and schemas together -------------------------------------------------------------


def test_the_simple_protocol_keeps_a_column_rename_and_adds_what_the_sql_did_not_say() -> None:
    after = table(column("id", "int", nullable=False), ColumnSchema("title", T("varchar(20)"), charset="latin1"),
                  column("price", "decimal(10,2)"), column("added", "bigint", nullable=False))
    sql = "ALTER TABLE t RENAME COLUMN name TO title, ADD COLUMN added bigint NOT NULL, CONVERT TO CHARACTER SET latin1"
    assert interpret(ddl(sql, schema_before=BASE, schema_after=after), None) == [
        RenameColumn("name", "title"),
        AddColumn(after.column("added"), fill="0"),
        ModifyColumn(after.column("title")),
    ]


def test_the_simple_protocol_falls_back_to_the_difference_when_the_sql_is_unreadable() -> None:
    after = table(column("id", "bigint", nullable=False), column("name", "varchar(20)"), column("extra", "json"),
                  key=("id", "name"))
    assert interpret(ddl("ALTER TABLE t SOMETHING NEW '", schema_before=BASE, schema_after=after), None) == [
        DropColumn("price"),
        ModifyColumn(after.column("id")),
        AddColumn(after.column("extra"), after="name"),
        SetKey(("id", "name")),
    ]


# --- schema tracking ------------------------------------------------------------------------------------------


def test_schema_after_places_columns_and_follows_renames_in_indexes() -> None:
    schema = table(column("id", "int", nullable=False), column("a", "int"), column("b", "int"), key=("id", "a"))
    schema = schema_after(schema, [
        AddColumn(column("first", "int"), first=True),
        AddColumn(column("middle", "int"), after="A"),
        AddColumn(column("last", "int")),
        RenameColumn("a", "renamed"),
        RenameTable("other", "u"),
    ])
    assert schema is not None
    assert [c.name for c in schema.columns] == ["first", "id", "renamed", "middle", "b", "last"]
    assert schema.key_columns == ("id", "renamed")
    assert (schema.database, schema.table) == ("other", "u")


def test_schema_after_drops_a_column_from_its_indexes_and_an_index_left_empty() -> None:
    schema = TableSchema("shop", "t", (column("a", "int"), column("b", "int")), (
        IndexSchema("PRIMARY", ("a", "b"), unique=True, primary=True), IndexSchema("ub", ("b",), unique=True)))
    schema = schema_after(schema, [DropColumn("B")])
    assert schema is not None
    assert schema.indexes == (IndexSchema("PRIMARY", ("a",), unique=True, primary=True),)


def test_schema_after_set_key_and_modify() -> None:
    schema = schema_after(BASE, [SetKey(("name",)), ModifyColumn(column("price", "decimal(12,2)"))])
    assert schema is not None and schema.key_columns == ("name",)
    assert schema.column("name").nullable is False
    assert str(schema.column("price").type) == "decimal(12,2)"
    assert schema_after(schema, [SetKey(())]) == TableSchema("shop", "t", schema.columns, ())


def test_schema_after_create_drop_and_unknown_tables() -> None:
    assert schema_after(None, [CreateTable(BASE), TruncateTable()]) == BASE
    assert schema_after(BASE, [DropTable()]) is None
    assert schema_after(BASE, [DropDatabase("SHOP")]) is None
    assert schema_after(BASE, [DropDatabase("other")]) == BASE
    assert schema_after(None, [AddColumn(column("c", "int"))]) is None
