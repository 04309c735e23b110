"""Table schemas in MySQL terms and in the lake's.

- :mod:`cdclake.schema.lake`: the Iceberg column type of each MySQL type, and the exact text through
  which a value reaches it in Spark.
- :mod:`cdclake.schema.ddl`: DDL statements read with sqlglot into schema changes
  (:mod:`cdclake.schema.ddl.changes`), and a table's schema after them.
- :mod:`cdclake.schema.evolution`: what those changes do to an Iceberg table, as Spark SQL.

Pure Python: the Spark pipeline calls these, never the other way round.
"""
