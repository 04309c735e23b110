"""DataWorks JSON: update pairs (a before half held until its after half), transaction marks, DDL and
heartbeats."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from cdclake.errors import DecodeError, EncodeError, OptionError
from cdclake.formats.dataworks.wire import ddl_kind
from cdclake.model import (
    Bootstrap,
    Ddl,
    DdlKind,
    Heartbeat,
    LargeMessageKind,
    LargeMessageRef,
    Op,
    Origin,
    RowChange,
    TableSchema,
    Transaction,
    TransactionMark,
    Watermark,
)
from cdclake.types import MySQLType
from tests.formats.dataworks.helpers import (
    CODEC,
    ROW_11,
    SOURCE,
    SPEC_HEARTBEAT,
    SPEC_INSERT,
    SPEC_UPDATE_AFTER,
    SPEC_UPDATE_BEFORE,
    control,
    decode,
    encode,
    message,
)

# --- update pairs --------------------------------------------------------------------------------------


def with_op(document: str, op: str, **payload: Any) -> str:
    parsed = json.loads(document)
    parsed["payload"]["op"] = op
    parsed["payload"].update(payload)
    return json.dumps(parsed)


def test_paimon_spelling_update_before_pairs_too() -> None:
    (row,) = decode(with_op(SPEC_UPDATE_BEFORE, "UPDATE_BEFORE"), SPEC_UPDATE_AFTER)
    assert isinstance(row, RowChange) and row.op is Op.UPDATE and row.before and row.after
    assert row.meta["updateBefore"]["op"] == "UPDATE_BEFORE"


def test_before_half_is_held_until_its_after_half() -> None:
    decoder = CODEC.decoder()
    assert decoder.decode(message(SPEC_UPDATE_BEFORE, 0)) == []
    (row,) = decoder.decode(message(SPEC_UPDATE_AFTER, 1))
    assert isinstance(row, RowChange) and row.before and row.after


def test_after_half_without_before_is_an_update_with_unknown_before() -> None:
    (row,) = decode(SPEC_UPDATE_AFTER)
    assert isinstance(row, RowChange)
    assert (row.op, row.before, row.after) == (Op.UPDATE, None, ROW_11 | {"sex": "woman"})
    assert row.meta["unpaired"] is True
    assert encode([row]) == [orjson.loads(SPEC_UPDATE_AFTER)]


def test_before_half_followed_by_another_message_comes_out_first_on_its_own() -> None:
    unpaired, insert = decode(SPEC_UPDATE_BEFORE, SPEC_INSERT)
    assert isinstance(unpaired, RowChange) and isinstance(insert, RowChange)
    assert (unpaired.op, unpaired.before, unpaired.after) == (Op.UPDATE, ROW_11 | {"sex": "man"}, None)
    assert unpaired.meta["unpaired"] is True and unpaired.origin == Origin("dw", 0, 0)
    assert insert.op is Op.INSERT
    assert encode([unpaired]) == [orjson.loads(SPEC_UPDATE_BEFORE)]


def test_before_half_with_an_after_half_of_another_update_pairs_with_neither() -> None:
    other = with_op(SPEC_UPDATE_AFTER, "UPDATE_AFTER", sequenceId="1620457642589000009")
    before, after = decode(SPEC_UPDATE_BEFORE, other)
    assert isinstance(before, RowChange) and isinstance(after, RowChange)
    assert (before.after, after.before) == (None, None)


def test_two_before_halves_in_a_row() -> None:
    events = decode(SPEC_UPDATE_BEFORE, SPEC_UPDATE_BEFORE, SPEC_UPDATE_AFTER)
    assert [(e.before is not None, e.after is not None) for e in events] == [(True, False), (True, True)]


def test_before_half_survives_an_undecodable_message_between() -> None:
    decoder = CODEC.decoder()
    assert decoder.decode(message(SPEC_UPDATE_BEFORE, 0)) == []
    with pytest.raises(DecodeError):
        decoder.decode(message(b"{not json", 1))
    (row,) = decoder.decode(message(SPEC_UPDATE_AFTER, 2))
    assert isinstance(row, RowChange) and row.before and row.after


def test_flush_surfaces_a_held_half_once() -> None:
    decoder = CODEC.decoder()
    decoder.decode(message(SPEC_UPDATE_BEFORE))
    (held,) = decoder.flush()
    assert isinstance(held, RowChange) and held.after is None
    assert decoder.flush() == []


def test_control_messages_after_a_held_half_keep_their_order() -> None:
    before, heartbeat = decode(SPEC_UPDATE_BEFORE, SPEC_HEARTBEAT)
    assert isinstance(before, RowChange) and isinstance(heartbeat, Heartbeat)


def test_update_before_op_option_and_shared_sequence_id() -> None:
    row = RowChange(Op.UPDATE, "db", "t", {"id": 1}, {"id": 2}, {"id": MySQLType("int")}, ("id",))
    first, second = encode([row], update_before_op="UPDATE_BEFORE")
    assert (first["payload"]["op"], second["payload"]["op"]) == ("UPDATE_BEFORE", "UPDATE_AFTER")
    assert (first["payload"]["after"], second["payload"]["before"]) == (None, None)
    assert first["payload"]["sequenceId"] == second["payload"]["sequenceId"]
    (one,) = encode([row], one_record_per_update=True)
    assert one["payload"]["op"] == "UPDATE_AFTER"
    assert (one["payload"]["before"], one["payload"]["after"]) == ({"dataColumn": {"id": 1}}, {"dataColumn": {"id": 2}})


def test_update_before_op_option_takes_only_the_two_spellings() -> None:
    with pytest.raises(OptionError):
        CODEC.encoder(update_before_op="UPDATE")


# --- transactions, DDL, heartbeats ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "mark"), [("TRANSACTION_BEGIN", TransactionMark.BEGIN), ("TRANSACTION_END", TransactionMark.END)]
)
def test_transaction_marks(op: str, mark: TransactionMark) -> None:
    (event,) = decode(control(op, source=SOURCE))
    assert event == Transaction(mark, "shop", "orders", Origin("dw", 0, 0), event.meta)
    assert event.meta["sequenceId"] == "7"
    assert encode([event]) == [json.loads(control(op, source=SOURCE))]


@pytest.mark.parametrize(
    ("op", "sql", "kind"),
    [
        ("CREATE", "CREATE TABLE orders (id BIGINT PRIMARY KEY)", DdlKind.CREATE_TABLE),
        ("ALTER", "ADD COLUMN note VARCHAR(20)", DdlKind.ALTER_TABLE),  # the spec's ddl.text is such a fragment
        ("ALTER", "ALTER TABLE orders ADD COLUMN note VARCHAR(20)", DdlKind.ALTER_TABLE),
        ("ERASE", "DROP TABLE orders", DdlKind.DROP_TABLE),
        ("TRUNCATE", "TRUNCATE TABLE orders", DdlKind.TRUNCATE_TABLE),
        ("RENAME", "RENAME TABLE orders TO orders_old", DdlKind.RENAME_TABLE),
        ("CINDEX", "CREATE INDEX idx_note ON orders (note)", DdlKind.CREATE_INDEX),
        ("CINDEX", "ALTER TABLE orders ADD INDEX idx_note (note)", DdlKind.CREATE_INDEX),
        ("DINDEX", "DROP INDEX idx_note ON orders", DdlKind.DROP_INDEX),
        ("CREATE", "CREATE DATABASE shop", DdlKind.CREATE_DATABASE),
        ("QUERY", "/* tool */ drop database shop", DdlKind.DROP_DATABASE),
        ("QUERY", "create unique index u on orders (id)", DdlKind.CREATE_INDEX),
        ("QUERY", "GRANT SELECT ON shop.* TO 'u'", DdlKind.OTHER),
    ],
)
def test_ddl(op: str, sql: str, kind: DdlKind) -> None:
    ddl = {"text": sql, "ddlMeta": "rO0ABXNy"}
    (event,) = decode(control(op, ddl, SOURCE))
    assert isinstance(event, Ddl)
    assert (event.kind, event.database, event.table, event.sql, event.commit_ts) == (kind, "shop", "orders", sql, None)
    assert event.meta["ddlMeta"] == "rO0ABXNy" and event.meta["op"] == op
    assert ddl_kind(op, sql) is kind
    assert encode([event]) == [json.loads(control(op, ddl, SOURCE))]


def test_ddl_from_another_format_gets_an_op_that_decodes_to_its_kind() -> None:
    for kind, sql in [
        (DdlKind.CREATE_TABLE, "CREATE TABLE t (id INT)"),
        (DdlKind.DROP_TABLE, "DROP TABLE t"),
        (DdlKind.CREATE_DATABASE, "CREATE DATABASE d"),
        (DdlKind.ALTER_TABLE, "ALTER TABLE t ADD c INT"),
        (DdlKind.OTHER, "GRANT ALL ON d.* TO u"),
    ]:
        ddl = Ddl(kind, "d", "t" if "TABLE" in sql else "", sql, commit_ts=450000000000000000)
        (document,) = encode([ddl])
        assert document["payload"]["ddl"] == {"text": sql, "ddlMeta": None}
        assert document["payload"]["timestamp"]["eventTime"] == 450000000000000000 >> 18
        (decoded,) = decode(json.dumps(document))
        assert isinstance(decoded, Ddl) and (decoded.kind, decoded.sql) == (kind, sql)


def test_watermark_becomes_a_heartbeat_and_bootstrap_needs_no_message() -> None:
    tso = (1700000000123 << 18) + 5
    schema = TableSchema("d", "t", ())
    (document,) = encode([Watermark(tso), Bootstrap(schema)])
    assert document["payload"]["op"] == "MHEARTBEAT"
    (heartbeat,) = decode(json.dumps(document))
    assert heartbeat == Heartbeat(1700000000123, Origin("dw", 0, 0), heartbeat.meta)


def test_a_shrunk_large_message_cannot_be_encoded() -> None:
    row = RowChange(Op.INSERT, "d", "t", None, {"id": 1}, {"id": MySQLType("int")})
    with pytest.raises(EncodeError, match="LargeMessageRef"):
        CODEC.encoder().encode([LargeMessageRef(LargeMessageKind.HANDLE_KEY_ONLY, row)])
