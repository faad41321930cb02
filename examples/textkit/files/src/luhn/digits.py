"""The Luhn (mod 10) checksum of card and account numbers. checksum gives the digit to
append to a payload; is_valid checks a full number, whose last digit is that check digit."""


def _digits(number: str) -> list[int]:
    if not number or not number.isascii() or not number.isdigit():
        raise ValueError(f"{number!r} is not a non-empty string of digits 0-9")
    return [int(char) for char in number]


def checksum(payload: str) -> int:
    total = 0
    # Counted from the right, the payload's last digit sits next to the check digit to be
    # appended, so it is the first one doubled.
    for position, digit in enumerate(reversed(_digits(payload))):
        if position % 2 == 0:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return (10 - total % 10) % 10


def is_valid(number: str) -> bool:
    compact = number.replace(" ", "")
    if len(compact) < 2 or not compact.isascii() or not compact.isdigit():
        return False
    return checksum(compact[:-1]) == int(compact[-1])
