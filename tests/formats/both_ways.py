"""One partition's messages read by a format's decoder alone and with its compiled row reader first
(:mod:`cdclake.spark.native_rows`): the two must make the same change records."""

from __future__ import annotations

from typing import Any

from cdclake.formats import get_codec
from cdclake.formats.base import Decoder, RowRecordReader
from cdclake.model import RawMessage
from cdclake.spark.changes import ChangeWriter, PartitionDecoder
from cdclake.spark.native_rows import native_readers


class _Counting:
    """A compiled reader that counts the messages it read itself."""

    def __init__(self, reader: RowRecordReader) -> None:
        self._reader = reader
        self.read = 0

    def records(self, *args: Any) -> int:
        count = self._reader.records(*args)
        self.read += count > 0
        return count


class BothWays:
    def __init__(self, format_name: str, **options: Any) -> None:
        codec = get_codec(format_name)
        self.options = codec.resolve(None, **options)
        readers = native_readers(codec, self.options)
        assert readers is not None
        self._counting: list[_Counting] = []

        def counting(decoder: Decoder) -> _Counting:
            self._counting.append(_Counting(readers(decoder)))
            return self._counting[-1]

        self._writers = {way: ChangeWriter(codec.sequence_of) for way in ("python", "native")}
        self._partitions = {
            way: PartitionDecoder(format_name, self.options, writer, counting if way == "native" else None)
            for way, writer in self._writers.items()
        }

    def read(self, message: RawMessage) -> None:
        for partition in self._partitions.values():
            partition.read(message)

    def check(self) -> int:
        """Asserts both ways made the same records; how many messages the compiled reader read."""
        for partition in self._partitions.values():
            partition.finish()
        python, native = (self._writers[way].take().to_pylist() for way in ("python", "native"))
        assert len(native) == len(python)
        for ours, theirs in zip(native, python, strict=True):
            assert ours == theirs
        return sum(reader.read for reader in self._counting)
