"""What the lake's catalog cannot do, known from the session's settings before a statement is tried.

A Hive catalog's metastore (Hive 2 and 3) checks each schema Iceberg commits against the table's old
columns position by position (``MetaStoreUtils.throwExceptionIfIncompatibleColTypeChange``): a dropped
column shifts the ones after it, and where a type then differs the metastore refuses ("The following
columns have types incompatible with the existing columns in their respective positions"), after
which Iceberg cannot tell whether its commit happened (``CommitStateUnknownException``). The check is the
metastore's own setting ``hive.metastore.disallow.incompatible.col.type.changes`` (true by default), read
from the metastore's ``hive-site.xml``: a client's setting does not reach a remote metastore. So on a Hive
catalog the job refuses a DROP COLUMN (also the last step of a column rewrite) before making any part of
the change, naming the setting, unless the job's Spark settings say the metastore has it off:
``spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes = "false"``, which is also what an
embedded metastore (one in the Spark driver) reads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from cdclake.schema.policy import SchemaEvolutionError
from cdclake.sinks.iceberg.evolution import DropLakeColumn, LakeChange

HIVE_COLUMN_CHECK = "hive.metastore.disallow.incompatible.col.type.changes"
HIVE_CATALOG_IMPL = "org.apache.iceberg.hive.HiveCatalog"

# A Spark setting by name, None where it is not set: RuntimeConfig.get(name, None), or a dict's get.
Settings = Callable[[str, None], str | None]


def is_hive_catalog(settings: Settings, catalog: str) -> bool:
    prefix = f"spark.sql.catalog.{catalog}"
    return (settings(f"{prefix}.type", None) or "").lower() == "hive" or \
        settings(f"{prefix}.catalog-impl", None) == HIVE_CATALOG_IMPL


def check_lake_changes(settings: Settings, catalog: str, table: str, lake_changes: Sequence[LakeChange]) -> None:
    """Raise :class:`SchemaEvolutionError` if the catalog would refuse one of ``lake_changes`` to ``table``."""
    dropped = [change.name for change in lake_changes if isinstance(change, DropLakeColumn)]
    if not dropped or not is_hive_catalog(settings, catalog):
        return
    if (settings(f"spark.hadoop.{HIVE_COLUMN_CHECK}", None) or "").strip().lower() == "false":
        return
    raise SchemaEvolutionError(
        f"{table}: dropping column {', '.join(dropped)} on the Hive catalog {catalog!r}: a Hive 2 or 3 metastore "
        f"refuses it (\"types incompatible with the existing columns in their respective positions\") unless its "
        f"hive-site.xml sets {HIVE_COLUMN_CHECK}=false. Set that on the metastore and restart it (a Hive 4 "
        f"metastore needs nothing), then tell the job: spark.hadoop.{HIVE_COLUMN_CHECK} = \"false\" under "
        "[lake] spark in the job file"
    )
