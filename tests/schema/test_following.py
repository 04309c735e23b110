"""DDLs the job cannot follow, under each ``unsupported-ddl`` policy, and ``CREATE TABLE ... LIKE`` given the
schema the job knows of the table it copies (cdclake.schema.following, cdclake.schema.ddl), without Spark."""

from __future__ import annotations

import dataclasses

import pytest

from cdclake.model import DdlKind, IndexSchema, Origin, TableSchema
from cdclake.schema.ddl import DdlInterpretError, interpret, interpret_in_part, like_source
from cdclake.schema.ddl.changes import AddColumn, CreateTable, DropColumn, DropTable, RenameTable
from cdclake.schema.following import DdlFollower, Followed, UnsupportedDdlError, changes_to_apply
from tests.schema.test_ddl import BASE, column, ddl, table

TRUNCATE_PARTITION = "ALTER TABLE t TRUNCATE PARTITION p0"
MIXED = "ALTER TABLE t ADD COLUMN a int, ADD COLUMN b nosuchtype, DROP COLUMN price"


def follower(policy: str) -> DdlFollower:
    return DdlFollower({("shop", "t"): BASE}, policy)  # type: ignore[arg-type]


# --- reading a DDL in part ------------------------------------------------------------------------------


def test_a_ddl_followed_whole_is_read_as_interpret_reads_it() -> None:
    event = ddl("ALTER TABLE t ADD COLUMN a int")
    assert interpret_in_part(event, BASE) == (interpret(event, BASE), [])


def test_each_alter_specification_is_followed_or_refused_on_its_own() -> None:
    changes, refused = interpret_in_part(ddl(MIXED), BASE)
    assert changes == [AddColumn(column("a", "int")), DropColumn("price")]
    assert refused == ["'ADD COLUMN b nosuchtype': unknown MySQL type 'nosuchtype' in 'nosuchtype'"]


def test_each_statement_is_followed_or_refused_on_its_own() -> None:
    sql = "ALTER TABLE t ADD COLUMN a int; ALTER TABLE t DROP PARTITION p1; FLASHBACK TABLE t"
    changes, refused = interpret_in_part(ddl(sql), BASE)
    assert changes == [AddColumn(column("a", "int"))]
    assert refused[0] == ("'DROP PARTITION p1': ALTER TABLE ... DROP PARTITION deletes the partition's rows "
                          "without a row event for them")
    assert refused[1].startswith("'FLASHBACK TABLE t': FLASHBACK and RECOVER TABLE")


def test_sql_that_cannot_be_read_at_all_gives_no_change() -> None:
    changes, refused = interpret_in_part(ddl("select 'unterminated"), BASE)
    assert changes == [] and len(refused) == 1 and "not readable as SQL" in refused[0]


# --- CREATE TABLE ... LIKE ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("sql", "source"), [
    ("CREATE TABLE u LIKE t", ("shop", "t")),
    ("create table if not exists `u` like `other`.`T`", ("other", "T")),
    ("CREATE TABLE u (LIKE t)", ("shop", "t")),
    ("CREATE TABLE u (id int)", None),
    ("ALTER TABLE u ADD COLUMN a int", None),
])
def test_like_source_names_the_table_copied(sql: str, source: tuple[str, str] | None) -> None:
    assert like_source(ddl(sql, table="u")) == source


@pytest.mark.parametrize("sql", ["CREATE TABLE u LIKE T", "CREATE TABLE shop.u (LIKE `shop`.`t`)"])
def test_a_like_gets_the_schema_the_job_knows_of_the_table_it_copies(sql: str) -> None:
    followed = follower("stop").follow(ddl(sql, table="u"))
    assert followed.refusal is None and followed.ddl is not None
    expected = table(*BASE.columns, name="u")
    assert followed.ddl.schema_after == expected
    assert interpret(followed.ddl, None) == [CreateTable(expected)]


def test_a_like_sees_what_the_batch_made_of_the_table_before_it() -> None:
    batch = follower("stop")
    batch.follow(ddl("ALTER TABLE t ADD COLUMN a int, DROP PRIMARY KEY, ADD UNIQUE KEY uk (id)"))
    batch.follow(ddl("RENAME TABLE t TO moved", table="moved"))
    followed = batch.follow(ddl("CREATE TABLE u LIKE moved", table="u"))
    assert followed.ddl is not None and followed.ddl.schema_after is not None
    assert [c.name for c in followed.ddl.schema_after.columns] == ["id", "name", "price", "a"]
    assert followed.ddl.schema_after.indexes == ()  # ADD UNIQUE KEY is no change the job keeps
    with pytest.raises(UnsupportedDdlError, match=r"no schema of shop\.t"):  # renamed away
        batch.follow(ddl("CREATE TABLE v LIKE t", table="v"))


def test_a_like_of_a_table_the_job_knows_no_schema_of_cannot_be_followed() -> None:
    with pytest.raises(UnsupportedDdlError, match=r"LIKE shop\.unknown: the job knows no schema of shop\.unknown"):
        follower("stop").follow(ddl("CREATE TABLE u LIKE unknown", table="u"))
    followed = follower("skip").follow(ddl("CREATE TABLE u LIKE unknown", table="u"))
    assert followed.ddl is None and followed.refusal is not None and "DDL of shop.u" in followed.refusal


def test_a_dropped_table_cannot_be_copied_after_its_drop() -> None:
    batch = follower("skip")
    assert batch.follow(ddl("DROP TABLE t")) == Followed(ddl("DROP TABLE t"), changes=(DropTable(),), schema=BASE)
    assert batch.follow(ddl("CREATE TABLE u LIKE t", table="u")).ddl is None


def test_the_simple_protocols_schema_after_is_kept() -> None:
    other = table(column("x", "int"), key=(), name="u")
    event = ddl("CREATE TABLE u LIKE t", table="u", schema_after=other)
    followed = follower("stop").follow(event)
    assert (followed.ddl, followed.refusal, followed.schema) == (event, None, None)  # a table new to the job


# --- the policies -------------------------------------------------------------------------------------------


def test_stop_names_the_ddl_its_table_commit_ts_place_and_the_option() -> None:
    event = dataclasses.replace(ddl(TRUNCATE_PARTITION), origin=Origin("cdc", 2, 41))
    with pytest.raises(UnsupportedDdlError) as stopped:
        follower("stop").follow(event)
    message = str(stopped.value)
    for named in ("DDL of shop.t", "commit ts 450000000000000001", "at cdc[2]@41", "TRUNCATE PARTITION",
                  "unsupported-ddl = skip or apply-supported", repr(TRUNCATE_PARTITION)):
        assert named in message, f"{named} is not named in: {message}"


def test_skip_leaves_the_whole_ddl_out_with_its_reason() -> None:
    batch = follower("skip")
    followed = batch.follow(ddl(MIXED))
    assert followed.ddl is None and followed.refusal is not None
    assert "'ADD COLUMN b nosuchtype'" in followed.refusal and "the rest applied" not in followed.refusal
    # Nothing of it reached the schema: a later copy has the columns as they were.
    copy = batch.follow(ddl("CREATE TABLE u LIKE t", table="u")).ddl
    assert copy is not None and copy.schema_after is not None and copy.schema_after.columns == BASE.columns


def test_apply_supported_keeps_what_it_can_follow_and_dead_letters_the_rest() -> None:
    batch = follower("apply-supported")
    event = ddl(MIXED)
    followed = batch.follow(event)
    assert followed.ddl == event and followed.refusal is not None
    assert "'ADD COLUMN b nosuchtype'" in followed.refusal and "(the rest applied)" in followed.refusal
    assert changes_to_apply(event, BASE, "apply-supported") == [AddColumn(column("a", "int")), DropColumn("price")]
    copy = batch.follow(ddl("CREATE TABLE u LIKE t", table="u")).ddl
    assert copy is not None and copy.schema_after is not None
    assert [c.name for c in copy.schema_after.columns] == ["id", "name", "a"]


def test_apply_supported_with_nothing_to_apply_leaves_the_ddl_out() -> None:
    followed = follower("apply-supported").follow(ddl(TRUNCATE_PARTITION))
    assert followed.ddl is None and followed.refusal is not None


@pytest.mark.parametrize("policy", ["stop", "skip", "apply-supported"])
def test_a_ddl_it_can_follow_passes_under_every_policy(policy: str) -> None:
    for sql, change in (("ALTER TABLE t RENAME TO v", RenameTable("shop", "v")), ("DROP TABLE t", DropTable())):
        event = ddl(sql)
        # With what is made of it, to the table as the job knew it: what the planning judges segments by.
        assert follower(policy).follow(event) == Followed(event, changes=(change,), schema=BASE)
        assert changes_to_apply(event, BASE, policy) == [change]  # type: ignore[arg-type]


def test_changes_to_apply_outside_apply_supported_is_interpret_and_raises_as_it_does() -> None:
    with pytest.raises(DdlInterpretError, match="TRUNCATE PARTITION"):
        changes_to_apply(ddl(TRUNCATE_PARTITION), BASE, "skip")


def test_a_ddl_without_a_table_is_passed_on_unread() -> None:
    event = dataclasses.replace(ddl("ALTER INSTANCE RELOAD TLS", table=""), kind=DdlKind.OTHER)
    assert follower("stop").follow(event) == Followed(event)


def test_drop_database_forgets_its_tables() -> None:
    batch = follower("skip")
    batch.follow(dataclasses.replace(ddl("DROP DATABASE shop", table=""), kind=DdlKind.DROP_DATABASE))
    assert batch.follow(ddl("CREATE TABLE u LIKE t", table="u")).ddl is None


def test_the_key_of_a_copy_is_the_sources() -> None:
    copy = follower("stop").follow(ddl("CREATE TABLE u LIKE t", table="u")).ddl
    assert copy is not None and copy.schema_after is not None
    assert copy.schema_after.indexes == (IndexSchema("PRIMARY", ("id",), unique=True, primary=True),)


def test_a_table_known_only_from_the_batchs_rows_is_copied_as_they_show_it() -> None:
    shown = table(column("id", "int"), column("x", "text"), name="r")
    asked: list[tuple[str, str]] = []

    def rows_schema(key: tuple[str, str]) -> TableSchema | None:
        asked.append(key)
        return shown if key == ("shop", "r") else None

    batch = DdlFollower({}, "skip", rows_schema)
    copy = batch.follow(ddl("CREATE TABLE u LIKE r", table="u")).ddl
    assert copy is not None and copy.schema_after == table(*shown.columns, name="u")
    assert batch.follow(ddl("CREATE TABLE v LIKE none", table="v")).ddl is None
    # Rows do not bring back a table the batch dropped or renamed away before the LIKE.
    batch.follow(ddl("DROP TABLE r", table="r"))
    assert batch.follow(ddl("CREATE TABLE w LIKE r", table="w")).ddl is None
    assert asked == [("shop", "r"), ("shop", "none")]
