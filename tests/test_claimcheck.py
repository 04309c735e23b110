"""Large messages (issue 22, points 1 and 2): a claim-check reference is decoded as the row it stands for,
read from the claim-check storage, wherever a stream is consumed; a row sent as its handle key only stops
the consumer unless ``on-handle-key-only=dead-letter``, and then goes to the dead letters."""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from typer.testing import CliRunner

from cdclake.claimcheck import ClaimCheckStorage, HandleKeyOnlyError, decoder_for, stored_file, stored_message
from cdclake.cli import app
from cdclake.errors import DecodeError
from cdclake.eventjson import loads_event
from cdclake.formats import get_codec
from cdclake.formats.compression import compressor
from cdclake.model import LargeMessageKind, LargeMessageRef, Op, Origin, RawMessage, RowChange
from cdclake.spark.changes import RECORD_NAMES, decode_records, decode_task_error, record_arrow_schema
from cdclake.transcode.in_process import transcode_messages
from cdclake.transcode.spec import TranscodeSpec
from cdclake.workload import ProducerSpec, Stream, Workload, WorkloadSpec, produce, shrink_large_messages

VECTORS = Path(__file__).resolve().parents[2] / "shared" / "vectors" / "ticdc-cases"
CANAL = get_codec("canal-json")
PLACE = Origin(topic="tidb-cdc", partition=2, offset=41)


def _docs_reference() -> dict[str, Any]:
    """TiCDC's documented Canal-JSON claim-check reference (a row of test.tp_int, id 2)."""
    case = json.loads((VECTORS / "14_canal_docs_claim_check_location.json").read_text())
    document: dict[str, Any] = case["kafka_value_json_without_doc_comments"]
    document["_tidb"]["claimCheckLocation"] = "s3:/claim-check-bucket/7b1e3c.json"
    return document


def _whole_message(reference: dict[str, Any], **columns: str) -> bytes:
    """The message the reference stands for: the whole row, without the location."""
    whole = {**reference, "data": [{"id": "2", **columns}], "_tidb": {"commitTs": reference["_tidb"]["commitTs"]}}
    whole["mysqlType"] = {"id": "int", **dict.fromkeys(columns, "varchar")}
    whole["sqlType"] = {"id": 4, **dict.fromkeys(columns, 12)}
    return orjson.dumps(whole)


def _decode(value: bytes, **options: Any) -> list[Any]:
    return decoder_for(CANAL, options).decode(RawMessage(None, value, PLACE))


@pytest.mark.parametrize("raw_value", [False, True], ids=["key-and-value", "raw-value"])
@pytest.mark.parametrize("compression", ["none", "snappy"])
def test_a_claim_check_reference_decodes_as_the_stored_row_at_its_own_place(
        tmp_path: Path, raw_value: bool, compression: str) -> None:
    reference = _docs_reference()
    stored = compressor(compression)(_whole_message(reference, note="x" * 2000))
    (tmp_path / "7b1e3c.json").write_bytes(stored_file(None, stored, raw_value))
    value = compressor(compression)(orjson.dumps(reference))

    (row,) = _decode(value, **{"claim-check-storage-uri": str(tmp_path),
                               "large-message-handle-compression": compression})

    assert isinstance(row, RowChange)
    assert (row.op, row.database, row.table, row.commit_ts) == (Op.INSERT, "test", "tp_int", 429918007904436226)
    assert row.after == {"id": 2, "note": "x" * 2000}
    assert row.origin == PLACE


def test_the_storage_is_a_uri_or_a_directory_and_the_file_its_base_name(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / "7b1e3c.json").write_bytes(stored_file(None, _whole_message(_docs_reference())))
    monkeypatch.chdir(tmp_path)
    for uri in (f"file://{tmp_path}/files", f"{tmp_path}/files/", "files"):
        (row,) = _decode(orjson.dumps(_docs_reference()), **{"claim-check-storage-uri": uri})
        assert row.after == {"id": 2}, uri


def test_a_missing_file_is_an_error_naming_the_location_the_row_and_its_place(tmp_path: Path) -> None:
    with pytest.raises(DecodeError) as failed:
        _decode(orjson.dumps(_docs_reference()), **{"claim-check-storage-uri": str(tmp_path)})
    text = str(failed.value)
    assert "an insert of test.tp_int (key id=2, commit ts 429918007904436226)" in text
    assert "stored at s3:/claim-check-bucket/7b1e3c.json: cannot read it from" in text
    assert text.endswith("at tidb-cdc[2]@41")
    assert failed.value.origin == PLACE


def test_without_a_storage_a_reference_is_an_error_that_names_the_option() -> None:
    with pytest.raises(DecodeError, match="set the format option claim-check-storage-uri"):
        _decode(orjson.dumps(_docs_reference()))


@pytest.mark.parametrize(("content", "reason"), [
    (b'{"key": null, "value": "not base64!"}', "not base64"),
    (b'{"key": 7, "value": ""}', '"key" must be base64 text or null'),
    (b'{"id": 0, "database": "test"', "the stored message: .*JSON"),
])
def test_an_unreadable_file_is_an_error(tmp_path: Path, content: bytes, reason: str) -> None:
    (tmp_path / "7b1e3c.json").write_bytes(content)
    with pytest.raises(DecodeError, match=reason):
        _decode(orjson.dumps(_docs_reference()), **{"claim-check-storage-uri": str(tmp_path)})


def _watermark() -> dict[str, Any]:
    return {"id": 0, "database": "", "table": "", "pkNames": None, "isDdl": False, "type": "TIDB_WATERMARK",
            "es": 1, "ts": 1, "sql": "", "sqlType": None, "mysqlType": None, "data": None, "old": None,
            "_tidb": {"watermarkTs": 429918007904436226}}


@pytest.mark.parametrize(("stored", "reason"), [
    ({**orjson.loads(_whole_message(_docs_reference())), "table": "orders"}, r"a row of test\.orders"),
    (_watermark(), "a Watermark"),
], ids=["another table", "no row"])
def test_a_file_holding_anything_but_the_row_is_refused(tmp_path: Path, stored: dict[str, Any], reason: str) -> None:
    (tmp_path / "7b1e3c.json").write_bytes(stored_file(None, orjson.dumps(stored)))
    with pytest.raises(DecodeError, match=rf"the stored message holds {reason}, not that row"):
        _decode(orjson.dumps(_docs_reference()), **{"claim-check-storage-uri": str(tmp_path)})


def test_a_location_that_names_no_file_is_refused() -> None:
    with pytest.raises(ValueError, match="names no file"):
        ClaimCheckStorage("/tmp").read("s3://bucket/..")


def test_the_stored_message_is_tiCDCs_envelope_or_the_raw_value() -> None:
    key, value = b"\x00\x01key", b'{"a": 1}'
    assert stored_message(stored_file(key, value)) == (key, value)
    assert stored_message(stored_file(None, value, raw_value=True)) == (None, value)
    envelope = {"key": None, "value": base64.b64encode(value).decode()}
    assert stored_message(json.dumps(envelope, indent=1).encode()) == (None, value)


def test_an_open_protocol_reference_inside_a_batch_keeps_its_index(tmp_path: Path) -> None:
    codec = get_codec("open")
    encoder = codec.encoder(codec.resolve())
    rows = [RowChange(Op.INSERT, "shop", "t", None, {"id": i, "v": f"row {i}"}, _types(), ("id",), 100 + i)
            for i in range(3)]
    (whole,) = encoder.encode([rows[1]])
    (tmp_path / "c1.json").write_bytes(stored_file(whole.key, whole.value or b""))
    shrunk = LargeMessageRef(LargeMessageKind.CLAIM_CHECK, replace(rows[1], after={"id": 1}), "s3://b/c1.json")
    (batch,) = encoder.encode([rows[0], shrunk, rows[2]])

    decoded = decoder_for(codec, {"claim-check-storage-uri": str(tmp_path)}).decode(replace(batch, origin=PLACE))

    assert [(e.after, e.origin.index) for e in decoded] == [(r.after, i) for i, r in enumerate(rows)]


def _types() -> dict[str, Any]:
    from cdclake.types import MySQLType

    return {"id": MySQLType("int"), "v": MySQLType("varchar")}


def test_a_handle_key_only_row_stops_the_decoder_naming_table_key_ts_place_and_option() -> None:
    reference = _docs_reference()
    reference["_tidb"] = {"commitTs": 429918007904436226, "onlyHandleKey": True}
    with pytest.raises(HandleKeyOnlyError) as stopped:
        _decode(orjson.dumps(reference))
    assert str(stopped.value) == (
        "tidb-cdc[2]@41: an insert of test.tp_int (key id=2, commit ts 429918007904436226) came as its handle key "
        "only (large-message-handle-option=handle-key-only): the whole row is not in the stream; set the format "
        "option on-handle-key-only=dead-letter to put such rows in the dead letters and go on")

    (kept,) = _decode(orjson.dumps(reference), **{"on-handle-key-only": "dead-letter"})
    assert isinstance(kept, LargeMessageRef) and kept.kind is LargeMessageKind.HANDLE_KEY_ONLY


def test_only_the_formats_with_large_messages_take_the_options() -> None:
    assert {"claim-check-storage-uri", "on-handle-key-only"} <= set(get_codec("simple-avro").options)
    assert "claim-check-storage-uri" not in get_codec("dataworks").options
    assert type(decoder_for(get_codec("dataworks"))).__name__ == "DataWorksDecoder"


# --- every consumer: cdclake decode, the replicate decode path, the transcoder -----------------------------

WORKLOAD = WorkloadSpec(seed=5, transactions=40)


@pytest.fixture(scope="module")
def workload() -> Workload:
    return Workload(WORKLOAD)


@pytest.fixture(scope="module")
def plain(workload: Workload) -> Stream:
    return produce(workload, "canal-json", {"enable-tidb-extension": True}, partitions=1)


def _large(plain: Stream, kind: LargeMessageKind, storage: Path | None = None) -> Stream:
    shrunk = shrink_large_messages(plain, kind, larger_than=400, storage_uri=None if storage is None else str(storage))
    changed = sum(a.value != b.value for a, b in zip(plain, shrunk, strict=True))
    assert 0 < changed < len(plain)
    return shrunk


def _lines(stream: Stream, path: Path) -> Path:
    path.write_bytes(b"".join((m.value or b"") + b"\n" for m in stream))
    return path


def _rows(events: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.op, e.database, e.table, e.before, e.after) for e in events if isinstance(e, RowChange)]


def test_cdclake_decode_prints_the_full_rows_of_a_claim_check_stream(plain: Stream, tmp_path: Path) -> None:
    stream = _large(plain, LargeMessageKind.CLAIM_CHECK, tmp_path / "claim-check")
    topic = _lines(stream, tmp_path / "topic.jsonl")
    runner = CliRunner()

    result = runner.invoke(app, ["decode", "-f", "canal-json", "-o", f"claim-check-storage-uri={tmp_path}/claim-check",
                                 str(topic)])

    assert result.exit_code == 0, result.stderr
    # Split at newlines only: the values hold U+2028, which str.splitlines takes for a line break.
    printed = [loads_event(line) for line in result.stdout_bytes.splitlines()]
    expected = [e for m in plain for e in CANAL.decoder().decode(m)]
    assert _rows(printed) == _rows(expected)

    without = runner.invoke(app, ["decode", "-f", "canal-json", str(topic)])
    assert without.exit_code == 1
    assert "set the format option claim-check-storage-uri" in without.stderr


def test_cdclake_decode_reports_handle_key_only_rows_unless_told_to_go_on(plain: Stream, tmp_path: Path) -> None:
    stream = _large(plain, LargeMessageKind.HANDLE_KEY_ONLY)
    topic = _lines(stream, tmp_path / "topic.jsonl")
    runner = CliRunner()

    stopped = runner.invoke(app, ["decode", "-f", "canal-json", str(topic)])
    assert stopped.exit_code == 1
    assert "came as its handle key only" in stopped.stderr and "on-handle-key-only=dead-letter" in stopped.stderr

    going_on = runner.invoke(app, ["decode", "-f", "canal-json", "-o", "on-handle-key-only=dead-letter", str(topic)])
    assert going_on.exit_code == 0, going_on.stderr
    assert '"kind":"large-message"' in going_on.stdout


def _records(stream: Stream) -> list[pa.RecordBatch]:
    columns: dict[str, list[Any]] = {name: [] for name in RECORD_NAMES}
    for message in stream:
        assert message.origin is not None
        for name, value in zip(RECORD_NAMES, (message.origin.topic, message.origin.partition, message.origin.offset,
                                              message.timestamp_ms, message.key, message.value, None), strict=True):
            columns[name].append(value)
    return [pa.RecordBatch.from_pydict(columns, schema=record_arrow_schema())]


def _change_records(stream: Stream, **options: Any) -> list[dict[str, Any]]:
    batches = decode_records(_records(stream), "canal-json", {**stream.codec_options, **options}, {})
    return [record for batch in batches for record in batch.to_pylist()]


def test_the_replicate_decode_path_reads_claim_check_files(plain: Stream, tmp_path: Path) -> None:
    changes = _change_records(_large(plain, LargeMessageKind.CLAIM_CHECK, tmp_path))
    assert [r for r in changes if r["kind"] == "error"] == []
    expected = _change_records(plain)
    assert any(r["kind"] == "row" for r in expected)
    assert [r["after"] for r in changes if r["kind"] == "row"] == [r["after"] for r in expected if r["kind"] == "row"]


def test_the_replicate_decode_path_stops_at_handle_key_only_or_dead_letters_it(plain: Stream) -> None:
    stream = _large(plain, LargeMessageKind.HANDLE_KEY_ONLY)
    with pytest.raises(HandleKeyOnlyError, match=r"cdclake\[0\]@\d+: an? \w+ of \w+\.\w+ \(key .*commit ts \d+\)"):
        _change_records(stream)

    changes = _change_records(stream, **{"on-handle-key-only": "dead-letter"})
    shrunk = sum(a.value != b.value for a, b in zip(plain, stream, strict=True))
    errors = [r for r in changes if r["kind"] == "error"]
    assert len(errors) == shrunk
    assert all("came as its handle key only" in r["reason"] and r["raw_value"] for r in errors)


def _transcoded(stream: Stream) -> Any:
    spec = TranscodeSpec("canal-json", stream.codec_options, ProducerSpec("simple", partitions=1))
    return transcode_messages(spec, {(stream.topic, p): m for p, m in stream.partitions.items()})


def test_the_transcoder_reads_claim_check_files_and_stops_at_handle_key_only(plain: Stream, tmp_path: Path) -> None:
    whole = _transcoded(plain)
    claimed = _transcoded(_large(plain, LargeMessageKind.CLAIM_CHECK, tmp_path))
    assert claimed.dead_letters == [] and whole.partitions[0]
    assert [m.value for m in claimed.partitions[0]] == [m.value for m in whole.partitions[0]]

    with pytest.raises(HandleKeyOnlyError):
        _transcoded(_large(plain, LargeMessageKind.HANDLE_KEY_ONLY))


def test_the_cdclake_error_of_a_spark_task_is_found_in_the_exception_the_driver_gets() -> None:
    raised = RuntimeError("An exception was thrown from the Python worker.\nTraceback (most recent call last):\n"
                          '  File "changes.py", line 9, in decode\ncdclake.claimcheck.HandleKeyOnlyError: t[0]@5: an '
                          "insert of a.b\n\tat org.apache.spark.api.python.BasePythonRunner.read")
    assert decode_task_error(raised) == "t[0]@5: an insert of a.b"
    assert decode_task_error(RuntimeError("java.lang.OutOfMemoryError: Java heap space")) is None
