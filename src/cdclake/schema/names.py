"""Which lake tables the names in a stream may lead to: the rule every mirror's name passes.

The stream names each change's table (``database.table``); the job maps it to a lake namespace and
table (``table_mapping``, else ``target_namespace`` with ``{database}`` standing for the upstream
database, and the upstream table's name). A catalog on a filesystem (Hadoop's, the tests', or a Hive
metastore's default locations) makes each name a directory under the warehouse, so a name from the
stream must not steer a path; and the job's own tables (state, changelog, dead letters) must stay out
of the stream's reach, whatever the names.

**The rule.** A mirror's namespace and table name are kept as they are (quoted, never split on "."),
unless one of them

1. is empty;
2. is ``.`` or ``..``, or holds ``/``, ``\\``, NUL (U+0000) or ``:`` (a Hadoop path reads what comes
   before a colon as a URI scheme, and fails);
3. is longer than 255 bytes in UTF-8, what a filesystem holds in one directory name (MySQL's own
   names are at most 64 characters);

or the namespace is the job's own (``namespace``, compared ignoring case, as a Hive metastore
compares them). Then the name is *refused*: that table's changes and DDLs are not applied, and each
goes to the dead letters with the reason, the job goes on. ``table_mapping`` can give such a table a
name the rule accepts. The job's settings (its namespace, ``target_namespace``, the mapping's
targets) are checked by the same rule before anything runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from cdclake.errors import CdclakeError, OptionError

MAX_NAME_BYTES = 255
_FORBIDDEN = {"/": "a slash", "\\": "a backslash", "\0": "a NUL character", ":": "a colon"}


class RefusedName(CdclakeError):
    """A table the stream names whose lake name the rule (see the module) refuses."""


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a lake namespace or table name, or None if it can (rules 1–3)."""
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return f"{name!r} names a directory of the path, not one of its own"
    held = [what for char, what in _FORBIDDEN.items() if char in name]
    if held:
        return f"it holds {' and '.join(held)}, which would steer the table's path"
    if len(name.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"it is longer than {MAX_NAME_BYTES} bytes, more than a directory name can be"
    return None


def case_collisions(names: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs of ``names`` that differ only in case: MySQL's column names ignore case, Spark's too."""
    first: dict[str, str] = {}
    pairs = []
    for name in names:
        seen = first.setdefault(name.casefold(), name)
        if seen != name:
            pairs.append((seen, name))
    return pairs


def column_problem(names: Iterable[str]) -> str | None:
    """Why columns so named cannot be one table's: two that differ only in case, which MySQL's (and
    Spark's) column names do not tell apart, so MySQL never sends them."""
    pairs = case_collisions(names)
    if not pairs:
        return None
    return "columns that differ only in case, which MySQL cannot have in one table: " + ", ".join(
        f"{first!r} and {second!r}" for first, second in pairs)


@dataclass(frozen=True)
class Naming:
    """Where the job puts each upstream table: ``table_mapping`` (``database.table`` to
    ``namespace.table``), else ``target_namespace`` (``{database}`` for the upstream database) under the
    table's own name; never in ``namespace``, the job's own."""

    namespace: str
    target_namespace: str = "{database}"
    table_mapping: Mapping[str, str] = field(default_factory=dict)

    def check(self) -> None:
        """:class:`OptionError` where the settings themselves break the rule."""
        problem = name_problem(self.namespace)
        if problem:
            raise OptionError(f"namespace={self.namespace!r}: {problem}")
        if "{database}" not in self.target_namespace:
            self._check_setting("target-namespace", self.target_namespace, self.target_namespace, "t")
        for upstream, mapped in self.table_mapping.items():
            namespace, _, table = mapped.rpartition(".")
            self._check_setting(f"table mapping {upstream!r}", mapped, namespace, table)

    def _check_setting(self, setting: str, value: str, namespace: str, table: str) -> None:
        problem = self._problem(namespace, table)
        if problem:
            raise OptionError(f"{setting} = {value!r}: {problem}")

    def target(self, database: str, table: str) -> tuple[str, str]:
        """The lake (namespace, table) of the upstream ``database.table``; :class:`RefusedName` if the
        rule refuses it."""
        namespace, name = self._mapped(database, table)
        problem = self._problem(namespace, name)
        if problem:
            raise RefusedName(f"{database}.{table}: not applied, its lake table {namespace}.{name} is refused: "
                              f"{problem} (docs/names.md; table_mapping can name it otherwise)")
        return namespace, name

    def refusal(self, database: str, table: str) -> str | None:
        """Why the upstream ``database.table`` gets no lake table, or None if it gets one."""
        try:
            self.target(database, table)
        except RefusedName as refused:
            return str(refused)
        return None

    def _mapped(self, database: str, table: str) -> tuple[str, str]:
        mapped = self.table_mapping.get(f"{database}.{table}")
        if mapped is not None:
            namespace, _, name = mapped.rpartition(".")
            return namespace, name
        return self.target_namespace.format(database=database), table

    def _problem(self, namespace: str, table: str) -> str | None:
        if namespace.casefold() == self.namespace.casefold():
            return f"the namespace is the job's own ({self.namespace}: its state, changelog and dead letters)"
        for part, name in (("namespace", namespace), ("table name", table)):
            problem = name_problem(name)
            if problem:
                return f"its {part} {name!r}: {problem}"
        return None
