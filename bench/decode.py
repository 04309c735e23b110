"""How fast each decoder turns messages into events, next to the cost of merely parsing the same bytes.

The workload is realistic TiCDC traffic: row events (55% inserts, 35% updates with both images, 10%
deletes) on three tables of 14 to 20 columns of mixed MySQL types, some values NULL, encoded once by
each format's own encoder. Each repetition then times, on one pinned core and in the same process:

* the decoder: a fresh decoder per repetition decodes every message (for the Simple protocol, after
  the tables' BOOTSTRAP messages, which are not timed);
* the floor: parsing the very same bytes and nothing more — ``orjson.loads`` of each message value, of
  each event value inside an Open Protocol batch (split off beforehand), and for Simple Avro
  fastavro's ``schemaless_reader`` (plus, for reference, ``orjson.loads`` of the Simple JSON messages
  of the same events).

Rates are events per second, best of the repetitions (taken per slice of about 250 events, so that a
burst of load from another process spoils one slice rather than a whole repetition); the ratio is
decoder rate / floor rate, and the target is at least 0.5. Garbage collection stays on, as in
production; both sides drop what they build at once, so neither pays for keeping ten thousand events
alive. Run from the repository root::

    python3 bench/decode.py                  # prints the table and writes it to BENCHMARKS.md
    python3 bench/decode.py --profile open   # the decoder's hotspots under cProfile

This is a benchmark, not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import gc
import io
import json
import os
import platform
import pstats
import random
import struct
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import fastavro
import orjson
from _stream import OPTIONS  # bench/ is on the path when a script here runs
from benchmarks_md import load_average, machine, write_section

from cdclake.formats import get_codec
from cdclake.formats.base import Decoder
from cdclake.model import Bootstrap, ColumnSchema, Event, IndexSchema, Op, RawMessage, RowChange, TableSchema
from cdclake.types import Family, MySQLType
from cdclake.values import to_float32

ROOT = Path(__file__).resolve().parents[1]
TARGET = 0.5
SECTION_START = "<!-- bench/decode.py: start -->"
SECTION_END = "<!-- bench/decode.py: end -->"

# --- the workload -----------------------------------------------------------------------------------

# (column, MySQL type, nullable); the first column is the primary key.
TABLES: dict[str, list[tuple[str, str, bool]]] = {
    "orders": [
        ("id", "bigint", False),
        ("customer_id", "int unsigned", False),
        ("status", "enum('new','paid','shipped','cancelled')", False),
        ("amount", "decimal(12,2)", False),
        ("currency", "char(3)", False),
        ("items", "tinyint unsigned", False),
        ("created_at", "datetime(3)", False),
        ("updated_at", "timestamp(6)", False),
        ("note", "varchar(255)", True),
        ("paid", "tinyint(1)", False),
        ("discount", "decimal(5,2)", True),
        ("weight", "float", True),
        ("shipping_fee", "decimal(10,2)", False),
        ("tags", "set('gift','express','fragile')", False),
        ("version", "int", False),
        ("region", "varchar(32)", False),
    ],
    "customers": [
        ("id", "bigint unsigned", False),
        ("email", "varchar(255)", False),
        ("name", "varchar(100)", False),
        ("birthday", "date", True),
        ("created_at", "datetime", False),
        ("last_login", "timestamp", True),
        ("score", "double", False),
        ("level", "smallint", False),
        ("vip", "tinyint(1)", False),
        ("balance", "decimal(18,4)", False),
        ("profile", "json", True),
        ("country", "char(2)", False),
        ("phone", "varchar(20)", True),
        ("avatar_hash", "binary(16)", True),
    ],
    "page_views": [
        ("id", "bigint", False),
        ("viewed_at", "timestamp(3)", False),
        ("kind", "varchar(32)", False),
        ("user_id", "bigint", True),
        ("session", "varchar(64)", False),
        ("duration", "time(3)", False),
        ("payload", "json", True),
        ("ip", "varbinary(16)", False),
        ("flags", "bit(8)", False),
        ("model_year", "year", True),
        ("lat", "double", True),
        ("lon", "double", True),
        ("user_agent", "text", False),
        ("referrer", "varchar(255)", True),
        ("revenue", "decimal(20,6)", False),
        ("clicks", "int", False),
        ("bounced", "tinyint(1)", False),
        ("screen", "mediumint", False),
        ("day", "date", False),
        ("campaign", "varchar(64)", True),
    ],
}
DATABASE = "shop"
WORDS = (
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo",
    "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango", "uniform", "victor",
    "whiskey", "xray", "yankee", "zulu", "北京", "Zürich", "naïve", "café", "O'Brien", "<b>&amp;</b>",
)  # fmt: skip
START = dt.datetime(2024, 5, 1, 8, 0, 0)


def _schemas() -> list[TableSchema]:
    schemas = []
    for table_id, (table, columns) in enumerate(TABLES.items(), start=100):
        schemas.append(
            TableSchema(
                DATABASE,
                table,
                tuple(ColumnSchema(name, MySQLType.parse(text), nullable) for name, text, nullable in columns),
                (IndexSchema("primary", (columns[0][0],), unique=True, primary=True),),
                table_id=table_id,
                version=449_000_000_000_000_000 + table_id,
            )
        )
    return schemas


def _fraction(rng: random.Random, fsp: int | None) -> int:
    digits = fsp or 0
    return rng.randrange(10**digits) * 10 ** (6 - digits)


def _text(rng: random.Random, length: int) -> str:
    words: list[str] = []
    while sum(len(w) + 1 for w in words) < length:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:length]


def _value(rng: random.Random, mtype: MySQLType) -> Any:
    """A value such as a busy shop's tables hold: modest numbers, short text, recent times."""
    family = mtype.family
    if family is Family.INTEGER:
        if mtype.length == 1:
            return rng.randrange(2)
        return rng.randrange(0 if mtype.unsigned else -1000, min(mtype.integer_range()[1], 10_000_000))
    if family is Family.DECIMAL:
        precision, scale = mtype.length or 10, mtype.decimals or 0
        return Decimal(f"{rng.randrange(10 ** min(precision, scale + 6))}E-{scale}")
    if family is Family.FLOAT:
        return to_float32(rng.uniform(0, 100))
    if family is Family.DOUBLE:
        return round(rng.uniform(-180, 180), rng.randrange(2, 15))
    if family is Family.STRING:
        width = mtype.length or 120
        return _text(rng, width if mtype.name == "char" else rng.randrange(3, min(width, 60) + 1))
    if family is Family.BINARY:
        return rng.randbytes(mtype.length or 16)
    if family is Family.ENUM:
        return rng.choice(mtype.elements or ())
    if family is Family.SET:
        members = mtype.elements or ()
        return ",".join(m for m in members if rng.random() < 0.4)
    if family is Family.JSON:
        return json.dumps({"plan": rng.choice(WORDS), "n": rng.randrange(100), "ok": rng.random() < 0.5})
    if family is Family.DATE:
        return dt.date(1960, 1, 1) + dt.timedelta(days=rng.randrange(20_000))
    if family is Family.DATETIME:
        moment = START + dt.timedelta(seconds=rng.randrange(10_000_000))
        return moment.replace(microsecond=_fraction(rng, mtype.decimals))
    if family is Family.TIMESTAMP:
        moment = START + dt.timedelta(seconds=rng.randrange(10_000_000))
        return moment.replace(microsecond=_fraction(rng, mtype.decimals), tzinfo=dt.UTC)
    if family is Family.TIME:
        return dt.timedelta(seconds=rng.randrange(36_000), microseconds=_fraction(rng, mtype.decimals))
    if family is Family.YEAR:
        return rng.randrange(1990, 2025)
    if family is Family.BIT:
        return rng.randrange(1 << (mtype.length or 1))
    raise ValueError(f"no workload value for {mtype}")


def _row(rng: random.Random, schema: TableSchema, key: int) -> dict[str, Any]:
    row = {}
    for column in schema.columns:
        row[column.name] = None if column.nullable and rng.random() < 0.1 else _value(rng, column.type)
    row[schema.columns[0].name] = key
    return row


def row_events(count: int, seed: int = 7) -> tuple[list[TableSchema], list[RowChange]]:
    """``count`` row changes over the workload tables, updates and deletes on rows that exist."""
    rng = random.Random(seed)
    schemas = _schemas()
    live: dict[str, dict[int, dict[str, Any]]] = {s.table: {} for s in schemas}
    next_key = dict.fromkeys(live, 1)
    events = []
    commit_ts = (int(START.replace(tzinfo=dt.UTC).timestamp() * 1000)) << 18
    for _ in range(count):
        schema = rng.choice(schemas)
        rows = live[schema.table]
        draw = rng.random()
        before: dict[str, Any] | None
        after: dict[str, Any] | None
        if draw < 0.55 or len(rows) < 10:
            op, before, after = Op.INSERT, None, _row(rng, schema, next_key[schema.table])
            next_key[schema.table] += 1
            rows[after[schema.columns[0].name]] = after
        elif draw < 0.90:
            key = rng.choice(list(rows))
            before = rows[key]
            after = dict(before)
            for column in rng.sample(schema.columns[1:], rng.randrange(1, 4)):
                after[column.name] = _value(rng, column.type)
            op, rows[key] = Op.UPDATE, after
        else:
            key = rng.choice(list(rows))
            op, before, after = Op.DELETE, rows.pop(key), None
        commit_ts += rng.randrange(1, 50) << 18
        events.append(
            RowChange(
                op,
                DATABASE,
                schema.table,
                before,
                after,
                {c.name: c.type for c in schema.columns},
                schema.key_columns,
                commit_ts=commit_ts,
                schema_version=schema.version,
                table_id=schema.table_id,
            )
        )
    return schemas, events


# --- formats, their messages and their floors -------------------------------------------------------


def _open_event_values(value: bytes) -> list[bytes]:
    """The event values of an Open Protocol batch: N × (uint64 big-endian length, bytes)."""
    values, position = [], 0
    while position < len(value):
        (length,) = struct.unpack_from(">Q", value, position)
        values.append(value[position + 8 : position + 8 + length])
        position += 8 + length
    return values


def _orjson_floor(values: Sequence[bytes]) -> None:
    loads = orjson.loads
    for value in values:
        loads(value)


def _avro_floor() -> Callable[[Sequence[bytes]], None]:
    text = resources.files("cdclake.formats").joinpath("simple_avro_schema.json").read_text("utf-8")
    schema = fastavro.parse_schema(json.loads(text))
    reader = fastavro.schemaless_reader

    def parse(values: Sequence[bytes]) -> None:
        for value in values:
            reader(io.BytesIO(value), schema, None)

    return parse


# Messages are timed in slices of about this many row events; each slice's best time over the
# repetitions counts. Another process's burst of work then spoils one slice of one repetition, not a
# whole repetition (the machines this runs on are shared).
SLICE_EVENTS = 250


@dataclass
class Case:
    """One line of the table: a format's messages, how to decode them, and the floor to compare with.

    ``slices`` and ``floor_slices`` cut the same messages at the same places: the floor of a slice
    parses exactly the bytes its messages hold.
    """

    label: str
    format_name: str
    options: Mapping[str, Any]
    setup: list[RawMessage]  # decoded before timing (Simple protocol BOOTSTRAPs)
    slices: list[list[RawMessage]]
    floor_name: str
    floor: Callable[[Sequence[bytes]], None]
    floor_slices: list[list[bytes]]
    events: int = 0

    @property
    def messages(self) -> list[RawMessage]:
        return [message for part in self.slices for message in part]

    def decoder(self) -> Decoder:
        decoder = get_codec(self.format_name).decoder(self.options)
        for message in self.setup:
            decoder.decode(message)
        return decoder




def _messages(
    format_name: str, schemas: list[TableSchema], rows: list[RowChange]
) -> tuple[list[RawMessage], list[RawMessage]]:
    encoder = get_codec(format_name).encoder(OPTIONS[format_name])
    if format_name.startswith("simple"):
        setup: list[Event] = [Bootstrap(schema) for schema in schemas]
        messages = encoder.encode([*setup, *rows])
        return messages[: len(setup)], messages[len(setup) :]
    return [], encoder.encode(rows)


def _sliced(items: Sequence[Any], rows: int) -> list[list[Any]]:
    """``items`` (one format's messages, or what its floor parses of them) in slices of about
    SLICE_EVENTS row events, given that they carry ``rows`` row events in all."""
    size = max(1, round(SLICE_EVENTS * len(items) / rows))
    return [list(items[start : start + size]) for start in range(0, len(items), size)]


def cases(names: Sequence[str], schemas: list[TableSchema], rows: list[RowChange]) -> Iterator[Case]:
    for name in names:
        setup, messages = _messages(name, schemas, rows)
        slices = _sliced(messages, len(rows))
        values = _sliced([m.value or b"" for m in messages], len(rows))
        if name == "open":
            event_values = [[v for value in part for v in _open_event_values(value)] for part in values]
            yield Case(name, name, OPTIONS[name], setup, slices, "orjson.loads per event", _orjson_floor, event_values)
        elif name == "simple-avro":
            yield Case(name, name, OPTIONS[name], setup, slices, "fastavro schemaless_reader", _avro_floor(), values)
            _, json_messages = _messages("simple", schemas, rows)
            json_values = _sliced([m.value or b"" for m in json_messages], len(rows))
            floor_name = "orjson.loads of Simple JSON"
            yield Case(f"{name} (ref.)", name, OPTIONS[name], setup, slices, floor_name, _orjson_floor, json_values)
        else:
            yield Case(name, name, OPTIONS[name], setup, slices, "orjson.loads", _orjson_floor, values)


# --- measuring --------------------------------------------------------------------------------------


def _decode_slices(case: Case) -> list[float]:
    decode = case.decoder().decode
    clock = time.perf_counter
    gc.collect()
    times = []
    for part in case.slices:
        start = clock()
        for message in part:
            decode(message)
        times.append(clock() - start)
    return times


def _floor_slices(case: Case) -> list[float]:
    clock = time.perf_counter
    gc.collect()
    times = []
    for part in case.floor_slices:
        start = clock()
        case.floor(part)
        times.append(clock() - start)
    return times


def measure(all_cases: list[Case], repeat: int) -> dict[str, tuple[float, float]]:
    """Decoder and floor time per case: the sum over slices of each slice's best time. Decoder and
    floor alternate, so drift hits both alike."""
    best: dict[str, tuple[list[float], list[float]]] = {}
    for _ in range(repeat):
        for case in all_cases:
            decode_times, floor_times = _decode_slices(case), _floor_slices(case)
            if case.label in best:
                decode_times = list(map(min, decode_times, best[case.label][0]))
                floor_times = list(map(min, floor_times, best[case.label][1]))
            best[case.label] = (decode_times, floor_times)
    return {label: (sum(decode), sum(floor)) for label, (decode, floor) in best.items()}


def count_events(case: Case, rows: int) -> int:
    """The events one pass decodes; every row must come back as a row event, or the rate means nothing."""
    decoder = case.decoder()
    events = [e for m in case.messages for e in decoder.decode(m)]
    changes = sum(isinstance(e, RowChange) for e in events)
    if changes != rows:
        raise SystemExit(f"{case.label}: decoded {changes} row changes from {rows} rows")
    return len(events)


def pin_to_one_core() -> str:
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity)"
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return f"pinned to core {core}"


def table(all_cases: list[Case], best: dict[str, tuple[float, float]]) -> str:
    lines = [
        "| format | messages | events | decoder events/s | floor | floor events/s | ratio | target ≥ 0.5× |",
        "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- |",
    ]
    for case in all_cases:
        decode_time, floor_time = best[case.label]
        ratio = floor_time / decode_time
        lines.append(
            f"| {case.label} | {len(case.messages):,} | {case.events:,} | {case.events / decode_time:,.0f} | "
            f"{case.floor_name} | {case.events / floor_time:,.0f} | {ratio:.2f} | "
            f"{'met' if ratio >= TARGET else 'not met'} |"
        )
    return "\n".join(lines)


def report(command: str, pinned: str, load: str, repeat: int, rows: int, body: str) -> str:
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in ("orjson", "fastavro"))
    return "\n".join(
        [
            SECTION_START,
            "## Decoding: events per second against parsing the same bytes",
            "",
            f"Command: `{command}`  ",
            f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC  ",
            f"Machine: {machine()}; the run {pinned}; load average {load} (1 min) at the end  ",
            f"Python {platform.python_version()}, {versions}  ",
            f"Workload: {rows:,} row events (55% insert, 35% update, 10% delete) on 3 tables of 14-20 "
            f"columns of mixed MySQL types; best of {repeat} repetitions per slice of ~{SLICE_EVENTS} events, "
            "garbage collection on.",
            "",
            body,
            "",
            "The floor parses the same bytes and builds nothing else: `orjson.loads` of each message value "
            "(Open Protocol: of each event value inside the batches), fastavro's `schemaless_reader` for "
            "Simple Avro. The *ref.* line compares Simple Avro with `orjson.loads` of the Simple JSON "
            "messages of the same events. Ratio = decoder events/s ÷ floor events/s.",
            SECTION_END,
        ]
    )


def profile(case: Case, top: int) -> None:
    profiler = cProfile.Profile()
    profiler.runcall(_decode_slices, case)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000, help="row events per format (default 10000)")
    parser.add_argument("--repeat", type=int, default=10, help="repetitions; the best counts (default 10)")
    parser.add_argument("--formats", nargs="*", choices=list(OPTIONS), help="only these formats")
    parser.add_argument("--output", type=Path, default=ROOT / "BENCHMARKS.md", help="markdown file to update")
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--profile", choices=list(OPTIONS), help="profile this format's decoder instead")
    parser.add_argument("--top", type=int, default=25, help="functions to list when profiling")
    args = parser.parse_args(argv)

    pinned = pin_to_one_core()
    schemas, rows = row_events(args.rows)
    wanted = [args.profile] if args.profile else args.formats or list(OPTIONS)
    all_cases = list(cases(wanted, schemas, rows))
    if args.profile:
        profile(all_cases[0], args.top)
        return
    for case in all_cases:
        case.events = count_events(case, len(rows))
    best = measure(all_cases, args.repeat)
    body = table(all_cases, best)
    print(body)
    if not args.no_write and not args.formats:
        command = "python3 bench/decode.py" + "".join(f" {a}" for a in (argv or sys.argv[1:]))
        section = report(command, pinned, load_average(), args.repeat, len(rows), body)
        write_section(args.output, section, SECTION_START, SECTION_END)
        print(f"\nwritten to {args.output}")


if __name__ == "__main__":
    main()
