"""What every codec is: a name, its producer options, a decoder and an encoder.

Decoders may keep state between messages of one partition (the Simple protocol's schema cache), so a
codec makes a fresh decoder per partition rather than exposing bare functions. Encoders take the events
bound for one partition, in order, and return the Kafka messages for them; batching formats (Open
Protocol) close their last batch at the end of each call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from cdclake.errors import OptionError
from cdclake.model import Ddl, Event, RawMessage, RowChange


class Decoder(Protocol):
    def decode(self, message: RawMessage) -> list[Event]:
        """The events in one message; raises :class:`~cdclake.errors.DecodeError` and nothing else."""
        ...

    def flush(self) -> list[Event]:
        """Events still held at the end of the input (DataWorks' unpaired update half); call once the
        partition's messages are all decoded, so that nothing held is lost."""
        ...


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


def _always(options: Mapping[str, Any]) -> bool:
    return True


def _no_sequence(change: RowChange | Ddl) -> str | None:
    return None


def _no_commit_ms(change: RowChange | Ddl) -> int | None:
    return None


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
    """

    name: str
    options: Mapping[str, Option]
    make_decoder: Callable[[Mapping[str, Any]], Decoder]
    make_encoder: Callable[[Mapping[str, Any]], Encoder]
    has_watermarks: Callable[[Mapping[str, Any]], bool] = _always
    sequence_of: Callable[[RowChange | Ddl], str | None] = _no_sequence
    unique_sequences: bool = False
    commit_ms_of: Callable[[RowChange | Ddl], int | None] = _no_commit_ms

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
