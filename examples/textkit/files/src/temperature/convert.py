"""Converts temperatures between degrees Celsius and degrees Fahrenheit. A temperature
below absolute zero is refused with ValueError."""

ABSOLUTE_ZERO_C = -273.15
ABSOLUTE_ZERO_F = -459.67


def c_to_f(celsius: float) -> float:
    if celsius < ABSOLUTE_ZERO_C:
        raise ValueError(f"{celsius} degrees C is below absolute zero")
    return celsius * 9 / 5 + 32


def f_to_c(fahrenheit: float) -> float:
    if fahrenheit < ABSOLUTE_ZERO_F:
        raise ValueError(f"{fahrenheit} degrees F is below absolute zero")
    return (fahrenheit - 32) * 5 / 9
