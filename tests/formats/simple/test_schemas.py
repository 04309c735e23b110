"""Simple protocol: the decoder's schema cache, and the rows it holds until their schema comes."""

from __future__ import annotations

import orjson
import pytest

from cdclake.errors import DecodeError
from cdclake.model import Bootstrap, Ddl, DdlKind, Op, PendingRow, RawMessage, RowChange, Watermark
from tests.formats.simple.helpers import JSON, USER_V1, at, docs_stream, encode, only, raw, user_schema

# --- the schema cache and pending rows --------------------------------------------------------------


def test_rows_before_their_bootstrap_are_held_and_released_in_order() -> None:
    """A consumer joining mid-stream: the page's INSERT and UPDATE arrive before any schema, so each
    gives a PendingRow; the BOOTSTRAP of simple.user version ...426 returns itself, then both rows,
    decoded, in arrival order, with their own origins."""
    _, insert, update, *_ = docs_stream()
    decoder = JSON.decoder()
    assert decoder.decode(RawMessage(None, insert, at(1))) == [
        PendingRow("simple", "user", USER_V1, at(1), commit_ts=447984084414103554)]
    assert decoder.decode(RawMessage(None, update, at(2))) == [
        PendingRow("simple", "user", USER_V1, at(2), commit_ts=447984099186180098)]
    bootstrap = encode(JSON, [Bootstrap(user_schema(USER_V1))])[0]
    released = decoder.decode(RawMessage(None, bootstrap, at(3)))
    assert [type(e) for e in released] == [Bootstrap, RowChange, RowChange]
    assert [(e.op, e.origin) for e in released[1:]] == [(Op.INSERT, at(1)), (Op.UPDATE, at(2))]
    assert released[2].after == {"id": 1, "name": "John Doe", "age": 25, "score": 95.0}
    # Released once: the next BOOTSTRAP returns only itself.
    assert [type(e) for e in decoder.decode(RawMessage(None, bootstrap, at(4)))] == [Bootstrap]


def test_rows_of_the_pre_ddl_version_decode_after_the_ddl() -> None:
    """The INSERT names the preTableSchema's version: held before the ALTER, released by it, and the
    UPDATE after the ALTER decodes at once."""
    alter, insert, update, *_ = docs_stream()
    decoder = JSON.decoder()
    assert isinstance(only(decoder.decode(raw(insert, 1))), PendingRow)
    ddl, row = decoder.decode(raw(alter, 2))
    assert isinstance(ddl, Ddl) and isinstance(row, RowChange) and row.schema_version == USER_V1
    assert isinstance(only(decoder.decode(raw(update, 3))), RowChange)


def test_a_schema_releases_only_its_own_rows() -> None:
    """The key is (database, table, version): a BOOTSTRAP of simple.new_user at the same version and
    table id leaves simple.user's rows held."""
    *_, bootstrap = docs_stream()
    insert = docs_stream()[1]
    decoder = JSON.decoder()
    decoder.decode(raw(insert, 1))
    assert [type(e) for e in decoder.decode(raw(bootstrap, 2))] == [Bootstrap]
    assert [type(e) for e in decoder.decode(raw(docs_stream()[0], 3))] == [Ddl, RowChange]


def test_rename_keeps_the_version_and_caches_both_names() -> None:
    """RENAME TABLE does not change the schema version (the zh page's note): its preTableSchema and
    tableSchema differ only in the table name, and rows of both names decode."""
    before, after = user_schema(USER_V1), user_schema(USER_V1, table="member")
    rename = Ddl(DdlKind.RENAME_TABLE, "simple", "member", "RENAME TABLE `user` TO `member`", 10, before, after)
    encoder = JSON.encoder()
    value = encoder.encode([rename])[0].value or b""
    assert orjson.loads(value)["type"] == "RENAME"
    decoder = JSON.decoder()
    ddl = only(decoder.decode(raw(value)))
    assert ddl.kind is DdlKind.RENAME_TABLE and ddl.schema_before and ddl.schema_after
    names = [(s.table, s.version) for s in (ddl.schema_before, ddl.schema_after)]
    assert names == [("user", USER_V1), ("member", USER_V1)]
    for table in ("user", "member"):
        row = RowChange(Op.INSERT, "simple", table, None, {"id": 3}, {}, commit_ts=11, schema_version=USER_V1)
        assert only(decoder.decode(raw(encoder.encode([row])[0].value or b""))).table == table


def test_a_held_row_that_does_not_fit_its_schema_is_reported_at_its_own_origin() -> None:
    """A held row whose values do not fit the schema that arrives: DecodeError naming the held message's
    origin; the BOOTSTRAP and the rows that fit are returned by the next call, in order."""
    good = docs_stream()[1]
    bad = good.replace(b'"age":"25"', b'"age":"twenty-five"')
    decoder = JSON.decoder()
    decoder.decode(RawMessage(None, bad, at(1)))
    decoder.decode(RawMessage(None, good, at(2)))
    bootstrap = encode(JSON, [Bootstrap(user_schema(USER_V1))])[0]
    with pytest.raises(DecodeError) as error:
        decoder.decode(RawMessage(None, bootstrap, at(3)))
    assert error.value.origin == at(1)
    assert "at cdc[0]@3" in error.value.reason and "data.age" in error.value.reason
    watermark = docs_stream()[4]
    released = decoder.decode(RawMessage(None, watermark, at(4)))
    assert [(type(e), e.origin) for e in released] == [(Bootstrap, at(3)), (RowChange, at(2)), (Watermark, at(4))]
