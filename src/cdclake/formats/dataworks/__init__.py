"""Alibaba DataWorks real-time sync to Kafka: its JSON messages (Apache Paimon calls them ``aliyun-json``).

Every message is one event: a row change with its images in ``payload.before`` / ``payload.after``, a DDL,
a transaction boundary or a heartbeat, each carrying the row's column types in ``schema.dataColumn``.
DataWorks types are not MySQL types: each of its six decodes to one MySQL type (:data:`.wire.MYSQL_TYPE_OF`),
and the DataWorks names stay in ``meta["dataColumn"]`` so the encoder writes them back. An update comes
as one message holding both images or as an ``UPDATE_BEFOR`` / ``UPDATE_AFTER`` pair sharing a
``sequenceId``; the decoder joins a pair into one update. docs/formats/dataworks.md has the full story.

The modules: :mod:`.wire` (the types, ops and fields of a message), :mod:`.values` (one column's value,
read and written), :mod:`.table` (a table's ``schema.dataColumn`` and its compiled image readers),
:mod:`.decoder` and :mod:`.encoder`.
"""

from __future__ import annotations

from cdclake.formats.base import TZ_OPTION, Codec, Option, parse_bool
from cdclake.formats.dataworks.decoder import DataWorksDecoder
from cdclake.formats.dataworks.encoder import DataWorksEncoder
from cdclake.formats.dataworks.values import value_carrier
from cdclake.formats.dataworks.wire import BEFORE_OPS, FORMAT
from cdclake.model import Ddl, RowChange


def _sequence_of(change: RowChange | Ddl) -> str | None:
    """``sequenceId`` numbers each change of the source log; a re-delivered copy keeps it."""
    sequence = change.meta.get("sequenceId")
    return None if sequence is None else str(sequence)


def _commit_ms_of(change: RowChange | Ddl) -> int | None:
    """``timestamp.eventTime``, when the change happened in the source database (epoch ms); None where
    it is missing or the -1 written for none."""
    timestamp = change.meta.get("timestamp")
    event_time = timestamp.get("eventTime") if isinstance(timestamp, dict) else None
    return event_time if type(event_time) is int and event_time >= 0 else None


def _sequence_meta(number: int) -> dict[str, str]:
    """The task's ``number``-th change's ``sequenceId``: 19 digits, as DataWorks writes them, so that
    text order is number order."""
    return {"sequenceId": f"{number:019d}"}


OPTIONS: dict[str, Option] = {
    "one-record-per-update": Option(
        False,
        "write an update as one UPDATE_AFTER message holding both images (the DataWorks task option "
        "'When one record in the source is updated, one Kafka record is generated'); else as two "
        "messages, the before image then the after image, sharing a sequenceId",
        parse_bool,
    ),
    "update-before-op": Option(
        "UPDATE_BEFOR",
        "op of an update's before-image message: DataWorks writes UPDATE_BEFOR, Apache Paimon's "
        "aliyun-json reads UPDATE_BEFORE (the decoder takes both)",
        choices=BEFORE_OPS,
    ),
    "tz": TZ_OPTION,
}

CODEC = Codec(
    name=FORMAT,
    options=OPTIONS,
    make_decoder=DataWorksDecoder,
    make_encoder=DataWorksEncoder,
    # DataWorks sends no watermark: changes apply in partition order, heartbeats only report progress.
    has_watermarks=lambda options: False,
    sequence_of=_sequence_of,
    unique_sequences=True,
    commit_ms_of=_commit_ms_of,
    heartbeats=True,
    # One counter for the whole sync task, whatever the partition: having no watermark, a consumer
    # orders changes across partitions by it.
    sequence_meta=_sequence_meta,
    value_carrier=value_carrier,
)

__all__ = ["CODEC", "OPTIONS", "DataWorksDecoder", "DataWorksEncoder"]
