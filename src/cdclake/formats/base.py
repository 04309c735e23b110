"""What every codec is: a name, its producer options, a decoder and an encoder, and what the format can
do (its capabilities), which the rest of cdclake asks rather than comparing format names.

Decoders may keep state between messages of one partition (the Simple protocol's schema cache), so a
codec makes a fresh decoder per partition rather than exposing bare functions. Encoders take the events
bound for one partition, in order, and return the Kafka messages for them; batching formats (Open
Protocol) close their last batch at the end of each call.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from cdclake.errors import OptionError
from cdclake.model import Ddl, Event, RawMessage, RowChange
from cdclake.types import Family, MySQLType

if TYPE_CHECKING:
    from cdclake._native import Columns


class Decoder(Protocol):
    def decode(self, message: RawMessage) -> list[Event]:
        """The events in one message; raises :class:`~cdclake.errors.DecodeError` and nothing else."""
        ...

    def flush(self) -> list[Event]:
        """Events still held at the end of the input (DataWorks' unpaired update half); call once the
        partition's messages are all decoded, so that nothing held is lost."""
        ...


class RowRecordReader(Protocol):
    """A compiled reader of a format's plain row messages (:mod:`cdclake._native`)."""

    def records(self, columns: Columns, key: bytes | None, value: bytes, topic: str | None, partition: int | None,
                offset: int | None, timestamp_ms: int | None) -> int:
        """Appends the change records of one message to ``columns`` (of
        :data:`cdclake.spark.changes.CHANGE_FIELDS`): how many, none where the format's decoder must read
        it. Only a format whose key says what its events are (the Open Protocol's batches) reads ``key``."""
        ...


# A plan of one table version for a RowRecordReader: (column names, their type texts as the message
# gives them) -> None (the decoder reads the messages), or (the columns' JSON, per column (kind, low,
# high, members, its lake text of a wire text)). cdclake.spark.native_rows makes it.
# One column's plan: (kind, the low and high of an integer, an enum's or set's members, its text function).
ColumnSpec = tuple[str, int, int, list[str], Callable[[str], Any]]
RowPlanner = Callable[[list[str], list[str]], "tuple[str, list[ColumnSpec]] | None"]


@dataclass(frozen=True, slots=True)
class NativeRows:
    """How a format's compiled row reader is made for resolved options: ``reader(planner, decoder)``,
    one per partition, beside the codec's own ``decoder`` of that partition (whose schemas a format
    without types in its rows reads by). The planner reads a value the reader does not with
    ``converter(type)``, the decoder's own, given the value's text as the reader passes it (a JSON
    string's content; the Open Protocol's reader, whose values are JSON numbers too, the value's JSON
    text); ``kinds`` names, per family of types, the kind of wire text the reader reads itself
    (:mod:`cdclake.spark.native_rows`; whole numbers it always reads)."""

    reader: Callable[[RowPlanner, Decoder], RowRecordReader]
    converter: Callable[[MySQLType], Callable[[Any], Any]]
    kinds: Mapping[Family, str]
    # A type's kind where its family's is not it (the Open Protocol's TEXT and BLOB come in base64).
    kinds_by_name: Mapping[str, str] = field(default_factory=dict)
    # The whole numbers the decoder takes for an ENUM's index or a SET's bitmask without members (None:
    # any that the reader reads as they are).
    member_numbers: tuple[int, int] | None = None


# The kinds of TiDB's own texts of values, which TiCDC's text formats write as they are (see NativeRows).
TIDB_TEXT_KINDS: Mapping[Family, str] = {
    Family.STRING: "text",
    Family.VECTOR: "text",
    Family.JSON: "text",
    Family.DECIMAL: "decimal",
    Family.FLOAT: "float",
    Family.DOUBLE: "double",
    Family.DATE: "date",
    Family.DATETIME: "datetime",
    Family.TIME: "time",
}


def kinds_in_zone(kinds: Mapping[Family, str], tz: dt.tzinfo) -> Mapping[Family, str]:
    """``kinds`` for a stream whose TIMESTAMP texts are wall clocks in ``tz``: in UTC that wall clock is the
    UTC one, whose lake text is its DATETIME text; in any other zone the planner's function reads it."""
    return {**kinds, Family.TIMESTAMP: "datetime"} if tz.utcoffset(None) == dt.timedelta(0) else kinds


class Encoder(Protocol):
    def encode(self, events: Iterable[Event]) -> list[RawMessage]:
        """The messages that carry ``events``, in order; raises :class:`~cdclake.errors.EncodeError`."""
        ...


def parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off"):
        return False
    raise ValueError(f"expected true or false, got {value!r}")


def parse_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(f"expected a whole number, got {value!r}")
    return int(value)


def parse_str(value: Any) -> str:
    return str(value)


@dataclass(frozen=True, slots=True)
class Option:
    """One producer or consumer option under its upstream name (``enable-tidb-extension``)."""

    default: Any
    doc: str
    parse: Callable[[Any], Any] = parse_str
    choices: tuple[str, ...] | None = None


TZ_OPTION = Option(
    "UTC",
    "time zone TIMESTAMP values are written in (TiCDC's server --tz): IANA name, UTC or +HH:MM",
)


def _no_native_rows(options: Mapping[str, Any]) -> NativeRows | None:
    return None


def _always(options: Mapping[str, Any]) -> bool:
    return True


def _no_sequence(change: RowChange | Ddl) -> str | None:
    return None


def _no_commit_ms(change: RowChange | Ddl) -> int | None:
    return None


Carrier = Callable[[Any], Any]
"""From an upstream value to the value a consumer of the format decodes."""
ValueCarrier = Callable[[MySQLType], Carrier]
"""The :data:`Carrier` of each column type."""


def same(value: Any) -> Any:
    return value


def carries_every_value(options: Mapping[str, Any]) -> ValueCarrier:
    """A format that carries every value as it is, whatever its options."""
    return lambda mysql_type: same


@dataclass(frozen=True, slots=True)
class Codec:
    """A format: its options, decoder and encoder, and how a consumer orders its changes.

    ``has_watermarks(options)`` tells whether the stream announces resolved timestamps (TiCDC's
    Resolved, WATERMARK and TIDB_WATERMARK events): then changes apply in commit-ts order up to the
    resolved ts; otherwise in partition order as they arrive. ``sequence_of(row)`` is what the format
    carries beside a change (row or DDL) to tell a re-delivered duplicate from a genuine repeat and to
    order it within its partition (DataWorks' ``sequenceId``), or None where the commit ts and the images
    are all there is; ``unique_sequences`` whether no two changes share one (DataWorks' ids do not;
    Canal-JSON's ``es`` is a millisecond that the changes committed in it share).
    ``commit_ms_of(change)`` is the commit's physical time (epoch ms) that a change
    without a commit ts carries (Canal-JSON's ``es``, DataWorks' ``eventTime``), from which a commit ts
    can be derived for a format that needs one; None where there is none.

    How its producer lays it out on a topic's partitions (:mod:`cdclake.producer` follows these):
    rows go by key and watermarks to every partition for every format; a DDL goes to every partition if
    ``ddl_to_every_partition`` (Open Protocol, Simple), else to partition 0. ``batches``: the encoder
    packs several events into one message (Open Protocol), so it is given a partition's events at once.
    ``bootstraps``: rows need their table's schema sent ahead of them as a
    :class:`~cdclake.model.Bootstrap` (Simple), and the encoder writes rows only of schemas it has
    encoded. ``heartbeats``: the encoder writes :class:`~cdclake.model.Heartbeat` events (DataWorks'
    MHEARTBEAT), and so a producer without watermarks still marks its progress. ``sequence_meta(n)``:
    the meta that names a change the ``n``-th of the whole task, numbered across partitions in commit
    order (DataWorks' ``sequenceId``); None where the format carries no such number.

    What a consumer gets: ``binary``, messages that are bytes, kept as message files rather than lines
    of text (:mod:`cdclake.message_files`); ``value_carrier(options)``, for the resolved options, what a
    consumer decodes of each upstream value (Open Protocol sends an ENUM as its index; see "What this
    format cannot carry" in docs/formats/).

    ``demo_options`` are the options ``cdclake demo`` uses unless told otherwise (the format at its
    fullest), ``sample_options`` those its sample stream (:mod:`cdclake.samples`) was encoded with.

    ``native_rows(options)``: how to make the format's compiled reader of plain row messages, which the
    pipeline's decoding asks first (:mod:`cdclake.spark.native_rows`); None where the format, with these
    options, has none.
    """

    name: str
    options: Mapping[str, Option]
    make_decoder: Callable[[Mapping[str, Any]], Decoder]
    make_encoder: Callable[[Mapping[str, Any]], Encoder]
    has_watermarks: Callable[[Mapping[str, Any]], bool] = _always
    sequence_of: Callable[[RowChange | Ddl], str | None] = _no_sequence
    unique_sequences: bool = False
    commit_ms_of: Callable[[RowChange | Ddl], int | None] = _no_commit_ms
    ddl_to_every_partition: bool = False
    batches: bool = False
    bootstraps: bool = False
    heartbeats: bool = False
    sequence_meta: Callable[[int], Mapping[str, Any]] | None = None
    binary: bool = False
    value_carrier: Callable[[Mapping[str, Any]], ValueCarrier] = carries_every_value
    demo_options: Mapping[str, str] = field(default_factory=dict)
    sample_options: Mapping[str, str] = field(default_factory=dict)
    native_rows: Callable[[Mapping[str, Any]], NativeRows | None] = _no_native_rows

    def resolve(self, given: Mapping[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
        """Every option of this codec with its value: the defaults, overridden by ``given`` and by
        keyword arguments (``enable_tidb_extension=True`` stands for ``enable-tidb-extension``)."""
        wanted = {**(given or {}), **{k.replace("_", "-"): v for k, v in kwargs.items()}}
        unknown = sorted(set(wanted) - set(self.options))
        if unknown:
            valid = ", ".join(sorted(self.options))
            raise OptionError(f"{self.name}: unknown option {', '.join(unknown)}; valid options: {valid}")
        resolved = {}
        for name, option in self.options.items():
            raw = wanted.get(name, option.default)
            try:
                value = option.parse(raw)
            except (TypeError, ValueError) as exc:
                raise OptionError(f"{self.name}: option {name}={raw!r}: {exc}") from exc
            if option.choices is not None and value not in option.choices:
                raise OptionError(f"{self.name}: option {name}={raw!r}: one of {', '.join(option.choices)}")
            resolved[name] = value
        return resolved

    def decoder(self, options: Mapping[str, Any] | None = None, **kwargs: Any) -> Decoder:
        return self.make_decoder(self.resolve(options, **kwargs))

    def encoder(self, options: Mapping[str, Any] | None = None, **kwargs: Any) -> Encoder:
        return self.make_encoder(self.resolve(options, **kwargs))
