"""Parse the tokens of :mod:`lexer` into nested Python lists of ints."""

from __future__ import annotations

from lexer import Token, tokenize


class ParseError(ValueError):
    """Tokens that do not form a list; the message names the line and column."""


class Parser:
    """A recursive-descent parser over a token list (one token of lookahead)."""

    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    @property
    def current(self) -> Token:
        """The token under the cursor."""
        return self.tokens[self.pos]

    def expect(self, kind: str) -> Token:
        """Consume the current token if it is ``kind``; otherwise raise ParseError."""
        token = self.current
        if token.kind != kind:
            raise ParseError(f"line {token.line}, column {token.column}: expected {kind}, got {token.kind}")
        self.pos += 1
        return token

    def parse_value(self) -> int | list:
        """value := INT | list"""
        if self.current.kind == "INT":
            return int(self.expect("INT").text)
        return self.parse_list()

    def parse_list(self) -> list:
        """list := '[' (value (',' value)*)? ']'

        Each nested list is parsed by a recursive call and appended as one
        element, so ``[[1], 2]`` gives ``[[1], 2]`` and never ``[1, 2]``.
        """
        self.expect("LBRACKET")
        out: list = []
        if self.current.kind == "RBRACKET":
            self.pos += 1
            return out
        while True:
            out.append(self.parse_value())
            if self.current.kind == "COMMA":
                self.pos += 1
                continue
            self.expect("RBRACKET")
            return out


def parse(source: str) -> list:
    """Parse a whole document: exactly one list, then the end of the input."""
    parser = Parser(tokenize(source))
    value = parser.parse_list()
    parser.expect("EOF")
    return value


def depth(value: int | list) -> int:
    """Nesting depth: 0 for an int, 1 for a flat list, 1 + the deepest element otherwise."""
    if isinstance(value, int):
        return 0
    return 1 + max((depth(v) for v in value), default=0)
