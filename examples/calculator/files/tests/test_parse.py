from calculator.parse import evaluate


def test_precedence():
    assert evaluate("2 + 3 * 4") == 14


def test_parentheses_and_unary_minus():
    assert evaluate("-(2 + 3) * 4 / 8") == -2.5


def test_decimals():
    assert evaluate("0.5 + .25") == 0.75


def test_refuses_what_is_not_arithmetic():
    for text in ["__import__('os')", "2 +", "(1", "1 2", ""]:
        try:
            evaluate(text)
        except ValueError:
            continue
        raise AssertionError(f"evaluate({text!r}) did not raise ValueError")
