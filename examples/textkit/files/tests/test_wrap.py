from wrap.lines import fill, wrap


def test_wrap_greedy():
    assert wrap("The quick brown fox jumps over the lazy dog", 10) == [
        "The quick", "brown fox", "jumps over", "the lazy", "dog"]


def test_wrap_collapses_whitespace():
    assert wrap("  one \n two\tthree  ", 80) == ["one two three"]
    assert wrap("", 5) == []
    assert wrap("   ", 5) == []


def test_wrap_cuts_long_words():
    assert wrap("ab abcdefgh c", 3) == ["ab", "abc", "def", "gh", "c"]


def test_wrap_lines_fit():
    text = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor"
    for width in range(1, 30):
        lines = wrap(text, width)
        assert all(1 <= len(line) <= width for line in lines)
        assert "".join(lines).replace(" ", "") == text.replace(" ", "")


def test_wrap_refuses_a_width_below_one():
    try:
        wrap("text", 0)
    except ValueError:
        return
    raise AssertionError("wrap('text', 0) did not raise ValueError")


def test_fill():
    assert fill("The quick brown fox", 10) == "The quick\nbrown fox"
    assert fill("", 10) == ""
