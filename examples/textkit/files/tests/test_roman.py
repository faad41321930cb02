from roman.numerals import from_roman, to_roman


def test_to_roman_known_values():
    assert to_roman(1) == "I"
    assert to_roman(4) == "IV"
    assert to_roman(9) == "IX"
    assert to_roman(14) == "XIV"
    assert to_roman(1994) == "MCMXCIV"
    assert to_roman(3999) == "MMMCMXCIX"


def test_to_roman_refuses_out_of_range():
    for number in [0, -1, 4000]:
        try:
            to_roman(number)
        except ValueError:
            continue
        raise AssertionError(f"to_roman({number}) did not raise ValueError")
    try:
        to_roman(True)
    except TypeError:
        return
    raise AssertionError("to_roman(True) did not raise TypeError")


def test_from_roman_known_values():
    assert from_roman("XLII") == 42
    assert from_roman("MCMXCIV") == 1994


def test_from_roman_refuses_what_is_not_canonical():
    for text in ["", "IIII", "IC", "VX", "MMMM", "iv", "XIV ", "ABC"]:
        try:
            from_roman(text)
        except ValueError:
            continue
        raise AssertionError(f"from_roman({text!r}) did not raise ValueError")


def test_round_trip():
    for number in range(1, 4000):
        assert from_roman(to_roman(number)) == number
