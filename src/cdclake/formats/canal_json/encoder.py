"""The Canal-JSON encoder: events → messages as TiCDC writes them, fields in TiCDC's order, values
as TiDB renders them, strings escaped as Go escapes them, no key.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from cdclake.errors import EncodeError
from cdclake.formats.canal_json.values import _CONVERSION_ERRORS, Writer, _writer
from cdclake.formats.canal_json.wire import FORMAT, WATERMARK_TYPE, go_json_string, java_sql_type, mysql_type_text
from cdclake.formats.compression import compressor
from cdclake.formats.ddl import ticdc_type
from cdclake.model import Ddl, Event, LargeMessageKind, LargeMessageRef, Op, RawMessage, RowChange, Watermark
from cdclake.types import MySQLType
from cdclake.values import zone


class CanalJsonEncoder:
    """Writes each event as the message TiCDC would send: fields in TiCDC's order, values as TiDB
    renders them, strings escaped as Go escapes them, no key."""

    def __init__(self, options: Mapping[str, Any]) -> None:
        self._extension: bool = options["enable-tidb-extension"]
        self._full_types: bool = options["content-compatible"]
        # content-compatible implies only-output-updated-columns (TiCDC common/config.go Apply).
        self._only_updated: bool = options["only-output-updated-columns"] or self._full_types
        self._compress = compressor(options["large-message-handle-compression"])
        self._tz = zone(options["tz"])
        self._writers: dict[MySQLType, Writer] = {}

    def encode(self, events: Iterable[Event]) -> list[RawMessage]:
        messages = []
        for event in events:
            text = self._message(event)
            try:
                value = text.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise EncodeError(FORMAT, f"a string holds a lone UTF-16 surrogate: {exc}") from exc
            messages.append(RawMessage(None, self._compress(value)))
        return messages

    def _message(self, event: Event) -> str:
        if isinstance(event, RowChange):
            return self._row_message(event, None)
        if isinstance(event, LargeMessageRef):
            return self._row_message(event.row, event)
        if isinstance(event, Ddl):
            return self._ddl_message(event)
        if isinstance(event, Watermark):
            return self._watermark_message(event)
        raise EncodeError(FORMAT, f"canal-json carries row changes, DDL and watermarks, not {type(event).__name__}")

    def _head(
        self,
        meta: Mapping[str, Any],
        database: str,
        table: str,
        key_columns: tuple[str, ...],
        is_ddl: bool,
        canal_type: str,
        tso: int | None,
        sql: str,
    ) -> str:
        """Every field before sqlType. ``es`` is the commit's physical time, ``tso >> 18``, unless the
        event came with one (a re-encoded message keeps what it said); ``ts``, the time TiCDC built the
        message, comes only from meta: an encoder reads no clock."""
        pk_names = "[" + ",".join(map(go_json_string, key_columns)) + "]" if key_columns else "null"
        es = _meta_int(meta, "es")
        if es is None:
            es = tso >> 18 if tso is not None else 0
        return (
            f'{{"id":{_meta_int(meta, "id") or 0},"database":{go_json_string(database)},'
            f'"table":{go_json_string(table)},"pkNames":{pk_names},"isDdl":{"true" if is_ddl else "false"},'
            f'"type":{go_json_string(canal_type)},"es":{es},"ts":{_meta_int(meta, "ts") or 0},'
            f'"sql":{go_json_string(sql)},'
        )

    def _end(self, tidb_fields: str) -> str:
        """The end of a message: the ``_tidb`` object with ``tidb_fields`` if the extension is on."""
        return f',"_tidb":{{{tidb_fields}}}}}' if self._extension else "}"

    def _commit_ts(self, commit_ts: int | None, what: str) -> int | None:
        if self._extension and commit_ts is None:
            raise EncodeError(FORMAT, f"enable-tidb-extension writes _tidb.commitTs, but this {what} has no commit ts")
        return commit_ts

    def _ddl_message(self, ddl: Ddl) -> str:
        commit_ts = self._commit_ts(ddl.commit_ts, "DDL")
        canal_type = ticdc_type(ddl.kind, ddl.sql, ddl.meta.get("type"))
        head = self._head(ddl.meta, ddl.database, ddl.table, (), True, canal_type, commit_ts, ddl.sql)
        return head + '"sqlType":null,"mysqlType":null,"data":null,"old":null' + self._end(f'"commitTs":{commit_ts}')

    def _watermark_message(self, watermark: Watermark) -> str:
        if not self._extension:
            raise EncodeError(FORMAT, "TiCDC sends TIDB_WATERMARK messages only with enable-tidb-extension=true")
        head = self._head(watermark.meta, "", "", (), False, WATERMARK_TYPE, watermark.ts, "")
        return (
            head + '"sqlType":null,"mysqlType":null,"data":null,"old":null' + self._end(f'"watermarkTs":{watermark.ts}')
        )

    def _row_message(self, change: RowChange, large: LargeMessageRef | None) -> str:
        if large is not None and not self._extension:
            raise EncodeError(FORMAT, "TiCDC marks shrunk large messages only with enable-tidb-extension=true")
        commit_ts = self._commit_ts(change.commit_ts, "row change")
        image = change.before if change.op is Op.DELETE else change.after
        if image is None:
            raise EncodeError(
                FORMAT, f"a {change.op.name} needs its {'before' if change.op is Op.DELETE else 'after'} image"
            )
        texts = self._texts(change, image)
        sql_types = ",".join(
            f"{go_json_string(name)}:{java_sql_type(change.types[name], image[name])}" for name in texts
        )
        mysql_types = ",".join(
            f"{go_json_string(name)}:{go_json_string(mysql_type_text(change.types[name], self._full_types))}"
            for name in texts
        )
        old = "null"
        if change.op is Op.UPDATE:
            if change.before is None:
                raise EncodeError(FORMAT, "an UPDATE needs its before image: canal-json sends it in old")
            old_texts = self._texts(change, change.before)
            if self._only_updated:
                old_texts = {name: text for name, text in old_texts.items() if name not in texts or texts[name] != text}
            old = f"[{_row_json(old_texts)}]"
        head = self._head(
            change.meta, change.database, change.table, change.key_columns, False, change.op.name, commit_ts, ""
        )
        body = f'"sqlType":{{{sql_types}}},"mysqlType":{{{mysql_types}}},"data":[{_row_json(texts)}],"old":{old}'
        extension = f'"commitTs":{commit_ts}'
        if large is not None and large.kind is LargeMessageKind.CLAIM_CHECK:
            if large.location is None:
                raise EncodeError(FORMAT, "a claim-check reference needs the location of the stored message")
            extension += f',"claimCheckLocation":{go_json_string(large.location)}'
        elif large is not None:
            extension += ',"onlyHandleKey":true'
        return head + body + self._end(extension)

    def _texts(self, change: RowChange, image: Mapping[str, Any]) -> dict[str, str | None]:
        """Each column's value as TiDB renders it (None for NULL), in the image's column order."""
        texts: dict[str, str | None] = {}
        for name, value in image.items():
            mtype = change.types.get(name)
            if mtype is None:
                raise EncodeError(FORMAT, f"column {name!r} of {change.database}.{change.table} has no MySQL type")
            if value is None:
                texts[name] = None
                continue
            writer = self._writers.get(mtype)
            if writer is None:
                writer = self._writers[mtype] = _writer(mtype, self._tz)
            try:
                texts[name] = writer(value)
            except _CONVERSION_ERRORS as exc:
                raise EncodeError(
                    FORMAT, f"column {name!r} ({mtype}) of {change.database}.{change.table}: {exc}"
                ) from exc
        return texts


def _row_json(texts: Mapping[str, str | None]) -> str:
    return (
        "{"
        + ",".join(
            f"{go_json_string(name)}:{'null' if text is None else go_json_string(text)}" for name, text in texts.items()
        )
        + "}"
    )


def _meta_int(meta: Mapping[str, Any], field: str) -> int | None:
    value = meta.get(field)
    return value if isinstance(value, int) and not isinstance(value, bool) else None
