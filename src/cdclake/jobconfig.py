"""A replication job's settings: a TOML file, overridden by command-line flags.

::

    [source]
    captured = "stream"                      # a captured topic directory, or:
    kafka = { "bootstrap.servers" = "broker:9092", "security.protocol" = "SASL_SSL" }
    topics = ["tidb-cdc"]                    # or topic-pattern = "tidb-cdc-.*"

    [format]
    name = "canal-json"
    options = { enable-tidb-extension = true }

    [lake]
    warehouse = "warehouse"                  # the default Iceberg Hadoop catalog's directory, or s3a://bucket/lake
    catalog = "lake"
    namespace = "cdclake"                    # the job's own tables: state, changelog, dead_letters
    master = "local[2]"                      # or leave it to spark-submit: master = ""
    spark = { "spark.sql.catalog.lake.type" = "rest" }   # any Spark setting, e.g. another catalog
    jars = ["org.postgresql:postgresql:42.7.7"]          # added to cdclake's own: Maven coordinates or paths

    [sink]                                   # instead of Iceberg tables: a database (docs/sinks.md)
    url = "jdbc:postgresql://db:5432/mirror?user=cdc&password=..."

    [tables]
    include = "shop\\..*"                    # regular expressions on database.table; exclude wins
    exclude = "shop\\.tmp_.*"
    target-namespace = "{database}"
    mapping = { "shop.orders" = "sales.orders" }
    history = ["shop\\..*"]                 # SCD type 2 history tables beside these mirrors ("*": all)
    track-history-columns = ["status"]       # or track-history-except = ["updated_at"]: others change in place
    history-keep-deleted = true              # a deleted row's last version stays, closed (false: it goes)

    [tables."shop.orders"]                   # an Iceberg mirror's layout, per pattern (cdclake/schema/layout.py)
    partition-by = ["bucket(16, id)", "days(created_at)"]
    properties = { "write.target-file-size-bytes" = 134217728 }
    track-history-except = ["updated_at"]    # and its history kept otherwise than [tables] says (any of the three)

    [batch]
    max-records = 2000000
    interval-s = 5
    unresolved-tail = "keep"                 # or "apply"
    on-bad-message = "dead-letter"           # or "fail"
    incompatible-type-change = "fail"        # or "rewrite"
    fill-added-columns = true                # rows already there get an added column's default
    unsupported-ddl = "stop"                 # or "skip", "apply-supported": a DDL the job cannot follow
    write-mode = "merge-on-read"             # or "copy-on-write"
    parallel-tables = 4                      # MERGEs side by side, sharing spark.sql.shuffle.partitions
    schema-wait-s = 600                      # how long a Simple row may wait for its schema (upstream time)
    expire-snapshots-every-s = 3600          # Iceberg's expire_snapshots on the job's tables (0: never)
    compact-every-s = 3600                   # mirrors with delete files compacted (0: never; cdclake maintain)

Each value must be of its key's kind, or the file is refused naming the file, section and key: a list
stays a list even of one (``topics = "shop"`` is an error, not the topic ``shop``), a number is not
written as a string, ``true`` is not ``"true"``. Kafka settings librdkafka refuses are refused here too,
before Spark starts.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdclake.errors import OptionError
from cdclake.formats import FORMAT_NAMES
from cdclake.schema.history import HistoryRule, HistorySettings
from cdclake.schema.layout import LayoutRule, layout_rule
from cdclake.schema.policy import EvolutionPolicy
from cdclake.sources import open_source
from cdclake.sources.ranges import Source
from cdclake.spark.config import DEFAULT_MAX_BATCH_RECORDS, ReplicateConfig

# What each key holds, checked as the file is read: unchecked, a string where a list belongs would be
# read letter by letter (topics = "shop" as the topics s, h, o, p) and "false" would be true.
_TEXT, _TEXTS, _TABLE, _INTEGER, _NUMBER, _BOOLEAN = (
    "a string", "a list of strings", "a table", "an integer", "a number", "true or false")
_SECTIONS: dict[str, dict[str, str]] = {
    "source": {"captured": _TEXT, "kafka": _TABLE, "topics": _TEXTS, "topic-pattern": _TEXT},
    "format": {"name": _TEXT, "options": _TABLE},
    "lake": {"warehouse": _TEXT, "catalog": _TEXT, "namespace": _TEXT, "master": _TEXT, "spark": _TABLE,
             "jars": _TEXTS},
    "sink": {"url": _TEXT},
    "tables": {"include": _TEXT, "exclude": _TEXT, "target-namespace": _TEXT, "mapping": _TABLE,
               "history": _TEXTS, "track-history-columns": _TEXTS, "track-history-except": _TEXTS,
               "history-keep-deleted": _BOOLEAN},
    "batch": {"max-records": _INTEGER, "interval-s": _NUMBER, "unresolved-tail": _TEXT, "on-bad-message": _TEXT,
              "incompatible-type-change": _TEXT, "fill-added-columns": _BOOLEAN, "unsupported-ddl": _TEXT,
              "write-mode": _TEXT,
              "parallel-tables": _INTEGER, "schema-wait-s": _NUMBER, "expire-snapshots-every-s": _NUMBER,
              "compact-every-s": _NUMBER},
}


@dataclass(frozen=True)
class JobSettings:
    """Everything ``cdclake replicate`` needs: where from, how to decode, where to."""

    source: Source
    replicate: ReplicateConfig
    # A string, not a Path: a Path would make s3a://bucket/lake the local s3a:/bucket/lake.
    warehouse: str = "warehouse"
    master: str | None = "local[2]"
    spark_conf: Mapping[str, str] = field(default_factory=dict)
    jars: tuple[str, ...] = ()
    interval_s: float = 5.0


def read_toml(path: Path) -> dict[str, Any]:
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise OptionError(f"{path}: {exc}") from None
    for section, values in document.items():
        if section not in _SECTIONS or not isinstance(values, dict):
            raise OptionError(f"{path}: unknown section [{section}]; sections: {', '.join(_SECTIONS)}")
        per_table = table_sub_tables(values) if section == "tables" else {}
        _check_keys(path, f"[{section}]", {k: v for k, v in values.items() if k not in per_table}, _SECTIONS[section])
        for pattern, keys in per_table.items():
            _check_keys(path, f'[tables."{pattern}"]', keys, _PER_TABLE_KEYS)
    return document


def _check_keys(path: Path, where: str, values: Mapping[str, Any], kinds: Mapping[str, str]) -> None:
    unknown = sorted(set(values) - set(kinds))
    if unknown:
        raise OptionError(f"{path}: {where} has no {', '.join(unknown)}; valid: {', '.join(sorted(kinds))}")
    for name, value in values.items():
        _check_kind(path, where, name, value, kinds[name])


def _check_kind(path: Path, where: str, name: str, value: Any, kind: str) -> None:
    fits = {
        _TEXT: isinstance(value, str),
        _TEXTS: isinstance(value, list) and all(isinstance(item, str) for item in value),
        _TABLE: isinstance(value, dict),
        _INTEGER: isinstance(value, int) and not isinstance(value, bool),
        _NUMBER: isinstance(value, int | float) and not isinstance(value, bool),
        _BOOLEAN: isinstance(value, bool),
    }[kind]
    if not fits:
        hint = f" (one is a list too: {name} = [{_toml(value)}])" if kind == _TEXTS and isinstance(value, str) else ""
        raise OptionError(f"{path}: {where} {name} = {_toml(value)} is not {kind}{hint}")


def _toml(value: Any) -> str:
    """``value`` about as the file spells it, for messages."""
    if isinstance(value, bool):
        return str(value).lower()
    return f'"{value}"' if isinstance(value, str) else repr(value)


# The keys of a [tables."<pattern>"] sub-table: an Iceberg mirror's layout (cdclake.schema.layout), and
# how the tables' history tables are kept where that differs from [tables]' own (cdclake.schema.history).
_LAYOUT_KEYS = {"partition-by": _TEXTS, "properties": _TABLE}
_HISTORY_KEYS = {key: _SECTIONS["tables"][key]
                 for key in ("track-history-columns", "track-history-except", "history-keep-deleted")}
_PER_TABLE_KEYS = {**_LAYOUT_KEYS, **_HISTORY_KEYS}


def table_sub_tables(tables: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The ``[tables."<pattern>"]`` sub-tables of ``[tables]``: its keys that are none of its settings and
    hold a table."""
    return {name: value for name, value in tables.items()
            if name not in _SECTIONS["tables"] and isinstance(value, dict)}


def layout_rules(tables: Mapping[str, Any]) -> tuple[LayoutRule, ...]:
    """The layouts ``[tables]``'s sub-tables ask, in the file's order."""
    return tuple(layout_rule(pattern, keys.get("partition-by"), keys.get("properties", {}))
                 for pattern, keys in table_sub_tables(tables).items() if set(keys) & set(_LAYOUT_KEYS))


def merged(document: Mapping[str, Any], overrides: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The file's sections with the flags given (non-None values) on top."""
    result = {section: dict(document.get(section, {})) for section in _SECTIONS}
    for section, values in overrides.items():
        for name, value in values.items():
            if value is None:
                continue
            if isinstance(value, dict):
                result[section][name] = {**result[section].get(name, {}), **value}
            else:
                result[section][name] = value
    return result


def source_of(section: Mapping[str, Any]) -> Source:
    try:
        return open_source(captured=section.get("captured"), kafka=section.get("kafka"),
                           topics=section.get("topics"), topic_pattern=section.get("topic-pattern"))
    except OptionError as exc:
        raise OptionError(f"[source]: {exc}") from None


def history_settings(tables: Mapping[str, Any]) -> HistorySettings:
    """The history tables ``[tables]`` asks for (:mod:`cdclake.schema.history`), kept as it says unless
    a ``[tables."<pattern>"]`` says otherwise for the tables it matches."""
    def names(keys: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
        return tuple(keys[key]) if key in keys else None

    rules = tuple(HistoryRule(pattern, names(keys, "track-history-columns"), names(keys, "track-history-except"),
                              keys.get("history-keep-deleted"))
                  for pattern, keys in table_sub_tables(tables).items() if set(keys) & set(_HISTORY_KEYS))
    try:
        return HistorySettings(tuple(tables.get("history", ())), names(tables, "track-history-columns"),
                               names(tables, "track-history-except"), bool(tables.get("history-keep-deleted", True)),
                               rules)
    except OptionError as exc:
        raise OptionError(f"[tables]: {exc}") from None


def job_settings(sections: Mapping[str, Mapping[str, Any]]) -> JobSettings:
    format_section, lake, tables, batch = (sections.get(s, {}) for s in ("format", "lake", "tables", "batch"))
    if "name" not in format_section:
        raise OptionError(f"[format]: name is required ({', '.join(FORMAT_NAMES)})")
    replicate = ReplicateConfig(
        format=format_section["name"],
        format_options=dict(format_section.get("options", {})),
        catalog=lake.get("catalog", "lake"),
        namespace=lake.get("namespace", "cdclake"),
        include=tables.get("include"),
        exclude=tables.get("exclude"),
        table_mapping=dict(tables.get("mapping", {})),
        target_namespace=tables.get("target-namespace", "{database}"),
        max_batch_records=int(batch.get("max-records", DEFAULT_MAX_BATCH_RECORDS)),
        unresolved_tail=batch.get("unresolved-tail", "keep"),
        on_bad_message=batch.get("on-bad-message", "dead-letter"),
        evolution=EvolutionPolicy(incompatible_type_change=batch.get("incompatible-type-change", "fail"),
                                  fill_added_columns=bool(batch.get("fill-added-columns", True)),
                                  unsupported_ddl=batch.get("unsupported-ddl", "stop")),
        write_mode=batch.get("write-mode", "merge-on-read"),
        parallel_tables=int(batch.get("parallel-tables", 4)),
        schema_wait_s=float(batch.get("schema-wait-s", 600.0)),
        expire_snapshots_every_s=float(batch.get("expire-snapshots-every-s", 3600.0)),
        compact_every_s=float(batch.get("compact-every-s", 3600.0)),
        sink=sections.get("sink", {}).get("url"),
        layouts=layout_rules(tables),
        history=history_settings(tables),
    )
    master = lake.get("master", "local[2]")
    return JobSettings(
        source=source_of(sections.get("source", {})),
        replicate=replicate,
        warehouse=lake.get("warehouse", "warehouse"),
        master=master or None,
        spark_conf={k: str(v) for k, v in lake.get("spark", {}).items()},
        jars=tuple(lake.get("jars", ())),
        interval_s=float(batch.get("interval-s", 5.0)),
    )
