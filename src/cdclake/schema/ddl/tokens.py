"""A DDL's SQL read into tokens by sqlglot's MySQL tokenizer, cut into statements, and a cursor that
reads one statement's tokens front to back (see "How the SQL is read" in :mod:`cdclake.schema.ddl`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from sqlglot import Token, TokenType
from sqlglot.dialects.mysql import MySQL
from sqlglot.errors import TokenError

from cdclake.model import Ddl


class _Unreadable(Exception):
    """A statement the reader cannot read; :func:`~cdclake.schema.ddl.interpret` turns it into a
    :class:`~cdclake.schema.ddl.DdlInterpretError` unless the Simple protocol's schemas tell the changes."""


# --- reading statements ----------------------------------------------------------------------------------


class _Tokenizer(MySQL.Tokenizer):
    # sqlglot reads what follows RENAME or REPLACE as one opaque string; a RENAME TABLE's names are needed.
    COMMANDS: ClassVar[set[TokenType]] = set()


_NOT_WORDS = {
    TokenType.IDENTIFIER, TokenType.NUMBER, TokenType.STRING, TokenType.BIT_STRING, TokenType.HEX_STRING,
    TokenType.BYTE_STRING, TokenType.NATIONAL_STRING, TokenType.RAW_STRING, TokenType.UNICODE_STRING,
}
_WORD = re.compile(r"[A-Za-z_$][\w$]*")


def _word(token: Token) -> str | None:
    """The keyword a token spells, upper-cased; None for quoted names, strings, numbers and symbols."""
    if token.token_type in _NOT_WORDS or not _WORD.fullmatch(token.text):
        return None
    return token.text.upper()


def _statements(sql: str) -> list[list[Token]]:
    try:
        tokens = _Tokenizer(dialect="mysql").tokenize(sql)
    except TokenError as exc:
        raise _Unreadable(f"not readable as SQL ({exc})") from exc
    words = [word for token in tokens for word in _words_of(token)]
    return [statement for statement in _split(words, TokenType.SEMICOLON) if statement]


def _words_of(token: Token) -> list[Token]:
    """sqlglot makes one token of some word pairs (``PRIMARY KEY``, ``DOUBLE PRECISION``); one token per
    word here, each spanning the pair in the source."""
    if token.token_type in _NOT_WORDS or " " not in token.text:
        return [token]
    return [Token(TokenType.VAR, word, token.line, token.col, token.start, token.end) for word in token.text.split()]


def _split(tokens: Sequence[Token], separator: TokenType = TokenType.COMMA) -> list[list[Token]]:
    """``tokens`` cut at each ``separator`` outside parentheses."""
    parts: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.token_type is TokenType.L_PAREN:
            depth += 1
        elif token.token_type is TokenType.R_PAREN:
            depth -= 1
        if token.token_type is separator and depth == 0:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


class _Cursor:
    """Reads a statement's tokens front to back."""

    def __init__(self, sql: str, tokens: Sequence[Token]) -> None:
        self.sql = sql
        self.tokens = tokens
        self.position = 0

    @property
    def done(self) -> bool:
        return self.position >= len(self.tokens)

    def _word_at(self, offset: int) -> str | None:
        index = self.position + offset
        return _word(self.tokens[index]) if index < len(self.tokens) else None

    def peek(self, *words: str) -> bool:
        return all(self._word_at(i) == word for i, word in enumerate(words))

    def peek_any(self, *words: str) -> bool:
        return self._word_at(0) in words

    def peek_type(self, token_type: TokenType) -> bool:
        return not self.done and self.tokens[self.position].token_type is token_type

    def accept(self, *words: str) -> bool:
        if self.peek(*words):
            self.position += len(words)
            return True
        return False

    def accept_any(self, *words: str) -> str | None:
        word = self._word_at(0)
        if word in words:
            self.position += 1
            return word
        return None

    def next(self) -> Token:
        if self.done:
            raise _Unreadable(f"the statement ends early: {self.text(self.tokens)!r}")
        token = self.tokens[self.position]
        self.position += 1
        return token

    def name(self) -> str:
        token = self.next()
        if token.token_type is TokenType.IDENTIFIER or _word(token) is not None:
            return token.text
        raise _Unreadable(f"expected a name, found {token.text!r}")

    def qualified_name(self) -> tuple[str | None, str]:
        first = self.name()
        if self.peek_type(TokenType.DOT):
            self.position += 1
            return first, self.name()
        return None, first

    def group(self) -> list[Token]:
        """The tokens inside the parentheses that open here."""
        if not self.peek_type(TokenType.L_PAREN):
            found = "the end" if self.done else repr(self.tokens[self.position].text)
            raise _Unreadable(f"expected '(', found {found}")
        depth = 0
        for index in range(self.position, len(self.tokens)):
            kind = self.tokens[index].token_type
            depth += (kind is TokenType.L_PAREN) - (kind is TokenType.R_PAREN)
            if depth == 0:
                inner = list(self.tokens[self.position + 1 : index])
                self.position = index + 1
                return inner
        raise _Unreadable("unbalanced parentheses")

    def skip_value(self) -> list[Token]:
        """One value: a literal, a signed number, a word with or without arguments, or a parenthesised
        expression; the tokens it took."""
        start = self.position
        if self.peek_type(TokenType.L_PAREN):
            self.group()
        else:
            token = self.next()
            if token.token_type in (TokenType.DASH, TokenType.PLUS, TokenType.INTRODUCER):
                self.next()
            elif self.peek_type(TokenType.L_PAREN):
                self.group()
        return list(self.tokens[start : self.position])

    def rest(self) -> list[Token]:
        rest = list(self.tokens[self.position :])
        self.position = len(self.tokens)
        return rest

    def text(self, tokens: Sequence[Token]) -> str:
        return self.sql[tokens[0].start : tokens[-1].end + 1] if tokens else ""


def _qualified(ddl: Ddl, name: tuple[str | None, str]) -> tuple[str, str]:
    database, table = name
    return database if database is not None else ddl.database, table


def _same_name(a: tuple[str, str], b: tuple[str, str]) -> bool:
    # TiDB compares database and table names case-insensitively (lower-case-table-names = 2).
    return a[0].lower() == b[0].lower() and a[1].lower() == b[1].lower()
