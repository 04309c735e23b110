"""Auto CDC flows over cdclake's change feed (``feed.py``): for each upstream table ``db.t``, a mirror
``db__t`` (SCD type 1: the upstream's current rows) and a history ``db__t__history`` (SCD type 2: a row
per version, Auto CDC's ``__START_AT``/``__END_AT``).

Spark Declarative Pipelines run this file with ``spark`` defined (``spark-pipelines run``); the feed's
directory comes from the session's ``spark.cdclake.feed`` setting.
"""

import json
from pathlib import Path

from pyspark import pipelines as dp
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

# The columns table_views puts ahead of each table's own: what the change was and where it was read.
CHANGE_COLUMNS = ["_op", "_commit_ts", "_topic", "_partition", "_offset"]
# cdclake's order of a key's changes: commit ts, then the position in the stream, so that a TiCDC
# update split into a DELETE and an INSERT of one commit ts applies in the order sent.
SEQUENCE = F.struct("_commit_ts", "_partition", "_offset")
IS_DELETE = F.expr("_op = 'delete'")


def declare(name: str, table: dict) -> None:
    changes = name.replace(".", "__") + "__changes"
    schema = StructType.fromJson(table["schema"])

    @dp.temporary_view(name=changes)
    def read_changes():
        return spark.readStream.schema(schema).parquet(table["path"])  # noqa: F821 (given by the runner)

    for target, scd_type in ((name.replace(".", "__"), 1), (name.replace(".", "__") + "__history", 2)):
        dp.create_streaming_table(target)
        dp.create_auto_cdc_flow(target=target, source=changes, keys=table["keys"], sequence_by=SEQUENCE,
                                apply_as_deletes=IS_DELETE, except_column_list=CHANGE_COLUMNS,
                                stored_as_scd_type=scd_type)


feed = Path(spark.conf.get("spark.cdclake.feed"))  # noqa: F821
for table_name, described in json.loads((feed / "tables.json").read_text()).items():
    declare(table_name, described)
