"""The Luhn checksum: luhn.digits computes check digits and validates numbers."""
