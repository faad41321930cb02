"""A ranked score board (leaderboard.board)."""
