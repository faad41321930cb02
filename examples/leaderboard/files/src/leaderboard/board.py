"""Scores kept in order by sortedcontainers.SortedList: insertion and rank in O(log n)."""

from sortedcontainers import SortedList


def top(scores: list[int], n: int) -> list[int]:
    """The n highest scores, highest first."""
    ordered = SortedList(scores)
    return list(reversed(ordered[-n:])) if n > 0 else []


def rank(scores: list[int], score: int) -> int:
    """1 + how many scores are strictly higher than `score`."""
    ordered = SortedList(scores)
    return len(ordered) - ordered.bisect_right(score) + 1
