"""Converts integers from 1 to 3999 to Roman numerals and back. from_roman accepts only
the canonical, upper-case form that to_roman writes ("IV", never "IIII" or "iv")."""

_NUMERALS: tuple[tuple[int, str], ...] = (
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
)
_VALUES: dict[str, int] = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(number: int) -> str:
    if isinstance(number, bool) or not isinstance(number, int):
        raise TypeError(f"expected an int, got {type(number).__name__}")
    if not 1 <= number <= 3999:
        raise ValueError(f"{number} is outside 1..3999")
    parts = []
    for value, numeral in _NUMERALS:
        count, number = divmod(number, value)
        parts.append(numeral * count)
    return "".join(parts)


def from_roman(numeral: str) -> int:
    if not numeral or any(char not in _VALUES for char in numeral):
        raise ValueError(f"{numeral!r} is not a Roman numeral")
    total = 0
    for position, char in enumerate(numeral):
        value = _VALUES[char]
        following = _VALUES[numeral[position + 1]] if position + 1 < len(numeral) else 0
        total += -value if following > value else value
    if not 1 <= total <= 3999 or to_roman(total) != numeral:
        raise ValueError(f"{numeral!r} is not a canonical Roman numeral")
    return total
