"""Roman numerals: roman.numerals converts between integers 1-3999 and canonical numerals."""
