"""Split bracket-list source text such as ``[1, [2, 3], []]`` into tokens."""

from __future__ import annotations

from dataclasses import dataclass

PUNCTUATION = {"[": "LBRACKET", "]": "RBRACKET", ",": "COMMA"}


@dataclass(frozen=True)
class Token:
    """One token: its kind, its text and where it starts (for error messages)."""

    kind: str
    text: str
    line: int
    column: int


class LexError(ValueError):
    """A character that starts no token; the message names the line and column."""


def tokenize(source: str) -> list[Token]:
    """Return the tokens of ``source``; whitespace separates tokens and is dropped.

    Integers may be negative (``-12``); anything else that is not punctuation or
    whitespace raises :class:`LexError`.
    """
    tokens: list[Token] = []
    line, column, i = 1, 1, 0
    while i < len(source):
        ch = source[i]
        if ch == "\n":
            line, column, i = line + 1, 1, i + 1
            continue
        if ch.isspace():
            column, i = column + 1, i + 1
            continue
        if ch in PUNCTUATION:
            tokens.append(Token(PUNCTUATION[ch], ch, line, column))
            column, i = column + 1, i + 1
            continue
        if ch.isdigit() or (ch == "-" and i + 1 < len(source) and source[i + 1].isdigit()):
            start = i
            i += 1
            while i < len(source) and source[i].isdigit():
                i += 1
            tokens.append(Token("INT", source[start:i], line, column))
            column += i - start
            continue
        raise LexError(f"line {line}, column {column}: unexpected character {ch!r}")
    tokens.append(Token("EOF", "", line, column))
    return tokens


def describe(tokens: list[Token]) -> str:
    """A one-line rendering of ``tokens`` for debugging: ``LBRACKET INT(1) COMMA ...``."""
    parts = []
    for token in tokens:
        parts.append(f"{token.kind}({token.text})" if token.kind == "INT" else token.kind)
    return " ".join(parts)
