"""What every runner under ``scripts/peers/`` shares: the protocol, the random policy and the timing.

A runner is a module executed by the interpreter of the package it measures (a peer's virtual
environment, or ours), from the repository root; it imports nothing from dynasched_gym unless it
measures us. It is called as ``python -m scripts.peers.run_<package> --instance PATH [--seconds S]
[--repeats R] [--episode-limit L] [--seed N]`` and prints one JSON object on its last stdout line
(see :func:`main`):

- ``package``, ``version``, ``instance`` (the path), ``api`` (what was driven);
- ``import_s``, ``reset_s`` (construct the env and reset it), ``first_step_s``: a cold start;
- ``episode``: the first episode played to its end (or until ``--episode-limit`` seconds) with
  uniformly random valid actions: ``steps``, ``ops`` (operations scheduled), ``seconds``, ``complete``;
- ``steps_per_s`` / ``ops_per_s``: medians over ``--repeats`` timed repeats of >= ``--seconds`` each
  (resets inside the timed loop; ``null`` when ``--repeats 0``); ``repeats``: every repeat;
- ``rss_import_mb``, ``rss_peak_mb``: peak resident set size after the imports and at the end.

A runner that fails prints ``{"error": "..."}`` and exits with status 1, bad arguments included.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any, NoReturn, Protocol

import numpy as np

#: One timed chunk of work: returns (steps taken, operations scheduled).
Chunk = Callable[[], tuple[int, int]]


class UniformPicker:
    """Uniform random indices in ``[0, n)`` from a seeded numpy stream, drawn in blocks (cheap per call)."""

    def __init__(self, seed: int = 0, block: int = 4096) -> None:
        self._rng = np.random.default_rng(seed)
        self._block = block
        self._u = self._rng.random(block)
        self._i = 0

    def __call__(self, n: int) -> int:
        if self._i == self._block:
            self._u = self._rng.random(self._block)
            self._i = 0
        u = self._u[self._i]
        self._i += 1
        return int(u * n)

    def valid(self, mask: np.ndarray) -> int:
        """A uniformly random index where ``mask`` is non-zero."""
        valid = np.flatnonzero(mask)
        return int(valid[self(len(valid))])

    def valid_rows(self, masks: np.ndarray) -> np.ndarray:
        """For each row of ``masks`` (n, k), a uniformly random column where it is non-zero (0 for an empty row)."""
        counts = np.count_nonzero(masks, axis=1)
        target = (self._rng.random(len(counts)) * counts).astype(np.int64)
        return np.argmax(np.cumsum(masks != 0, axis=1) > target[:, None], axis=1)


class Driver(Protocol):
    """One environment played with random valid actions."""

    def reset(self) -> None:
        """Start an episode."""

    def step(self) -> tuple[bool, int, int]:
        """Play on to the next decision and take it: (episode over, steps taken, operations scheduled)."""


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, MiB.

    Linux: ``VmHWM`` of /proc/self/status. ``getrusage``'s ``ru_maxrss`` would do elsewhere, but on
    Linux it starts a child at its parent's peak (kept across fork and exec), so a runner started by a
    big bench process would report the bench's peak.
    """
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024.0 if sys.platform != "darwin" else 2**20)


def timed_rate(chunk: Chunk, seconds: float) -> tuple[float, float]:
    """(steps/s, ops/s) of ``chunk`` called until at least ``seconds`` have passed."""
    steps = ops = 0
    began = time.perf_counter()
    while True:
        s, o = chunk()
        steps += s
        ops += o
        elapsed = time.perf_counter() - began
        if elapsed >= seconds:
            return steps / elapsed, ops / elapsed


def medians(chunk: Chunk, seconds: float, repeats: int) -> dict[str, Any]:
    """Median steps/s and ops/s over ``repeats`` timed repeats (``None`` when ``repeats`` is 0)."""
    runs = [timed_rate(chunk, seconds) for _ in range(repeats)]
    return {"steps_per_s": statistics.median(r[0] for r in runs) if runs else None,
            "ops_per_s": statistics.median(r[1] for r in runs) if runs else None,
            "repeats": [{"steps_per_s": s, "ops_per_s": o} for s, o in runs]}


def play(make: Callable[[], Driver], args: argparse.Namespace, chunk_steps: int = 64) -> dict[str, Any]:
    """The measurements after the imports (the keys of the module docstring but ``import_s``)."""
    out: dict[str, Any] = {"rss_import_mb": peak_rss_mb()}
    began = time.perf_counter()
    driver = make()
    driver.reset()
    out["reset_s"] = time.perf_counter() - began
    began = time.perf_counter()
    done, steps, ops = driver.step()
    out["first_step_s"] = time.perf_counter() - began
    while not done and time.perf_counter() - began < args.episode_limit:
        done, s, o = driver.step()
        steps += s
        ops += o
    out["episode"] = {"steps": steps, "ops": ops, "seconds": time.perf_counter() - began, "complete": done}
    out.update(medians(chunk_of(driver, chunk_steps, done), args.seconds, args.repeats))
    return out


def chunk_of(driver: Driver, steps: int, done: bool = False) -> Chunk:
    """A chunk of ``steps`` driver steps, resetting the driver whenever its episode is over
    (``done``: whether it is over now)."""
    state = [done]

    def chunk() -> tuple[int, int]:
        total = ops = 0
        for _ in range(steps):
            if state[0]:
                driver.reset()
            state[0], s, o = driver.step()
            total += s
            ops += o
        return total, ops

    return chunk


class ArgumentsError(Exception):
    """A bad command line: reported by the protocol (``{"error": ...}``, status 1), not by argparse's usage and 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ArgumentsError(message)


def count(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer >= ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
        return value

    return parse


def duration(text: str) -> float:
    """An argparse ``type``: seconds, finite and >= 0 (with ``nan`` a timed repeat never ended)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text!r}")
    return value


def parser(description: str) -> argparse.ArgumentParser:
    """The runners' common arguments; a bad one raises :class:`ArgumentsError`."""
    p = _Parser(description=description)
    p.add_argument("--instance", required=True, help="instance file or directory, in the package's format")
    p.add_argument("--seconds", type=duration, default=0.5, help="minimum duration of one timed repeat")
    p.add_argument("--repeats", type=count(0), default=3, help="timed repeats (0: only the first episode)")
    p.add_argument("--episode-limit", type=duration, default=60.0, help="stop the first episode after this long")
    p.add_argument("--seed", type=count(0), default=0)
    return p


def emit(payload: dict[str, Any]) -> None:
    """Print the result as the last stdout line."""
    sys.stdout.write("\n" + json.dumps(payload) + "\n")
    sys.stdout.flush()


def main(measure: Callable[[argparse.Namespace], dict[str, Any]], doc: str | None,
         configure: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    """Parse the arguments (described by the first paragraph of the runner's docstring ``doc``, None under
    ``python -OO``; ``configure`` adds the runner's own), run ``measure`` and print its result, or the error and
    exit 1."""
    p = parser((doc or "").split("\n\n")[0].replace("``", ""))  # as dynasched_gym.cli.doc_summary
    if configure is not None:
        configure(p)
    try:
        args = p.parse_args()
    except ArgumentsError as exc:
        emit({"error": f"bad arguments: {exc}"})
        sys.exit(1)
    try:
        result = measure(args)
    except Exception as exc:  # the bench reports any failure of a peer as its reason
        traceback.print_exc()
        emit({"error": f"{type(exc).__name__}: {exc}"})
        sys.exit(1)
    result["instance"] = args.instance
    result["rss_peak_mb"] = peak_rss_mb()
    emit(result)
