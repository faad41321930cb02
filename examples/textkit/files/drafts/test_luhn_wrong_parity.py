from luhn.digits import checksum, is_valid


def test_checksum():
    assert checksum("7992739871") == 4
    assert checksum("453931950343646") == 2
    assert checksum("0") == 0


def test_checksum_refuses_what_is_not_digits():
    for text in ["", "12a4", "12 34"]:
        try:
            checksum(text)
        except ValueError:
            continue
        raise AssertionError(f"checksum({text!r}) did not raise ValueError")


def test_is_valid():
    assert is_valid("79927398714")
    assert not is_valid("79927398713")


def test_is_valid_refuses_what_is_not_a_number():
    for text in ["", "0", "7992739871x"]:
        assert not is_valid(text), text
