"""Every error cdclake raises on purpose: one root, one subclass per phase.

Callers that want "anything cdclake refused" catch :class:`CdclakeError`; callers that handle a phase
(say, sending undecodable messages to a dead-letter table) catch its subclass.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cdclake.model import Origin


class CdclakeError(Exception):
    """Root of every error cdclake raises deliberately."""


class OptionError(CdclakeError, ValueError):
    """An option name or value a component does not accept; the message lists the valid ones."""


class TypeParseError(CdclakeError, ValueError):
    """A MySQL type text (``decimal(10,4) unsigned``) or a value text that does not fit its type."""


class DecodeError(CdclakeError):
    """A message that cannot be decoded. Names the format, the reason and where the message came from.

    ``origin`` is the message's coordinates (topic/partition/offset, or file and line). The raw bytes
    are not kept here: whoever read the message still has them and decides where they go (dead-letter,
    skip with count, or stop).
    """

    def __init__(self, format_name: str, reason: str, origin: Origin | None = None) -> None:
        self.format_name = format_name
        self.reason = reason
        self.origin = origin
        where = f" at {origin}" if origin is not None else ""
        super().__init__(f"{format_name}: {reason}{where}")


class EncodeError(CdclakeError):
    """An event that a format cannot carry as asked (a value out of its type, an option's limit)."""

    def __init__(self, format_name: str, reason: str) -> None:
        self.format_name = format_name
        self.reason = reason
        super().__init__(f"{format_name}: {reason}")
