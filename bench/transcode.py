"""Transcoding in events per second, for every ordered pair of formats, beside decoding alone and
encoding alone, measured in the same run.

The workload is the simulator's (docs/workload.md): ``WorkloadSpec(seed=3, tables=7, transactions=N)``
with its DDL, laid out on four partitions in each source format, without re-sent copies. DataWorks
pairs use three tables (``tables=3``): DataWorks decodes a bigint unsigned past 2^63 as a signed bigint
no other format can write (tests/test_transcode.py), and those rows would be dead letters rather than
traffic. In one process, in this order:

1. **Decode only**, per format: a decoder per partition over the source stream's messages; events/s.
2. **Encode only**, per format: the workload's commits laid out by the format's
   :class:`~cdclake.producer.Router` beforehand (untimed), then each partition's events encoded
   by a fresh encoder (``Router.encode``, as the transcoder's tasks do); events/s.
3. **In process**, per pair: :func:`cdclake.transcode.in_process.transcode_messages`, the whole stream as
   one batch on one core (the job's per-record work without Spark).
4. **Spark**, per pair: :class:`cdclake.spark.transcode.Transcoder` on ``local[2]`` from a captured topic
   to a captured topic, batches of at most ``--batch-records`` new records, after an untimed warm-up
   transcode; wall time of ``run(once=True)``.

Events are the row changes and DDL decoded from the source stream. Run from the repository root::

    python3 bench/transcode.py                        # 20,000 transactions; prints and writes BENCHMARKS.md
    python3 bench/transcode.py --transactions 2000    # a quick run

This is a benchmark, not a test: nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import platform
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from benchmarks_md import load_average, machine, write_section  # bench/ is on the path when a script here runs

from cdclake.formats import get_codec
from cdclake.model import Ddl, RowChange
from cdclake.producer import Router
from cdclake.sources.captured import CapturedTopics
from cdclake.transcode.endpoints import CapturedSink
from cdclake.transcode.in_process import transcode_messages
from cdclake.transcode.spec import TranscodeSpec
from cdclake.workload import ProducerSpec, Stream, Workload, WorkloadSpec, produce, write_captured

ROOT = Path(__file__).resolve().parents[1]
SECTION_START = "<!-- bench/transcode.py: start -->"
SECTION_END = "<!-- bench/transcode.py: end -->"
PARTITIONS = 4
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "open": ("open", {}),
    "canal-json": ("canal-json", {"enable-tidb-extension": True}),
    "canal-json (plain)": ("canal-json", {}),
    "simple": ("simple", {}),
    "simple-avro": ("simple-avro", {}),
    "dataworks": ("dataworks", {}),
}


@dataclass
class Measured:
    decode: dict[tuple[str, bool], float] = field(default_factory=dict)  # (case, narrow) -> events/s
    encode: dict[tuple[str, bool], float] = field(default_factory=dict)
    in_process: dict[tuple[str, str], tuple[int, float]] = field(default_factory=dict)  # events, seconds
    spark: dict[tuple[str, str], tuple[int, float, int]] = field(default_factory=dict)  # events, s, batches


def _narrow(*cases: str) -> bool:
    return "dataworks" in cases


def workload(transactions: int, narrow: bool) -> Workload:
    return Workload(WorkloadSpec(seed=3, tables=3 if narrow else 7, transactions=transactions))


def _timed(work: Callable[[], Any]) -> float:
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


def changes_in(stream: Stream) -> int:
    count = 0
    for messages in stream.partitions.values():
        decoder = stream.decoder()
        count += sum(isinstance(e, RowChange | Ddl) for m in messages for e in decoder.decode(m))
    return count


def decode_rate(stream: Stream, events: int) -> float:
    def decode() -> None:
        for messages in stream.partitions.values():
            decoder = stream.decoder()
            for message in messages:
                decoder.decode(message)
            decoder.flush()

    return events / _timed(decode)


def encode_rate(case: str, work: Workload, events: int) -> float:
    format_name, options = CASES[case]
    spec = ProducerSpec(format_name, options, partitions=PARTITIONS)
    router = Router(spec, work.initial_schemas())
    laid: list[list[Any]] = [[] for _ in range(PARTITIONS)]
    for commit in work.commits():
        if commit.ddl is not None:
            router.route_ddl(commit.ddl, laid)
        for row in commit.rows:
            router.route_row(row, laid)
    codec = get_codec(format_name)

    def encode() -> None:
        for events_of_partition in laid:
            router.encode(codec.encoder(spec.codec_options()), events_of_partition)

    return events / _timed(encode)


def measure(transactions: int, batch_records: int, scratch: Path) -> tuple[Measured, dict[tuple[str, bool], int]]:
    from cdclake.spark.session import build_session
    from cdclake.spark.transcode import TranscodeConfig, Transcoder

    measured, counts = Measured(), {}
    streams = {(case, narrow): produce(workload(transactions, narrow), *CASES[case], partitions=PARTITIONS)
               for case in CASES for narrow in (False, True)}
    for (case, narrow), stream in streams.items():
        counts[(case, narrow)] = changes_in(stream)
        measured.decode[(case, narrow)] = decode_rate(stream, counts[(case, narrow)])
        measured.encode[(case, narrow)] = encode_rate(case, workload(transactions, narrow), counts[(case, narrow)])
        print(f"{case}{' (3 tables)' if narrow else ''}: {counts[(case, narrow)]:,} events; decode "
              f"{measured.decode[(case, narrow)]:,.0f}/s, encode {measured.encode[(case, narrow)]:,.0f}/s", flush=True)
    pairs = [(a, b) for a in CASES for b in CASES if a != b]
    for source, target in pairs:
        stream = streams[(source, _narrow(source, target))]
        messages = {(stream.topic, p): m for p, m in stream.partitions.items()}
        seconds = _timed(functools.partial(transcode_messages, _spec(stream, target), messages))
        measured.in_process[(source, target)] = (counts[(source, _narrow(source, target))], seconds)
    spark = build_session("local[2]", warehouse=scratch / "warehouse", conf={"spark.ui.showConsoleProgress": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    try:
        for (case, narrow), stream in streams.items():
            write_captured(stream, scratch / "in" / f"{case}-{narrow}", stream.topic)

        def run(source: str, target: str, tag: str) -> tuple[float, int]:
            narrow = _narrow(source, target)
            stream = streams[(source, narrow)]
            out = scratch / tag
            transcoder = Transcoder(spark, CapturedTopics(scratch / "in" / f"{source}-{narrow}"),
                                    CapturedSink(out, "out"), TranscodeConfig(_spec(stream, target),
                                                                              max_batch_records=batch_records),
                                    out / "state")
            started = time.perf_counter()
            reports = transcoder.run(once=True)
            return time.perf_counter() - started, len(reports)

        run("open", "canal-json", "warm-up")
        for number, (source, target) in enumerate(pairs):
            seconds, batches = run(source, target, f"pair-{number}")
            events = counts[(source, _narrow(source, target))]
            measured.spark[(source, target)] = (events, seconds, batches)
            print(f"{source} -> {target}: in process {_rate(*measured.in_process[(source, target)])}/s, Spark "
                  f"{_rate(events, seconds)}/s ({batches} batches)", flush=True)
    finally:
        spark.stop()
    return measured, counts


def _spec(stream: Stream, target: str) -> TranscodeSpec:
    return TranscodeSpec(stream.spec.format_name, stream.codec_options,
                         ProducerSpec(*CASES[target], partitions=PARTITIONS, topic="out"))


def _rate(events: int, seconds: float) -> str:
    return f"{events / seconds:,.0f}" if seconds > 0 else "-"


def section(measured: Measured, counts: dict[tuple[str, bool], int], transactions: int, batch_records: int,
            loads: tuple[str, str]) -> str:
    lines = [
        SECTION_START,
        "## Transcoding: events per second for each pair, beside decoding and encoding alone",
        "",
        "Command: `python3 bench/transcode.py"
        + (f" --transactions {transactions}" if transactions != 20_000 else "")
        + (f" --batch-records {batch_records}" if batch_records != 100_000 else "") + "`  ",
        f"Date: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC  ",
        f"Machine: {machine()}; Spark `local[2]`; load average {loads[0]} (1 min) at the start, {loads[1]} at "
        "the end  ",
        f"Python {platform.python_version()}, pyspark {metadata.version('pyspark')}  ",
        f"Workload: `WorkloadSpec(seed=3, tables=7, transactions={transactions})` with its DDL on {PARTITIONS} "
        f"partitions, no re-sent copies: {counts[('open', False)]:,} events (row changes and DDL); DataWorks pairs "
        f"`tables=3`: {counts[('open', True)]:,} events. Spark batches of at most {batch_records:,} new records.",
        "",
        "| format | decode only events/s | encode only events/s |",
        "| --- | ---: | ---: |",
    ]
    for case in CASES:
        lines.append(f"| {case} | {measured.decode[(case, False)]:,.0f} | {measured.encode[(case, False)]:,.0f} |")
    lines += [
        "",
        "| source | target | events | decode only (source) | encode only (target) | in process events/s | "
        "Spark events/s | Spark batches | Spark × serial bound |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for (source, target), (events, seconds, batches) in measured.spark.items():
        narrow = _narrow(source, target)
        decode, encode = measured.decode[(source, narrow)], measured.encode[(target, narrow)]
        bound = 1 / (1 / decode + 1 / encode)
        in_process = _rate(*measured.in_process[(source, target)])
        lines.append(f"| {source} | {target} | {events:,} | {decode:,.0f} | {encode:,.0f} | {in_process} | "
                     f"{_rate(events, seconds)} | {batches} | {events / seconds / bound:.2f} |")
    lines += [
        "",
        "Decode and encode only run on one core in this process; DataWorks pairs take their rates from the "
        "three-table workload. The serial bound is what one core does decoding then encoding every event, "
        "1 / (1 / decode + 1 / encode); the in-process transcode adds the records each event becomes "
        "(pickled, sorted, deduplicated, laid out), and Spark adds its jobs (read, resolve, shuffle to the "
        "target partitions, lay out and write) on two cores. Wall time of the whole run of each pair, "
        "planning and progress files included.",
        SECTION_END,
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transactions", type=int, default=20_000)
    parser.add_argument("--batch-records", type=int, default=100_000)
    args = parser.parse_args()
    start_load = load_average()
    scratch = Path(tempfile.mkdtemp(prefix="cdclake-bench-transcode-"))
    try:
        measured, counts = measure(args.transactions, args.batch_records, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    text = section(measured, counts, args.transactions, args.batch_records, (start_load, load_average()))
    print(text)
    write_section(ROOT / "BENCHMARKS.md", text, SECTION_START, SECTION_END)


if __name__ == "__main__":
    main()
