"""Make the sample streams bundled in src/cdclake/samples/, which ``cdclake decode --sample`` decodes.

One story of a small shop, told as events: three tables are bootstrapped, customers sign up, orders and
their items are placed, paid, shipped and cancelled, a stock table is created, a column is added to
orders, and a watermark follows every few transactions. The values cover most MySQL types and their
edges (bigint unsigned max, decimal with trailing zeros, every kind of temporal including a zero date and
a negative time, binary bytes 0x00 and 0xff, enum, set, bit, json, NULL and the string "null").

Each format gets the events it can carry (Simple protocol the BOOTSTRAPs, DataWorks heartbeats instead of
watermarks), encoded by its codec with its ``sample_options``; the result is decoded
again to check it. Run from the repository root::

    python3 bench/make_samples.py
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

from cdclake import samples
from cdclake.formats import FORMAT_NAMES, get_codec
from cdclake.message_files import message_file_pairs, write_lines, write_message_directory
from cdclake.model import (
    Bootstrap,
    ColumnSchema,
    Ddl,
    DdlKind,
    Event,
    Heartbeat,
    IndexSchema,
    Op,
    RowChange,
    TableSchema,
    Watermark,
)
from cdclake.types import MySQLType
from cdclake.values import ZeroTemporal

START = dt.datetime(2024, 5, 1, 9, 0, tzinfo=dt.UTC)


def tso(at: dt.datetime, logical: int = 0) -> int:
    """A TiDB timestamp: milliseconds since the epoch, shifted past 18 logical bits."""
    return int(at.timestamp() * 1000) << 18 | logical


def schema(database: str, table: str, table_id: int, version: int, columns: str, key: Sequence[str]) -> TableSchema:
    """A schema from ``name type [not null]`` lines; the key columns are NOT NULL and the primary key."""
    parsed = []
    for line in columns.strip().splitlines():
        name, _, rest = line.strip().partition(" ")
        not_null = rest.endswith(" not null")
        type_text = rest.removesuffix(" not null")
        parsed.append(ColumnSchema(name, MySQLType.parse(type_text), nullable=not (not_null or name in key)))
    primary = IndexSchema("PRIMARY", tuple(key), unique=True, primary=True)
    return TableSchema(database, table, tuple(parsed), (primary,), table_id=table_id, version=version)


CUSTOMERS = schema(
    "shop", "customers", 101, tso(START - dt.timedelta(days=30)),
    """
    id bigint unsigned
    email varchar(255) not null
    name varchar(64) not null
    tier enum('basic','gold','platinum') not null
    tags set('new','vip','wholesale')
    birthday date
    created_at timestamp(3) not null
    balance decimal(12,2) not null
    avatar varbinary(64)
    active tinyint(1) not null
    """,
    ["id"],
)
ORDERS = schema(
    "shop", "orders", 102, tso(START - dt.timedelta(days=30), 1),
    """
    id bigint
    customer_id bigint unsigned not null
    status enum('pending','paid','shipped','cancelled') not null
    total decimal(14,4) not null
    ordered_at datetime(6) not null
    shipped_at datetime
    note text
    weight_kg float
    distance_km double
    flags bit(8) not null
    placed_year year not null
    delivery_window time
    attributes json
    """,
    ["id"],
)
ORDER_ITEMS = schema(
    "shop", "order_items", 103, tso(START - dt.timedelta(days=30), 2),
    """
    order_id bigint
    line_no smallint unsigned
    sku char(12) not null
    qty mediumint not null
    unit_price decimal(10,2) not null
    checksum binary(16) not null
    """,
    ["order_id", "line_no"],
)
STOCK = schema(
    "inventory", "stock", 201, 0,  # version set by its CREATE TABLE below
    """
    sku char(12)
    on_hand int not null
    lifetime_units bigint unsigned not null
    last_counted timestamp
    count_duration time(6)
    """,
    ["sku"],
)

CREATE_STOCK_SQL = (
    "CREATE TABLE `inventory`.`stock` (`sku` char(12) NOT NULL PRIMARY KEY, `on_hand` int NOT NULL, "
    "`lifetime_units` bigint unsigned NOT NULL, `last_counted` timestamp NULL, `count_duration` time(6) NULL)"
)
ADD_COUPON_SQL = "ALTER TABLE `shop`.`orders` ADD COLUMN `coupon` varchar(32) NULL"


class Story:
    """Builds the events in commit order, one transaction at a time, with rising commit timestamps."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.clock = START
        self.schemas = {(s.database, s.table): s for s in (CUSTOMERS, ORDERS, ORDER_ITEMS)}

    def tick(self, seconds: float) -> int:
        self.clock += dt.timedelta(seconds=seconds)
        return tso(self.clock)

    def row(self, op: Op, table: TableSchema, before: dict[str, Any] | None, after: dict[str, Any] | None,
            commit_ts: int) -> None:
        table = self.schemas[(table.database, table.table)]
        # Rows read after an ADD COLUMN have the new column, NULL where nothing was written to it.
        before, after = _complete(table, before), _complete(table, after)
        self.events.append(
            RowChange(
                op=op,
                database=table.database,
                table=table.table,
                before=before,
                after=after,
                types={c.name: c.type for c in table.columns},
                key_columns=table.key_columns,
                commit_ts=commit_ts,
                schema_version=table.version,
                table_id=table.table_id,
            )
        )

    def insert(self, table: TableSchema, commit_ts: int, **values: Any) -> None:
        self.row(Op.INSERT, table, None, values, commit_ts)

    def update(self, table: TableSchema, old: dict[str, Any], commit_ts: int, **changes: Any) -> dict[str, Any]:
        new = old | changes
        self.row(Op.UPDATE, table, old, new, commit_ts)
        return new

    def delete(self, table: TableSchema, old: dict[str, Any], commit_ts: int) -> None:
        self.row(Op.DELETE, table, old, None, commit_ts)

    def watermark(self) -> None:
        self.events.append(Watermark(tso(self.clock, 1)))
        self.events.append(Heartbeat(int(self.clock.timestamp() * 1000)))

    def ddl(self, kind: DdlKind, sql: str, before: TableSchema | None, after: TableSchema) -> None:
        commit_ts = self.tick(2)
        after = replace(after, version=commit_ts)
        self.schemas[(after.database, after.table)] = after
        self.events.append(Ddl(kind, after.database, after.table, sql, commit_ts, before, after))


def _complete(table: TableSchema, image: dict[str, Any] | None) -> dict[str, Any] | None:
    if image is None:
        return None
    names = [c.name for c in table.columns]
    unknown = set(image) - set(names)
    if unknown:
        raise ValueError(f"{table.table} has no columns {sorted(unknown)}")
    return {name: image.get(name) for name in names}


def customer(id: int, email: str, name: str, tier: str, **rest: Any) -> dict[str, Any]:
    values = {
        "id": id, "email": email, "name": name, "tier": tier, "tags": "new", "birthday": None,
        "created_at": START, "balance": Decimal("0.00"), "avatar": None, "active": 1,
    }
    return values | rest


def order(id: int, customer_id: int, total: str, **rest: Any) -> dict[str, Any]:
    values = {
        "id": id, "customer_id": customer_id, "status": "pending", "total": Decimal(total),
        "ordered_at": dt.datetime(2024, 5, 1, 9, 0, 0, 0), "shipped_at": None, "note": None,
        "weight_kg": None, "distance_km": None, "flags": 0, "placed_year": 2024, "delivery_window": None,
        "attributes": None,
    }
    return values | rest


def item(order_id: int, line_no: int, sku: str, qty: int, unit_price: str, checksum: bytes) -> dict[str, Any]:
    return {
        "order_id": order_id, "line_no": line_no, "sku": sku, "qty": qty,
        "unit_price": Decimal(unit_price), "checksum": checksum,
    }


def story() -> list[Event]:
    s = Story()
    s.events.extend(Bootstrap(table) for table in (CUSTOMERS, ORDERS, ORDER_ITEMS))

    ts = s.tick(1)
    ada = customer(1, "ada@example.com", "Ada Lovelace", "gold", tags="new,vip",
                   birthday=dt.date(1815, 12, 10), created_at=dt.datetime(2024, 5, 1, 9, 0, 1, 250000, dt.UTC),
                   balance=Decimal("1250.50"), avatar=bytes([0x89, 0x50, 0x4E, 0x47, 0x00, 0xFF]))
    zoe = customer(2, "zoe@example.com", "Zoë Ångström", "basic", tags=None,
                   birthday=ZeroTemporal("0000-00-00"), created_at=dt.datetime(2024, 5, 1, 9, 0, 1, 0, dt.UTC))
    wang = customer(3, "wang@example.com", "王小明", "platinum", tags="vip,wholesale",
                    birthday=dt.date(1990, 2, 28), created_at=dt.datetime(2024, 5, 1, 9, 0, 1, 999000, dt.UTC),
                    balance=Decimal("-20.00"), active=0)
    for values in (ada, zoe, wang):
        s.insert(CUSTOMERS, ts, **values)

    ts = s.tick(3)
    first = order(1001, 1, "149.9000", ordered_at=dt.datetime(2024, 5, 1, 9, 0, 4, 123456),
                  note="leave at the door", weight_kg=1.25, distance_km=12.345678901234, flags=0b00000101,
                  delivery_window=dt.timedelta(hours=14, minutes=30), attributes='{"gift":true,"wrap":"blue"}')
    s.insert(ORDERS, ts, **first)
    s.insert(ORDER_ITEMS, ts, **item(1001, 1, "SKU-0000042", 2, "49.95", bytes(range(16))))
    s.insert(ORDER_ITEMS, ts, **item(1001, 2, "SKU-0000077", 1, "50.00", bytes(range(255, 239, -1))))
    s.watermark()

    ts = s.tick(5)
    second = order(1002, 3, "0.0000", note="null", weight_kg=0.0, distance_km=-0.5, flags=0xFF,
                   delivery_window=-dt.timedelta(hours=12, minutes=30), attributes="[]")
    s.insert(ORDERS, ts, **second)
    s.insert(ORDER_ITEMS, ts, **item(1002, 1, "SKU-0000042", 0, "0.00", bytes(16)))

    ts = s.tick(7)
    first = s.update(ORDERS, first, ts, status="paid")
    ada = s.update(CUSTOMERS, ada, ts, balance=Decimal("1100.60"))
    s.watermark()

    s.ddl(DdlKind.CREATE_TABLE, CREATE_STOCK_SQL, None, STOCK)
    ts = s.tick(1)
    s.insert(STOCK, ts, sku="SKU-0000042", on_hand=118, lifetime_units=18446744073709551615,
             last_counted=dt.datetime(2024, 4, 30, 22, 0, tzinfo=dt.UTC),
             count_duration=dt.timedelta(minutes=3, seconds=7, microseconds=500001))
    s.insert(STOCK, ts, sku="SKU-0000077", on_hand=0, lifetime_units=0, last_counted=None, count_duration=None)

    ts = s.tick(11)
    first = s.update(ORDERS, first, ts, status="shipped", shipped_at=dt.datetime(2024, 5, 1, 9, 0, 30))
    s.update(ORDER_ITEMS, item(1002, 1, "SKU-0000042", 0, "0.00", bytes(16)), ts, qty=3, unit_price=Decimal("9.99"))
    s.watermark()

    orders_with_coupon = (*ORDERS.columns, ColumnSchema("coupon", MySQLType.parse("varchar(32)")))
    s.ddl(DdlKind.ALTER_TABLE, ADD_COUPON_SQL, s.schemas[("shop", "orders")],
          replace(ORDERS, columns=orders_with_coupon))
    ts = s.tick(2)
    s.insert(ORDERS, ts, **order(1003, 2, "99999999.9999", ordered_at=dt.datetime(2024, 5, 1, 9, 0, 45),
                                 coupon="SPRING-24", placed_year=2024, weight_kg=3.4028234663852886e38))
    s.delete(ORDERS, second, ts)
    s.delete(ORDER_ITEMS, item(1002, 1, "SKU-0000042", 3, "9.99", bytes(16)), ts)
    s.delete(CUSTOMERS, zoe, s.tick(1))
    s.watermark()
    return s.events


def carries(format_name: str) -> tuple[type, ...]:
    """Which kinds of event the format carries, as its codec says; the rest of the story is left out of
    its sample. Progress is a watermark, or a heartbeat for a format without watermarks."""
    codec = get_codec(format_name)
    mark = Watermark if codec.has_watermarks(codec.resolve(codec.sample_options)) else Heartbeat
    return (*((Bootstrap,) if codec.bootstraps else ()), RowChange, Ddl, mark)


def events_for(format_name: str, events: Sequence[Event]) -> list[Event]:
    return [event for event in events if isinstance(event, carries(format_name))]


def remove_old_sample(format_name: str, directory: Path) -> None:
    samples.lines_file(format_name).unlink(missing_ok=True)
    for value, key in message_file_pairs(directory, samples.message_file_prefix(format_name)):
        value.unlink()
        if key is not None:
            key.unlink()


def write_sample(format_name: str, events: Sequence[Event]) -> int:
    """Encode the events as the format's sample; the number of messages written."""
    codec = get_codec(format_name)
    messages = codec.encoder(codec.sample_options).encode(events)
    remove_old_sample(format_name, samples.DIRECTORY)
    if codec.binary:
        return write_message_directory(messages, samples.DIRECTORY, samples.message_file_prefix(format_name))
    return write_lines(messages, samples.lines_file(format_name))


def decoded(format_name: str) -> Iterator[Event]:
    codec = get_codec(format_name)
    decoder = codec.decoder(codec.sample_options)
    for message in samples.sample_messages(format_name):
        yield from decoder.decode(message)


def main() -> None:
    events = story()
    for format_name in FORMAT_NAMES:
        wanted = events_for(format_name, events)
        count = write_sample(format_name, wanted)
        back = list(decoded(format_name))
        kinds = [type(e).__name__ for e in back]
        if kinds != [type(e).__name__ for e in wanted]:
            raise SystemExit(f"{format_name}: the sample decodes to {kinds}, not to the events it was made from")
        rows = kinds.count("RowChange")
        print(f"{format_name}: {len(wanted)} events -> {count} messages -> {len(back)} events ({rows} rows) decoded")


if __name__ == "__main__":
    main()
