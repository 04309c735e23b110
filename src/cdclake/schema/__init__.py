"""Table schemas in MySQL terms and in the lake's.

- :mod:`cdclake.schema.lake`: the Iceberg column type of each MySQL type, and the exact text through
  which a value reaches it in Spark.
- :mod:`cdclake.schema.ddl`: DDL statements read with sqlglot into schema changes
  (:mod:`cdclake.schema.ddl.changes`), and a table's schema after them.
- :mod:`cdclake.schema.policy`: what a job does with a change its tables cannot follow in place
  (what the changes do to an Iceberg table is :mod:`cdclake.sinks.iceberg.evolution`'s).

Pure Python: the Spark pipeline calls these, never the other way round.
"""
