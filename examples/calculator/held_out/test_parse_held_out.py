"""Held-out tests of calculator.parse.evaluate: sealed beside the ledger while the build runs
(the executor never reads them) and revealed in the ledger when it ends."""

from calculator.parse import evaluate


def test_left_associative():
    assert evaluate("10 - 4 - 3") == 3
    assert evaluate("64 / 4 / 2") == 8


def test_precedence_without_spaces():
    assert evaluate("1+2*3-4/2") == 5


def test_nested_parentheses():
    assert evaluate("2 * (3 + (4 - 1))") == 12


def test_unary_minus_on_both_sides():
    assert evaluate("-3 * -2") == 6


def test_division_is_true_division():
    assert evaluate("7 / 2") == 3.5
