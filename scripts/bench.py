"""Performance: our simulator and environments side by side with the peers, cold start, memory.

One run measures, on the same instances (``ta01``; ``mk10``; ``dsbx-medium``, the reference
package's 243-job sample; the seed-``pool_seed`` members of the ``pool_tier`` pools of the medium and
the large size preset, ``tier-medium`` and ``tier-large``), these sections (``only``):

- ``kernel``: whole episodes under a jitted dispatching rule inside numba (reset included), decisions/s;
- ``env``: the single env (``DFJSP-v0``, the env class as the peers' are driven, and through
  ``gym.make``), ``step`` with uniformly random valid actions, steps/s;
- ``vector``: the vector env (``gym.make_vec(..., vectorization_mode="vector_entry_point")``,
  next-step autoreset), random valid actions in every sub-environment, transitions/s at ``num_envs``,
  and at the largest of them also with ``parallel=True`` (the sub-envs on numba's threads, key
  ``"<N> parallel"``);
- ``wrappers``: the training env of ``python -m scripts.train`` on a 64-instance pool (16 sub-environments drawing
  from the medium/small tier pool, weighted tardiness; training draws from 1000), random valid actions,
  transitions/s bare, with the hindsight forecast reward (``EDD:EET``), with the rollout forecast features
  (``EDD:EET, ATC:LWL``) and with both; each as a ratio to the bare env of the same run (the wrappers' cost);
- ``ppo``: the shipped PPO of the ``PPO_TIER`` tier on the first ``PPO_SEEDS`` test episodes of its small pool, played
  as ``scripts.evaluate`` plays them (one torch thread), by ``PPOAgent`` and by the same policy through sb3-contrib's
  ``MaskablePPO.predict`` (the schedules must be the same), ms per episode of each and their ratio;
- ``sesc``: SESC calibration of one instance of the medium and of the large size preset, seconds;
- ``scaling``: in-kernel episodes (as ``kernel``) of uncalibrated instances of the large preset with
  ``scale.num_jobs`` 250, 1000 and 4000 (x4 steps) at a utilisation target of 0.2 (queues stay short) and 0.8,
  microseconds per decision and its ratio to the next smaller instance's: about 1 when an episode's cost grows
  with its decisions only, about 4 when every decision walks every job of the instance; and the same for whole
  episodes of the single env (``DFJSP-v0`` class, :data:`SCALING_ENV`) taking action 0 (the longest-waiting pair),
  microseconds per ``step``; and at the lowest utilisation target, the lookahead agent's (:data:`SCALING_LOOKAHEAD`)
  microseconds per decision in that env;
- ``cold``: a fresh process imports, makes the env on ta01, resets it and takes the first step,
  with an empty and with a warm numba cache (``$NUMBA_CACHE_DIR`` pointed at a temporary directory);
- ``memory``: peak RSS of a fresh process that plays one episode in one env, and one in each of the
  ``memory_envs`` sub-environments of a vector env; absolute and minus the peak after the imports;
- ``peers`` (needs ``peer_python``, a virtual environment with the peers installed, see
  ``make peers``): JSSEnv, job-shop-lib and dsbx 0.4.0 on the same instances, each in a subprocess of
  that interpreter timing itself (``scripts/peers/``), with their import, first reset/step and memory.
  Instances are converted with our readers and writers; one a peer cannot express, and any failure,
  is reported with its reason instead of a number.

A step schedules one operation in our envs (a decision), but not always in the peers' (JSSEnv's no-op
waits), so operations scheduled per second are reported beside steps per second. Rates are medians
of ``repeats`` timed repeats of at least ``seconds`` each, after a warm-up (numba compile or cache
load excluded; the cold section measures it). Ratios (ours / peer) and the issue's targets use only
figures of this run. Tables print as Markdown; everything goes to ``out`` as JSON (written
atomically at the end, or on Ctrl-C with ``"partial": true``).

Usage (Hydra, conf/bench.yaml): ``python -m scripts.bench [quick=true] [only=[kernel,env,...]]
[instances=[ta01,...]] [peer_python=.peers/venv/bin/python] [out=.bench/bench.json]``
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numba
import numpy as np
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig
from tqdm import tqdm

from dynasched_gym import data, load_instance
from dynasched_gym.checks import check_bool, check_choice, check_choices, check_integer, check_positive, named_items
from dynasched_gym.core import Simulator
from dynasched_gym.core.rules import parse_rule, run_episodes
from dynasched_gym.envs.wrappers import ForecastFeaturesVector, ForecastRewardVector
from dynasched_gym.generation import Scenario, calibrate, generate
from dynasched_gym.generation.scenario import replace_targets
from dynasched_gym.generation.stress_index import TIERS
from dynasched_gym.generation.tiers import tier_pool
from dynasched_gym.instance import Instance, write_text_atomic
from dynasched_gym.io import dsbx_dir
from dynasched_gym.schedule import Schedule
from scripts.interrupts import interrupted_exit
from scripts.overrides import (
    check_added_keys,
    checked_main,
    output_file,
    remove_empty_run_folder,
    setting_errors_exit,
    settings_checked,
)
from scripts.peers._common import chunk_of, medians
from scripts.peers.run_dynasched import ENV_ID, EnvDriver, VectorDriver

FORMAT = "dynasched-bench/1"
ROOT = Path(__file__).resolve().parents[1]
SECTIONS = ("kernel", "env", "vector", "wrappers", "ppo", "sesc", "scaling", "cold", "memory", "peers")
#: The sections that measure each of ``instances``.
INSTANCE_SECTIONS = ("kernel", "env", "vector", "memory", "peers")
EMBEDDED = ("ta01", "mk10", "dsbx-medium")
TIER_SIZES = {"tier-medium": "medium", "tier-large": "large"}
INSTANCES = (*EMBEDDED, *TIER_SIZES)
SESC_SIZES = ("medium", "large")
SCALING_JOBS = (250, 1000, 4000)  # the large preset's scale.num_jobs
SCALING_UTILIZATIONS = (0.2, 0.8)
#: The ``scaling`` section's env: the training objective (conf/env/dfjsp.yaml), at the level whose step walks the most
#: (the utilisation reads the segments and downtimes so far).
SCALING_ENV = {"objective": "weighted_tardiness", "observability": "full"}
#: The ``scaling`` section's lookahead agent, played in that env at the lowest utilisation target only (at 0.8
#: hundreds of jobs wait at once, and one 4826-job episode takes minutes).
SCALING_LOOKAHEAD = {"top_k": 4, "horizon": 20}
COLD_INSTANCE = "ta01"
#: The ``wrappers`` section's env: scripts.train's defaults (conf/env/dfjsp.yaml), on 64 pool seeds.
WRAPPED_ENV = {"num_envs": 16, "tier": "medium", "size": "small", "objective": "weighted_tardiness", "pool_size": 64}
WRAPPED_RULES = {"forecast reward": "EDD:EET", "forecast features": ("EDD:EET", "ATC:LWL")}
#: The ``ppo`` section's episodes: the shipped checkpoint of this tier on these seeds of its small pool (``quick``: the
#: first 2), weighted tardiness, each reset with its seed, as ``scripts.evaluate`` plays them.
PPO_TIER, PPO_SEEDS = "hard", range(10_000, 10_010)


@dataclasses.dataclass(frozen=True)
class Peer:
    """A peer package: its runner module and the instance format it reads."""

    name: str
    runner: str  # module under scripts/peers, run by the peer interpreter
    writer: Callable[[str, Instance, Path], Path]  # (our instance key, instance, directory) -> its input path
    full_episode: bool = False  # too slow for timed repeats: the rate is that of one whole episode


def write_orlib(key: str, instance: Instance, directory: Path) -> Path:
    """``instance`` as OR-library (Taillard "standard") JSSP text; raises ValueError when it is no plain JSSP."""
    problems = []
    if instance.events:
        problems.append(f"{len(instance.events)} dynamic events")
    if np.any(instance.job_release != 0) or not np.all(np.isnan(instance.job_due)):
        problems.append("release or due dates")
    if np.any(instance.machine_speed != 1):
        problems.append("machine speeds")
    machines = list(range(instance.num_machines))
    if np.any(np.diff(instance.op_elig_ptr) != 1):
        problems.append("operations eligible on several machines (flexible)")
    elif any(sorted(instance.elig_machine[instance.job_op_ptr[j]:instance.job_op_ptr[j + 1]]) != machines
             for j in range(instance.num_jobs)):  # one eligible machine per operation: pair index = operation
        problems.append("jobs that do not visit every machine once")
    if np.any(instance.elig_time != np.round(instance.elig_time)):
        problems.append("non-integer processing times")
    if problems:
        raise ValueError(f"not a plain JSSP ({'; '.join(problems)})")
    lines = [f"{instance.num_jobs} {instance.num_machines}"]
    for j in range(instance.num_jobs):
        ops_j = range(instance.job_op_ptr[j], instance.job_op_ptr[j + 1])
        lines.append(" ".join(f"{instance.elig_machine[o]} {int(instance.elig_time[o])}" for o in ops_j))
    path = directory / f"{key}.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_dsbx(key: str, instance: Instance, directory: Path) -> Path:
    """``instance`` as a dsbx instance directory (the embedded sample is its own original directory).

    dsbx routes jobs through machine groups; when every operation has one eligible machine (a JSSP)
    and the groups do not fit, each machine becomes its own group: the same instance under other
    group labels. Anything else dsbx cannot express raises ValueError (``InstanceFormatError``).
    """
    if key == "dsbx-medium":
        return data.path("dsbx-medium")
    target = directory / f"{key}-dsbx"
    try:
        return dsbx_dir.save(instance, target)
    except ValueError:
        if np.any(np.diff(instance.op_elig_ptr) != 1):
            raise
        return dsbx_dir.save(dataclasses.replace(instance, machine_groups=instance.machine_names), target)


PEERS = (
    Peer("JSSEnv", "run_jssenv", write_orlib),
    Peer("job-shop-lib", "run_job_shop_lib", write_orlib),
    Peer("dsbx", "run_dsbx", write_dsbx, full_episode=True),
)


# --------------------------------------------------------------------------- measurements
def kernel_rate(sim: Simulator, rule: str, seconds: float) -> float:
    """Decisions per second of whole in-kernel episodes under ``rule``."""
    job_rule, machine_rule = parse_rule(rule)
    episodes = 1
    while True:  # grow the batch until one call lasts long enough to time reliably
        began = time.perf_counter()
        decisions = run_episodes(sim.static, sim.state, job_rule, machine_rule, episodes)
        elapsed = time.perf_counter() - began
        if elapsed >= seconds:
            return decisions / elapsed
        episodes *= 2 if elapsed < seconds / 4 else 1 + int(seconds / max(elapsed, 1e-9))


def bench_kernel(instance: Instance, args: argparse.Namespace) -> dict[str, Any]:
    """In-kernel rule rollouts on ``instance``: median decisions/s."""
    sim = Simulator(instance)
    sim.reset()
    kernel_rate(sim, args.rule, 0.01)  # warm-up
    rates = [kernel_rate(sim, args.rule, args.seconds) for _ in range(args.repeats)]
    return {"rule": args.rule, "decisions_per_s": statistics.median(rates), "repeats": rates}


def bench_env(instance: Instance, args: argparse.Namespace) -> dict[str, Any]:
    """The single env on ``instance``, as a class and through ``gym.make``: median steps/s and ops/s."""
    made = gym.make(ENV_ID, instance=instance)
    out = {}
    for key, env in (("class", made.unwrapped), ("gym_make", made)):
        driver = EnvDriver(env, args.seed)
        driver.reset()
        chunk = chunk_of(driver, 64)
        chunk()  # warm-up
        out[key] = medians(chunk, args.seconds, args.repeats)
    return out


def bench_vector(instance: Instance, args: argparse.Namespace) -> dict[str, Any]:
    """The vector env on ``instance`` at each ``num_envs``: median transitions/s and ops/s."""
    out = {}
    largest = max(args.num_envs)
    for n, parallel in [(n, False) for n in args.num_envs] + [(largest, True)]:
        driver = VectorDriver(gym.make_vec(ENV_ID, num_envs=n, vectorization_mode="vector_entry_point",
                                           instance=instance, parallel=parallel), args.seed)
        driver.reset()
        chunk = chunk_of(driver, max(1, 512 // n))
        chunk()  # warm-up
        out[f"{n} parallel" if parallel else str(n)] = medians(chunk, args.seconds, args.repeats)
    return out


def bench_wrappers(args: argparse.Namespace) -> dict[str, Any]:
    """The training env (:data:`WRAPPED_ENV`) bare and with each forecast wrapper: median transitions/s, and the
    ratio to the bare env's."""
    reward, features = WRAPPED_RULES["forecast reward"], WRAPPED_RULES["forecast features"]
    wrappings: dict[str, Callable[[Any], Any]] = {
        "bare": lambda venv: venv,
        "forecast reward": lambda venv: ForecastRewardVector(venv, reward, hindsight=True),
        "forecast features": lambda venv: ForecastFeaturesVector(venv, features),
        "both": lambda venv: ForecastRewardVector(ForecastFeaturesVector(venv, features), reward, hindsight=True),
    }
    tier_pool(WRAPPED_ENV["tier"], WRAPPED_ENV["size"]).prepare(range(WRAPPED_ENV["pool_size"]), progress=False)
    out: dict[str, Any] = {}  # the pool built first: on a cold cache the bare env's repeats would generate it
    for name, wrap in wrappings.items():
        driver = VectorDriver(wrap(gym.make_vec(ENV_ID, vectorization_mode="vector_entry_point", **WRAPPED_ENV)),
                              args.seed)
        driver.reset()
        chunk = chunk_of(driver, 32)
        chunk()  # warm-up
        out[name] = medians(chunk, args.seconds, args.repeats)
        out[name]["ratio_to_bare"] = out[name]["steps_per_s"] / out["bare"]["steps_per_s"]
    return out


def bench_ppo(args: argparse.Namespace) -> dict[str, Any]:
    """The shipped PPO on the :data:`PPO_SEEDS` episodes, by ``PPOAgent`` and by the same policy through
    ``MaskablePPO.predict`` (how ``PPOAgent`` played up to 2026-12), repeats alternating between the two after an
    untimed warm-up: median wall and CPU (this process's) ms per episode, decisions per episode, and the ratios
    (predict / agent; CPU time is the steadier one beside other jobs). A schedule that differs between the two is a
    RuntimeError: the figure compares the same decisions."""
    import torch

    from dynasched_gym.agents import run_episode
    from dynasched_gym.agents.ppo import PPOAgent, shipped_checkpoint

    class PredictPPO(PPOAgent):
        def _predict(self, observation: dict[str, np.ndarray], action_masks: np.ndarray,
                     streams: list[Any]) -> np.ndarray:
            return self.model.predict(observation, deterministic=True, action_masks=action_masks)[0]

    seeds = PPO_SEEDS[:2] if args.quick else PPO_SEEDS
    pool = tier_pool(PPO_TIER, "small")
    instances = [pool.instance(seed) for seed in seeds]
    players = {"agent": PPOAgent(shipped_checkpoint(PPO_TIER)), "sb3 predict": PredictPPO(shipped_checkpoint(PPO_TIER))}

    def play(agent: PPOAgent) -> tuple[float, float, list[Schedule]]:
        began, cpu = time.perf_counter(), time.process_time()
        schedules = [run_episode(agent, gym.make(ENV_ID, instance=inst, tier=PPO_TIER, size="small",
                                                 objective="weighted_tardiness", invalid_action="raise",
                                                 **agent.env_settings()), seed=seed)
                     for inst, seed in zip(instances, seeds)]
        return (time.perf_counter() - began) / len(seeds), (time.process_time() - cpu) / len(seeds), schedules

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as scripts.evaluate plays (the small policy is fastest so)
    try:
        played = {name: play(agent)[2] for name, agent in players.items()}
        if [s.to_json() for s in played["agent"]] != [s.to_json() for s in played["sb3 predict"]]:
            raise RuntimeError("PPOAgent and MaskablePPO.predict played other schedules on the ppo section's episodes")
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in players}
        for repeat in range(args.repeats):
            for name in players if repeat % 2 == 0 else reversed(players):
                times[name].append(tuple(seconds * 1e3 for seconds in play(players[name])[:2]))
    finally:
        torch.set_num_threads(threads)
    ms = {name: statistics.median(wall for wall, _ in t) for name, t in times.items()}
    cpu_ms = {name: statistics.median(cpu for _, cpu in t) for name, t in times.items()}
    return {"tier": PPO_TIER, "size": "small", "seeds": [seeds.start, seeds.stop - 1],
            "decisions_per_episode": statistics.mean(s.decisions for s in played["agent"]),
            "ms_per_episode": ms, "cpu_ms_per_episode": cpu_ms, "repeats_ms": times,
            "ratio": ms["sb3 predict"] / ms["agent"], "cpu_ratio": cpu_ms["sb3 predict"] / cpu_ms["agent"]}


def bench_sesc(size: str, args: argparse.Namespace) -> dict[str, Any]:
    """SESC calibration of one instance of the ``size`` preset, ``repeats`` seeds: median seconds."""
    scenario = Scenario.preset(size)
    calibrate(scenario, method="sesc", seed=0)  # warm-up (numba, caches)
    runs = [calibrate(scenario, method="sesc", seed=seed) for seed in range(args.repeats)]
    return {"seconds": statistics.median(r.seconds for r in runs), "repeats": [r.seconds for r in runs],
            "converged": sum(r.converged for r in runs), "runs": len(runs),
            "jobs": statistics.median(r.instance.num_jobs for r in runs)}


def env_episode_rate(env: Any, seconds: float) -> float:
    """Steps per second of whole episodes of ``env`` taking action 0 (resets not timed), at least ``seconds`` long."""
    steps, elapsed = 0, 0.0
    while elapsed < seconds:
        env.reset(seed=0)
        began = time.perf_counter()
        terminated = False
        while not terminated:
            terminated = env.step(0)[2]
            steps += 1
        elapsed += time.perf_counter() - began
    return steps / elapsed


def bench_scaling(num_jobs: int, utilization: float, args: argparse.Namespace) -> dict[str, Any]:
    """:func:`bench_kernel` on the large preset's uncalibrated seed-0 instance of ``num_jobs`` and ``utilization``,
    and the single env's median steps/s (:func:`env_episode_rate`, :data:`SCALING_ENV`)."""
    scenario = Scenario.preset("large")
    scenario = dataclasses.replace(scenario, scale=dataclasses.replace(scenario.scale, num_jobs=num_jobs))
    instance = generate(replace_targets(scenario, utilization=utilization), 0)
    result = bench_kernel(instance, args)
    env = gym.make(ENV_ID, instance=instance, **SCALING_ENV).unwrapped
    env.reset(seed=0)
    env.step(0)  # warm-up
    rates = [env_episode_rate(env, args.seconds) for _ in range(args.repeats)]
    steps_per_s = statistics.median(rates)
    result = {**result, "jobs": instance.num_jobs, "us_per_decision": 1e6 / result["decisions_per_s"],
              "env": {**SCALING_ENV, "steps_per_s": steps_per_s, "repeats": rates, "us_per_step": 1e6 / steps_per_s}}
    if utilization == min(SCALING_UTILIZATIONS):
        result["lookahead"] = lookahead_cost(env, args.repeats)
    return result


def lookahead_cost(env: Any, repeats: int) -> dict[str, Any]:
    """Median µs per decision of whole episodes of the lookahead agent (:data:`SCALING_LOOKAHEAD`) in ``env`` (seed
    0), after an untimed one (numba's loading)."""
    from dynasched_gym.agents import make, run_episode

    agent = make("lookahead", **SCALING_LOOKAHEAD)
    run_episode(agent, env, seed=0)
    costs = []
    for _ in range(repeats):
        began = time.perf_counter()
        decisions = run_episode(agent, env, seed=0).decisions
        costs.append(1e6 * (time.perf_counter() - began) / decisions)
    return {**SCALING_LOOKAHEAD, "us_per_decision": statistics.median(costs), "repeats": costs}


def run_runner(python: str, runner: str, instance: Path, options: Sequence[str], timeout: float,
               env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run ``scripts/peers/<runner>`` under ``python`` from the repository root; its JSON, or ``{"error": reason}``.

    ``wall_s`` is the process's wall time as seen from here (interpreter start-up included).
    """
    command = [python, "-m", f"scripts.peers.{runner}", "--instance", str(instance), *options]
    began = time.perf_counter()
    try:
        proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    except OSError as exc:
        return {"error": f"cannot run {python!r}: {exc}"}
    wall = time.perf_counter() - began
    lines = proc.stdout.strip().splitlines()
    try:
        result = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        result = None
    if not isinstance(result, dict):
        tail = (proc.stderr.strip() or proc.stdout.strip()).splitlines()[-1:] or ["no output"]
        return {"error": f"exit status {proc.returncode}: {tail[0][:300]}"}
    result["wall_s"] = wall
    return result


def our_runner(instance: Path, options: Sequence[str], timeout: float, cache: str | None = None) -> dict[str, Any]:
    """Our runner in a fresh process of this interpreter, with numba's cache in ``cache`` (default: the user's)."""
    env = None if cache is None else {**os.environ, "NUMBA_CACHE_DIR": cache}
    return run_runner(sys.executable, "run_dynasched", instance, options, timeout, env)


def bench_cold(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Fresh processes: the first with an empty numba cache, then warm ones (``quick``: the user's cache
    throughout, so nothing compiles from scratch and there is no empty-cache figure)."""
    options = ["--repeats", "0", "--episode-limit", "0"]
    with tempfile.TemporaryDirectory(prefix="numba-cache-") as tmp:
        cache = None if args.quick else tmp
        first = our_runner(path, options, args.timeout, cache)
        warm = [our_runner(path, options, args.timeout, cache) for _ in range(args.repeats)]
    failed = [r for r in (first, *warm) if "error" in r]
    if failed:
        return {"error": failed[0]["error"]}
    figures = [cold_figures(r) for r in warm]
    return {"empty": {"skipped": "quick"} if args.quick else cold_figures(first),
            "warm": {key: statistics.median(f[key] for f in figures) for key in figures[0]},
            "warm_repeats": figures}


def cold_figures(result: dict[str, Any]) -> dict[str, float]:
    """A runner's cold start: import, make + reset, first step, their sum, and the process's wall time."""
    parts = {key: result[key] for key in ("import_s", "reset_s", "first_step_s")}
    return {**parts, "total_s": sum(parts.values()), "process_s": result["wall_s"]}


def bench_memory(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Fresh processes playing one env, then a vector env of ``memory_envs``, for one episode each."""
    out: dict[str, Any] = {}
    n = args.memory_envs
    for size in dict.fromkeys((1, n)):  # once when n is 1
        r = our_runner(path, ["--repeats", "0", "--num-envs", str(size), "--episode-limit", str(args.episode_limit)],
                       args.timeout)
        out[str(size)] = memory_figures(r, size)
    if n > 1 and "error" not in out["1"] and "error" not in out[str(n)]:
        out["per_extra_env_mb"] = (out[str(n)]["delta_mb"] - out["1"]["delta_mb"]) / (n - 1)
    return out


def memory_figures(result: dict[str, Any], num_envs: int = 1) -> dict[str, Any]:
    """Peak RSS (MiB): absolute, after the imports, their difference, and that per env."""
    if "error" in result:
        return {"error": result["error"]}
    delta = result["rss_peak_mb"] - result["rss_import_mb"]
    return {"peak_mb": result["rss_peak_mb"], "import_mb": result["rss_import_mb"], "delta_mb": delta,
            "per_env_mb": delta / num_envs, "episode_complete": result["episode"]["complete"]}


def bench_peer(peer: Peer, key: str, instance: Instance, directory: Path, args: argparse.Namespace) -> dict[str, Any]:
    """One peer on one instance: its runner's result, or ``{"error": reason}``."""
    try:
        path = peer.writer(key, instance, directory)
    except ValueError as exc:
        return {"error": f"cannot express the instance: {exc}"}
    repeats = 0 if peer.full_episode else args.repeats
    options = ["--repeats", str(repeats), "--seconds", str(args.seconds), "--episode-limit", str(args.episode_limit),
               "--seed", str(args.seed)]
    result = run_runner(args.peer_python, peer.runner, path, options, args.timeout)
    if "error" in result:
        return result
    if result["steps_per_s"] is None:  # one whole episode is the measurement
        episode = result["episode"]
        result["steps_per_s"] = episode["steps"] / episode["seconds"]
        result["ops_per_s"] = episode["ops"] / episode["seconds"]
        result["rate_from"] = "first episode" + ("" if episode["complete"] else " (cut at --episode-limit)")
    result["memory"] = memory_figures(result)
    result["cold"] = cold_figures(result)
    return result


# ----------------------------------------------------------------------------- ratios
def ratios(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Ours / peer for every figure both sides have, from ``results`` alone (this run)."""
    rows = []
    ours = results["ours"]
    for peer, per_instance in results.get("peers", {}).items():
        for key, theirs in per_instance.items():
            if "error" in theirs:
                continue
            pairs = []
            if key in ours.get("env", {}):
                env = ours["env"][key]["class"]
                pairs += [("env steps/s", env["steps_per_s"], theirs["steps_per_s"]),
                          ("env ops/s", env["ops_per_s"], theirs["ops_per_s"])]
            for n, vec in ours.get("vector", {}).get(key, {}).items():
                pairs.append((f"vector N={n} transitions/s vs peer steps/s", vec["steps_per_s"],
                              theirs["steps_per_s"]))
            if key in ours.get("kernel", {}):
                pairs.append(("in-kernel decisions/s vs peer steps/s", ours["kernel"][key]["decisions_per_s"],
                              theirs["steps_per_s"]))
            rows += [{"peer": peer, "instance": key, "figure": figure, "ours": a, "peer_value": b, "ratio": a / b}
                     for figure, a, b in pairs if a and b]
    return rows


#: The issue's ratio targets: (name, figure of :func:`ratios`, instance, peer, lower bound).
TARGETS = (
    ("single env >= 5x JSSEnv", "env steps/s", "ta01", "JSSEnv", 5.0),
    ("vector env N=256 >= 60x JSSEnv's single env", "vector N=256 transitions/s vs peer steps/s", "ta01", "JSSEnv",
     60.0),
    ("vector env N=256 >= 60x JSSEnv's single env (parallel=True)",
     "vector N=256 parallel transitions/s vs peer steps/s", "ta01", "JSSEnv", 60.0),
    ("in-kernel rollouts >= 300x JSSEnv", "in-kernel decisions/s vs peer steps/s", "ta01", "JSSEnv", 300.0),
    ("in-kernel rollouts >= 10,000x dsbx", "in-kernel decisions/s vs peer steps/s", "dsbx-medium", "dsbx", 1e4),
)


def targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Each target of the issue with the value of this run (``None`` when not measured) and whether it is met."""
    rows = []
    by_figure = {(r["figure"], r["instance"], r["peer"]): r["ratio"] for r in results.get("ratios", [])}
    for name, figure, key, peer, bound in TARGETS:
        rows.append({"target": name, "value": by_figure.get((figure, key, peer)), "bound": bound, "kind": "ratio"})
    ours = results["ours"]
    large = ours.get("sesc", {}).get("large", {}).get("seconds")
    rows.append({"target": "SESC on the large preset <= 0.2 s", "value": large, "bound": 0.2, "kind": "seconds"})
    warm = ours.get("cold", {}).get("warm", {}).get("process_s")
    rows.append({"target": "cold start, warm cache <= 3 s (process)", "value": warm, "bound": 3.0, "kind": "seconds"})
    single = [m["1"]["delta_mb"] for m in ours.get("memory", {}).values() if "delta_mb" in m.get("1", {})]
    rows.append({"target": "memory <= 50 MB per single env (worst instance; 50 MB = 47.7 MiB)",
                 "value": max(single) if single else None, "bound": 50e6 / 2**20, "kind": "MiB"})
    for row in rows:
        value = row["value"]
        row["met"] = None if value is None else (value >= row["bound"] if row["kind"] == "ratio"
                                                 else value <= row["bound"])
    return rows


# ----------------------------------------------------------------------------- report
def _si(x: float | None) -> str:
    if x is None:
        return "–"
    for div, suffix in ((1e6, " M"), (1e3, " k")):
        if abs(x) >= div:
            return f"{x / div:.3g}{suffix}"
    return f"{x:.3g}"


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def report(results: dict[str, Any]) -> str:
    """The Markdown tables of ``results`` (each section that has figures)."""
    parts = [table(results) for table in (_instances_table, _ours_table, _peers_table, _ratios_table,
                                          _wrappers_table, _ppo_table, _sesc_table, _scaling_table, _cold_table,
                                          _memory_table, _targets_table)]
    return "\n\n".join(p for p in parts if p)


def _instances_table(results: dict[str, Any]) -> str:
    return _table(["instance", "name", "jobs", "machines", "ops", "events", "decisions (SPT)"],
                  [[k, m["name"], m["jobs"], m["machines"], m["ops"], m["events"], m["decisions"]]
                   for k, m in results["instances"].items()]) if results["instances"] else ""


def _ours_table(results: dict[str, Any]) -> str:
    ours, sizes = results["ours"], [str(n) for n in results["settings"]["num_envs"]]
    sizes.append(f"{max(results['settings']['num_envs'])} parallel")
    rows = []
    for key in results["instances"]:
        env, vec = ours.get("env", {}).get(key), ours.get("vector", {}).get(key, {})
        rows.append([key, _si(ours.get("kernel", {}).get(key, {}).get("decisions_per_s")),
                     *([_si(env["class"]["steps_per_s"]), _si(env["gym_make"]["steps_per_s"])] if env else ["–", "–"]),
                     *[f"{_si(vec[n]['steps_per_s'])} / {_si(vec[n]['ops_per_s'])}" if n in vec else "–"
                       for n in sizes]])
    if not any(c != "–" for r in rows for c in r[1:]):
        return ""
    return ("Ours. Single env: one operation per step (ops/s = steps/s); vector env: transitions/s / operations/s "
            "(autoreset transitions schedule nothing):\n\n" + _table(
                ["instance", "in-kernel decisions/s", "env steps/s (class)", "env steps/s (gym.make)",
                 *[f"vector N={n}" for n in sizes]], rows))


def _peers_table(results: dict[str, Any]) -> str:
    rows = []
    for peer, per_instance in results.get("peers", {}).items():
        for key, r in per_instance.items():
            if "error" in r:
                rows.append([peer, key, "n/a", "n/a", "–", "–", "–", "–", r["error"]])
            else:
                rows.append([peer, key, _si(r["steps_per_s"]), _si(r["ops_per_s"]), f"{r['cold']['total_s']:.2f}",
                             f"{r['memory']['import_mb']:.0f}", f"{r['memory']['peak_mb']:.0f}", r.get("version", "?"),
                             r.get("rate_from", f"median of {len(r['repeats'])}")])
    return "Peers (each in its own process, timing itself; cold start = import + construct + reset + first step; " \
           "RSS in MiB):\n\n" + _table(["peer", "instance", "steps/s", "ops/s", "cold start s", "RSS after import",
                                        "peak RSS", "version", "note"], rows) if rows else ""


def _ratios_table(results: dict[str, Any]) -> str:
    """The headline ratios (the JSON has every vector size)."""
    largest = f"vector N={max(results['settings']['num_envs'])} "
    shown = [r for r in results.get("ratios", []) if not r["figure"].startswith("vector")
             or r["figure"].startswith(largest)]
    rows = [[r["peer"], r["instance"], r["figure"], _si(r["ours"]), _si(r["peer_value"]), f"{r['ratio']:,.1f}x"]
            for r in shown]
    return "Ratios, ours / peer (this run):\n\n" + _table(["peer", "instance", "figure", "ours", "peer", "ratio"],
                                                          rows) if rows else ""


def _wrappers_table(results: dict[str, Any]) -> str:
    wrapped = results["ours"].get("wrappers")
    settings = ", ".join(f"{k}={v}" for k, v in WRAPPED_ENV.items())
    return (f"The training env ({settings}) and its forecast wrappers ({WRAPPED_RULES}), transitions/s:\n\n"
            + _table(["env", "transitions/s", "/ bare"], [[name, _si(r["steps_per_s"]), f"{r['ratio_to_bare']:.2f}"]
                                                          for name, r in wrapped.items()])) if wrapped else ""


def _ppo_table(results: dict[str, Any]) -> str:
    ppo = results["ours"].get("ppo")
    if not ppo:
        return ""
    rows = [[label, f"{ppo['ms_per_episode'][key]:.1f}", f"{ppo['cpu_ms_per_episode'][key]:.1f}",
             _si(ppo["decisions_per_episode"] / ppo["ms_per_episode"][key] * 1e3)]
            for key, label in (("agent", "PPOAgent"), ("sb3 predict", "MaskablePPO.predict, same policy"))]
    rows.append(["predict / agent", f"{ppo['ratio']:.2f}", f"{ppo['cpu_ratio']:.2f}", ""])
    return (f"The shipped {ppo['tier']} PPO on {ppo['tier']}/{ppo['size']} pool seeds {ppo['seeds'][0]}.."
            f"{ppo['seeds'][1]} ({ppo['decisions_per_episode']:.0f} decisions per episode, one torch thread):\n\n"
            + _table(["player", "ms / episode", "CPU ms / episode", "decisions/s"], rows))


def _sesc_table(results: dict[str, Any]) -> str:
    sesc = results["ours"].get("sesc")
    return "SESC calibration of one instance of the size preset (draft, calibration, build):\n\n" + _table(
        ["preset", "median s", "converged", "jobs"],
        [[size, f"{r['seconds']:.3f}", f"{r['converged']}/{r['runs']}", f"{r['jobs']:.0f}"]
         for size, r in sesc.items()]) if sesc else ""


def _scaling_table(results: dict[str, Any]) -> str:
    scaling = results["ours"].get("scaling")
    if not scaling:
        return ""
    rows = []
    for utilization, by_jobs in scaling.items():
        previous = None
        for r in by_jobs.values():
            now = (r["us_per_decision"], r["env"]["us_per_step"], r.get("lookahead", {}).get("us_per_decision"))
            row = [utilization, r["jobs"]]
            for i, cost in enumerate(now):
                last = None if previous is None else previous[i]
                row += ["-", "-"] if cost is None else [f"{cost:.2f}", "" if last is None else f"{cost / last:.2f}"]
            rows.append(row)
            previous = now
    rule = results["settings"]["rule"]
    env = ", ".join(f"{key}={value}" for key, value in SCALING_ENV.items())
    lookahead = ", ".join(f"{key}={value}" for key, value in SCALING_LOOKAHEAD.items())
    return (f"Episodes of growing instances (large preset, uncalibrated, seed 0): in-kernel {rule}, the env ({env}) "
            f"taking action 0, and the lookahead ({lookahead}) in that env:\n\n" + _table(
                ["utilisation target", "jobs", "kernel us per decision", "ratio to the smaller (x4 jobs)",
                 "env us per step", "env ratio to the smaller", "lookahead us per decision",
                 "lookahead ratio to the smaller"], rows))


def _cold_table(results: dict[str, Any]) -> str:
    cold = results["ours"].get("cold")
    if not cold:
        return ""
    if "error" in cold:
        return f"Cold start: failed: {cold['error']}"
    keys = ("import_s", "reset_s", "first_step_s", "total_s", "process_s")
    runs = (("empty", cold["empty"]), ("warm", cold["warm"]))
    return f"Cold start on {COLD_INSTANCE}, seconds (import: gymnasium and the env module):\n\n" + _table(
        ["numba cache", "import", "gym.make + reset", "first step", "sum", "process wall"],
        [[label, *(f"{c[k]:.2f}" for k in keys)] for label, c in runs if "skipped" not in c])


def _memory_table(results: dict[str, Any]) -> str:
    memory = results["ours"].get("memory")
    if not memory:
        return ""
    n = str(results["settings"]["memory_envs"])
    rows = []
    for key, m in memory.items():
        one, many = m["1"], m[n]
        if "error" in one or "error" in many:
            rows.append([key, *["n/a"] * 6, one.get("error") or many.get("error")])
            continue
        marginal = m.get("per_extra_env_mb")  # none when --memory-envs is 1
        rows.append([key, f"{one['import_mb']:.0f}", f"{one['peak_mb']:.0f}", f"{one['delta_mb']:.0f}",
                     f"{many['peak_mb']:.0f}", f"{many['delta_mb']:.0f}",
                     "–" if marginal is None else f"{marginal:.2f}", ""])
    return ("Memory, MiB (peak RSS of a fresh process playing one episode; delta = peak - peak after the imports; "
            f"marginal = ({n}-env delta - 1-env delta) / {int(n) - 1}):\n\n" + _table(
                ["instance", "after imports", "1 env peak", "1 env delta", f"{n} envs peak", f"{n} envs delta",
                 "marginal per env", "error"], rows))


def _targets_table(results: dict[str, Any]) -> str:
    def value(t: dict[str, Any]) -> str:
        if t["value"] is None:
            return "–"
        return f"{t['value']:,.1f}x" if t["kind"] == "ratio" else f"{t['value']:.3g} {t['kind']}"

    return "Targets:\n\n" + _table(
        ["target", "this run", "met"],
        [[t["target"], value(t), {True: "yes", False: "**no**", None: "not measured"}[t["met"]]]
         for t in results["targets"]]) if results.get("targets") else ""


# ------------------------------------------------------------------------------- main
def machine() -> dict[str, Any]:
    """Where the run happened."""
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "platform": platform.platform(),
            "python": platform.python_version(), "numba": numba.__version__, "numpy": np.__version__,
            "gymnasium": gym.__version__, "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None}


def load_instances(keys: Sequence[str], args: argparse.Namespace) -> dict[str, Instance]:
    """The instances by key: embedded ones, or the tier pools' members (generated and cached on first use)."""
    out = {}
    for key in keys:
        if key in TIER_SIZES:
            out[key] = tier_pool(args.pool_tier, TIER_SIZES[key]).instance(args.pool_seed)
        else:
            out[key] = load_instance(data.path(key))
    return out


def peer_executable(value: Any) -> str:
    """The setting ``peer_python``: the absolute path of an executable file, a relative path taken from the launch
    directory as ``out`` (the repository root, where the scripts run) and a bare name looked up on ``$PATH``. A value
    that is none is a ValueError naming the setting: it made every peer's figure ``cannot run ...``, found only once
    every other section had been measured."""
    if isinstance(value, bool) or not isinstance(value, (str, int, os.PathLike)) or not str(value):
        raise TypeError(f"peer_python must be the path of a python, got {type(value).__name__}: {value!r:.80}")
    text = str(value)
    if os.sep not in text:
        found = shutil.which(text)
        where = "not found on $PATH"
    else:
        from hydra.utils import to_absolute_path

        path = Path(to_absolute_path(text))
        found = str(path) if path.is_file() and os.access(path, os.X_OK) else None
        where = "not an executable file" if path.exists() else "no such file"
    if found is None:
        raise ValueError(f"peer_python={text}: {where} (make peers builds .peers/venv/bin/python)")
    return found


@settings_checked()
def settings(cfg: DictConfig) -> argparse.Namespace:
    """The settings of ``cfg`` (conf/bench.yaml) checked, each error naming its key, with the ``quick`` defaults
    filled in and ``sections``, what ``only`` selects."""
    quick = check_bool("quick", cfg.quick)
    args = argparse.Namespace(
        quick=quick, only=None if cfg.only is None else check_choices("only", cfg.only, SECTIONS),
        instances=check_choices("instances", cfg.instances, INSTANCES),
        repeats=1 if quick else 5, seconds=0.05 if quick else 0.5, num_envs=[1, 16] if quick else [1, 16, 64, 256],
        memory_envs=check_integer("memory_envs", cfg.memory_envs, 1), rule=str(cfg.rule),
        pool_tier=cfg.pool_tier, pool_seed=check_integer("pool_seed", cfg.pool_seed, 0),
        seed=check_integer("seed", cfg.seed, 0),
        peer_python=None if cfg.peer_python is None else peer_executable(cfg.peer_python),
        episode_limit=cfg.episode_limit, timeout=cfg.timeout, out=str(output_file("out", cfg.out)))
    if cfg.repeats is not None:
        args.repeats = check_integer("repeats", cfg.repeats, 1)
    if cfg.seconds is not None:
        check_positive("seconds", cfg.seconds)
        args.seconds = float(cfg.seconds)
    if cfg.num_envs is not None:
        args.num_envs = [check_integer(name, n, 1) for name, n in named_items("num_envs", cfg.num_envs)]
        if len(set(args.num_envs)) < len(args.num_envs):  # measured twice, in two columns of one name
            raise ValueError(f"num_envs must name each vector size once, got {args.num_envs}")
        if not args.num_envs:  # the report's largest size was a traceback after the measurements, none written
            raise ValueError("num_envs must list at least one vector size, got []")
    if args.only == []:  # read as null: every section ran
        raise ValueError(f"only must name at least one of {', '.join(SECTIONS)}, got [] (null: every section)")
    for key in ("episode_limit", "timeout"):
        check_positive(key, cfg[key])
    check_choice("pool_tier", cfg.pool_tier, TIERS)
    try:
        parse_rule(args.rule)
    except ValueError as exc:
        raise ValueError(f"rule={args.rule}: {exc}") from None
    args.sections = args.only or [s for s in SECTIONS if s != "peers" or args.peer_python]
    if "peers" in args.sections and not args.peer_python:
        raise ValueError("only=[peers] needs peer_python (the python of a virtual environment with the peers)")
    if not args.instances and (measured := [s for s in args.sections if s in INSTANCE_SECTIONS]):
        raise ValueError(f"instances must name at least one of {', '.join(INSTANCES)}, got [] (sections "
                         f"{', '.join(measured)} measure each)")
    return args


def check_job(cfg: DictConfig) -> Path:
    """:func:`settings`, for a job of a ``-m`` sweep checked before the first job runs; the job's results file
    (``out``), which no other job may share (each wrote its results over the one before)."""
    return Path(settings(cfg).out)


def measure(cfg: DictConfig, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Run the bench of ``cfg`` (given on the command line as ``overrides``), print the tables, write the JSON;
    returns the results (exit 130 when interrupted)."""
    args = settings(cfg)
    results: dict[str, Any] = {
        "format": FORMAT, "partial": True, "created": datetime.datetime.now().astimezone().isoformat(),
        "command": " ".join(["python -m scripts.bench", *overrides]),
        "machine": machine(), "settings": dict(vars(args)), "instances": {}, "ours": {}, "peers": {}}
    out = Path(args.out)
    error: Exception | None = None
    try:
        with tempfile.TemporaryDirectory(prefix="bench-inputs-") as tmp:
            run(args, results, Path(tmp))
        results["partial"] = False
    except KeyboardInterrupt:
        print("\ninterrupted: writing the partial results", file=sys.stderr)
    except Exception as exc:  # the sections already measured are kept, then the error is raised
        error = exc
        print(f"\nfailed ({type(exc).__name__}: {exc}): writing the partial results", file=sys.stderr)
    results["ratios"] = ratios(results)
    results["targets"] = targets(results)
    print("\n" + report(results))
    write_text_atomic(out, json.dumps(results, indent=1, default=float))
    print(f"\nwritten to {out}{' (partial)' if results['partial'] else ''}")
    if error is not None:
        raise error
    if results["partial"]:
        sys.exit(130)
    return results


@checked_main("bench", check_job)
def main(cfg: DictConfig) -> None:
    """Hydra entry point (conf/bench.yaml); exits with status 2 on a bad setting, 130 on Ctrl-C or SIGTERM (the
    sections measured are written first)."""
    try:
        with setting_errors_exit(), interrupted_exit("before the measurements began or after they were written"):
            check_added_keys(cfg)
            measure(cfg, HydraConfig.get().overrides.task)
    finally:  # Hydra's run folder holds nothing unless something was logged: the results are in `out`
        remove_empty_run_folder()


def run(args: argparse.Namespace, results: dict[str, Any], tmp: Path) -> None:
    """Fill ``results`` section by section (a progress bar over every task)."""
    sections = args.sections
    instances = load_instances(args.instances, args)
    for key, inst in instances.items():
        sim = Simulator(inst)
        sim.reset()
        sim.run(args.rule)
        results["instances"][key] = {"name": inst.name, "jobs": inst.num_jobs, "machines": inst.num_machines,
                                     "ops": inst.num_ops, "events": len(inst.events), "decisions": sim.decisions}
    # Each task: where its result goes in ``results`` (a path of keys), and how to measure it.
    tasks: list[tuple[tuple[str, ...], Callable[[], Any]]] = []
    for section, measure in (("kernel", bench_kernel), ("env", bench_env), ("vector", bench_vector)):
        if section in sections:
            tasks += [(("ours", section, key), lambda m=measure, i=inst: m(i, args)) for key, inst in instances.items()]
    if "wrappers" in sections:
        tasks.append((("ours", "wrappers"), lambda: bench_wrappers(args)))
    if "ppo" in sections:
        tasks.append((("ours", "ppo"), lambda: bench_ppo(args)))
    if "sesc" in sections:
        tasks += [(("ours", "sesc", size), lambda s=size: bench_sesc(s, args)) for size in SESC_SIZES]
    if "scaling" in sections:
        tasks += [(("ours", "scaling", f"{u:g}", str(n)), lambda n=n, u=u: bench_scaling(n, u, args))
                  for u in SCALING_UTILIZATIONS for n in SCALING_JOBS]
    if "cold" in sections:
        tasks.append((("ours", "cold"), lambda: bench_cold(data.path(COLD_INSTANCE), args)))
    if "memory" in sections:
        for key, inst in instances.items():  # our runner loads the embedded files, the tier ones as native JSON
            path = data.path(key) if key in EMBEDDED else tmp / f"{key}.json"
            if key not in EMBEDDED:
                inst.to_json(path)
            tasks.append((("ours", "memory", key), lambda p=path: bench_memory(p, args)))
    if "peers" in sections:
        tasks += [(("peers", peer.name, key), lambda p=peer, k=key, i=inst: bench_peer(p, k, i, tmp, args))
                  for peer in PEERS for key, inst in instances.items()]
    with tqdm(tasks, desc="bench", unit="task") as bar:
        for (*parents, last), task in bar:
            bar.set_postfix_str(" ".join((*parents[1:], last)))
            value = task()
            node = results
            for name in parents:
                node = node.setdefault(name, {})
            node[last] = value


if __name__ == "__main__":
    main()
