"""What a transcode is asked to do: from which format into which topic layout (:class:`TranscodeSpec`),
what the target needs that the source does not carry, and the error a transcode stops with."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cdclake.errors import CdclakeError
from cdclake.formats import get_codec
from cdclake.formats.base import Codec
from cdclake.producer import ProducerSpec

# A TiDB ts is its physical millisecond shifted past these logical bits (see "Derived" in cdclake.transcode).
_LOGICAL_BITS = 18


class TranscodeError(CdclakeError):
    """A transcode that cannot go on: a setting, a target, or a progress file that does not fit."""


# --- what to transcode ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TranscodeSpec:
    """From which format (and its options) into which topic layout (a producer spec: format, options,
    partitions, dispatcher ...)."""

    source_format: str
    source_options: Mapping[str, Any]
    target: ProducerSpec

    def __post_init__(self) -> None:
        object.__setattr__(self, "source_options", self.source_codec.resolve(self.source_options))

    @property
    def source_codec(self) -> Codec:
        return get_codec(self.source_format)

    @property
    def resolves(self) -> bool:
        """Whether the source announces resolved timestamps, so batches go up to one."""
        return self.source_codec.has_watermarks(self.source_options)

    @property
    def target_needs_commit_ts(self) -> bool:
        # The formats with watermarks are those that write a commit ts with every change.
        return self.target.codec.has_watermarks(self.target.codec_options())

    @property
    def keeps_meta(self) -> bool:
        return self.source_format == self.target.format_name

    @property
    def target_carries_heartbeats(self) -> bool:
        return self.target.codec.heartbeats

    def settings(self) -> dict[str, Any]:
        """The settings as JSON: a progress file made with other settings is refused."""
        target = self.target
        return {
            "source": {"format": self.source_format, "options": _json_ready(self.source_options)},
            "target": {"format": target.format_name, "options": _json_ready(target.codec_options()),
                       "bootstrap": _json_ready(target.bootstrap_options()) if target.sends_bootstraps() else None,
                       "partitions": target.partitions, "topic": target.topic, "dispatcher": target.dispatcher,
                       "output_raw_change_event": target.output_raw_change_event},
        }

    def derivations(self) -> list[str]:
        """What the target needs that the source does not carry, and what the transcoder does about it:
        for the job's report and ``cdclake transcode``'s first lines."""
        source, target = self.source_format, self.target.format_name
        lines = []
        if not self.resolves:
            lines.append(f"{source} carries no watermark: changes are ordered by the commit time and sequence it "
                         "carries, each batch emitting those below what every partition not read to its end has "
                         "passed; a change that comes later below it goes out late")
            if self.target.carries_watermarks() and not self.target_carries_heartbeats:
                lines.append(f"the {target} stream gets no watermarks: nothing resolves a ts")
            if self.target_needs_commit_ts:
                lines.append(f"{target} needs a commit ts: derived from the source's commit millisecond "
                             "(logical part 0); a change without one is a dead letter")
        if self.target.sends_bootstraps() and not self.source_codec.bootstraps:
            lines.append("Simple rows need their table's schema: derived from the rows' columns and types, key "
                         "columns as primary key, a new version (BOOTSTRAPped) for each new shape; a DDL's from its "
                         "statement")
        if not self.keeps_meta:
            lines.append(f"fields only {source} has (meta) are left behind; {target}'s are made as its producer makes "
                         "them")
        return lines


def _json_ready(options: Mapping[str, Any]) -> dict[str, Any]:
    return {name: value if isinstance(value, bool | int | float | str) or value is None else str(value)
            for name, value in sorted(options.items())}
