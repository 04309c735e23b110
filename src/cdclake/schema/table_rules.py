"""What a job file's ``[tables."<pattern>"]`` sub-table applies to: the upstream tables whose
``database.table`` its regular expression matches whole. Its keys say a mirror's layout
(:class:`cdclake.schema.layout.LayoutRule`) and how a history table is kept
(:class:`cdclake.schema.history.HistoryRule`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from cdclake.errors import OptionError


@dataclass(frozen=True)
class TableRule:
    """The part every ``[tables."<pattern>"]`` rule shares: its pattern, checked when it is made, and
    which tables it matches."""

    pattern: str
    error: ClassVar[type[OptionError]] = OptionError  # what a rule that cannot be raises

    def __post_init__(self) -> None:
        try:
            re.compile(self.pattern)
        except re.error as exc:
            raise self.refused(f"not a regular expression: {exc}") from None

    def refused(self, why: str) -> OptionError:
        """The error for a rule that cannot be, naming its sub-table."""
        return self.error(f'[tables."{self.pattern}"]: {why}')

    def matches(self, database: str, table: str) -> bool:
        return re.fullmatch(self.pattern, f"{database}.{table}") is not None
