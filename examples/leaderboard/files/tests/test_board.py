from leaderboard.board import rank, top


def test_top():
    assert top([5, 1, 9, 7], 2) == [9, 7]
    assert top([5, 1], 5) == [5, 1]
    assert top([3], 0) == []


def test_rank():
    assert rank([5, 1, 9, 7], 9) == 1
    assert rank([5, 1, 9, 7], 6) == 3
    assert rank([], 4) == 1
