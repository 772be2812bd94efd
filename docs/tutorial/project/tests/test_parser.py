"""Tests of the bracket-list parser."""

import pytest

from lexer import LexError, tokenize
from parser import ParseError, depth, parse


def test_flat_list():
    assert parse("[1, 2, 3]") == [1, 2, 3]


def test_nested_lists():
    assert parse("[1, [2, 3], [[4]]]") == [1, [2, 3], [[4]]]


def test_empty_list():
    assert parse("[]") == []


def test_negative_numbers():
    assert parse("[-1, [-22]]") == [-1, [-22]]


def test_whitespace_and_newlines():
    assert parse("[\n  1,\n  [2]\n]") == [1, [2]]


def test_depth():
    assert depth(parse("[1, [2, [3]]]")) == 3
    assert depth(parse("[]")) == 1


def test_unclosed_list_names_the_position():
    with pytest.raises(ParseError, match="line 1, column 8: expected RBRACKET, got EOF"):
        parse("[1, [2]")


def test_trailing_garbage():
    with pytest.raises(ParseError, match="expected EOF"):
        parse("[1] [2]")


def test_bad_character():
    with pytest.raises(LexError, match="unexpected character 'x'"):
        tokenize("[1, x]")
