from rle.codec import decode, encode


def test_encode():
    assert encode("aaabcc") == "3a1b2c"
    assert encode("") == ""
    assert encode("  \n\n") == "2 2\n"


def test_encode_refuses_digits():
    try:
        encode("a1")
    except ValueError:
        return
    raise AssertionError("encode('a1') did not raise ValueError")


def test_decode():
    assert decode("3a1b2c") == "aaabcc"
    assert decode("12x") == "x" * 12
    assert decode("") == ""


def test_decode_refuses_malformed_runs():
    for text in ["a", "3", "3ab", "0a", "2a3"]:
        try:
            decode(text)
        except ValueError:
            continue
        raise AssertionError(f"decode({text!r}) did not raise ValueError")


def test_round_trip():
    for text in ["", "x", "hello   world", "ééé ü", "aaaaaaaaaaaaaaabbbbbbbbbbbbbbbbbbbbbb"]:
        assert decode(encode(text)) == text
