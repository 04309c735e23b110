"""The ``cdclake decode`` and ``cdclake encode`` commands, driven through typer's runner and once as the
installed console script."""

from __future__ import annotations

import base64
import importlib.util
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from typer.testing import CliRunner

from cdclake import samples
from cdclake.cli import app
from cdclake.eventjson import loads_event
from cdclake.formats import FORMAT_NAMES, get_codec
from cdclake.message_files import message_file_pairs
from cdclake.model import Event, LargeMessageRef, Op, Origin, PendingRow, RowChange
from cdclake.sources.captured import CapturedTopicWriter

ROOT = Path(__file__).resolve().parents[1]
README = str(ROOT / "README.md")


def _load_make_samples() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_samples", ROOT / "bench" / "make_samples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


make_samples = _load_make_samples()
runner = CliRunner()


def run(*args: str | Path, input: bytes | None = None) -> Any:
    return runner.invoke(app, [str(a) for a in args], input=input)


def events_of(stdout: str) -> list[Event]:
    return [loads_event(line.encode()) for line in stdout.splitlines()]


def plain(text: str) -> str:
    """Text without rich's boxes and line wrapping, for matching error messages."""
    return " ".join(re.sub("[│╭╮╰╯─]", " ", text).split())


def outline(event: Event) -> tuple[Any, ...]:
    """What every format keeps of an event: its kind, and for rows op, table and key values."""
    if isinstance(event, LargeMessageRef):
        event = event.row
    if not isinstance(event, RowChange):
        return (type(event).__name__,)
    image = event.after if event.after is not None else event.before
    assert image is not None
    return ("RowChange", event.op, event.database, event.table, tuple(image[k] for k in event.key_columns))


def without_origins(events: list[Event]) -> list[Event]:
    """The events as they would be had they been read from anywhere else."""
    return [
        replace(e, row=replace(e.row, origin=None)) if isinstance(e, LargeMessageRef) else replace(e, origin=None)
        for e in events
    ]


@pytest.mark.parametrize("format_name", FORMAT_NAMES)
def test_decode_sample_prints_the_sample_story(format_name: str) -> None:
    result = run("decode", "--format", format_name, "--sample")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    decoded = events_of(result.stdout)
    story = make_samples.events_for(format_name, make_samples.story())
    assert [outline(e) for e in decoded] == [outline(e) for e in story]
    row_tables = {(e.database, e.table) for e in decoded if isinstance(e, RowChange)}
    assert len(row_tables) >= 4
    assert {e.op for e in decoded if isinstance(e, RowChange)} == set(Op)


def test_the_installed_console_script_decodes_a_sample() -> None:
    script = shutil.which("cdclake") or str(Path(sys.executable).parent / "cdclake")
    result = subprocess.run(
        [script, "decode", "--format", "canal-json", "--sample"], capture_output=True, check=False
    )
    assert result.returncode == 0, result.stderr.decode()
    events = [loads_event(line) for line in result.stdout.splitlines()]
    assert len(events) == len(make_samples.events_for("canal-json", make_samples.story()))


def test_python_dash_m_cdclake_is_the_command() -> None:
    result = subprocess.run([sys.executable, "-m", "cdclake", "decode", "--help"], capture_output=True, check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.startswith(b"Usage: python -m cdclake decode [OPTIONS] [FILE]...")


def _sample_lines(format_name: str) -> list[bytes]:
    return samples.lines_file(format_name).read_bytes().splitlines()


def test_a_bad_line_is_named_and_the_other_messages_still_decode(tmp_path: Path) -> None:
    lines = _sample_lines("canal-json")
    bad = tmp_path / "stream.jsonl"
    bad.write_bytes(b"\n".join([*lines[:3], b'{"type": "INSERT", "data": ', *lines[3:]]) + b"\n")
    result = run("decode", "--format", "canal-json", "--option", "enable-tidb-extension=true", bad)
    assert result.exit_code == 1
    assert f"error: {bad}:4: canal-json: " in result.stderr
    assert "1 of " in result.stderr
    good = run("decode", "--format", "canal-json", "--sample")
    assert without_origins(events_of(result.stdout)) == without_origins(events_of(good.stdout))


def test_an_unknown_option_is_a_usage_error_that_lists_the_valid_ones() -> None:
    result = run("decode", "--format", "open", "--option", "enable-tidb-extension=true", "--sample")
    assert result.exit_code == 2
    message = plain(result.stderr)
    assert "unknown option enable-tidb-extension" in message
    assert "valid options: " + ", ".join(sorted(get_codec("open").options)) in message


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--format", "canal-json", "--option", "tz", "--sample"], "expected NAME=VALUE, got 'tz'"),
        (["--format", "protobuf", "--sample"], "'protobuf' is not a format; formats: open, canal-json"),
        (["--format", "canal-json"], "give FILE arguments, --sample or --captured: one of them"),
        (["--format", "canal-json", README, "--sample"], "give FILE arguments, --sample or --captured: one of them"),
        (["--format", "canal-json", "--tz", "Mars/Olympus_Mons", "--sample"], "unknown time zone 'Mars/Olympus_Mons'"),
        (["--format", "canal-json", "--key-file", README, README], "canal-json messages have no keys to read"),
    ],
)
def test_a_wrong_command_line_exits_with_status_2(args: list[str], reason: str) -> None:
    result = run("decode", *args)
    assert result.exit_code == 2
    assert reason in plain(result.stderr)


def _decode_to_file(format_name: str, path: Path) -> list[Event]:
    result = run("decode", "--format", format_name, "--sample")
    assert result.exit_code == 0, result.stderr
    path.write_text(result.stdout)
    return events_of(result.stdout)


@pytest.mark.parametrize("format_name", FORMAT_NAMES)
def test_encode_then_decode_gives_the_same_events(format_name: str, tmp_path: Path) -> None:
    events_file = tmp_path / "events.jsonl"
    decoded = _decode_to_file(format_name, events_file)
    codec = get_codec(format_name)
    out = tmp_path / ("messages" if codec.binary else "messages.jsonl")
    options = [a for name, value in codec.sample_options.items() for a in ("-o", f"{name}={value}")]
    encoded = run("encode", "--format", format_name, *options, events_file, "--out", out)
    assert encoded.exit_code == 0, encoded.stderr
    again = run("decode", "--format", format_name, *options, out)
    assert again.exit_code == 0, again.stderr
    assert without_origins(events_of(again.stdout)) == without_origins(decoded)


def test_open_protocol_reads_value_files_with_their_key_files() -> None:
    pairs = message_file_pairs(samples.DIRECTORY, samples.message_file_prefix("open"))
    args: list[str | Path] = []
    for value, key in pairs:
        assert key is not None
        args += ["--key-file", key, value]
    result = run("decode", "--format", "open", *args)
    assert result.exit_code == 0, result.stderr
    sample = run("decode", "--format", "open", "--sample")
    assert without_origins(events_of(result.stdout)) == without_origins(events_of(sample.stdout))
    assert f'"file":"{pairs[0][0]}"' in result.stdout
    # Without --key-file, NAME.value is read with NAME.key beside it.
    beside = run("decode", "--format", "open", *(value for value, _ in pairs))
    assert beside.stdout == result.stdout


def test_captured_partitions_are_decoded_each_with_its_own_decoder(tmp_path: Path) -> None:
    messages = list(samples.sample_messages("simple"))
    first_row = next(i for i, m in enumerate(messages) if m.value and b'"INSERT"' in m.value)
    with CapturedTopicWriter(tmp_path, "shop-cdc") as writer:
        for message in messages:
            writer.append(0, message.key, message.value)
        # Partition 1 never saw the BOOTSTRAPs of partition 0, so its row must wait for its own.
        writer.append(1, None, messages[first_row].value)
    with CapturedTopicWriter(tmp_path, "broken") as writer:
        writer.append(0, None, b"{}")
    result = run("decode", "--format", "simple", "--captured", tmp_path)
    assert result.exit_code == 1
    assert "error: broken[0]@0: simple: " in result.stderr
    assert "1 of " in result.stderr
    decoded = events_of(result.stdout)
    sample = without_origins(events_of(run("decode", "--format", "simple", "--sample").stdout))
    assert without_origins(decoded[:-1]) == sample
    assert isinstance(decoded[-1], PendingRow)
    assert [(e.origin.partition, e.origin.offset) for e in decoded[:2]] == [(0, 0), (0, 1)]  # type: ignore[union-attr]
    assert decoded[-1].origin == Origin(topic="shop-cdc", partition=1, offset=0)


def _captured_lines(root: Path, folder: str, offsets: list[int]) -> Path:
    """Canal-JSON sample messages written under ``offsets`` as they stand, bypassing the writer."""
    segment = root / "shop-cdc" / folder / f"{offsets[0]:020d}.jsonl"
    segment.parent.mkdir(parents=True)
    values = _sample_lines("canal-json")
    segment.write_text("".join(f'{{"offset": {offset}, "value": "{base64.b64encode(value).decode()}"}}\n'
                               for offset, value in zip(offsets, values, strict=False)))
    return segment


def test_captured_offsets_out_of_order_are_an_error_naming_file_and_line(tmp_path: Path) -> None:
    segment = _captured_lines(tmp_path, "0", [0, 1, 10, 2, 3])
    result = run("decode", "--format", "canal-json", "-o", "enable-tidb-extension=true", "--captured", tmp_path)
    assert result.exit_code == 1
    assert f"error: {segment}:4: offset 2 follows offset 10; offsets must rise within a partition" in result.stderr
    assert len(events_of(result.stdout)) == 3  # those read before the error, which names where it stopped


def test_a_captured_partition_folder_not_named_in_ascii_digits_is_an_error(tmp_path: Path) -> None:
    _captured_lines(tmp_path, "0", [0, 1])
    _captured_lines(tmp_path, "²", [0, 1])
    result = run("decode", "--format", "canal-json", "-o", "enable-tidb-extension=true", "--captured", tmp_path)
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"error: {tmp_path / 'shop-cdc'} holds '²', which is not a partition directory" in result.stderr


def test_key_files_must_pair_with_value_files() -> None:
    value, key = message_file_pairs(samples.DIRECTORY, samples.message_file_prefix("open"))[0]
    assert key is not None
    result = run("decode", "--format", "open", "--key-file", key, value, value)
    assert result.exit_code == 2
    assert "give one --key-file per value FILE, in the same order (1 keys, 2 files)" in plain(result.stderr)


def test_a_message_that_fails_names_its_file(tmp_path: Path) -> None:
    broken = tmp_path / "000001.value"
    broken.write_bytes(b"\x00\x01 not avro")
    values = [value for value, _ in message_file_pairs(samples.DIRECTORY, samples.message_file_prefix("simple-avro"))]
    result = run("decode", "--format", "simple-avro", values[0], broken, *values[1:])
    assert result.exit_code == 1
    assert f"error: {broken}: simple-avro: " in result.stderr
    sample = run("decode", "--format", "simple-avro", "--sample")
    assert without_origins(events_of(result.stdout)) == without_origins(events_of(sample.stdout))


def test_decode_reads_standard_input_and_encode_writes_standard_output() -> None:
    sample = samples.lines_file("dataworks").read_bytes()
    decoded = run("decode", "--format", "dataworks", "-", input=sample)
    assert decoded.exit_code == 0, decoded.stderr
    encoded = run("encode", "--format", "dataworks", "-", "--out", "-", input=decoded.stdout.encode())
    assert encoded.exit_code == 0, encoded.stderr
    again = run("decode", "--format", "dataworks", "-", input=encoded.stdout.encode())
    assert without_origins(events_of(again.stdout)) == without_origins(events_of(decoded.stdout))


def test_encode_names_the_line_of_a_bad_event_and_writes_the_rest(tmp_path: Path) -> None:
    events_file = tmp_path / "events.jsonl"
    decoded = _decode_to_file("canal-json", events_file)
    lines = events_file.read_text().splitlines()
    events_file.write_text("\n".join([lines[0], '{"kind": "row", "op": "upsert"}', *lines[1:]]) + "\n")
    out = tmp_path / "out.jsonl"
    result = run("encode", "--format", "canal-json", "-o", "enable-tidb-extension=true", events_file, "--out", out)
    assert result.exit_code == 1
    assert f"error: {events_file}:2: row event without field 'types'" in result.stderr
    again = run("decode", "--format", "canal-json", "-o", "enable-tidb-extension=true", out)
    assert without_origins(events_of(again.stdout)) == without_origins(decoded)


def test_encode_refuses_a_directory_that_already_holds_messages(tmp_path: Path) -> None:
    events_file = tmp_path / "events.jsonl"
    _decode_to_file("open", events_file)
    first = run("encode", "--format", "open", events_file, "--out", tmp_path / "out")
    assert first.exit_code == 0, first.stderr
    second = run("encode", "--format", "open", events_file, "--out", tmp_path / "out")
    assert second.exit_code == 1
    assert "already holds messages" in second.stderr


def test_an_update_half_left_at_the_end_of_input_is_printed(tmp_path: Path) -> None:
    from cdclake.types import MySQLType

    update = RowChange(Op.UPDATE, "shop", "t", {"id": 1, "v": 1}, {"id": 1, "v": 2},
                       {"id": MySQLType("bigint"), "v": MySQLType("bigint")}, ("id",))
    before_half, _after_half = get_codec("dataworks").encoder().encode([update])
    stream = tmp_path / "dataworks.jsonl"
    stream.write_bytes((before_half.value or b"") + b"\n")
    result = run("decode", "--format", "dataworks", stream)
    assert result.exit_code == 0, result.output
    (event,) = events_of(result.stdout)
    assert isinstance(event, RowChange)
    assert (event.op, event.before, event.after) == (Op.UPDATE, {"id": 1, "v": 1}, None)


def test_rows_still_waiting_for_their_schema_at_the_end_are_counted_and_exit_1(tmp_path: Path) -> None:
    """Simple protocol rows whose BOOTSTRAP never came are printed as pending only: decode says how many
    wait, per table, and exits 1; a row whose schema came later is released and not counted."""
    lines = _sample_lines("simple")
    orders = next(line for line in lines if b'"BOOTSTRAP"' in line and b'"table":"orders"' in line)
    rows = [line for line in lines if b'"type":"INSERT"' in line]
    stream = tmp_path / "simple.jsonl"
    stream.write_bytes(b"\n".join(rows) + b"\n" + orders + b"\n")
    result = run("decode", "--format", "simple", stream)
    assert result.exit_code == 1, result.output
    waiting = [e for e in events_of(result.stdout) if isinstance(e, PendingRow)]
    released = [e for e in events_of(result.stdout) if isinstance(e, RowChange)]
    assert released and all(e.table == "orders" for e in released)
    assert len(waiting) - len(released) == 9
    said = plain(result.stderr)
    assert said.startswith("error: 9 rows still wait for a table schema at the end of the input")
    assert "shop.customers version 448780566528000000 (3)" in said
    assert "shop.orders version 448780566528000001" not in said  # its BOOTSTRAP came last


@pytest.mark.parametrize(("source", "says"), [
    ('kafka = { "bootstrap.servers" = "127.0.0.1:1", "security.protocol" = "SASL_PLAINTEXTT" }\ntopics = ["shop"]',
     '[source]: a Kafka setting librdkafka refuses: Invalid value "SASL_PLAINTEXTT" for configuration property '
     '"security.protocol"'),
    ('captured = "."\ntopics = "shop"', '[source] topics = "shop" is not a list of strings'),
])
def test_a_job_file_replicate_cannot_use_is_a_usage_error_before_spark_starts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, says: str) -> None:
    def no_spark(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Spark started for a job file that cannot run")

    monkeypatch.setattr("cdclake.cli_replicate.build_session", no_spark)
    job = tmp_path / "job.toml"
    job.write_text(f'[source]\n{source}\n[format]\nname = "canal-json"\n')
    for command in ("replicate", "status"):
        result = run(command, "--config", job)
        assert result.exit_code == 2, result.output
        assert says in plain(result.stderr)
        assert "Traceback" not in result.output


class _SessionAsked(Exception):
    """Raised in place of starting Spark, with what the session was asked for."""


@pytest.mark.parametrize("command", ["replicate", "status"])
def test_a_warehouse_uri_and_extra_jars_reach_the_session_as_given(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    asked: dict[str, Any] = {}

    def session(*args: Any, **kwargs: Any) -> None:
        asked.update(kwargs)
        raise _SessionAsked

    monkeypatch.setattr("cdclake.cli_replicate.build_session", session)
    job = tmp_path / "job.toml"
    job.write_text(f'[source]\ncaptured = "{tmp_path}"\n[format]\nname = "canal-json"\n'
                   '[lake]\njars = ["org.postgresql:postgresql:42.7.7"]\n')
    # status reads a Hadoop catalog without Spark unless told to use it.
    through_spark = ["--spark"] if command == "status" else []
    result = run(command, "--config", job, "--warehouse", "s3a://bucket/lake", *through_spark)
    assert isinstance(result.exception, _SessionAsked), result.output
    # A Path would have made it the local directory s3a:/bucket/lake.
    assert asked["warehouse"] == "s3a://bucket/lake"
    assert list(asked["extra_jars"]) == ["org.postgresql:postgresql:42.7.7"]


def test_a_tz_that_is_no_zone_is_a_usage_error() -> None:
    """ "America" is a directory of the tz database (it once crashed with IsADirectoryError)."""
    for tz in ("America", "A" * 100_000):
        result = run("decode", "-f", "simple", "--sample", "--tz", tz)
        assert result.exit_code == 2, result.output
        assert "Invalid value for '--tz': unknown time zone" in plain(result.output)
        assert "Traceback" not in result.output
