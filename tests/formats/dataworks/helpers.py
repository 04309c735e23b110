"""What the DataWorks JSON codec's tests share: the codec, decoding and encoding shortcuts, Apache Paimon's
aliyun-json samples, the spec's own examples as literals, and a control message to vary.

The spec is /work/shared/specs/dataworks-kafka-message-format.en.txt (Alibaba Cloud's "Appendix: Message
format"); its examples are written out here as literals, comments and elisions removed."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from cdclake.formats import get_codec
from cdclake.model import Event, Origin, RawMessage
from cdclake.types import MySQLType

CODEC = get_codec("dataworks")
UTC = dt.UTC


def message(value: bytes | str | None, offset: int = 0) -> RawMessage:
    data = value.encode() if isinstance(value, str) else value
    return RawMessage(key=None, value=data, origin=Origin("dw", 0, offset))


def decode(*values: bytes | str, **options: Any) -> list[Event]:
    """Every event of the messages, decoded in order by one decoder, with a held half flushed at the end."""
    decoder = CODEC.decoder(**options)
    events = [event for offset, value in enumerate(values) for event in decoder.decode(message(value, offset))]
    return events + decoder.flush()


def encode(events: list[Event], **options: Any) -> list[Any]:
    """The encoded messages as parsed JSON (by the stdlib: orjson reads integers past 64 bits as floats)."""
    return [json.loads(m.value) for m in CODEC.encoder(**options).encode(events)]


def at_ms(ms: int) -> dt.datetime:
    return dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(milliseconds=ms)


ALIYUN = "aliyun"
VECTOR_FILES = (
    "paimon__aliyun__table__event__event-insert.txt",
    "paimon__aliyun__table__event__event-update-in-one.txt",
    "paimon__aliyun__table__event__event-delete.txt",
)


def vector_json(vectors: Path, name: str) -> bytes:
    """The file's one message. Like Paimon's test, keep the line that parses as JSON (the files start with a
    licence comment, and the update file's JSON line starts with a space)."""
    lines = [line for line in (vectors / ALIYUN / name).read_bytes().splitlines() if line.strip().startswith(b"{")]
    assert len(lines) == 1
    return lines[0]

SPEC_SCHEMA = (
    '"schema":{"dataColumn":[{"name":"name","type":"STRING"},{"name":"job","type":"STRING"},'
    '{"name":"sex","type":"STRING"},{"name":"#alibaba_rds_row_id#","type":"LONG"}],"primaryKey":null,'
    '"source":{"dbType":"MySQL","dbName":"pkset_test","tableName":"pkset_test_no_pk"}}'
)
SPEC_HEARTBEAT = (
    '{"schema":{"dataColumn":null,"primaryKey":null,"source":null},"payload":{"before":null,"after":null,'
    '"sequenceId":null,"timestamp":{"eventTime":1620457659000,"checkpointTime":1620457659000},'
    '"op":"MHEARTBEAT","ddl":null},"version":"0.0.1"}'
)
SPEC_INSERT = (
    "{" + SPEC_SCHEMA + ',"payload":{"before":null,"after":{"dataColumn":{"name":"name11","job":"job11",'
    '"sex":"man","#alibaba_rds_row_id#":15}},"sequenceId":"1620457642589000000","timestamp":'
    '{"eventTime":1620457896000,"systemTime":1620457896977,"checkpointTime":1620457896000},"op":"INSERT",'
    '"ddl":null},"version":"0.0.1"}'
)
SPEC_UPDATE_BEFORE = (
    "{" + SPEC_SCHEMA + ',"payload":{"before":{"dataColumn":{"name":"name11","job":"job11","sex":"man",'
    '"#alibaba_rds_row_id#":15}},"after":null,"sequenceId":"1620457642589000001","timestamp":'
    '{"eventTime":1620458077000,"systemTime":1620458077779,"checkpointTime":1620458077000},'
    '"op":"UPDATE_BEFOR","ddl":null},"version":"0.0.1"}'
)
SPEC_UPDATE_AFTER = (
    "{" + SPEC_SCHEMA + ',"payload":{"before":null,"after":{"dataColumn":{"name":"name11","job":"job11",'
    '"sex":"woman","#alibaba_rds_row_id#":15}},"sequenceId":"1620457642589000001","timestamp":'
    '{"eventTime":1620458077000,"systemTime":1620458077779,"checkpointTime":1620458077000},'
    '"op":"UPDATE_AFTER","ddl":null},"version":"0.0.1"}'
)
SPEC_UPDATE_IN_ONE = (
    "{" + SPEC_SCHEMA + ',"payload":{"before":{"dataColumn":{"name":"name11","job":"job11","sex":"man",'
    '"#alibaba_rds_row_id#":15}},"after":{"dataColumn":{"name":"name11","job":"job11","sex":"woman",'
    '"#alibaba_rds_row_id#":15}},"sequenceId":"1620457642589000001","timestamp":{"eventTime":1620458077000,'
    '"systemTime":1620458077779,"checkpointTime":1620458077000},"op":"UPDATE_AFTER","ddl":null},'
    '"version":"0.0.1"}'
)
SPEC_DELETE = (
    "{" + SPEC_SCHEMA + ',"payload":{"before":{"dataColumn":{"name":"name11","job":"job11","sex":"woman",'
    '"#alibaba_rds_row_id#":15}},"after":null,"sequenceId":"1620457642589000002","timestamp":'
    '{"eventTime":1620458266000,"systemTime":1620458266101,"checkpointTime":1620458266000},"op":"DELETE",'
    '"ddl":null},"version":"0.0.1"}'
)
# The spec's "overall message format", made a real message: its op list and ddl placeholder replaced by an
# update in one message, "[base64 string]" by real base64. It shows BYTES, DATE, an Oracle rowid column,
# scn, dbVersion and schemaName.
SPEC_OVERALL = (
    '{"schema":{"dataColumn":[{"name":"id","type":"LONG"},{"name":"name","type":"STRING"},'
    '{"name":"binData","type":"BYTES"},{"name":"ts","type":"DATE"},{"name":"rowid","type":"STRING"}],'
    '"primaryKey":["pkName1","pkName2"],"source":{"dbType":"mysql","dbVersion":"1.0.0","dbName":"myDatabase",'
    '"schemaName":"mySchema","tableName":"tableName"}},"payload":{"before":{"dataColumn":{"id":111,'
    '"name":"scooter","binData":"AAH/","ts":1590315269000,"rowid":"AAIUMPAAFAACxExAAE"}},"after":{"dataColumn":'
    '{"id":222,"name":"donald","binData":"3q2+7w==","ts":1590315269000,"rowid":"AAIUMPAAFAACxExAAE"}},'
    '"sequenceId":"XXX","scn":"xxxx","op":"UPDATE_AFTER","timestamp":{"eventTime":1,"systemTime":2,'
    '"checkpointTime":3},"ddl":null},"version":"1.0.0"}'
)
SPEC_TYPES = {name: MySQLType("longtext") for name in ("name", "job", "sex")} | {
    "#alibaba_rds_row_id#": MySQLType("bigint")
}
ROW_11 = {"name": "name11", "job": "job11", "#alibaba_rds_row_id#": 15}
def control(op: str, ddl: Any = None, source: Any = None) -> str:
    return json.dumps(
        {
            "schema": {"dataColumn": None, "primaryKey": None, "source": source},
            "payload": {
                "before": None, "after": None, "sequenceId": "7", "timestamp": {"eventTime": 1700000000000},
                "op": op, "ddl": ddl,
            },
            "version": "0.0.1",
        }
    )


SOURCE = {"dbType": "MySQL", "dbName": "shop", "tableName": "orders"}
