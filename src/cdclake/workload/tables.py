"""The upstream tables: their schemas, how their keys are made, and the SQL of their DDL.

Between them the tables use every MySQL type family TiCDC carries, and every kind of row identity a
lake mirror meets: a single-column primary key, a composite one, a string one, a unique NOT NULL key
standing in for a missing primary key (TiCDC's handle key), and no key at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from cdclake.model import ColumnSchema, IndexSchema, TableSchema
from cdclake.types import Family, MySQLType


@dataclass(frozen=True, slots=True)
class TableShape:
    """A table of the catalog: its schema (without id and version, given when it is created) and how
    its key values are made."""

    schema: TableSchema
    key_style: str  # "serial", "composite", "code", "account" or "none"; see keys.KeyMaker


def _table(database: str, table: str, columns: str, primary: Sequence[str] = (),
           unique: Sequence[str] = ()) -> TableSchema:
    """A schema from ``name type [not null]`` lines: the primary key's columns are NOT NULL."""
    parsed = []
    for line in columns.strip().splitlines():
        name, _, rest = line.strip().partition(" ")
        not_null = rest.endswith(" not null") or name in primary
        parsed.append(ColumnSchema(name, MySQLType.parse(rest.removesuffix(" not null")), nullable=not not_null))
    indexes = []
    if primary:
        indexes.append(IndexSchema("PRIMARY", tuple(primary), unique=True, primary=True))
    if unique:
        indexes.append(IndexSchema(f"uk_{'_'.join(unique)}", tuple(unique), unique=True))
    return TableSchema(database, table, _explicit_fsp(tuple(parsed)), tuple(indexes))


def _explicit_fsp(columns: tuple[ColumnSchema, ...]) -> tuple[ColumnSchema, ...]:
    """DATETIME, TIMESTAMP and TIME columns written without an fsp have fsp 0 (MySQL's default), which
    the Simple protocol's schemas say; ``None`` would mean "not known"."""
    temporal = (Family.DATETIME, Family.TIMESTAMP, Family.TIME)
    return tuple(
        replace(c, type=replace(c.type, decimals=0)) if c.type.family in temporal and c.type.decimals is None else c
        for c in columns
    )


CUSTOMERS = TableShape(
    _table(
        "shop", "customers",
        """
        id bigint unsigned
        email varchar(255) not null
        name varchar(64)
        tier enum('basic','gold','platinum','it''s') not null
        tags set('new','vip','wholesale')
        birthday date
        created_at timestamp(3) not null
        balance decimal(12,2) not null
        avatar varbinary(64)
        active tinyint(1) not null
        visits int
        """,
        primary=["id"],
    ),
    "serial",
)
ORDER_ITEMS = TableShape(
    _table(
        "shop", "order_items",
        """
        order_id bigint
        line_no smallint unsigned
        sku char(12) not null
        qty mediumint not null
        unit_price decimal(10,2) not null
        checksum binary(16) not null
        weight_kg float
        note text
        """,
        primary=["order_id", "line_no"],
    ),
    "composite",
)
ACCOUNTS = TableShape(
    _table(
        "shop", "accounts",
        """
        account_no char(20) not null
        holder varchar(100)
        opened_on date not null
        credit_limit decimal(65,30)
        flags bit(8) not null
        logins int
        """,
        unique=["account_no"],
    ),
    "account",
)
NUMBERS = TableShape(
    _table(
        "metrics", "numbers",
        """
        id int
        i8 tinyint
        u8 tinyint unsigned
        i16 smallint
        u16 smallint unsigned
        i24 mediumint
        u24 mediumint unsigned
        i32 int
        u32 int unsigned
        i64 bigint
        u64 bigint unsigned
        b1 bit(1)
        b64 bit(64)
        yr year
        f32 float
        f64 double
        d_whole decimal(20,0) unsigned
        d_wide decimal(65,30)
        zf int(5) unsigned zerofill
        """,
        primary=["id"],
    ),
    "serial",
)
TEXTS = TableShape(
    _table(
        "metrics", "texts",
        """
        code varchar(32)
        c char(10)
        vc varchar(255)
        tt tinytext
        t text
        mt mediumtext
        lt longtext
        bn binary(8)
        vb varbinary(255)
        tb tinyblob
        bl blob
        mb mediumblob
        lb longblob
        doc json
        """,
        primary=["code"],
    ),
    "code",
)
EVENTS = TableShape(
    _table(
        "calendar", "events",
        """
        id bigint
        day date
        starts datetime
        starts_precise datetime(6)
        stamped timestamp
        stamped_precise timestamp(6)
        duration time
        duration_precise time(6)
        year_of year not null
        attendees int
        """,
        primary=["id"],
    ),
    "serial",
)
AUDIT = TableShape(
    _table(
        "logs", "audit",
        """
        happened_at datetime(6) not null
        actor varchar(64)
        action enum('login','logout','purchase') not null
        detail json
        amount decimal(10,4)
        """,
    ),
    "none",
)
STOCK = TableShape(
    _table(
        "inventory", "stock",
        """
        sku char(12)
        on_hand int not null
        lifetime_units bigint unsigned not null
        last_counted timestamp
        count_duration time(6)
        """,
        primary=["sku"],
    ),
    "code",
)

CATALOG: tuple[TableShape, ...] = (CUSTOMERS, ORDER_ITEMS, ACCOUNTS, NUMBERS, TEXTS, EVENTS, AUDIT)
"""The tables that exist when the stream starts, in the order ``WorkloadSpec.tables`` takes them."""

KEYLESS = AUDIT
CREATED_MID_STREAM = STOCK
"""The table a CREATE TABLE brings in mid-stream."""


def initial_shapes(count: int, keyless: bool) -> list[TableShape]:
    """The first ``count`` tables of the catalog (without the keyless one unless ``keyless``); past the
    catalog's end, copies of its tables named ``<table>_2``, ``<table>_3`` ..."""
    shapes = [shape for shape in CATALOG if keyless or shape is not KEYLESS]
    chosen = []
    for i in range(count):
        shape = shapes[i % len(shapes)]
        copy = i // len(shapes)
        if copy:
            shape = replace(shape, schema=replace(shape.schema, table=f"{shape.schema.table}_{copy + 1}"))
        chosen.append(shape)
    return chosen


# --- SQL ------------------------------------------------------------------------------------------


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def qualified(database: str, table: str) -> str:
    return f"{quote(database)}.{quote(table)}"


def column_sql(column: ColumnSchema) -> str:
    return f"{quote(column.name)} {column.type} {'NULL' if column.nullable else 'NOT NULL'}"


def create_table_sql(schema: TableSchema) -> str:
    parts = [column_sql(c) for c in schema.columns]
    for index in schema.indexes:
        columns = ", ".join(quote(c) for c in index.columns)
        if index.primary:
            parts.append(f"PRIMARY KEY ({columns})")
        elif index.unique:
            parts.append(f"UNIQUE KEY {quote(index.name)} ({columns})")
    return f"CREATE TABLE {qualified(schema.database, schema.table)} ({', '.join(parts)})"
