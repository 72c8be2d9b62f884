"""Entry points: benchmarks now; train, evaluate and leaderboard as they land."""
