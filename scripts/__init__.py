"""Entry points (run from the repository root): evaluate, leaderboard, train, calibrate and the benchmarks."""
