"""Kafka messages kept in plain files, as ``cdclake decode`` reads them and ``cdclake encode`` writes them.

Two layouts, chosen by whether the format's messages are binary (its codec's ``binary``):

- **lines**, for the JSON formats: a text file with one message value per line. Blank lines are skipped;
  a message's origin is the file and its line number. Keys are not kept (no JSON format needs one).
- **message files**, for the binary formats: one message is a file holding its value's raw bytes and,
  if it has a key, a second file holding the key's: ``NAME.value`` and ``NAME.key`` beside it. A
  directory of messages holds them numbered in order, ``000001.value``, ``000001.key``,
  ``000002.value`` ...; a value without a ``.key`` file beside it has no key. A name prefix lets
  several streams share a directory (``open-000001.value``).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from cdclake.model import Origin, RawMessage

STDIN = "-"
"""The file name that stands for standard input (or standard output when writing lines)."""
STDIN_NAME = "<stdin>"
"""How messages read from standard input name their origin."""

VALUE_SUFFIX = ".value"
KEY_SUFFIX = ".key"


def read_lines(path: Path | str, name: str | None = None) -> Iterator[RawMessage]:
    """One message per non-blank line of ``path`` (``-`` for standard input), origin ``name:line``."""
    label = name or (STDIN_NAME if str(path) == STDIN else str(path))
    if str(path) == STDIN:
        yield from _lines(sys.stdin.buffer, label)
        return
    with open(path, "rb") as handle:
        yield from _lines(handle, label)


def _lines(lines: Iterable[bytes], label: str) -> Iterator[RawMessage]:
    for number, line in enumerate(lines, 1):
        value = line.rstrip(b"\r\n")
        if value.strip():
            yield RawMessage(key=None, value=value, origin=Origin(file=label, line=number))


def read_message_file(value: Path, key: Path | None = None) -> RawMessage:
    """The message whose value bytes are the file ``value`` and key bytes the file ``key``."""
    return RawMessage(
        key=None if key is None else key.read_bytes(),
        value=value.read_bytes(),
        origin=Origin(file=str(value)),
    )


def message_file_pairs(directory: Path, prefix: str = "") -> list[tuple[Path, Path | None]]:
    """The (value, key) files of the messages in ``directory`` whose names start with ``prefix``, in
    name order; the key is ``None`` where no ``.key`` file sits beside the value."""
    return [(value, key_beside(value)) for value in sorted(directory.glob(f"{prefix}*{VALUE_SUFFIX}"))]


def key_beside(value: Path) -> Path | None:
    """The key file of the message file ``NAME.value``: ``NAME.key`` beside it, if there is one."""
    if not value.name.endswith(VALUE_SUFFIX):
        return None
    key = value.with_name(value.name.removesuffix(VALUE_SUFFIX) + KEY_SUFFIX)
    return key if key.is_file() else None


def read_message_directory(directory: Path, prefix: str = "") -> Iterator[RawMessage]:
    for value, key in message_file_pairs(directory, prefix):
        yield read_message_file(value, key)


def write_lines(messages: Iterable[RawMessage], path: Path | str) -> int:
    """Write each message's value as one line of ``path`` (``-`` for standard output); the count written.

    Raises ValueError for a message with no value or one with a line break in it, which a line cannot hold.
    """
    if str(path) == STDIN:
        return _write_lines(messages, sys.stdout.buffer)
    with open(path, "wb") as handle:
        return _write_lines(messages, handle)


def _write_lines(messages: Iterable[RawMessage], handle: BinaryIO) -> int:
    count = 0
    for message in messages:
        count += 1
        if message.value is None or b"\n" in message.value or b"\r" in message.value:
            raise ValueError(f"message {count} has no value or a line break in it; it cannot be one line")
        handle.write(message.value + b"\n")
    return count


def write_message_directory(messages: Iterable[RawMessage], directory: Path, prefix: str = "") -> int:
    """Write the messages as numbered value (and key) files in ``directory``; the count written.

    Raises FileExistsError if the directory already holds messages under ``prefix``, so that a stream is
    never mixed with what an earlier run left there.
    """
    directory.mkdir(parents=True, exist_ok=True)
    if message_file_pairs(directory, prefix):
        raise FileExistsError(f"{directory} already holds messages ({prefix}*{VALUE_SUFFIX}); choose an empty one")
    count = 0
    for message in messages:
        count += 1
        if message.value is None:
            raise ValueError(f"message {count} has no value; a message file cannot say so")
        stem = f"{prefix}{count:06d}"
        (directory / (stem + VALUE_SUFFIX)).write_bytes(message.value)
        if message.key is not None:
            (directory / (stem + KEY_SUFFIX)).write_bytes(message.key)
    return count
