"""Run-length encoding: rle.codec encodes text as count-character runs and decodes it."""
