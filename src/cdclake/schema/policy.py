"""What a replication job does with a schema change its tables cannot follow in place.

The policy is the job's (``[evolution]`` in the job file); each sink says what it can change in place
and applies the policy to the rest (:mod:`cdclake.sinks.iceberg.evolution` for Iceberg).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

from cdclake.errors import CdclakeError, OptionError

IncompatibleTypeChange = Literal["fail", "rewrite"]


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
    """

    incompatible_type_change: IncompatibleTypeChange = "fail"
    fill_added_columns: bool = True

    def __post_init__(self) -> None:
        allowed = get_args(IncompatibleTypeChange)
        if self.incompatible_type_change not in allowed:
            raise OptionError(f"incompatible-type-change must be one of {', '.join(allowed)}, "
                              f"got {self.incompatible_type_change!r}")


class SchemaEvolutionError(CdclakeError):
    """A MySQL schema change the lake table cannot follow under the policy in force."""
