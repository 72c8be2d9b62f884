"""Sweeps through the Hydra Ray launcher against a real local Ray head on 127.0.0.1 (started and stopped here).

Every Hydra job of the sweep runs as a Ray task in a Ray worker process and appends its rows to one
store; overlapping jobs must still leave every key exactly once.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dynasched_gym.results import row_key

REPO = Path(__file__).resolve().parents[1]
RULES = 9

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(importlib.util.find_spec("ray") is None,
                       reason="ray is not installed (pip install 'dynasched-gym[dev]')"),
    pytest.mark.skipif(importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is None,
                       reason="hydra-ray-launcher is not installed (pip install 'dynasched-gym[dev]')"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ray() -> str:
    return str(Path(sys.executable).with_name("ray"))


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pools")


@pytest.fixture(scope="module")
def ray_head(pools: Path) -> Iterator[str]:
    """A Ray head on 127.0.0.1 (2 CPUs) in its own session: ``ray start --block``, stopped by SIGTERM to that process
    (which stops the processes it started), then SIGKILL to its process group if anything is left."""
    port = _free_port()
    temp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must stay under 108 bytes
    env = {**os.environ, "DYNASCHED_CACHE": str(pools), "RAY_USAGE_STATS_ENABLED": "0"}
    head = subprocess.Popen([_ray(), "start", "--head", "--block", "--node-ip-address", "127.0.0.1",
                             "--port", str(port), "--num-cpus", "2", "--include-dashboard", "false",
                             "--disable-usage-stats", "--temp-dir", temp],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while subprocess.run([_ray(), "status", "--address", address], capture_output=True, timeout=60).returncode:
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the Ray head did not start on {address} (exit code {head.poll()})")
            time.sleep(0.5)
        yield address
    finally:
        head.send_signal(signal.SIGTERM)
        try:
            head.wait(60)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(head.pid, signal.SIGKILL)  # our own session: only what this head started
        except ProcessLookupError:
            pass
        head.wait(10)
        shutil.rmtree(temp, ignore_errors=True)


def test_ray_launcher_sweep_stores_every_row_once(ray_head: str, pools: Path, tmp_path: Path) -> None:
    store = tmp_path / "store.jsonl"
    # 4 jobs, 2 at a time, each in a fresh Ray worker process (max_calls=1); (easy, 2) and (easy, 3) overlap on
    # 2 seeds, as do the medium ones
    result = subprocess.run(
        [sys.executable, "-m", "scripts.evaluate", "-m", "launcher=ray", "tiers=easy,medium", "seeds.count=2,3",
         "agent=rules", "ppo=null", "progress=false", f"store={store}", f"hydra.sweep.dir={tmp_path / 'sweep'}",
         "+hydra.launcher.ray.remote.max_calls=1"],
        cwd=REPO, env={**os.environ, "DYNASCHED_CACHE": str(pools), "RAY_ADDRESS": ray_head, "RAY_DEDUP_LOGS": "0"},
        capture_output=True, text=True, timeout=420)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    assert "Connected to Ray cluster" in result.stdout + result.stderr  # the head started here, not a new one
    rows = [json.loads(line) for line in store.read_text().splitlines()]
    assert len(rows) == len({row_key(r) for r in rows}) == 2 * 3 * RULES  # every key, exactly once
    assert {r["tier"] for r in rows} == {"easy", "medium"} and all(r["status"] == "ok" for r in rows)
    workers = {r["pid"] for r in rows}  # Ray task processes (their output is prefixed "(_run_job pid=...)")
    assert len(workers) >= 2, result.stdout + result.stderr  # easy and medium rows come from different jobs
    assert all(f"_run_job pid={pid})" in result.stdout + result.stderr for pid in workers)
