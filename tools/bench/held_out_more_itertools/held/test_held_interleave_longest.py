"""Held-out tests for more_itertools.interleave_longest: inputs the visible tests do not use."""
from unittest import TestCase

import more_itertools as mi


class HeldOutInterleaveLongest(TestCase):
    def test_hx_two_uneven_lengths(self):
        self.assertEqual(
            list(mi.interleave_longest([1, 2, 3, 4, 5], 'ab')),
            [1, 'a', 2, 'b', 3, 4, 5],
        )
        self.assertEqual(
            list(mi.interleave_longest('abcd', 'x')), ['a', 'x', 'b', 'c', 'd']
        )

    def test_hx_empty_iterables_skipped(self):
        self.assertEqual(
            list(mi.interleave_longest([], [1, 2], [], [3])), [1, 3, 2]
        )
        self.assertEqual(list(mi.interleave_longest()), [])
        self.assertEqual(list(mi.interleave_longest([], [])), [])

    def test_hx_single_iterable(self):
        self.assertEqual(list(mi.interleave_longest([7, 8, 9])), [7, 8, 9])

    def test_hx_ranges_and_generators(self):
        gen = (c for c in 'XYZW')
        self.assertEqual(
            list(mi.interleave_longest(range(3), gen, range(10, 11))),
            [0, 'X', 10, 1, 'Y', 2, 'Z', 'W'],
        )

    def test_hx_none_values_kept(self):
        self.assertEqual(
            list(mi.interleave_longest([None, None], [0])), [None, 0, None]
        )
