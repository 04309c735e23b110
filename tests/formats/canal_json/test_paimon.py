"""Canal-JSON: Apache Paimon's ITCases replayed, their tables' end states and type mapping checked (where
Paimon reads a type differently from the spec, the test names the difference and follows the spec)."""

from __future__ import annotations

import datetime as dt
import json
import re
import struct
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import pytest

from cdclake.model import Ddl, DdlKind, RawMessage, RowChange
from cdclake.types import Family, MySQLType
from tests.conftest import VECTORS
from tests.formats.canal_json.helpers import CANAL, CODEC, decode_file, java_float, message_lines, rows_of

# --- Apache Paimon: end states of its ITCases ----------------------------------------------------------
#
# Paimon's KafkaCanalSync{Table,Database}ActionITCase send resource files to Kafka and assert the final
# rows of primary-key tables (the sidecar paimon__canal__EXPECTED-from-ITCases.txt). Here the same files
# are decoded and applied to an in-memory table, and the rows printed the way Paimon prints them:
# tinyint(1) as a boolean, DATE as days and TIME as milliseconds, Java's LocalDateTime text, bytes as
# decimal lists, a SET as a list, spatial WKB as GeoJSON, a decimal at its column's scale. These are
# Paimon's type mapping, applied only to print; the decoded values stay what the spec says.

PAIMON_SIDECAR = CANAL / "paimon__canal__EXPECTED-from-ITCases.txt"
TABLE_SYNC, DATABASE_SYNC = "KafkaCanalSyncTableActionITCase", "KafkaCanalSyncDatabaseActionITCase"


def paimon_sections() -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(ITCase class, method) -> its resource/columns/expected lines, in order."""
    sections: dict[tuple[str, str], list[tuple[str, str]]] = {}
    itcase, entries = "", None
    for line in PAIMON_SIDECAR.read_text().split("===== verbatim")[0].splitlines():
        if line.startswith("===== "):
            itcase = line.removeprefix("===== ").removesuffix(".java")
        elif line.startswith("-- "):
            entries = sections.setdefault((itcase, line.removeprefix("-- ")), [])
        elif (match := re.match(r"\s+(resource|columns|expected): (.*)", line)) and entries is not None:
            entries.append((match[1], match[2]))
    return sections


def paimon_files(resource: str, directory: str) -> list[Path]:
    """The vector files of a resource path; ``%s`` is the test's directory, or every topic."""
    pattern = "paimon__canal__" + resource.removeprefix("kafka/canal/").replace("/", "__")
    if "topic%s" in pattern:
        return sorted(CANAL.glob(pattern.replace("%s", "*")))
    return [CANAL / pattern.replace("%s", directory)]


def geojson(wkb: bytes) -> dict[str, Any]:
    """MySQL's geometry value (4-byte SRID, then WKB) as the GeoJSON Paimon prints."""
    shape, _ = _wkb_shape(wkb, 4)
    return {**shape, "srid": struct.unpack_from("<I", wkb)[0]}


_WKB_TYPES = {1: "Point", 2: "LineString", 3: "Polygon", 4: "MultiPoint", 5: "MultiLineString", 6: "MultiPolygon"}


def _wkb_shape(wkb: bytes, at: int) -> tuple[dict[str, Any], int]:
    assert wkb[at] == 1  # little-endian
    (kind,) = struct.unpack_from("<I", wkb, at + 1)
    at += 5
    if kind == 7:
        (count,) = struct.unpack_from("<I", wkb, at)
        members, at = [], at + 4
        for _ in range(count):
            member, at = _wkb_shape(wkb, at)
            members.append({"type": member["type"], "coordinates": member["coordinates"]})
        return {"geometries": members, "type": "GeometryCollection"}, at

    def point(at: int) -> tuple[list[Any], int]:
        x, y = struct.unpack_from("<dd", wkb, at)
        return [int(x) if x.is_integer() else x, int(y) if y.is_integer() else y], at + 16

    def many(read: Callable[[int], tuple[Any, int]], at: int) -> tuple[list[Any], int]:
        (count,) = struct.unpack_from("<I", wkb, at)
        items, at = [], at + 4
        for _ in range(count):
            item, at = read(at)
            items.append(item)
        return items, at

    def nested(at: int) -> tuple[Any, int]:  # a member geometry of a multi-geometry: its coordinates
        shape, at = _wkb_shape(wkb, at)
        return shape["coordinates"], at

    readers: dict[int, Callable[[int], tuple[Any, int]]] = {
        1: point,
        2: lambda at: many(point, at),
        3: lambda at: many(lambda at: many(point, at), at),
        4: lambda at: many(nested, at),
        5: lambda at: many(nested, at),
        6: lambda at: many(nested, at),
    }
    coordinates, at = readers[kind](at)
    return {"coordinates": coordinates, "type": _WKB_TYPES[kind]}, at


def java_local_datetime(value: dt.datetime) -> str:
    text = value.strftime("%Y-%m-%dT%H:%M")
    if value.second or value.microsecond:
        text += f":{value.second:02d}"
    if value.microsecond:
        text += f".{value.microsecond // 1000:03d}" if value.microsecond % 1000 == 0 else f".{value.microsecond:06d}"
    return text


# Paimon maps a decimal without precision (TiCDC's bare "decimal") to DECIMAL(38,18).
PAIMON_DEFAULT_DECIMAL_SCALE = 18


def paimon_text(value: Any, mtype: MySQLType, column_type: MySQLType) -> str:
    """A value printed as in Paimon's expected rows; ``column_type`` is the Paimon column's type, the
    first the table saw (Paimon keeps a decimal's first scale, testDecimalNoChange)."""
    family = mtype.family
    if family is Family.INTEGER and mtype.name == "tinyint" and mtype.length == 1:
        return "true" if value else "false"
    if family is Family.FLOAT:
        return java_float(value)
    if family is Family.DECIMAL:
        scale = column_type.decimals if column_type.decimals is not None else PAIMON_DEFAULT_DECIMAL_SCALE
        return format(value.quantize(Decimal(1).scaleb(-scale), context=Context(prec=80)), "f")
    if family is Family.BINARY:
        return "[" + ", ".join(map(str, value)) + "]"
    if family is Family.GEOMETRY:
        return json.dumps(geojson(value), separators=(",", ":"))
    if family is Family.DATE:
        return str((value - dt.date(1970, 1, 1)).days)
    if family in (Family.DATETIME, Family.TIMESTAMP):
        return java_local_datetime(value.replace(tzinfo=None))
    if family is Family.TIME:
        return str(value // dt.timedelta(milliseconds=1))
    if family is Family.SET:
        return "[" + ", ".join(value.split(",")) + "]"
    return str(value)


@dataclass
class PaimonTable:
    """A Paimon primary-key table fed by decoded events: rows by key, names case-insensitive (Paimon's
    catalog lower-cases them; the events keep them as sent). A table without key appends."""

    rows: dict[Any, dict[str, tuple[Any, MySQLType | None]]] = field(default_factory=dict)
    column_types: dict[str, MySQLType] = field(default_factory=dict)
    columns: set[str] = field(default_factory=set)

    def apply(self, change: RowChange) -> None:
        for name, mtype in change.types.items():
            self.column_types.setdefault(name.lower(), mtype)
        if change.before is not None:
            self.rows.pop(self._key(change, change.before), None)
        if change.after is not None:
            row = {name.lower(): (value, change.types.get(name)) for name, value in change.after.items()}
            self.columns.update(row)
            self.rows[self._key(change, change.after)] = row

    def _key(self, change: RowChange, image: Mapping[str, Any]) -> Any:
        if not change.key_columns:
            return len(self.rows)
        lowered = {name.lower(): value for name, value in image.items()}
        return tuple(lowered[name.lower()] for name in change.key_columns)

    def printed(self, columns: list[str], computed: Mapping[str, Callable[[dict[str, Any]], Any]]) -> list[str]:
        printed = []
        for row in self.rows.values():
            cells = []
            for column in columns:
                value, mtype = row.get(column, (None, None))
                if column in computed:
                    value, mtype = computed[column](row), MySQLType("int")
                cells.append(
                    "NULL"
                    if value is None or mtype is None
                    else paimon_text(value, mtype, self.column_types.get(column, mtype))
                )
            printed.append("+I[" + ", ".join(cells) + "]")
        return sorted(printed)


def year_of_date(row: dict[str, Any]) -> int | None:
    """Paimon's computed column _year = year(_date)."""
    value = row.get("_date", (None, None))[0]
    return None if value is None else value.year


@dataclass(frozen=True)
class PaimonCase:
    itcase: str
    methods: tuple[str, ...]
    directory: str = ""
    computed: Mapping[str, Callable[[dict[str, Any]], Any]] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.methods[-1]}[{self.directory}]" if self.directory else self.methods[-1]


PAIMON_CASES = [
    PaimonCase(TABLE_SYNC, ("runSingleTableSchemaEvolution", "testSchemaEvolutionImpl"), "schemaevolution"),
    PaimonCase(TABLE_SYNC, ("runSingleTableSchemaEvolution", "testSchemaEvolutionImpl"), "schemaevolutionmissingddl"),
    PaimonCase(TABLE_SYNC, ("testMultipleSchemaEvolutions", "testSchemaEvolutionMultipleImpl")),
    PaimonCase(TABLE_SYNC, ("testStarUpOptionEarliest",)),
    PaimonCase(TABLE_SYNC, ("testStarUpOptionGroup",)),
    PaimonCase(TABLE_SYNC, ("testComputedColumn",), computed={"_year": year_of_date}),
    PaimonCase(TABLE_SYNC, ("testTypeMappingToString",)),
    PaimonCase(TABLE_SYNC, ("testCDCOperations",)),
    PaimonCase(TABLE_SYNC, ("testSyncWithInitialEmptyTopic",), computed={"_year": year_of_date}),
    PaimonCase(TABLE_SYNC, ("testSynchronizeIncompleteJson",)),
    PaimonCase(TABLE_SYNC, ("testSynchronizeNonPkTable",)),
    PaimonCase(TABLE_SYNC, ("testMissingDecimalPrecision",)),
    PaimonCase(TABLE_SYNC, ("testComputedColumnWithCaseInsensitive",), computed={"_year": year_of_date}),
    PaimonCase(TABLE_SYNC, ("testDecimalNoChange",)),
    PaimonCase(DATABASE_SYNC, ("testSchemaEvolutionMultiTopic", "testSchemaEvolutionImpl")),
    PaimonCase(DATABASE_SYNC, ("testTableAffixMultiTopic", "testTableAffixImpl")),
    PaimonCase(DATABASE_SYNC, ("testTypeMappingToString",)),
    PaimonCase(DATABASE_SYNC, ("testCaseInsensitive",)),
    PaimonCase(DATABASE_SYNC, ("testSpecifyKeys",)),
]
# Not replayed, with why: testStarUpOptionSpecific/Latest/Timestamp choose Kafka offsets to start from
# (no decoding question); testNotSupportFormat, testKafkaNoNonDdlData, testAssertSchemaCompatible and
# testCannotSynchronizeIncompleteJson assert Paimon's own exceptions; testExpressionNow fills audit
# columns from the clock. Their files are decoded by test_paimon_file_contents.


@pytest.mark.parametrize("paimon_case", PAIMON_CASES, ids=lambda c: c.id)
def test_paimon_end_states(vectors: Path, paimon_case: PaimonCase) -> None:
    """Table sync writes every source table into one Paimon table; database sync one per table (the
    expected block is matched to the table with its columns)."""
    sections = paimon_sections()
    entries = [entry for method in paimon_case.methods for entry in sections[(paimon_case.itcase, method)]]
    assert any(kind == "expected" for kind, _ in entries)
    tables: dict[str, PaimonTable] = {}
    columns: list[str] = []
    for kind, text in entries:
        if kind == "resource":
            for path in paimon_files(text, paimon_case.directory):
                for change in rows_of(decode_file(path)):
                    sink = change.table if paimon_case.itcase == DATABASE_SYNC else ""
                    tables.setdefault(sink, PaimonTable()).apply(change)
        elif kind == "columns":
            columns = [name.strip('"') for name in text.split(", ")]
        else:
            expected = sorted(row.strip() for row in text.split(" | "))
            if paimon_case.itcase == TABLE_SYNC:
                (table,) = tables.values()
            else:
                (table,) = [t for t in tables.values() if t.columns == {name.lower() for name in columns}]
            assert table.printed(columns, paimon_case.computed) == expected


def test_paimon_decimal_without_precision_keeps_its_digits(vectors: Path) -> None:
    """testMissingDecimalPrecision expects 1.200000000000000000: Paimon gives a bare "decimal" the
    type DECIMAL(38,18). The spec keeps every digit the producer wrote: Decimal("1.2"), equal in value."""
    (insert,) = rows_of(decode_file(CANAL / "paimon__canal__table__incomplete__canal-data-2.txt"))
    value = (insert.after or {})["v"]
    assert str(value) == "1.2" and value == Decimal("1.200000000000000000")
    assert insert.types["v"] == MySQLType("decimal")


def test_paimon_all_types(vectors: Path) -> None:
    """testAllTypesImpl: ~75 MySQL types in one INSERT, rows as the ITCase's Java literals print them
    (verbatim at the end of the sidecar). The spatial columns are WKB bytes here, which Paimon turns into
    the GeoJSON it prints; the test reads the WKB to compare."""
    text = PAIMON_SIDECAR.read_text()
    verbatim = text.split("===== verbatim")[1].split("waitForResult")[0]
    joined = "".join(literal.replace('\\"', '"') for literal in re.findall(r'"((?:[^"\\]|\\.)*)"', verbatim))
    expected = sorted("+I[" + row for row in joined.split("+I[")[1:])
    columns = re.findall(
        r'"([^"]+)"', next(t for k, t in paimon_sections()[(TABLE_SYNC, "testAllTypesImpl")] if k == "columns")
    )
    table = PaimonTable()
    events = rows_of(decode_file(CANAL / "paimon__canal__table__alltype__canal-data.txt"))
    for change in events:
        table.apply(change)
    assert len(expected) == 2 and len(columns) == 75
    assert table.printed(columns, {}) == expected
    first = events[0]
    assert first.types["_serial"] == MySQLType("bigint", unsigned=True)
    assert first.types["_point"] == MySQLType("point") and isinstance((first.after or {})["_point"], bytes)
    assert (first.after or {})["_enum"] == "value1" and (first.after or {})["_set"] == "a,b"


def readme_message_counts() -> dict[str, Counter[str]]:
    """vectors/README.md's table of Paimon files: "6 msg: ALTERx2, INSERTx2, DELETEx1, UPDATEx1"."""
    readme = (VECTORS / "README.md").read_text()
    counts = {}
    for name, total, kinds in re.findall(
        r"\| `(paimon__canal__[^`]+)` \|(?:[^|]*\|){3} (\d+) msg: ([A-Zx0-9, ]+)", readme
    ):
        tally = Counter({kind: int(n) for kind, n in re.findall(r"([A-Z]+)x(\d+)", kinds)})
        assert sum(tally.values()) == int(total), name
        counts[name] = tally
    return counts


def test_paimon_file_contents(vectors: Path) -> None:
    """Every Paimon resource file decodes, with the messages of each type vectors/README.md counts.
    The two files the README does not list (database schemaevolution topic2 data-2/3) hold only the
    licence comment."""
    counts = readme_message_counts()
    files = sorted(CANAL.glob("paimon__canal__*.txt"))
    files.remove(PAIMON_SIDECAR)
    assert len(files) == 57 and len(counts) == 55
    decoder = CODEC.decoder()
    for path in files:
        tally: Counter[str] = Counter()
        for line in message_lines(path):
            first = decoder.decode(RawMessage(None, line))[0]
            tally[first.meta["type"] if isinstance(first, Ddl) else first.op.name] += 1
        assert tally == counts.get(path.name, Counter()), path.name
    nonpk = rows_of(decode_file(CANAL / "paimon__canal__table__nonpk__canal-data-1.txt"))
    assert [change.key_columns for change in nonpk] == [(), ()]  # pkNames []
    (metadata,) = rows_of(decode_file(CANAL / "paimon__canal__table__metadatacolumn__canal-data-1.txt"))
    assert metadata.types == {"_id": MySQLType("longtext"), "_date": MySQLType("longtext")}  # no mysqlType
    (incomplete,) = rows_of(decode_file(CANAL / "paimon__canal__database__incomplete__canal-data-1.txt"))
    assert (incomplete.database, incomplete.table) == ("", "")  # Paimon's database sync refuses this
    alters = decode_file(CANAL / "paimon__canal__table__nononddldata__canal-data-1.txt")
    assert [(event.kind, event.table) for event in alters if isinstance(event, Ddl)] == [
        (DdlKind.ALTER_TABLE, "schema_evolution_2")
    ] * 2
    assert all(event.sql.startswith("/* Query from DMS") for event in alters if isinstance(event, Ddl))
