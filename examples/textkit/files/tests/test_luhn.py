from luhn.digits import checksum, is_valid


def test_checksum():
    assert checksum("7992739871") == 3
    assert checksum("453931950343646") == 7
    assert checksum("0") == 0


def test_checksum_refuses_what_is_not_digits():
    for text in ["", "12a4", "12 34", "١٢٣"]:
        try:
            checksum(text)
        except ValueError:
            continue
        raise AssertionError(f"checksum({text!r}) did not raise ValueError")


def test_is_valid():
    assert is_valid("79927398713")
    assert is_valid("4539 3195 0343 6467")
    assert not is_valid("79927398710")
    assert not is_valid("4539 3195 0343 6468")


def test_is_valid_refuses_what_is_not_a_number():
    for text in ["", "0", " 0 ", "7992739871x", "7992-7398-713"]:
        assert not is_valid(text), text
