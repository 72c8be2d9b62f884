"""Shared fixtures: where the benchmark and reference data live, and a scripted chat server for the LLM tests."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from hypothesis import settings

# CI explores the same examples on every run (a red CI must be reproducible); locally each run
# explores new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# A job that a non-interactive shell starts with & ignores SIGINT, and every process it starts inherits that: the
# Ctrl-C tests (os.kill with SIGINT, here and in the scripts they start) then saw nothing happen and failed or waited
# out their timeouts. The suite runs with Python's own handler, as at a terminal; the scripts it starts get it too.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parents[1]


def pid_running(pid: int) -> bool:
    """Whether process ``pid`` exists. ``Process.exitcode`` and ``is_alive`` can read a pool worker as running
    when the pool's manager thread reaped it at the same moment (their ``waitpid`` then fails, read as "not ended")."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def shared_dir() -> Path:
    """The project's shared/ folder: $DYNASCHED_SHARED, else ../shared beside the checkout."""
    path = Path(os.environ.get("DYNASCHED_SHARED", REPO.parent / "shared"))
    if not (path / "benchmarks" / "bounds.csv").is_file():
        raise RuntimeError(f"shared data not found at {path}; set DYNASCHED_SHARED to the shared/ folder")
    return path


@pytest.fixture(scope="session")
def shared() -> Path:
    """Path of shared/ (benchmarks/, reference/)."""
    return shared_dir()


@pytest.fixture(scope="session")
def reference_dir(shared: Path) -> Path:
    """The reference package's 243-job generated instance directory."""
    return next((shared / "reference" / "dsbx" / "DynaSched-Grid").iterdir())


@pytest.fixture(scope="session", autouse=True)
def sb3_log_folder(tmp_path_factory: pytest.TempPathFactory) -> None:
    """SB3's ``learn`` without ``tensorboard_log`` makes a new empty ``SB3-<time>`` folder in the system's temporary
    folder each time (``$SB3_LOGDIR`` if set): every test run left a few there."""
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3"))


@pytest.fixture
def server():
    """A local Chat Completions server answering from a script (``ChatServer`` in test_llm_client.py)."""
    from test_llm_client import ChatServer

    chat = ChatServer()
    yield chat
    chat.close()
