from slug.slugify import slugify


def test_words_are_lowered_and_joined():
    assert slugify("Hello, World!") == "hello-world"
    assert slugify("Version 2.0 released") == "version-2-0-released"


def test_accents_fold_to_ascii():
    assert slugify("  Crème Brûlée  ") == "creme-brulee"


def test_runs_of_punctuation_collapse():
    assert slugify("a -- b __ c") == "a-b-c"
    assert slugify("!!!") == ""
    assert slugify("") == ""


def test_separator():
    assert slugify("Hello, World!", separator="_") == "hello_world"
    try:
        slugify("Hello", separator="")
    except ValueError:
        return
    raise AssertionError("slugify with an empty separator did not raise ValueError")
