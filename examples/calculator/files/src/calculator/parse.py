"""Evaluates arithmetic expressions such as "2 + 3 * 4" without eval, by a tokenizer
and a recursive-descent parser over numbers, + - * /, unary minus and parentheses,
so an expression can compute but never run code."""

import re
from collections.abc import Callable

from calculator.arithmetic import add, divide, multiply, subtract

_TOKEN = re.compile(r"\s+|\d+(?:\.\d*)?|\.\d+|[-+*/()]")
_OPERATIONS: dict[str, Callable[[float, float], float]] = {"+": add, "-": subtract, "*": multiply, "/": divide}


def _tokenize(expr: str) -> list[str]:
    tokens = []
    position = 0
    while position < len(expr):
        match = _TOKEN.match(expr, position)
        if match is None:
            raise ValueError(f"unexpected character {expr[position]!r} at offset {position}")
        if not match.group().isspace():
            tokens.append(match.group())
        position = match.end()
    return tokens


class _Parser:
    def __init__(self, tokens: list[str]) -> None:
        self._tokens = tokens
        self._next = 0

    def peek(self) -> str | None:
        return self._tokens[self._next] if self._next < len(self._tokens) else None

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ValueError("unexpected end of expression")
        self._next += 1
        return token

    def expression(self) -> float:  # term (("+" | "-") term)*
        value = self.term()
        while self.peek() in ("+", "-"):
            value = _OPERATIONS[self.take()](value, self.term())
        return value

    def term(self) -> float:  # factor (("*" | "/") factor)*
        value = self.factor()
        while self.peek() in ("*", "/"):
            value = _OPERATIONS[self.take()](value, self.factor())
        return value

    def factor(self) -> float:  # ("-" | "+") factor | number | "(" expression ")"
        token = self.take()
        if token in ("-", "+"):
            value = self.factor()
            return -value if token == "-" else value
        if token == "(":
            value = self.expression()
            if self.take() != ")":
                raise ValueError("expected )")
            return value
        if token[0].isdigit() or token[0] == ".":
            return float(token)
        raise ValueError(f"unexpected {token!r}")


def evaluate(expr: str) -> float:
    parser = _Parser(_tokenize(expr))
    value = parser.expression()
    if parser.peek() is not None:
        raise ValueError(f"unexpected {parser.peek()!r} after the expression")
    return value
