"""Turns text such as a title into a URL slug: accents folded to ASCII, lower case, every
run of characters other than letters and digits collapsed into one separator."""

import re
import unicodedata

_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def slugify(text: str, separator: str = "-") -> str:
    if not separator:
        raise ValueError("the separator must not be empty")
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    words = _NOT_ALNUM.split(folded.lower())
    return separator.join(word for word in words if word)
