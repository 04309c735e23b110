"""``cdclake ... --help``: every option described, and all of it shown in an 80-column terminal."""

from __future__ import annotations

import re

import pytest
import typer.core
import typer.main
from typer.testing import CliRunner

from cdclake.cli import app

COMMAND = typer.main.get_command(app)
assert isinstance(COMMAND, typer.core.TyperGroup)
COMMANDS = dict(COMMAND.commands)


def _help(*args: str) -> str:
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": "80", "TERMINAL_WIDTH": "80"})
    assert result.exit_code == 0, result.output
    return result.stdout


def _squeezed(text: str) -> str:
    """The text without whitespace and box drawing: what is left of it however it was wrapped."""
    return re.sub(r"[\s│╭╮╰╯─]", "", text)


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_and_argument_is_described(name: str) -> None:
    undescribed = [p.name for p in COMMANDS[name].params if not getattr(p, "help", None)]
    assert undescribed == []


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_value_is_named_for_what_it_is(name: str) -> None:
    """FILE, N or HOST:PORT in the help, not typer's type labels (<int>, <str>)."""
    unnamed = [p.name for p in COMMANDS[name].params
               if isinstance(p, typer.core.TyperOption) and not p.is_flag and p.metavar is None]
    assert unnamed == []


@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_help_in_80_columns_shows_all_of_every_text(name: str) -> None:
    """Nothing is cut short: every option name and help text is there in full, and no line is wider."""
    text = _help(*filter(None, [name]))
    assert max(map(len, text.splitlines())) <= 80
    assert "…" not in text
    shown = _squeezed(text)
    command = COMMANDS[name] if name else COMMAND
    texts = [command.help or ""]
    if isinstance(command, typer.core.TyperGroup):
        texts += [sub.short_help or sub.help or "" for sub in command.commands.values()]
    for param in command.params:
        names = [param.metavar or ""] if isinstance(param, typer.core.TyperArgument) else param.opts
        texts += [*names, *param.secondary_opts, getattr(param, "help", None) or ""]
    for wanted in texts:
        assert _squeezed(wanted) in shown, wanted
