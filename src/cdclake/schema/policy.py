"""What a replication job does with a schema change its tables cannot follow in place, and with a DDL
it cannot follow at all.

The policy is the job's (``[batch]`` in the job file); each sink says what it can change in place
and applies the policy to the rest (:mod:`cdclake.sinks.iceberg.evolution` for Iceberg). The pipeline
applies ``unsupported_ddl`` where it plans a batch's DDLs (:mod:`cdclake.schema.following`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from cdclake.errors import CdclakeError, OptionError

IncompatibleTypeChange = Literal["fail", "rewrite"]
UnsupportedDdl = Literal["stop", "skip", "apply-supported"]


@dataclass(frozen=True, slots=True)
class EvolutionPolicy:
    """How a lake table follows what Iceberg cannot change in place.

    ``incompatible_type_change`` (option ``incompatible-type-change``): ``"fail"`` raises
    :class:`SchemaEvolutionError` naming the table, the column and the types; ``"rewrite"`` rebuilds the
    column with the new type, each value converted by Spark's CAST (a decimal rounds half up, as MySQL's
    does; a value the new type cannot hold becomes NULL, where MySQL in strict mode refuses the ALTER).
    The rows updated later carry MySQL's own values.

    ``fill_added_columns``: whether the rows already in a table get the value MySQL gives them when a
    column is added (its default, or the implicit default of a NOT NULL column). It costs an UPDATE of
    every row; without it those rows hold NULL until they change upstream.

    ``unsupported_ddl`` (option ``unsupported-ddl``): what a DDL the job cannot follow does (one that
    changes rows without row events, such as ALTER TABLE ... TRUNCATE PARTITION, or one it cannot read).
    ``"stop"`` raises :class:`~cdclake.schema.ddl.DdlInterpretError` naming the DDL, its table, commit ts
    and place before anything of the batch is applied; ``"skip"`` puts the DDL in the dead letters with
    the reason and applies none of it; ``"apply-supported"`` applies the parts it can follow (the
    clauses of an ALTER TABLE, the statements of a DDL) and dead-letters the DDL with the rest.
    """

    incompatible_type_change: IncompatibleTypeChange = "fail"
    fill_added_columns: bool = True
    unsupported_ddl: UnsupportedDdl = "stop"

    def __post_init__(self) -> None:
        for option, value, allowed in (
            ("incompatible-type-change", self.incompatible_type_change, get_args(IncompatibleTypeChange)),
            ("unsupported-ddl", self.unsupported_ddl, get_args(UnsupportedDdl)),
        ):
            if value not in allowed:
                raise OptionError(f"{option} must be one of {', '.join(allowed)}, got {value!r}")


class SchemaEvolutionError(CdclakeError):
    """A MySQL schema change the lake table cannot follow under the policy in force."""
