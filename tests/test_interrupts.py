"""Ctrl-C and SIGTERM end a script with status 130 and a message, no traceback (scripts/interrupts.py)."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import pid_running

from scripts.interrupts import INTERRUPTED, WorkerPool, interrupted_exit, interrupts_held, sigterm_as_interrupt

REPO = Path(__file__).resolve().parents[1]


def test_sigterm_in_the_block_exits_130_with_the_note_and_restores_the_handler(
        capsys: pytest.CaptureFixture[str]) -> None:
    before = signal.getsignal(signal.SIGTERM)
    finished = []
    with pytest.raises(SystemExit) as exit_info, interrupted_exit("the rows so far are kept"):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises here at the latest
        finally:
            finished.append(True)  # what SIGTERM's default action would skip
    assert exit_info.value.code == INTERRUPTED == 130 and finished
    assert capsys.readouterr().err == "\ninterrupted: the rows so far are kept\n"
    assert signal.getsignal(signal.SIGTERM) is before


def test_an_interrupt_that_carries_its_own_message_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit), interrupted_exit("generic note"):
        raise KeyboardInterrupt("interrupted: 5 episode(s) are stored; rerun to resume")
    assert capsys.readouterr().err == "\ninterrupted: 5 episode(s) are stored; rerun to resume\n"


def test_no_note_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit), interrupted_exit():
        raise KeyboardInterrupt
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_held_back_by_a_block_comes_as_it_ends(signum: int) -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    done = []
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        with interrupts_held():
            os.kill(os.getpid(), signum)
            time.sleep(0.05)  # where the handler would have raised
            done.append("the rest of the block")
        done.append("after the block")
    assert done == ["the rest of the block"]
    assert {s: signal.getsignal(s) for s in before} == before


def test_a_held_back_signal_meets_the_handler_it_would_have_met() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a job started with & by a script
    try:
        with interrupts_held():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    finally:
        signal.signal(signal.SIGINT, previous)


def test_an_argparse_script_stops_on_sigterm_without_a_traceback(tmp_path: Path) -> None:
    """validate_ssi keeps its rows as they come; SIGTERM ends it with 130 and says so."""
    rows = tmp_path / "ssi" / "rows.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "scripts.validate_ssi", "--instances", "40", "--out",
                             str(tmp_path / "ssi")], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "DYNASCHED_CACHE": str(tmp_path / "cache")})
    try:
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline and not (rows.exists() and rows.stat().st_size):
            time.sleep(0.005)
        proc.send_signal(signal.SIGTERM)
        err = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-3000:]
    assert "interrupted: the rows computed so far are kept" in err and "Traceback" not in err
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_the_command_line_stops_on_sigterm_removing_the_file_it_was_writing(tmp_path: Path) -> None:
    """dynasched-gym died at once on SIGTERM (its default action), leaving the atomic write's ``.tmp`` file; it now
    stops as on Ctrl-C: status 130, "interrupted", nothing written."""
    out = tmp_path / "schedule.json"
    code = ("import os, pathlib, signal, sys, time\nfrom dynasched_gym import cli\n"
            "def killed_while_writing(self, *args, **kwargs):\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n    time.sleep(30)\n"
            "pathlib.Path.write_text = killed_while_writing\n"
            f"sys.exit(cli.main(['rollout', 'mk01', '--out', {str(out)!r}]))\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, (proc.returncode, proc.stderr[-3000:])
    assert proc.stderr.strip().endswith("interrupted") and "Traceback" not in proc.stderr
    assert list(tmp_path.iterdir()) == []


# buffered: the pipe breaks at main's flush, not at a print
@pytest.mark.parametrize("unbuffered", ["1", ""], ids=["unbuffered", "buffered"])
def test_the_command_line_stops_quietly_when_the_reader_of_its_output_is_gone(tmp_path: Path, unbuffered: str) -> None:
    """``dynasched-gym rollout mk01 --out s.json | head -3`` printed "error: [Errno 32] Broken pipe", status 2, and
    (stdout unbuffered) had not written s.json yet: now nothing on stderr, status 141 (SIGPIPE's), the file
    written."""
    out = tmp_path / "schedule.json"
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        proc = subprocess.run([sys.executable, "-m", "dynasched_gym", "rollout", "mk01", "--out", str(out)], cwd=REPO,
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "PYTHONUNBUFFERED": unbuffered})
    finally:
        os.close(write)
    assert proc.returncode == 141 and proc.stderr == "", (proc.returncode, proc.stderr[-3000:])
    assert json.loads(out.read_text())["format"] == "dynasched-schedule/1"


def test_worker_pool_workers_ignore_ctrl_c_and_an_interrupt_ends_them() -> None:
    """Ctrl-C reaches the workers too; the main process alone handles it, and leaving the pool's block by it ends the
    workers at once (they would not stop by themselves any more, and the pool waited for every task submitted)."""
    began = time.monotonic()
    with pytest.raises(KeyboardInterrupt), WorkerPool(2) as pool:
        assert pool.submit(signal.getsignal, signal.SIGINT).result(timeout=120) == signal.SIG_IGN
        queued = [pool.submit(time.sleep, 60) for _ in range(8)]
        workers = list(pool._processes.values())
        raise KeyboardInterrupt
    deadline = time.monotonic() + 10
    while not queued[-1].done() and time.monotonic() < deadline:  # the pool's manager thread settles it
        time.sleep(0.01)
    assert queued[-1].cancelled()  # cancelled, not failed with the broken pool (2 run, 3 wait in its call queue)
    for worker in workers:
        worker.join(10)
        assert worker.exitcode is not None or not pid_running(worker.pid)
    assert time.monotonic() - began < 60


def test_a_signal_sent_twice_while_held_back_comes_once() -> None:
    """As a blocked signal is pending once, however often it was sent: a handler that does not raise runs once."""
    calls = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: calls.append(signum))
    try:
        with interrupts_held(signal.SIGUSR1):
            for _ in range(2):
                os.kill(os.getpid(), signal.SIGUSR1)
                time.sleep(0.02)  # each one reaches the holding handler
        assert calls == [signal.SIGUSR1]
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_outside_the_main_thread_the_blocks_run_unchanged() -> None:
    """Python sets signal handlers in the main thread only: elsewhere (a worker thread) the blocks neither hold nor
    turn SIGTERM into an interrupt, and do not fail."""
    done = []

    def work() -> None:
        with sigterm_as_interrupt(), interrupts_held():
            done.append(True)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(10)
    assert done == [True]


def test_a_ctrl_c_while_a_task_is_submitted_comes_once_it_is_queued(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another thread may take the process's SIGINT (the main thread's is blocked meanwhile); its interrupt is held
    back until the task is queued, so the caller knows which tasks the pool holds."""
    queued, stop = [], threading.Event()
    helper = threading.Thread(target=stop.wait)  # started before the block: SIGINT is not blocked in it
    helper.start()

    def submit(self: ProcessPoolExecutor, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        signal.pthread_kill(helper.ident, signal.SIGINT)
        time.sleep(0.05)  # the main thread's handler would raise here
        queued.append(fn)
        return Future()

    monkeypatch.setattr(ProcessPoolExecutor, "submit", submit)
    try:
        with pytest.raises(KeyboardInterrupt):
            WorkerPool(1).submit(print)
    finally:
        stop.set()
        helper.join(10)
    assert queued == [print]


def test_worker_pool_spawns_workers_that_run_its_initializer_with_ctrl_c_unblocked() -> None:
    """Spawned (forking a process with threads may deadlock it), then the pool's own initializer, and SIGINT no longer
    blocked (only ignored: a task may handle it again)."""
    with WorkerPool(1, initializer=signal.signal, initargs=(signal.SIGUSR1, signal.SIG_IGN)) as pool:
        assert pool._mp_context.get_start_method() == "spawn"
        assert pool.submit(signal.getsignal, signal.SIGUSR1).result(timeout=120) == signal.SIG_IGN
        assert signal.SIGINT not in pool.submit(signal.pthread_sigmask, signal.SIG_BLOCK, []).result(timeout=120)


def test_forked_workers_end_at_sigterm_whatever_handler_they_inherited() -> None:
    """A forked worker inherits the parent's SIGTERM handler (one that raises KeyboardInterrupt): it takes SIGTERM's
    default action back, so that ``terminate()`` ends it at once."""
    with sigterm_as_interrupt(), WorkerPool(1, mp_context=multiprocessing.get_context("fork")) as pool:
        assert pool.submit(signal.getsignal, signal.SIGTERM).result(timeout=60) == signal.SIG_DFL


#: Ctrl-C inside code that exec() runs from a string, as when it lands while a dataclass or a namedtuple is made (an
#: import, a Hydra config): CPython marks that KeyboardInterrupt unhandled even where it is caught.
_CTRL_C_IN_EXEC = "exec('os.kill(os.getpid(), signal.SIGINT)\\nfor _ in range(9): pass')"


@pytest.mark.parametrize(("module", "err"), [
    ("import os, signal\nfrom scripts.interrupts import interrupted_exit\nwith interrupted_exit('kept'):\n"
     f"    {_CTRL_C_IN_EXEC}\n", "\ninterrupted: kept\n"),
    ("import os, signal, sys\nfrom dynasched_gym import cli\n"
     f"cli.resolve_instance = lambda name: {_CTRL_C_IN_EXEC}\nsys.exit(cli.main(['rollout', 'mk01']))\n",
     "\ninterrupted\n"),
], ids=["script", "command-line"])
def test_ctrl_c_caught_after_it_left_exec_code_still_exits_130(tmp_path: Path, module: str, err: str) -> None:
    """Run with ``python -m`` (as the scripts and ``python -m dynasched_gym`` are), such an interrupt made the process
    print its message and then die by SIGINT at exit (status -2), whatever ``sys.exit`` asked for."""
    (tmp_path / "ctrl_c_in_exec.py").write_text(module)
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", "ctrl_c_in_exec"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert (proc.returncode, proc.stderr) == (130, err)


def test_ctrl_c_before_a_scripts_handling_begins_prints_one_line(tmp_path: Path) -> None:
    """Ctrl-C in a script's first second (its imports, Hydra's start-up) printed a traceback of wherever the import
    was (numpy's, omegaconf's): one line now, and the interrupt's exit status."""
    (tmp_path / "early_ctrl_c.py").write_text("import os, signal\nimport scripts\nos.kill(os.getpid(), signal.SIGINT)\n"
                                              "import time\ntime.sleep(30)\n")
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-m", "early_ctrl_c"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert (proc.returncode, proc.stderr) in {(-signal.SIGINT, "\ninterrupted\n"), (INTERRUPTED, "\ninterrupted\n")}
    failing = subprocess.run([sys.executable, "-c", "import scripts\nraise ValueError('kept')"], capture_output=True,
                             text=True, timeout=120, env={**os.environ, "PYTHONPATH": path})
    assert failing.returncode == 1 and "Traceback" in failing.stderr and "ValueError: kept" in failing.stderr
