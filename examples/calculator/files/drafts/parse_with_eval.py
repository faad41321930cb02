"""Evaluates arithmetic expressions such as "2 + 3 * 4"."""


def evaluate(expr: str) -> float:
    return float(eval(expr))
