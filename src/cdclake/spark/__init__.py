"""cdclake on Apache Spark: the session, Iceberg's runtime and the replication pipeline."""
