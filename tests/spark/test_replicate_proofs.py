"""Proofs of the job's ordering guarantees on streams whose right answer is worked out apart from the
pipeline: by hand from a spec's own example, or from the upstream simulation's commits and oracle.

* The TiCDC Open Protocol spec's example stream applies exactly up to the resolved ts its Resolved
  events allow, and keeps the rest for a later run.
* A Simple protocol consumer that joins mid-stream holds each row until its table's BOOTSTRAP, across
  batches, and ends with every row changed after the join, and only those.
* An unresolved tail (a stream whose last commits no watermark covers) is kept or applied, as asked.
* A type change Iceberg cannot express stops the job at its DDL barrier, naming the option that lets
  it go on.

Every test has namespaces of its own in the session's shared warehouse.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import struct
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest

from cdclake.formats import get_codec
from cdclake.model import (
    Bootstrap,
    ColumnSchema,
    Ddl,
    DdlKind,
    Event,
    IndexSchema,
    Op,
    Origin,
    PendingRow,
    RawMessage,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.schema.policy import EvolutionPolicy, SchemaEvolutionError
from cdclake.sinks.iceberg.state import load_state
from cdclake.sources.captured import CapturedTopics, CapturedTopicWriter, partitions, read_partition
from cdclake.spark.ordering import SchemaWaitError
from cdclake.spark.replicate import ReplicateConfig, Replicator
from cdclake.spark.verify import compare_tables
from cdclake.types import MySQLType
from cdclake.workload import Stream, TableState, Workload, WorkloadSpec, key_of, produce, write_captured

_runs = itertools.count()


def _job(tag: str, format_name: str, options: Mapping[str, Any], **settings: Any
         ) -> tuple[ReplicateConfig, Callable[[str, str], str]]:
    """A job configuration with namespaces no other test uses, and its lake table naming."""
    prefix = f"proofs_{tag}_{next(_runs)}"
    config = ReplicateConfig(format_name, options, namespace=f"{prefix}_cdclake",
                             target_namespace=f"{prefix}_{{database}}", **settings)
    return config, lambda database, table: f"`lake`.`{prefix}_{database}`.`{table}`"


def _system_table(config: ReplicateConfig, name: str) -> str:
    return f"`lake`.`{config.namespace}`.`{name}`"


def _lake_differences(spark: Any, tables: Mapping[tuple[str, str], TableState],
                      lake_name: Callable[[str, str], str]) -> list[tuple[Any, ...]]:
    """How the lake tables differ from ``tables``: nothing when they hold the same rows and columns."""
    return [(c.upstream, c.missing, c.unexpected, c.column_differences, c.examples)
            for c in compare_tables(spark, tables, lake_name) if not c.equal]


# --- 1. The Open Protocol spec's example stream ----------------------------------------------------

# specs/ticdc-open-protocol.zh.md, "Event 流的输出示例": logs 1-14 as (log, partition, event key, event
# value), in the spec's order, each on the partition the spec's log names:
# * DDL and Resolved events are broadcast to every partition (logs 1-4, 13-14);
# * row events go by the row's key ("同一行的变更一定会分派到同一个 Partition"): ids 1 and 3 to
#   partition 0, id 2 to partition 1; the UPDATE of id 2 to 4 comes as a DELETE of 2 on 2's partition
#   (log 10) and an INSERT of 4 on 4's (log 12);
# * log 8 is a re-sent copy of log 7 (TiCDC is at-least-once).
# The keys and values are the spec's, character for character, but for the VARCHAR values: the spec
# shows them base64-encoded ("YWE=" for 'aa'), as TiCDC wrote them before August 2020; TiCDC has
# written them as plain text since (ticdc-reference-notes.md §1.1), and so does this stream.
SPEC_LOGS = (
    (1, 0, '{"ts":415508856908021766,"scm":"test","tbl":"t1","t":2}',
     '{"q":"CREATE TABLE test.t1(id int primary key, val varchar(16))","t":3}'),
    (2, 0, '{"ts":415508856908021766,"t":3}', ""),
    (3, 1, '{"ts":415508856908021766,"scm":"test","tbl":"t1","t":2}',
     '{"q":"CREATE TABLE test.t1(id int primary key, val varchar(16))","t":3}'),
    (4, 1, '{"ts":415508856908021766,"t":3}', ""),
    (5, 0, '{"ts":415508878783938562,"scm":"test","tbl":"t1","t":1}',
     '{"u":{"id":{"t":3,"h":true,"v":1},"val":{"t":15,"v":"aa"}}}'),
    (6, 1, '{"ts":415508878783938562,"scm":"test","tbl":"t1","t":1}',
     '{"u":{"id":{"t":3,"h":true,"v":2},"val":{"t":15,"v":"bb"}}}'),
    (7, 0, '{"ts":415508878783938562,"scm":"test","tbl":"t1","t":1}',
     '{"u":{"id":{"t":3,"h":true,"v":3},"val":{"t":15,"v":"cc"}}}'),
    (8, 0, '{"ts":415508878783938562,"scm":"test","tbl":"t1","t":1}',
     '{"u":{"id":{"t":3,"h":true,"v":3},"val":{"t":15,"v":"cc"}}}'),
    (9, 0, '{"ts":415508881418485761,"scm":"test","tbl":"t1","t":1}', '{"d":{"id":{"t":3,"h":true,"v":1}}}'),
    (10, 1, '{"ts":415508881418485761,"scm":"test","tbl":"t1","t":1}', '{"d":{"id":{"t":3,"h":true,"v":2}}}'),
    (11, 0, '{"ts":415508881418485761,"scm":"test","tbl":"t1","t":1}',
     '{"u":{"id":{"t":3,"h":true,"v":3},"val":{"t":15,"v":"dd"}}}'),
    (12, 0, '{"ts":415508881418485761,"scm":"test","tbl":"t1","t":1}',
     '{"u":{"id":{"t":3,"h":true,"v":4},"val":{"t":15,"v":"ee"}}}'),
    (13, 0, '{"ts":415508881038376963,"t":3}', ""),
    (14, 1, '{"ts":415508881038376963,"t":3}', ""),
)
SPEC_TOPIC = "ticdc-open-protocol-example"
SPEC_RESOLVED_TS = 415508881038376963  # logs 13 and 14: the newest Resolved of both partitions
# One logical tick past the second transaction's commit ts (415508881418485761): a Resolved that covers
# it whether "resolved" is read as "every event below it was sent" (the spec) or "at or below" (TiCDC).
LATER_RESOLVED_TS = 415508881418485762


def _open_protocol_message(event_key: str, event_value: str) -> tuple[bytes, bytes]:
    """One event framed as the spec's Message 格式定义 says: the key is the protocol version (1) then
    the event key, the value the event value, each after its length; every number a big-endian int64.
    A Resolved event's value is empty: a value of one zero length."""
    key, value = event_key.encode(), event_value.encode()
    return struct.pack(">qq", 1, len(key)) + key, struct.pack(">q", len(value)) + value


def _append_open_events(root: Path, events: list[tuple[int, str, str]]) -> None:
    """Append (partition, event key, event value) to the spec's topic, one message per event, each
    stamped with its ts's physical time."""
    with CapturedTopicWriter(root, SPEC_TOPIC) as writer:
        for partition, event_key, event_value in events:
            key, value = _open_protocol_message(event_key, event_value)
            writer.append(partition, key, value, timestamp_ms=orjson.loads(event_key)["ts"] >> 18)


def _rows_of(spark: Any, table: str) -> list[tuple[int, str]]:
    frame = spark.table(table)
    assert frame.columns == ["id", "val"]
    return sorted((row["id"], row["val"]) for row in frame.collect())


def test_the_open_protocol_spec_example_applies_up_to_its_resolved_ts(spark: Any, tmp_path: Path) -> None:
    """The spec's example, replicated, holds exactly what its Resolved events allow.

    The resolved ts is the minimum over both partitions of the newest Resolved each sent: 415508881038376963
    on both (logs 13 and 14). At or below it are the CREATE TABLE (ts ...021766, broadcast to both
    partitions: applied once) and the first transaction (ts ...938562): ids 1, 2 and 3 with 'aa', 'bb'
    (the transaction's UPDATE of 2 is already folded into its one row event, log 6) and 'cc' (log 8, a copy
    of log 7, changes nothing). The second transaction (ts ...485761: DELETE 1, DELETE 2 with only the
    key, 3 -> 'dd' as a new image alone, which replaces the row of its key, and the key change 2 -> 4 with
    'ee') was sent before the Resolved events, but commits above their ts: nothing says every partition
    has sent all of it, so none of it is applied. The job keeps it, and a later run that reads nothing
    but a Resolved above it on each partition applies it: (3, 'dd') and (4, 'ee').
    """
    _append_open_events(tmp_path, [(partition, key, value) for _, partition, key, value in SPEC_LOGS])
    config, lake_name = _job("spec", "open", {})
    t1 = lake_name("test", "t1")

    reports = Replicator(spark, CapturedTopics(tmp_path), config).run(once=True)

    assert [report.resolved_ts for report in reports] == [SPEC_RESOLVED_TS]
    assert _rows_of(spark, t1) == [(1, "aa"), (2, "bb"), (3, "cc")]
    assert spark.table(_system_table(config, "changelog")).count() == 3  # logs 5, 6 and 7

    later_resolved = f'{{"ts":{LATER_RESOLVED_TS},"t":3}}'
    _append_open_events(tmp_path, [(0, later_resolved, ""), (1, later_resolved, "")])
    reports = Replicator(spark, CapturedTopics(tmp_path), config).run(once=True)

    assert [(report.records, report.resolved_ts) for report in reports] == [(2, LATER_RESOLVED_TS)]
    assert _rows_of(spark, t1) == [(3, "dd"), (4, "ee")]
    assert spark.table(_system_table(config, "changelog")).count() == 7  # and logs 9 to 12
    assert spark.table(_system_table(config, "dead_letters")).count() == 0


# --- 2. A Simple protocol consumer joining mid-stream ----------------------------------------------

# send-bootstrap-in-msg-count: a table's BOOTSTRAP again after 16 of its rows, far enough apart that
# rows wait for it across a batch boundary.
BOOTSTRAP_EVERY = 16


def _join_offsets(stream: Stream, join_ts: int) -> dict[int, int]:
    """Per partition, the offset just after its last message of a commit (or watermark) at or below
    ``join_ts``: a consumer that starts there reads every change committed after ``join_ts`` and none
    before."""
    offsets = {}
    for partition, messages in stream.partitions.items():
        decoder, last_at_or_below = stream.decoder(), -1
        for index, message in enumerate(messages):
            if any(ts is not None and ts <= join_ts for ts in map(_ts_of, decoder.decode(message))):
                last_at_or_below = index
        offsets[partition] = last_at_or_below + 1
    return offsets


def _ts_of(event: Event) -> int | None:
    match event:
        case Watermark():
            return event.ts
        case RowChange() | Ddl():
            return event.commit_ts
    return None  # a BOOTSTRAP: a schema, at no commit


def _has_a_bootstrap(stream: Stream, messages: list[RawMessage]) -> bool:
    decoder = stream.decoder()
    return any(isinstance(event, Bootstrap) for message in messages for event in decoder.decode(message))


def _held_rows(root: Path, stream: Stream) -> dict[tuple[int, int], int]:
    """The rows of the captured topic a consumer cannot read when they come, their table's schema not
    known on their partition yet: (partition, offset) -> offset of the message (a BOOTSTRAP, or a DDL,
    which carries the schema too) that brings the schema. Every row must be readable in the end."""
    held, waiting = {}, set()
    for partition in partitions(root, stream.topic):
        decoder = stream.decoder()
        for message in read_partition(root, stream.topic, partition):
            assert message.origin is not None and message.origin.offset is not None
            for event in decoder.decode(message):
                if isinstance(event, PendingRow):
                    waiting.add((partition, message.origin.offset))
                elif isinstance(event, RowChange) and event.origin != message.origin:
                    assert event.origin is not None and event.origin.offset is not None
                    waiting.remove((partition, event.origin.offset))
                    held[(partition, event.origin.offset)] = message.origin.offset
    assert not waiting, f"rows whose schema never comes after the join: {sorted(waiting)}"
    return held


def _changed_after(workload: Workload, join_ts: int) -> tuple[dict[tuple[str, str], set[Any]], int]:
    """The keys of each table that a commit after ``join_ts`` inserted, updated (before and after key)
    or deleted; and how many of those UPDATEs changed a row the consumer had not seen before."""
    touched: dict[tuple[str, str], set[Any]] = defaultdict(set)
    unseen_updates = 0
    for commit in workload.commits():
        if commit.commit_ts <= join_ts:
            continue
        for row in commit.rows:
            keys = touched[(row.database, row.table)]
            if row.before is not None and row.after is not None:
                unseen_updates += key_of(row.key_columns, row.before) not in keys
            keys.update(key_of(row.key_columns, image) for image in (row.before, row.after) if image is not None)
    return touched, unseen_updates


def _joined_consumer_state(workload: Workload, join_ts: int, options: Mapping[str, Any]
                           ) -> tuple[dict[tuple[str, str], TableState], int]:
    """What a consumer that joined after ``join_ts`` must end with, and the number of unseen-row updates.

    It knows a row only through the changes committed after ``join_ts``; an UPDATE or DELETE finds its
    row by key, so an UPDATE of a row it never saw inserted is an upsert (a Simple protocol UPDATE
    carries the whole new row) and a DELETE of one removes nothing. So a key changed after the join
    whose last change left a row is in the lake exactly as upstream now (that change, and every later
    one, came after the join); a key whose last change deleted it, or not changed since the join, is
    not. That is upstream's final state (the oracle) restricted to the keys changed after the join, for
    every table with a change after it: DDLs after the join (ADD, RENAME, MODIFY, DROP COLUMN, TRUNCATE)
    shape the oracle's rows as they shape the lake's.
    """
    touched, unseen_updates = _changed_after(workload, join_ts)
    final = workload.oracle().carried("simple", options)
    expected = {name: TableState(state.schema, {key: row for key, row in state.rows.items() if key in touched[name]})
                for name, state in final.tables.items() if name in touched}
    return expected, unseen_updates


def test_a_simple_consumer_joining_mid_stream_holds_rows_until_their_bootstrap(spark: Any, tmp_path: Path) -> None:
    """Joined after 30 % of the commits, the consumer has missed every table's first BOOTSTRAP, and rows
    come before their table's next one (or a DDL, which carries the schema too) on their partition. They
    wait (no dead letter, none applied before the batch that reads its schema, some waiting across a
    batch boundary), then apply in commit order, and the lake ends as :func:`_joined_consumer_state`
    says."""
    workload = Workload(WorkloadSpec(seed=1, transactions=60, tables=3))
    stream = produce(workload, "simple", {"send-bootstrap-in-msg-count": BOOTSTRAP_EVERY}, watermark_interval_ms=100)
    commits = list(workload.commits())
    join_ts = commits[len(commits) * 3 // 10].commit_ts
    offsets = _join_offsets(stream, join_ts)
    missed = [_has_a_bootstrap(stream, stream.partitions[p][:offset]) for p, offset in offsets.items()]
    assert all(missed), "the consumer must join after the first BOOTSTRAPs"
    joined = stream.starting_at(offsets)
    write_captured(joined, tmp_path, joined.topic)
    held = _held_rows(tmp_path, stream)
    expected, unseen_updates = _joined_consumer_state(workload, join_ts, joined.codec_options)
    assert held and unseen_updates, "the stream must hold rows before their BOOTSTRAP, and updates of unseen rows"

    config, lake_name = _job("joined", "simple", joined.codec_options, max_batch_records=len(joined) // 3 + 1)
    replicator = Replicator(spark, CapturedTopics(tmp_path), config)
    # read_until[b][p]: the offset of partition p that batch b read up to (batch 0: none read), which
    # is where the partition ends less the lag the batch reports.
    ends = {partition: len(messages) for partition, messages in joined.partitions.items()}
    read_until: list[dict[int, int]] = [dict.fromkeys(ends, 0)]
    while (report := replicator.step(finishing=True)) is not None:
        read_until.append({partition: end - report.lag[(joined.topic, partition)] for partition, end in ends.items()})
    assert 2 <= len(read_until) - 1 <= 3

    def batch_reading(partition: int, offset: int) -> int:
        return bisect.bisect_right([until[partition] for until in read_until], offset)

    crossing = [place for place, release in held.items() if batch_reading(place[0], release) > batch_reading(*place)]
    assert crossing, "no row waited for its schema across a batch boundary"
    applied_in = {(row["partition"], row["offset"]): row["batch"]
                  for row in spark.table(_system_table(config, "changelog")).collect()}
    problems = {
        "held rows never applied": sorted(place for place in held if place not in applied_in),
        "held rows applied before the batch that read their schema": sorted(
            place for place, release in held.items()
            if place in applied_in and applied_in[place] < batch_reading(place[0], release)),
        "dead letters": spark.table(_system_table(config, "dead_letters")).count(),
        "tables that differ": _lake_differences(spark, expected, lake_name),
    }
    assert not any(problems.values()), problems


# --- 3. The unresolved tail ------------------------------------------------------------------------

TAIL_FORMAT, TAIL_OPTIONS = "canal-json", {"enable-tidb-extension": True}


def _stream_with_a_tail(root: Path) -> tuple[Workload, Stream]:
    """60 transactions, a watermark round every 400 ms of the upstream clock, none after the last round:
    the commits after it (rows, a DROP COLUMN and a TRUNCATE TABLE) are the unresolved tail."""
    workload = Workload(WorkloadSpec(seed=3, transactions=60, tables=2))
    stream = produce(workload, TAIL_FORMAT, TAIL_OPTIONS, final_watermark=False, watermark_interval_ms=400)
    write_captured(stream, root, stream.topic)
    tail = [commit for commit in workload.commits() if commit.commit_ts > stream.watermarks[-1]]
    assert any(commit.rows for commit in tail) and len([commit for commit in tail if commit.ddl]) == 2
    return workload, stream


def test_an_unresolved_tail_is_kept_for_a_later_watermark(spark: Any, tmp_path: Path) -> None:
    """With ``unresolved_tail="keep"`` the tables stop at R, the last watermark every partition got:
    the commits after it are not known to be complete. A later run with nothing new to read keeps them
    waiting."""
    workload, stream = _stream_with_a_tail(tmp_path)
    resolved = stream.watermarks[-1]
    at_resolved = workload.oracle().at(resolved).carried(TAIL_FORMAT, stream.codec_options)
    config, lake_name = _job("tail_keep", TAIL_FORMAT, stream.codec_options, unresolved_tail="keep")

    reports = Replicator(spark, CapturedTopics(tmp_path), config).run(once=True)
    assert reports[-1].resolved_ts == resolved
    assert not _lake_differences(spark, at_resolved.tables, lake_name)

    # Whatever a job applies, it applies in a batch; this run has none.
    assert Replicator(spark, CapturedTopics(tmp_path), config).run(once=True) == []


def test_an_unresolved_tail_is_applied_when_asked(spark: Any, tmp_path: Path) -> None:
    """With ``unresolved_tail="apply"`` a run that has read everything applies the tail too: the tables
    equal the upstream after its last commit."""
    workload, stream = _stream_with_a_tail(tmp_path)
    config, lake_name = _job("tail_apply", TAIL_FORMAT, stream.codec_options, unresolved_tail="apply")

    Replicator(spark, CapturedTopics(tmp_path), config).run(once=True)
    assert not _lake_differences(spark, workload.oracle().carried(TAIL_FORMAT, stream.codec_options).tables, lake_name)


def test_a_row_whose_schema_never_comes_stops_the_job_naming_it_with_nothing_applied(
        spark: Any, tmp_path: Path) -> None:
    """A Simple stream that lost every BOOTSTRAP and DDL of one table: its rows wait, the resolved ts
    stays below them, and once every partition has announced a ts ``schema-wait-s`` past one of them the
    job stops, naming the table, the schema version and where the row is, before applying anything of
    the batch; a longer wait lets it go on."""
    workload = Workload(WorkloadSpec(seed=3, transactions=20, tables=3))
    stream = produce(workload, "simple", watermark_interval_ms=100)
    lost = ("shop", "accounts")

    def schema_of_lost_table(message: RawMessage) -> bool:
        value = orjson.loads(message.value or b"{}")
        schema = value.get("tableSchema") or {}
        # BOOTSTRAP and every DDL type (CREATE, ALTER, TRUNCATE ...): all but the row messages
        rows = ("INSERT", "UPDATE", "DELETE")
        return value.get("type") not in rows and (schema.get("schema"), schema.get("table")) == lost

    partitions = {p: [m for m in messages if not schema_of_lost_table(m)] for p, messages in stream.partitions.items()}
    assert sum(map(len, partitions.values())) < len(stream), "the stream must have lost the table's schemas"
    write_captured((m for messages in partitions.values() for m in messages), tmp_path, stream.topic)
    config, _ = _job("schema_wait", "simple", stream.codec_options, schema_wait_s=0.0)

    with pytest.raises(SchemaWaitError, match=r"a row of shop\.accounts has waited \d+ s of upstream time for its "
                       r"schema version \d+.*nothing of this batch was applied.*schema-wait-s") as stopped:
        Replicator(spark, CapturedTopics(tmp_path), config).run(once=True)

    assert f"{stream.topic}[" in str(stopped.value)
    assert spark.table(_system_table(config, "changelog")).count() == 0
    patient = ReplicateConfig(config.format, config.format_options, namespace=config.namespace,
                              target_namespace=config.target_namespace, schema_wait_s=3600.0)
    assert Replicator(spark, CapturedTopics(tmp_path), patient).run(once=True)
    assert spark.table(_system_table(config, "changelog")).filter("`table` = 'accounts'").count() == 0


# --- 4. A type change Iceberg cannot express ---------------------------------------------------------


def _items_stream() -> list[Event]:
    """shop.items created, three rows, then ``qty`` changed from INT to VARCHAR (which Iceberg cannot
    do to a column in place), a row of the new type and an update to it; a watermark after each part."""
    ts = itertools.count(450_000_000_000_000_000, 1 << 18)
    columns = (ColumnSchema("id", MySQLType("int"), nullable=False), ColumnSchema("qty", MySQLType("int")),
               ColumnSchema("note", MySQLType.parse("varchar(20)")))
    created = TableSchema("shop", "items", columns, (IndexSchema("PRIMARY", ("id",), unique=True, primary=True),))
    types = {c.name: c.type for c in columns}
    new_types = {**types, "qty": MySQLType.parse("varchar(20)")}

    def insert(row: dict[str, Any], row_types: Mapping[str, MySQLType]) -> RowChange:
        return RowChange(Op.INSERT, "shop", "items", None, row, row_types, ("id",), next(ts))

    return [
        Ddl(DdlKind.CREATE_TABLE, "shop", "items", "CREATE TABLE `shop`.`items` (`id` int NOT NULL, `qty` int, "
            "`note` varchar(20), PRIMARY KEY (`id`))", next(ts), None, created),
        insert({"id": 1, "qty": 5, "note": "a"}, types),
        insert({"id": 2, "qty": 6, "note": None}, types),
        insert({"id": 3, "qty": None, "note": "c"}, types),
        Watermark(next(ts)),
        Ddl(DdlKind.ALTER_TABLE, "shop", "items", "ALTER TABLE `shop`.`items` MODIFY COLUMN `qty` varchar(20)",
            next(ts)),
        insert({"id": 4, "qty": "7 boxes", "note": "d"}, new_types),
        RowChange(Op.UPDATE, "shop", "items", {"id": 1, "qty": "5", "note": "a"}, {"id": 1, "qty": "many", "note": "a"},
                  new_types, ("id",), next(ts)),
        Watermark(next(ts)),
    ]


def test_a_type_change_iceberg_cannot_express_stops_the_job_naming_the_option_with_nothing_half_applied(
        spark: Any, tmp_path: Path) -> None:
    """INT to VARCHAR mid-batch: the job stops at the DDL with a message naming the table, the column and
    the option that resolves it. The batch stops at its DDL barrier, as upstream was when the DDL ran:
    the rows before it applied, the column untouched, none of the rows after it, and the batch not
    committed. Run again with ``incompatible-type-change = 'rewrite'``, the batch is finished: the
    column rebuilt with the old values cast, the later rows applied, each change once in the changelog."""
    codec = get_codec("canal-json")
    options = codec.resolve({"enable-tidb-extension": True})
    messages = codec.encoder(options).encode(_items_stream())
    write_captured((dataclasses.replace(m, origin=Origin(partition=0)) for m in messages), tmp_path, "items")
    config, lake_name = _job("type_change", "canal-json", options)
    items = lake_name("shop", "items")

    with pytest.raises(SchemaEvolutionError) as stopped:
        Replicator(spark, CapturedTopics(tmp_path), config).run(once=True)

    message = str(stopped.value)
    for named in ("upstream table shop.items", "'qty'", "incompatible-type-change", "'rewrite'"):
        assert named in message, f"{named} is not named in: {message}"
    assert {f.name: f.dataType.simpleString() for f in spark.table(items).schema.fields} == {
        "id": "int", "qty": "int", "note": "string"}
    assert sorted(tuple(row) for row in spark.table(items).collect()) == [(1, 5, "a"), (2, 6, None), (3, None, "c")]
    state, _ = load_state(spark, "lake", config.namespace)
    assert state.batch == 0 and state.plan, "the batch must be left planned and uncommitted"

    rewrite = dataclasses.replace(config, evolution=EvolutionPolicy(incompatible_type_change="rewrite"))
    Replicator(spark, CapturedTopics(tmp_path), rewrite).run(once=True)

    # The rebuilt column is the table's newest, so it comes last: the rows are read by column name.
    assert {f.name: f.dataType.simpleString() for f in spark.table(items).schema.fields} == {
        "id": "int", "note": "string", "qty": "string"}
    assert sorted(tuple(row) for row in spark.table(items).select("id", "qty", "note").collect()) == [
        (1, "many", "a"), (2, "6", None), (3, None, "c"), (4, "7 boxes", "d")]
    changelog = spark.table(_system_table(config, "changelog")).groupBy("op", "offset", "index").count().collect()
    assert sorted((row["op"], row["count"]) for row in changelog) == [("insert", 1)] * 4 + [("update", 1)]
