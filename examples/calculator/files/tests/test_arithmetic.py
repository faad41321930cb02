from calculator.arithmetic import add, divide, multiply, subtract


def test_add():
    assert add(2, 3) == 5
    assert add(-1.5, 1.5) == 0


def test_subtract():
    assert subtract(2, 3) == -1


def test_multiply():
    assert multiply(4, 2.5) == 10


def test_divide():
    assert divide(7, 2) == 3.5


def test_divide_by_zero():
    try:
        divide(1, 0)
    except ZeroDivisionError:
        return
    raise AssertionError("divide(1, 0) did not raise")
