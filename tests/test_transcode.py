"""Transcoding without Spark: what a stream becomes in another format, checked by decoding it again.

The round trips A -> B -> A prove what each pair of formats carries: the events of A come back, partition
for partition, except for exactly the differences listed (and explained) in ``ROUND_TRIPS``. "The same"
leaves one freedom: the order of the events of one transaction (the rows of one commit ts, and the
BOOTSTRAPs a row among them brings), which TiDB does not define and a partitioned stream does not keep.
"""

from __future__ import annotations

import collections
import json
import pickle
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from cdclake.errors import OptionError
from cdclake.eventjson import event_to_json
from cdclake.formats import get_codec
from cdclake.model import Event, Op, Origin, PendingRow, RawMessage, RowChange, TableSchema, Watermark
from cdclake.sources.ranges import OffsetRange
from cdclake.transcode.derived import derived_schema
from cdclake.transcode.endpoints import Location
from cdclake.transcode.in_process import transcode_messages
from cdclake.transcode.records import identity
from cdclake.transcode.resolution import point_records, resolve
from cdclake.transcode.spec import TranscodeError, TranscodeSpec
from cdclake.transcode.state import (
    DeadLetter,
    PartitionProgress,
    Plan,
    Prime,
    Progress,
    kept_primes,
    write_dead_letters,
)
from cdclake.types import MySQLType
from cdclake.workload import ProducerSpec, Stream, Workload, WorkloadSpec, produce

# name -> (format, options)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "open": ("open", {}),
    "canal-json": ("canal-json", {"enable-tidb-extension": True}),
    "canal-json-plain": ("canal-json", {}),
    "simple": ("simple", {}),
    "simple-avro": ("simple-avro", {}),
    "dataworks": ("dataworks", {}),
}

_DDL_CODE = {"meta ddl_type"}
_NO_WATERMARKS_BACK = {"row events", "ddl events"}
_DATAWORKS_TYPES = {"column types", "values"}
_SCHEMAS = {"bootstrap events", "table schemas", "column types", "values"}

# (A, B) -> what A -> B -> A changes. Empty: every event comes back unchanged.
ROUND_TRIPS: dict[tuple[str, str], set[str]] = {
    # Open Protocol names a DDL by TiDB's action code (5: ADD COLUMN); Canal-JSON and the Simple protocol
    # only by its kind (ALTER), so the Open encoder writes the kind's code.
    ("open", "canal-json"): _DDL_CODE,
    ("open", "simple"): _DDL_CODE,
    ("open", "simple-avro"): _DDL_CODE,
    # Without the TiDB extension: no watermark, and a commit ts only to the millisecond (es).
    ("open", "canal-json-plain"): {*_DDL_CODE, "commit ts", "watermark events"},
    ("canal-json", "canal-json-plain"): {"commit ts", "watermark events"},
    # DataWorks: six types for every MySQL type, a commit ts only to the millisecond, heartbeats for
    # watermarks (and Open's type codes and flags follow the types).
    ("open", "dataworks"): {*_DDL_CODE, *_DATAWORKS_TYPES, "commit ts", "watermark events", "meta flags",
                            "meta type_codes"},
    ("canal-json", "dataworks"): {*_DATAWORKS_TYPES, "commit ts", "watermark events"},
    ("canal-json-plain", "dataworks"): _DATAWORKS_TYPES,
    # Open Protocol's flags have no zerofill.
    ("canal-json", "open"): {"zerofill"},
    ("canal-json", "simple"): set(),
    ("canal-json", "simple-avro"): set(),
    # A stream without watermarks makes a B stream without watermarks, which B's consumers (and the
    # transcoder reading it back) cannot resolve: nothing comes back.
    ("canal-json-plain", "open"): _NO_WATERMARKS_BACK,
    ("canal-json-plain", "canal-json"): _NO_WATERMARKS_BACK,
    ("canal-json-plain", "simple"): _NO_WATERMARKS_BACK,
    ("canal-json-plain", "simple-avro"): _NO_WATERMARKS_BACK,
    ("dataworks", "open"): {*_NO_WATERMARKS_BACK, "heartbeat events"},
    ("dataworks", "canal-json"): {*_NO_WATERMARKS_BACK, "heartbeat events"},
    ("dataworks", "simple"): {*_NO_WATERMARKS_BACK, "heartbeat events"},
    ("dataworks", "simple-avro"): {*_NO_WATERMARKS_BACK, "heartbeat events"},
    # Canal-JSON has no heartbeat, no DataWorks type names, no update halves of their own.
    ("dataworks", "canal-json-plain"): {*_DATAWORKS_TYPES, "heartbeat events", "meta dataColumn",
                                        "meta sequenceId", "meta updateBefore"},
    # The Simple protocol's table schemas (lengths, charsets, defaults, nullability, indexes, table ids and
    # versions, enum and set members) do not survive a format without them; they come back derived from
    # the rows, BOOTSTRAPped once more for each new shape.
    ("simple", "open"): {*_SCHEMAS, "fractional-second precision"},
    ("simple", "canal-json"): {*_SCHEMAS, "fractional-second precision"},
    ("simple", "canal-json-plain"): {*_SCHEMAS, "fractional-second precision", "commit ts", "watermark events"},
    ("simple", "dataworks"): {*_SCHEMAS, "fractional-second precision", "commit ts", "watermark events"},
    ("simple-avro", "open"): {*_SCHEMAS, "fractional-second precision"},
    ("simple-avro", "canal-json"): {*_SCHEMAS, "fractional-second precision"},
    ("simple-avro", "canal-json-plain"): {*_SCHEMAS, "fractional-second precision", "commit ts",
                                          "watermark events"},
    ("simple-avro", "dataworks"): {*_SCHEMAS, "commit ts", "watermark events"},
    # The Avro schema's dataType cannot say fsp 0 (time(0) comes back as time), and the JSON encoder
    # writes an unknown fsp as 6.
    ("simple", "simple-avro"): {"fractional-second precision"},
    ("simple-avro", "simple"): {"fractional-second precision"},
    # Into its own format: every event comes back (simple-avro: the fsp above, twice over).
    **{(name, name): set() for name in CASES if name != "simple-avro"},
    ("simple-avro", "simple-avro"): {"fractional-second precision"},
}


def _workload(*names: str) -> Workload:
    # DataWorks decodes a bigint unsigned and a bit(64) past 2^63 as a signed bigint that no other format
    # can write: its pairs use the three tables without such columns (customers, order_items, accounts).
    tables = 3 if "dataworks" in names else 7
    return Workload(WorkloadSpec(seed=3, transactions=60, rename_table=True, tables=tables))


def stream_of(case: str, workload: Workload, **producer: Any) -> Stream:
    format_name, options = CASES[case]
    return produce(workload, format_name, options, **producer)


def spec_for(source: Stream, case: str, partitions: int = 4, topic: str = "transcoded") -> TranscodeSpec:
    format_name, options = CASES[case]
    return TranscodeSpec(source.spec.format_name, source.codec_options,
                         ProducerSpec(format_name, options, partitions=partitions, topic=topic))


def source_of(stream: Stream) -> dict[tuple[str, int], list[RawMessage]]:
    return {(stream.topic, partition): messages for partition, messages in stream.partitions.items()}


def events_json(format_name: str, options: Mapping[str, Any], partitions: Mapping[int, Sequence[RawMessage]]
                ) -> dict[int, list[dict[str, Any]]]:
    """Each partition's events as event JSON without their origins, a decoder per partition."""
    found = {}
    for partition, messages in partitions.items():
        decoder = get_codec(format_name).decoder(options)
        events: list[Event] = [event for message in messages for event in decoder.decode(message)]
        found[partition] = [_without_origin(event_to_json(e)) for e in [*events, *decoder.flush()]]
    return found


def _without_origin(obj: dict[str, Any]) -> dict[str, Any]:
    obj.pop("origin", None)
    return obj


def _text(obj: Mapping[str, Any]) -> str:
    meta = {k: v for k, v in (obj.get("meta") or {}).items() if k != "sequenceId"}
    return json.dumps({**obj, "meta": meta}, sort_keys=True, default=str)


def canonical(events: Iterable[dict[str, Any]]) -> list[Any]:
    """A partition's events with the order inside each commit (its rows' order; DataWorks sequenceIds
    as a set) made canonical, and its BOOTSTRAPs as a sorted list."""
    events = list(events)
    out: list[Any] = []
    run: list[dict[str, Any]] = []

    def flush() -> None:
        if run:
            out.append(("commit", sorted(map(_text, run)),
                        sorted(str((e.get("meta") or {}).get("sequenceId")) for e in run)))
            run.clear()

    for event in events:
        if event["kind"] == "bootstrap":
            continue
        if event["kind"] == "row" and run and event["commit_ts"] is not None and event["commit_ts"] == run[0][
                "commit_ts"]:
            run.append(event)
            continue
        flush()
        if event["kind"] == "row":
            run.append(event)
        else:
            out.append(("event", _text(event)))
    flush()
    out.append(("bootstraps", sorted(_text(e) for e in events if e["kind"] == "bootstrap")))
    return out


def _type_change(before: str | None, after: str | None) -> str:
    if before is None or after is None:
        return "column types"
    a, b = MySQLType.parse(before), MySQLType.parse(after)
    changed = [name for name in ("name", "unsigned", "zerofill", "length", "decimals", "elements")
               if getattr(a, name) != getattr(b, name)]
    if changed == ["zerofill"]:
        return "zerofill"
    if changed == ["decimals"] and a.name in ("time", "datetime", "timestamp"):
        return "fractional-second precision"
    return "column types"


def _schema_changes(a: Any, b: Any) -> set[str]:
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return {"table schemas"}
    found = set()
    columns_a, columns_b = {c["name"]: c for c in a["columns"]}, {c["name"]: c for c in b["columns"]}
    for name in columns_a.keys() | columns_b.keys():
        x, y = columns_a.get(name), columns_b.get(name)
        if x != y:
            if x is None or y is None or {k: v for k, v in x.items() if k != "type"} != {
                    k: v for k, v in y.items() if k != "type"}:
                found.add("table schemas")
            else:
                found.add(_type_change(x["type"], y["type"]))
    others_a = {k: v for k, v in a.items() if k != "columns"}
    if others_a != {k: v for k, v in b.items() if k != "columns"}:
        found.add("table schemas")
    return found


def _field_changes(a: dict[str, Any], b: dict[str, Any]) -> set[str]:
    found = set()
    for name in a.keys() | b.keys():
        x, y = a.get(name), b.get(name)
        if x == y:
            continue
        if name == "meta":
            found |= {f"meta {k}" for k in (x or {}).keys() | (y or {}).keys() if (x or {}).get(k) != (y or {}).get(k)}
        elif name == "types" and isinstance(x, dict) and isinstance(y, dict):
            found |= {_type_change(x.get(k), y.get(k)) for k in x.keys() | y.keys() if x.get(k) != y.get(k)}
        elif name in ("schema_before", "schema_after"):
            found |= _schema_changes(x, y)
        elif a["kind"] == "bootstrap":
            found |= _schema_changes(a, b)
        elif name in ("schema_version", "table_id"):
            found.add("table schemas")
        elif name == "commit_ts":
            found.add("commit ts")
        elif name in ("before", "after"):
            found.add("values")
        else:
            found.add(name)
    return found


def differences(original: Mapping[int, list[dict[str, Any]]], back: Mapping[int, list[dict[str, Any]]]) -> set[str]:
    """What differs between two streams' events, partition by partition: kinds of event whose number
    changed, then the fields of the others, named as in ``ROUND_TRIPS``."""
    found: set[str] = set()
    for partition in original.keys() | back.keys():
        x, y = original.get(partition, []), back.get(partition, [])
        count_x, count_y = collections.Counter(e["kind"] for e in x), collections.Counter(e["kind"] for e in y)
        lost = {kind for kind in count_x.keys() | count_y.keys() if count_x[kind] != count_y[kind]}
        found |= {f"{kind} events" for kind in lost}
        for u, v in zip(canonical(e for e in x if e["kind"] not in lost),
                        canonical(e for e in y if e["kind"] not in lost), strict=True):
            if u == v:
                continue
            if u[0] == "commit" and u[2] != v[2]:
                found.add("meta sequenceId")
            items = zip(u[1], v[1], strict=True) if u[0] != "event" else [(u[1], v[1])]
            for a, b in items:
                found |= _field_changes(json.loads(a), json.loads(b))
    return found


@pytest.fixture(scope="module")
def streams() -> dict[tuple[str, bool], Stream]:
    """Each format's stream of the round-trip workload, with the DataWorks tables and without."""
    return {(case, narrow): stream_of(case, _workload("dataworks") if narrow else _workload())
            for case in CASES for narrow in (False, True)}


@pytest.mark.parametrize(("there", "back"), sorted(ROUND_TRIPS), ids=lambda case: case)
def test_a_round_trip_returns_every_event_but_what_the_formats_cannot_carry(
        streams: dict[tuple[str, bool], Stream], there: str, back: str) -> None:
    original = streams[(there, "dataworks" in (there, back))]
    middle = transcode_messages(spec_for(original, back, topic="middle"), source_of(original))
    middle_format, middle_options = CASES[back]
    middle_stream = {("middle", p): messages for p, messages in middle.partitions.items()}
    again = transcode_messages(TranscodeSpec(middle_format, middle_options,
                                             ProducerSpec(*CASES[there], partitions=4, topic="again")), middle_stream)
    assert differences(events_json(original.spec.format_name, original.codec_options, original.partitions),
                       events_json(original.spec.format_name, original.codec_options, again.partitions)
                       ) == ROUND_TRIPS[(there, back)]


def test_every_ordered_pair_of_formats_is_in_the_round_trip_table() -> None:
    assert set(ROUND_TRIPS) == {(a, b) for a in CASES for b in CASES}


@pytest.mark.parametrize("case", list(CASES))
def test_copies_a_producer_restart_re_sent_are_left_out(case: str) -> None:
    workload = _workload("dataworks")
    clean, doubled = stream_of(case, workload), stream_of(case, workload, duplicates=3)
    assert doubled.resent
    target = "simple" if case != "simple" else "open"
    expected = transcode_messages(spec_for(clean, target), source_of(clean))
    found = transcode_messages(spec_for(doubled, target), source_of(doubled))
    assert {p: [m.value for m in ms] for p, ms in found.partitions.items()} == {
        p: [m.value for m in ms] for p, ms in expected.partitions.items()}


@pytest.mark.parametrize(("target", "options"), [
    ("simple", {"send-bootstrap-in-msg-count": 5, "send-bootstrap-interval-in-sec": 0}),
    ("simple-avro", {"send-bootstrap-in-msg-count": 0, "send-bootstrap-interval-in-sec": 1}),
    ("simple", {"send-bootstrap-to-all-partition": False}),
])
def test_a_simple_target_is_bootstrapped_by_its_send_bootstrap_options(target: str, options: dict[str, Any]) -> None:
    """Transcoded from the Simple protocol with the default BOOTSTRAPs, the stream gets the BOOTSTRAPs
    TiCDC's producer sends with the target's options: the same events as that producer's stream."""
    workload = Workload(WorkloadSpec(seed=3, transactions=60, max_gap_ms=100))  # some 6 s of upstream time
    source = stream_of("simple", workload)
    out = transcode_messages(TranscodeSpec("simple", {}, ProducerSpec(target, options, partitions=4, topic="t")),
                             source_of(source))
    expected = produce(workload, target, options)
    found, wanted = events_json(target, {}, out.partitions), events_json(target, {}, expected.partitions)
    assert {p: canonical(e) for p, e in found.items()} == {p: canonical(e) for p, e in wanted.items()}
    default = sum(e["kind"] == "bootstrap" for events in events_json("simple", {}, source.partitions).values()
                  for e in events)
    assert sum(e["kind"] == "bootstrap" for events in found.values() for e in events) != default


@pytest.mark.parametrize(("source", "target"), [("open", "canal-json"), ("simple", "open"), ("canal-json", "simple")])
def test_each_target_partition_is_in_commit_order_and_a_watermark_covers_what_precedes_it(
        streams: dict[tuple[str, bool], Stream], source: str, target: str) -> None:
    original = streams[(source, False)]
    out = transcode_messages(spec_for(original, target, partitions=3), source_of(original))
    for events in events_json(*CASES[target], out.partitions).values():
        stamped = [(e["kind"], e.get("commit_ts")) for e in events if e["kind"] in ("row", "ddl", "watermark")]
        assert [ts for _, ts in stamped] == sorted(ts for _, ts in stamped)
        assert stamped[-1][0] == "watermark"


def test_a_watermark_never_says_more_than_every_source_partition_said() -> None:
    workload = Workload(WorkloadSpec(seed=5, transactions=150))
    stream = produce(workload, "open", {}, watermark_interval_ms=200)
    decoded = events_json("open", stream.codec_options, stream.partitions)
    # Partition 2 is read only up to its third watermark: nothing above it may be resolved.
    watermarks_2 = [i for i, e in enumerate(decoded[2]) if e["kind"] == "watermark"]
    cut = watermarks_2[2] + 1
    short = stream.starting_at({})
    short.partitions[2] = _messages_up_to_event(stream, 2, cut)
    resolved = decoded[2][watermarks_2[2]]["commit_ts"]
    out = transcode_messages(spec_for(short, "canal-json"), source_of(short))
    events = [e for evs in events_json(*CASES["canal-json"], out.partitions).values() for e in evs]
    assert max(e["commit_ts"] for e in events if e["kind"] == "watermark") == resolved
    assert max(e["commit_ts"] for e in events if e["kind"] == "row") <= resolved
    expected_rows = sum(1 for evs in decoded.values() for e in evs if e["kind"] == "row" and e["commit_ts"] <= resolved)
    assert sum(e["kind"] == "row" for e in events) == expected_rows


def _messages_up_to_event(stream: Stream, partition: int, events: int) -> list[RawMessage]:
    """The partition's first messages, up to the one holding its ``events``-th event."""
    decoder, seen, kept = stream.decoder(), 0, []
    for message in stream.partitions[partition]:
        if seen >= events:
            break
        seen += len(decoder.decode(message))
        kept.append(message)
    return kept


def test_a_simple_target_gets_schemas_derived_from_the_rows_and_ddl() -> None:
    workload = _workload()
    original = stream_of("canal-json", workload)
    out = transcode_messages(spec_for(original, "simple"), source_of(original))
    events = events_json("simple", {}, out.partitions)
    for partition_events in events.values():
        assert not any(e["kind"] == "pending" for e in partition_events)  # every row's schema came first
    bootstraps = [e for evs in events.values() for e in evs if e["kind"] == "bootstrap"]
    ddls = [e for evs in events.values() for e in evs if e["kind"] == "ddl"]
    customers = next(b for b in bootstraps if b["table"] == "customers")
    assert customers["indexes"] == [{"name": "PRIMARY", "columns": ["id"], "unique": True, "primary": True,
                                     "nullable": False}]
    assert {c["name"]: c["nullable"] for c in customers["columns"]}["id"] is False
    # A DDL carries the schema its statement makes of the table's latest, so it names its table.
    added = next(d for d in ddls if "ADD COLUMN" in d["sql"])
    assert added["database"] and added["table"]
    assert added["schema_after"]["schema_version"] == added["commit_ts"]
    assert [c["name"] for c in added["schema_after"]["columns"]][-1] == "added_1"


def test_a_commit_ts_is_derived_from_the_milliseconds_a_format_carries() -> None:
    original = stream_of("canal-json-plain", _workload())
    out = transcode_messages(spec_for(original, "open"), source_of(original))
    rows = [e for evs in events_json("open", {}, out.partitions).values() for e in evs if e["kind"] == "row"]
    plain = [e for evs in events_json("canal-json", {}, original.partitions).values() for e in evs
             if e["kind"] == "row"]
    assert sorted(r["commit_ts"] for r in rows) == sorted(r["meta"]["es"] << 18 for r in plain)


def test_a_change_without_a_commit_ts_or_a_time_to_derive_it_from_is_a_dead_letter() -> None:
    row = RowChange(Op.INSERT, "d", "t", None, {"id": 1}, {"id": MySQLType.parse("bigint")}, ("id",))
    messages = get_codec("dataworks").encoder().encode([row])  # eventTime -1: DataWorks' "no time"
    placed = [RawMessage(m.key, m.value, Origin("dw", 0, offset)) for offset, m in enumerate(messages)]
    spec = TranscodeSpec("dataworks", {}, ProducerSpec("open", partitions=1))
    out = transcode_messages(spec, {("dw", 0): placed})
    assert out.partitions == {0: []}
    assert [letter.origin.offset if letter.origin else None for letter in out.dead_letters] == [0]
    assert "needs a commit ts" in out.dead_letters[0].reason


def test_a_change_the_target_cannot_carry_is_a_dead_letter_and_the_rest_goes_on() -> None:
    original = stream_of("dataworks", Workload(WorkloadSpec(seed=3, transactions=60)))
    out = transcode_messages(spec_for(original, "canal-json-plain"), source_of(original))
    assert out.dead_letters and all("outside the range of bigint" in d.reason for d in out.dead_letters)
    sent = sum(e["kind"] == "row" for evs in events_json(*CASES["canal-json-plain"], out.partitions).values()
               for e in evs)
    rows = sum(e["kind"] == "row" for evs in events_json("dataworks", {}, original.partitions).values() for e in evs)
    assert sent + len(out.dead_letters) == rows


# --- pieces ---------------------------------------------------------------------------------------------


def test_resolve_takes_the_minimum_over_partitions_and_stays_below_waiting_rows() -> None:
    newest = {("t", 0): 300, ("t", 1): 200, ("t", 2): 250}
    assert resolve(100, newest, [150, 200, 250, 300]).mark == 200
    assert resolve(100, newest, [150, 200, 250, 300]).emit == [150, 200]
    assert resolve(100, newest, [150, 200, 250, 300]).later == [250, 300]
    assert resolve(100, newest, [200], waiting=[180]).mark == 179
    assert resolve(100, newest, [200], waiting=[None]).mark == 100
    assert resolve(100, {**newest, ("t", 3): None}, [200]).mark == 100  # a partition without any mark
    assert resolve(240, newest, [200, 250]).mark == 240  # never back


def test_identity_tells_copies_from_different_changes() -> None:
    types = {"id": MySQLType.parse("int"), "v": MySQLType.parse("decimal(5,2)")}
    row = RowChange(Op.UPDATE, "d", "t", {"id": 1, "v": None}, {"id": 1, "v": 2}, types, ("id",), 5,
                    origin=Origin("t", 0, 1))
    copy = RowChange(Op.UPDATE, "d", "t", {"id": 1, "v": None}, {"id": 1, "v": 2}, types, ("id",), 5,
                     origin=Origin("t", 3, 9))
    other = RowChange(Op.UPDATE, "d", "t", {"id": 1, "v": 2}, {"id": 1, "v": None}, types, ("id",), 5)
    assert identity(row) == identity(copy) != identity(other)


def test_progress_round_trips_through_json_and_refuses_other_settings(tmp_path: Path) -> None:
    spec = TranscodeSpec("open", {}, ProducerSpec("simple", partitions=2))
    message = RawMessage(b"k", b"\x00\xff", Origin("t", 1, 7), 123)
    progress = Progress(spec.settings(), batch=3, partitions={("t", 1): PartitionProgress(5, 9, 400)}, mark=400,
                        points=[500], primes={("t", 1): [Prime(message, "d", "t", 11)]}, router={"x": 1},
                        derived={"schemas": []}, plan=Plan(4, [OffsetRange("t", 1, 5, 12)], {0: 3, 1: 0}), written=8)
    progress.save(tmp_path)
    assert Progress.load(tmp_path, spec.settings()) == progress
    other = TranscodeSpec("open", {}, ProducerSpec("simple", partitions=3))
    with pytest.raises(TranscodeError, match="other settings"):
        Progress.load(tmp_path, other.settings())


def test_kept_primes_keep_one_message_per_version_of_the_newest_two() -> None:
    def prime(offset: int, version: int, table: str = "t") -> Prime:
        return Prime(RawMessage(None, b"", Origin("s", 0, offset)), "d", table, version)

    kept = kept_primes([prime(1, 10), prime(2, 10), prime(3, 20), prime(4, 30), prime(5, 5, "u")])
    assert sorted((p.table, p.version, p.message.origin.offset) for p in kept if p.message.origin) == [
        ("t", 20, 3), ("t", 30, 4), ("u", 5, 5)]


def test_locations_name_a_kafka_topic_or_a_captured_one(tmp_path: Path) -> None:
    kafka = Location.parse("kafka://a:9092,b:9092/orders", {"security.protocol": "SSL"})
    assert (kafka.topic, dict(kafka.kafka or {})) == ("orders", {"security.protocol": "SSL",
                                                                 "bootstrap.servers": "a:9092,b:9092"})
    captured = Location.parse(str(tmp_path / "orders"))
    assert (captured.topic, captured.root) == ("orders", tmp_path)
    for wrong in ("kafka://a:9092", "kafka:///orders", "s3://bucket/orders"):
        with pytest.raises(OptionError):
            Location.parse(wrong)


def test_the_spec_says_what_the_target_needs_and_the_source_does_not_carry() -> None:
    plain_to_simple = TranscodeSpec("canal-json", {}, ProducerSpec("simple"))
    lines = " ".join(plain_to_simple.derivations())
    assert "no watermark" in lines and "commit ts" in lines and "schema" in lines
    assert TranscodeSpec("open", {}, ProducerSpec("open")).derivations() == []


def test_schemas_sent_by_a_simple_source_are_not_derived_again() -> None:
    original = stream_of("simple", _workload())
    out = transcode_messages(spec_for(original, "simple"), source_of(original))
    versions = {(e["table"], e["schema_version"]) for evs in events_json("simple", {}, out.partitions).values()
                for e in evs if e["kind"] == "bootstrap"}
    sent = {(e["table"], e["schema_version"]) for evs in events_json("simple", {}, original.partitions).values()
            for e in evs if e["kind"] == "bootstrap"}
    assert versions == sent


def test_a_watermark_event_is_what_a_resolved_point_becomes() -> None:
    spec = TranscodeSpec("open", {}, ProducerSpec("canal-json", {"enable-tidb-extension": True}))
    assert [pickle.loads(payload) for _, payload in point_records(spec, [7])] == [Watermark(7)]
    plain = TranscodeSpec("open", {}, ProducerSpec("canal-json"))
    assert point_records(plain, [7]) == []  # Canal-JSON without the extension has no watermark to write


def test_a_table_schema_derived_from_a_row_keeps_its_columns_in_order() -> None:
    types = {"b": MySQLType.parse("varchar(3)"), "a": MySQLType.parse("int unsigned")}
    row = RowChange(Op.INSERT, "d", "t", None, {"b": "x", "a": 1}, types, ("a",), 99)
    schema = derived_schema(row, 42)
    assert isinstance(schema, TableSchema)
    assert [(c.name, str(c.type), c.nullable) for c in schema.columns] == [("b", "varchar(3)", True),
                                                                          ("a", "int unsigned", False)]
    assert (schema.key_columns, schema.version) == (("a",), 42)



def test_rows_waiting_for_their_schema_hold_the_batch_below_them() -> None:
    """A consumer that joined a Simple stream mid-way holds rows until their BOOTSTRAP or DDL comes;
    nothing at or above the first row still waiting at the end goes out, everything below it does."""
    stream = produce(Workload(WorkloadSpec(seed=3, transactions=80)), "simple", {}, watermark_interval_ms=200)
    joined = stream.starting_at({1: len(stream.partitions[1]) // 2})
    waiting: dict[Any, int] = {}
    rows: list[int] = []
    for messages in joined.partitions.values():
        decoder = joined.decoder()
        for event in (e for message in messages for e in decoder.decode(message)):
            if isinstance(event, PendingRow):
                waiting[event.origin] = event.commit_ts or 0
            elif isinstance(event, RowChange):
                waiting.pop(event.origin, None)
                rows.append(event.commit_ts or 0)
    assert waiting, "the joined stream must hold rows that never get their schema"
    out = transcode_messages(spec_for(joined, "open"), source_of(joined))
    sent = [e["commit_ts"] for evs in events_json("open", {}, out.partitions).values() for e in evs
            if e["kind"] == "row"]
    assert sent and sorted(sent) == sorted(ts for ts in rows if ts < min(waiting.values()))


def test_dead_letters_are_written_whole_per_batch_and_read_back(tmp_path: Path) -> None:
    letter = DeadLetter(Origin("t", 2, 41, index=1), "canal-json: not JSON", b"\x00k", b"{", 1700000000000)
    path = write_dead_letters(tmp_path, 7, [letter])
    assert path is not None and path.name == "00000007.jsonl"
    assert write_dead_letters(tmp_path, 7, [letter]) == path  # a batch run again writes it again
    lines = path.read_bytes().splitlines()
    assert [DeadLetter.from_json(json.loads(line)) for line in lines] == [letter]
    assert write_dead_letters(tmp_path, 8, []) is None
