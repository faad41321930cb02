"""Run-length encoding of text: "aaabcc" <-> "3a1b2c". A run is a decimal count followed by
one character, so the text encoded may hold any character but the ASCII digits 0-9."""

import itertools
import re

_DIGITS = frozenset("0123456789")
_RUN = re.compile(r"([0-9]+)([^0-9])")


def encode(text: str) -> str:
    if any(char in _DIGITS for char in text):
        raise ValueError("text holding the digits 0-9 cannot be run-length encoded here")
    return "".join(f"{len(list(run))}{char}" for char, run in itertools.groupby(text))


def decode(encoded: str) -> str:
    parts = []
    position = 0
    while position < len(encoded):
        match = _RUN.match(encoded, position)
        if match is None:
            raise ValueError(f"malformed run at offset {position}")
        count = int(match.group(1))
        if count == 0:
            raise ValueError(f"a run of zero at offset {position}")
        parts.append(match.group(2) * count)
        position = match.end()
    return "".join(parts)
