import math

from temperature.convert import c_to_f, f_to_c


def test_c_to_f():
    assert c_to_f(0) == 32
    assert c_to_f(100) == 212
    assert c_to_f(-40) == -40
    assert math.isclose(c_to_f(37), 98.6)
    assert math.isclose(c_to_f(-273.15), -459.67)


def test_f_to_c():
    assert f_to_c(32) == 0
    assert f_to_c(212) == 100
    assert f_to_c(-40) == -40
    assert math.isclose(f_to_c(98.6), 37)
    assert math.isclose(f_to_c(-459.67), -273.15)


def test_round_trip():
    for celsius in [-273.15, -40, 0, 21.5, 100, 1000]:
        assert math.isclose(f_to_c(c_to_f(celsius)), celsius, abs_tol=1e-9)


def test_below_absolute_zero():
    for convert, value in [(c_to_f, -273.16), (f_to_c, -459.68)]:
        try:
            convert(value)
        except ValueError:
            continue
        raise AssertionError(f"{convert.__name__}({value}) did not raise ValueError")
