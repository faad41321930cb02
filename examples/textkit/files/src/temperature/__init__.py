"""Temperatures: temperature.convert converts between degrees Celsius and Fahrenheit."""
