"""MySQL schema changes planned for an Iceberg table: in-place changes, refusals naming the way out,
rewrites, fills of added columns, resuming after a crash at any step, and the Spark SQL."""

from __future__ import annotations

import pytest

from cdclake.errors import OptionError
from cdclake.model import ColumnSchema, IndexSchema, TableSchema
from cdclake.schema.ddl.changes import (
    AddColumn,
    DropColumn,
    DropTable,
    ModifyColumn,
    RenameColumn,
    SchemaChange,
    SetKey,
)
from cdclake.schema.lake import lake_type
from cdclake.schema.policy import EvolutionPolicy, SchemaEvolutionError
from cdclake.sinks.iceberg.evolution import (
    AddLakeColumn,
    DropLakeColumn,
    FillLakeColumn,
    LakeChange,
    RenameLakeColumn,
    WidenLakeColumn,
    alter_statements,
    changes_seen_in_rows,
    plan,
)
from cdclake.types import MySQLType

T = MySQLType.parse
REWRITE = EvolutionPolicy(incompatible_type_change="rewrite")
LAKE = {"id": "int", "qty": "int", "score": "float", "price": "decimal(10,2)", "total": "long", "name": "string"}


def modify(name: str, type_text: str) -> ModifyColumn:
    return ModifyColumn(ColumnSchema(name, T(type_text)))


def add(name: str, type_text: str, fill: str | None = None) -> AddColumn:
    return AddColumn(ColumnSchema(name, T(type_text)), fill=fill)


@pytest.mark.parametrize(
    ("change", "steps"),
    [
        (modify("qty", "mediumint"), []),
        (modify("qty", "int unsigned"), [WidenLakeColumn("qty", "long")]),
        (modify("qty", "bigint"), [WidenLakeColumn("qty", "long")]),
        (modify("score", "double"), [WidenLakeColumn("score", "double")]),
        (modify("price", "decimal(12,2)"), [WidenLakeColumn("price", "decimal(12,2)")]),
        (modify("price", "decimal(10,2) unsigned"), []),
        (modify("name", "varchar(200)"), []),
        (modify("name", "json"), []),
        (modify("total", "bigint"), []),
        (modify("missing", "int"), [AddLakeColumn("missing", "int")]),
        (add("new", "datetime(6)"), [AddLakeColumn("new", "timestamp_ntz")]),
        (add("qty", "int"), []),  # added already: a re-run
        (add("QTY", "bigint"), [WidenLakeColumn("qty", "long")]),
        (DropColumn("Name"), [DropLakeColumn("name")]),
        (DropColumn("gone"), []),
        (RenameColumn("name", "title"), [RenameLakeColumn("name", "title")]),
        (RenameColumn("gone", "title"), []),  # renamed already
        (RenameColumn("name", "Name"), []),
        (SetKey(("id", "qty")), []),
    ],
)
def test_plan(change: SchemaChange, steps: list[LakeChange]) -> None:
    assert plan("lake.shop.t", LAKE, [change], EvolutionPolicy()) == steps


@pytest.mark.parametrize(
    ("change", "held", "wanted"),
    [
        (modify("price", "decimal(10,3)"), "decimal(10,2)", "decimal(10,3)"),
        (modify("price", "decimal(9,2)"), "decimal(10,2)", "decimal(9,2)"),
        (modify("total", "bigint unsigned"), "long", "decimal(20,0)"),
        (modify("qty", "varchar(10)"), "int", "string"),
        (modify("score", "decimal(10,2)"), "float", "decimal(10,2)"),
        (modify("total", "int"), "long", "int"),
        (add("name", "blob"), "string", "binary"),
    ],
)
def test_a_change_iceberg_cannot_make_names_table_column_types_and_option(
    change: ModifyColumn | AddColumn, held: str, wanted: str
) -> None:
    mysql = TableSchema("shop", "t", (ColumnSchema("price", T("decimal(10,2)")),))
    with pytest.raises(SchemaEvolutionError) as raised:
        plan("lake.shop.t", LAKE, [change], mysql_schema=mysql)
    message = str(raised.value)
    name = change.column.name
    assert f"lake.shop.t: column {name!r}" in message
    assert f"lake {held} to MySQL {change.column.type}, lake {wanted}," in message
    assert "incompatible-type-change" in message and "'rewrite'" in message
    if name == "price":
        assert "from MySQL decimal(10,2), lake decimal(10,2)" in message


def test_a_rewrite_rebuilds_the_column_under_a_temporary_name() -> None:
    assert plan("t", LAKE, [modify("total", "bigint unsigned")], REWRITE) == [
        AddLakeColumn("total__cdclake_tmp", "decimal(20,0)"),
        FillLakeColumn("total__cdclake_tmp", "CAST(`total` AS decimal(20,0))"),
        DropLakeColumn("total"),
        RenameLakeColumn("total__cdclake_tmp", "total"),
    ]


@pytest.mark.parametrize(
    ("change", "fill"),
    [
        (add("c", "int", "0"), "try_cast(CAST(X'30' AS STRING) AS int)"),
        (add("c", "varchar(5)", "it's"), "CAST(X'69742773' AS STRING)"),
        (add("c", "decimal(5,3)", "-1.5"), "try_cast(CAST(X'2d312e35' AS STRING) AS decimal(5,3))"),
        (add("c", "enum('x','y')", "x"), "CAST(X'78' AS STRING)"),
        (add("c", "time(0)", "00:00:00"), "CAST(X'30303a30303a30302e303030303030' AS STRING)"),  # six digits
        (add("c", "binary(3)", "a"), f"unbase64(CAST(X'{b'YQAA'.hex()}' AS STRING))"),  # padded: a\0\0
        (add("c", "bit(3)", "5"), "try_cast(CAST(X'35' AS STRING) AS long)"),
    ],
)
def test_an_added_column_is_filled_with_mysqls_value_before_it_shows(change: AddColumn, fill: str) -> None:
    lake = lake_type_of(change)
    assert plan("t", {"id": "int"}, [change]) == [
        AddLakeColumn("c__cdclake_tmp", lake),
        FillLakeColumn("c__cdclake_tmp", fill),
        RenameLakeColumn("c__cdclake_tmp", "c"),
    ]


def lake_type_of(change: AddColumn) -> str:
    return lake_type(change.column.type)


@pytest.mark.parametrize(
    "change",
    [
        add("c", "int"),  # nullable without a default: NULL
        add("c", "datetime", "CURRENT_TIMESTAMP"),  # an expression MySQL evaluated
        add("c", "timestamp", "2024-01-01 00:00:00"),  # a wall clock in an unknown zone
        add("c", "date", "0000-00-00"),  # a zero date: NULL in the lake anyway
        add("c", "point", "x"),
    ],
)
def test_an_added_column_whose_value_the_lake_cannot_know_is_just_added(change: AddColumn) -> None:
    assert plan("t", {"id": "int"}, [change]) == [AddLakeColumn("c", lake_type_of(change))]


def test_fills_can_be_turned_off() -> None:
    policy = EvolutionPolicy(fill_added_columns=False)
    assert plan("t", {"id": "int"}, [add("c", "int", "0")], policy) == [AddLakeColumn("c", "int")]


def test_spark_spelling_of_types_is_understood() -> None:
    assert plan("t", {"Total": "BIGINT", "p": "decimal(10, 2)"}, [modify("total", "bigint"),
                                                                   modify("p", "decimal(10,2)")]) == []


def test_a_rename_onto_an_existing_column_is_refused() -> None:
    with pytest.raises(SchemaEvolutionError, match="already has a column 'qty'"):
        plan("t", LAKE, [RenameColumn("name", "qty")])


def test_table_changes_are_not_planned() -> None:
    with pytest.raises(ValueError, match="DropTable of t is the pipeline's"):
        plan("t", LAKE, [DropTable()])


def test_the_policy_refuses_unknown_values() -> None:
    with pytest.raises(OptionError, match="fail, rewrite"):
        EvolutionPolicy(incompatible_type_change="ignore")  # type: ignore[arg-type]


def test_later_changes_see_the_earlier_ones() -> None:
    changes = [RenameColumn("qty", "quantity"), modify("quantity", "bigint"), add("qty", "varchar(3)")]
    assert plan("t", LAKE, changes) == [
        RenameLakeColumn("qty", "quantity"), WidenLakeColumn("quantity", "long"), AddLakeColumn("qty", "string"),
    ]


# --- resuming after a crash at any step -------------------------------------------------------------------


def _columns_after(columns: dict[str, str], steps: list[LakeChange]) -> dict[str, str]:
    """What the lake table's columns are once ``steps`` ran (a Fill changes values only)."""
    columns = dict(columns)
    for step in steps:
        if isinstance(step, AddLakeColumn | WidenLakeColumn):
            columns[step.name] = step.type
        elif isinstance(step, DropLakeColumn):
            del columns[step.name]
        elif isinstance(step, RenameLakeColumn):
            columns = {step.new if c == step.old else c: t for c, t in columns.items()}
    return columns


RESUMABLE = [
    [modify("total", "bigint unsigned")],
    [add("c", "int", "7")],
    [add("c", "int", "7"), modify("price", "decimal(10,4)"), RenameColumn("name", "title"), DropColumn("qty"),
     modify("score", "double"), add("d", "text")],
]


@pytest.mark.parametrize("changes", RESUMABLE)
def test_planning_again_after_a_crash_at_any_step_gives_the_steps_left(changes: list[SchemaChange]) -> None:
    """Planned again against the columns a crash left, the steps are those not run yet, a fill included
    once more when the crash came right after it (the columns do not show whether an UPDATE ran)."""
    full = plan("t", LAKE, changes, REWRITE)
    for done in range(len(full) + 1):
        left = plan("t", _columns_after(LAKE, full[:done]), changes, REWRITE)
        just_filled = done > 0 and isinstance(full[done - 1], FillLakeColumn)
        assert left == (full[done - 1 :] if just_filled else full[done:]), f"after {done} steps"


# --- row messages ----------------------------------------------------------------------------------------


def test_changes_seen_in_rows() -> None:
    schema = TableSchema("shop", "t", (
        ColumnSchema("id", T("int")), ColumnSchema("price", T("decimal(10,2)"), nullable=False),
        ColumnSchema("flags", T("bit(10)")), ColumnSchema("kind", T("enum('a','b')")),
        ColumnSchema("n", T("int(11) unsigned")),
    ), (IndexSchema("PRIMARY", ("id",), unique=True, primary=True),))
    seen = {"id": T("int"), "PRICE": T("decimal"), "flags": T("bit"), "kind": T("enum"), "n": T("int unsigned"),
            "extra": T("varchar")}
    assert changes_seen_in_rows(schema, seen) == [AddColumn(ColumnSchema("extra", T("varchar")))]
    assert changes_seen_in_rows(schema, {"n": T("bigint")}) == []  # the same lake column
    widened = TableSchema("shop", "t", (ColumnSchema("n", T("bigint")), ColumnSchema("x", T("decimal(12,2)"))))
    # Rows written before the columns were widened: the lake columns hold their values as they are.
    assert changes_seen_in_rows(widened, {"n": T("int"), "x": T("decimal(10,2)")}) == []
    assert changes_seen_in_rows(schema, {"id": T("bigint")}) == [ModifyColumn(ColumnSchema("id", T("bigint")))]
    contradicting = {"price": T("decimal(10,3)"), "n": T("varchar(5)")}
    assert changes_seen_in_rows(schema, contradicting) == [
        ModifyColumn(ColumnSchema("price", T("decimal(10,3)"), nullable=False)),
        ModifyColumn(ColumnSchema("n", T("varchar(5)"))),
    ]


# --- Spark SQL -----------------------------------------------------------------------------------------------


def test_alter_statements_quote_every_name() -> None:
    steps: list[LakeChange] = [
        AddLakeColumn("we`ird col", "decimal(20,0)"),
        FillLakeColumn("we`ird col", "CAST(`a` AS decimal(20,0))"),
        DropLakeColumn("a"),
        RenameLakeColumn("we`ird col", "a"),
        WidenLakeColumn("b", "long"),
    ]
    assert alter_statements("lake.`shop`.`t`", steps) == [
        "ALTER TABLE lake.`shop`.`t` ADD COLUMN `we``ird col` decimal(20,0)",
        "UPDATE lake.`shop`.`t` SET `we``ird col` = CAST(`a` AS decimal(20,0))",
        "ALTER TABLE lake.`shop`.`t` DROP COLUMN `a`",
        "ALTER TABLE lake.`shop`.`t` RENAME COLUMN `we``ird col` TO `a`",
        "ALTER TABLE lake.`shop`.`t` ALTER COLUMN `b` TYPE long",
    ]
