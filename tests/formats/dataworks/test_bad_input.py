"""DataWorks JSON: bad input and fuzzing (only DecodeError escapes, saying what and where), and one decoder
reading many messages as fresh ones would: what it remembers per table does not leak between them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from cdclake.errors import DecodeError
from cdclake.model import Origin, RowChange
from tests.formats.dataworks.helpers import (
    CODEC,
    SOURCE,
    SPEC_DELETE,
    SPEC_HEARTBEAT,
    SPEC_INSERT,
    SPEC_OVERALL,
    SPEC_UPDATE_AFTER,
    SPEC_UPDATE_BEFORE,
    VECTOR_FILES,
    at_ms,
    control,
    decode,
    encode,
    message,
    vector_json,
)
from tests.fuzzing import mutations

# --- bad input ---------------------------------------------------------------------------------------


def broken(path: str, value: Any, base: str = SPEC_INSERT) -> str:
    document = json.loads(base)
    *parents, last = path.split(".")
    target = document
    for name in parents:
        target = target[name]
    target[last] = value
    return json.dumps(document)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (b"", "invalid JSON"),
        (b"{", "invalid JSON"),
        (b"[]", "expected a JSON object"),
        (b'{"schema":{}}', "payload: expected a JSON object"),
        (broken("payload.op", "UPSERT"), "payload.op: expected one of INSERT"),
        (broken("payload.op", "GTID"), "payload.op"),
        (broken("payload.sequenceId", 5), "payload.sequenceId"),
        (broken("payload.timestamp", 5), "payload.timestamp"),
        (broken("schema.dataColumn", None), "schema.dataColumn"),
        (broken("schema.dataColumn", [{"name": "x", "type": "INT"}]), "schema.dataColumn[0]"),
        (broken("schema.primaryKey", "name"), "schema.primaryKey"),
        (broken("schema.source", None), "schema.source"),
        (broken("payload.after", None), "payload.after: a INSERT message needs the after image, got null"),
        (broken("payload.after.dataColumn.extra", 1), "payload.after.dataColumn.extra: the column is not in"),
        (broken("payload.after.dataColumn.#alibaba_rds_row_id#", "15"), "a LONG is a JSON integer"),
        (broken("payload.after.dataColumn.#alibaba_rds_row_id#", 1.5), "a LONG is a JSON integer"),
        (broken("payload.after.dataColumn.name", 11), "payload.after.dataColumn.name: a STRING"),
        (broken("payload.ddl", {"text": "x"}), "payload.ddl"),
        (broken("payload.before", {"dataColumn": {}}), "payload.before: a INSERT message has no before image"),
        (broken("payload.after", {"dataColumn": {}}, SPEC_DELETE), "payload.after: a DELETE message has no after"),
        (broken("payload.after", {"dataColumn": {}}, SPEC_UPDATE_BEFORE), "payload.after: a UPDATE_BEFOR message"),
        (broken("payload.before", None, SPEC_UPDATE_BEFORE), "payload.before: a UPDATE_BEFOR message needs"),
        (broken("payload.ddl", None, control("ALTER", source=SOURCE)), "payload.ddl"),
        (broken("payload.timestamp", {"checkpointTime": 1}, SPEC_HEARTBEAT), "eventTime"),
        (b'{"schema":null,"payload":{"op":"INSERT"}}', "schema.source"),
        (b'{"payload":{"op":"MHEARTBEAT","timestamp":{"eventTime":1},"after":{}}}', "no row image"),
        (b'{"payload":{"op":"INSERT"},"x":NaN}', "invalid JSON"),
    ],
)
def test_bad_input_is_a_decode_error_saying_what_and_where(value: bytes | str, reason: str) -> None:
    with pytest.raises(DecodeError) as caught:
        CODEC.decoder().decode(message(value, 42))
    assert caught.value.format_name == "dataworks"
    assert reason in caught.value.reason
    assert caught.value.origin == Origin("dw", 0, 42)


@pytest.mark.parametrize(
    ("kind", "raw", "reason"),
    [
        ("BOOLEAN", 1, "true or false"),
        ("DOUBLE", "1_0", "DOUBLE"),
        ("DOUBLE", "inf", "DOUBLE"),
        ("DOUBLE", True, "DOUBLE"),
        ("DATE", 253402300800000, "years 1-9999"),
        ("DATE", "2024-01-01", "DATE"),
        ("BYTES", "not base64!", "base64"),
        ("BYTES", "QUJD\u00e9", "base64"),
        ("STRING", ["x"], "STRING"),
    ],
)
def test_values_outside_their_type_are_decode_errors(kind: str, raw: Any, reason: str) -> None:
    document = json.loads(SPEC_INSERT)
    document["schema"]["dataColumn"].append({"name": "v", "type": kind})
    document["payload"]["after"]["dataColumn"]["v"] = raw
    with pytest.raises(DecodeError, match=reason) as caught:
        decode(json.dumps(document))
    assert "payload.after.dataColumn.v" in caught.value.reason


def test_tombstone_is_a_decode_error() -> None:
    with pytest.raises(DecodeError, match="tombstone"):
        CODEC.decoder().decode(message(None))


def fuzz_seeds(vectors: Path) -> list[bytes]:
    """The vectors' messages and the spec's, one of each kind (bench/fuzz.py mutates them too)."""
    return [vector_json(vectors, name) for name in VECTOR_FILES] + [
        s.encode()
        for s in (SPEC_HEARTBEAT, SPEC_INSERT, SPEC_UPDATE_BEFORE, SPEC_UPDATE_AFTER, SPEC_DELETE, SPEC_OVERALL,
                  control("TRANSACTION_BEGIN", source=SOURCE), control("QUERY", {"text": "DROP TABLE t"}, SOURCE))
    ]


def test_fuzzed_messages_raise_only_decode_errors(vectors: Path) -> None:
    seeds = fuzz_seeds(vectors)
    decoder = CODEC.decoder()  # one decoder, so held halves meet garbage too
    decoded = past_the_parser = 0
    for offset, mutant in enumerate(mutations(seeds, 10_000, seed=7)):
        try:
            decoded += len(decoder.decode(message(mutant, offset)))
        except DecodeError as exc:
            assert exc.format_name == "dataworks" and exc.origin == Origin("dw", 0, offset)
            past_the_parser += "invalid JSON" not in exc.reason
    decoder.flush()
    # The mutants reach the checks behind the JSON parser, and some still decode.
    assert decoded and past_the_parser


# --- one decoder, many messages: what is remembered per table must not leak between messages -----------


def overall_with(before: dict[str, Any] | None, after: dict[str, Any] | None) -> str:
    document = json.loads(SPEC_OVERALL)
    document["payload"]["before"] = None if before is None else {"dataColumn": before}
    document["payload"]["after"] = None if after is None else {"dataColumn": after}
    return json.dumps(document)


OVERALL_ROW = {"id": 1, "name": "a", "binData": "AAH/", "ts": 1590315269000, "rowid": "r"}


def test_one_decoder_reads_each_pattern_of_nulls_as_a_fresh_one_does() -> None:
    decoder = CODEC.decoder()
    for offset in range(2 ** len(OVERALL_ROW)):
        row = {name: None if offset >> i & 1 else value for i, (name, value) in enumerate(OVERALL_ROW.items())}
        value = overall_with(row, dict(row, id=2))
        (event,) = decoder.decode(message(value, offset))
        (fresh,) = decode(value)
        assert event == dataclasses.replace(fresh, origin=event.origin)
        for image in (event.before, event.after):
            assert image is not None
            assert image["binData"] == (None if row["binData"] is None else b"\x00\x01\xff")
            assert image["ts"] == (None if row["ts"] is None else at_ms(1590315269000))


def test_image_columns_in_another_order_than_the_schema() -> None:
    reordered = dict(reversed(list(OVERALL_ROW.items())))
    decoder = CODEC.decoder()
    for offset, value in enumerate([overall_with(OVERALL_ROW, OVERALL_ROW), overall_with(reordered, reordered)] * 2):
        (event,) = decoder.decode(message(value, offset))
        assert event.before == event.after == {
            "id": 1, "name": "a", "binData": b"\x00\x01\xff", "ts": at_ms(1590315269000), "rowid": "r"
        }
        assert list(event.after) == list(json.loads(value)["payload"]["after"]["dataColumn"])


@pytest.mark.parametrize(
    ("name", "raw", "reason"),
    [
        ("binData", "not base64!", "base64"),
        ("binData", "QUJD\u00e9", "base64"),
        ("binData", 5, "base64"),
        ("ts", 253402300800000, "years 1-9999"),
        ("ts", -62135596800001, "years 1-9999"),
        ("ts", True, "DATE"),
        ("id", "1", "a LONG is a JSON integer"),
        ("id", False, "a LONG is a JSON integer"),
        ("name", 1, "a STRING"),
    ],
)
def test_a_bad_value_in_the_second_image_is_reported_and_a_held_half_kept(name: str, raw: Any, reason: str) -> None:
    decoder = CODEC.decoder()
    assert decoder.decode(message(SPEC_UPDATE_BEFORE, 0)) == []
    good = overall_with(OVERALL_ROW, OVERALL_ROW)
    assert decoder.decode(message(good, 1))  # the held half comes out, and the table is remembered
    assert decoder.decode(message(SPEC_UPDATE_BEFORE, 2)) == []
    with pytest.raises(DecodeError) as caught:
        decoder.decode(message(overall_with(OVERALL_ROW, dict(OVERALL_ROW, **{name: raw})), 3))
    assert f"payload.after.dataColumn.{name}" in caught.value.reason and reason in caught.value.reason
    (joined,) = decoder.decode(message(SPEC_UPDATE_AFTER, 4))
    assert isinstance(joined, RowChange) and joined.before and joined.after
    assert joined.meta["updateBefore"]["sequenceId"] == "1620457642589000001"
    (again,) = decoder.decode(message(good, 5))
    assert again.after is not None and again.after["binData"] == b"\x00\x01\xff"


def test_double_given_as_a_json_integer_is_a_float() -> None:
    document = json.loads(SPEC_INSERT)
    document["schema"]["dataColumn"].append({"name": "v", "type": "DOUBLE"})
    for raw in (7, -(2**63), 2**64 + 1):
        document["payload"]["after"]["dataColumn"]["v"] = raw
        (row,) = decode(json.dumps(document))
        assert type(row.after["v"]) is float and row.after["v"] == float(raw)
    document["payload"]["after"]["dataColumn"]["v"] = True
    with pytest.raises(DecodeError, match="DOUBLE"):
        decode(json.dumps(document))


def test_oracle_scn_and_unknown_fields_on_one_decoder() -> None:
    """Messages beside the usual shape, decoded by one decoder between usual ones, keep all they carry."""
    with_scn = json.loads(SPEC_OVERALL)
    with_extra = json.loads(SPEC_OVERALL)
    with_extra["payload"]["gtid"] = "g:1"
    with_extra["payload"]["after"]["rowKind"] = "+U"
    usual = json.loads(SPEC_OVERALL)
    del usual["payload"]["scn"]
    values = [json.dumps(d) for d in (usual, with_scn, usual, with_extra, usual)]
    decoder = CODEC.decoder()
    events = [e for offset, value in enumerate(values) for e in decoder.decode(message(value, offset))]
    assert [dataclasses.replace(e, origin=None) for e in events] == [
        dataclasses.replace(e, origin=None) for value in values for e in decode(value)
    ]
    assert "scn" not in events[0].meta and events[1].meta["scn"] == "xxxx"
    assert events[3].meta["unknownFields"] == {"payload": {"gtid": "g:1"}, "payload.after": {"rowKind": "+U"}}
    assert encode(events, one_record_per_update=True) == [json.loads(v) for v in values]


def test_six_payload_fields_other_than_the_usual_six() -> None:
    """scn in place of ddl: as many payload fields as usual, and still every one kept."""
    document = json.loads(SPEC_OVERALL)
    del document["payload"]["ddl"]
    decoder = CODEC.decoder()
    first, second = (decoder.decode(message(json.dumps(document), offset))[0] for offset in range(2))
    assert first.meta["scn"] == second.meta["scn"] == "xxxx" and "ddl" not in first.meta
    assert dataclasses.replace(first, origin=None) == dataclasses.replace(second, origin=None)
    assert first.after is not None and first.after["binData"] == b"\xde\xad\xbe\xef"
