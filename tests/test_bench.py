"""scripts/bench.py: the JSON it writes, the ratios and targets, the peer-failure path, the runner protocol."""

from __future__ import annotations

import argparse
import dataclasses
import json
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_module

from dynasched_gym import data, load_instance
from scripts import bench
from scripts.overrides import SettingError
from scripts.peers import _common, run_dsbx, run_dynasched
from scripts.peers._common import ArgumentsError, UniformPicker, chunk_of, main, parser, play


def _bench(*overrides: str) -> dict:
    """``python -m scripts.bench <overrides>``, in this process."""
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        cfg = compose("bench", overrides=list(overrides))
    return bench.measure(cfg, overrides)


def _settings(*overrides: str) -> argparse.Namespace:
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        return bench.settings(compose("bench", overrides=list(overrides)))


@pytest.mark.parametrize(("override", "error", "message"), [
    ("num_envs=[0]", ValueError, r"^num_envs\[0\] must be an integer >= 1, got 0$"),
    # measured twice, reported in two columns of one name
    ("num_envs=[1,16,1]", ValueError, r"^num_envs must name each vector size once, got \[1, 16, 1\]$"),
    ("only=[kernel,warp]", ValueError, r"^only\[1\] must be one of .*, got 'warp'$"),
    ("instances=ta02", ValueError, r"^instances must be one of .*, got 'ta02' \(did you mean 'ta01'\?\)$"),
    ("seconds=0", ValueError, r"^seconds must be a finite number > 0, got 0$"),
    ("rule=FOO", ValueError, r"^rule=FOO: unknown rule 'FOO'"),
    ("quick=maybe", TypeError, r"^quick must be true or false, got 'maybe'$"),
    ("only=[peers]", ValueError, r"^only=\[peers\] needs peer_python"),
    # num_envs=[] was a traceback in the report, after the measurements and without writing them; only=[] ran every
    # section; instances=[] measured no instance, status 0
    ("num_envs=[]", ValueError, r"^num_envs must list at least one vector size, got \[\]$"),
    ("only=[]", ValueError, r"^only must name at least one of kernel, .*, got \[\] \(null: every section\)$"),
    ("instances=[]", ValueError, r"^instances must name at least one of ta01, .*, got \[\] \(sections kernel, env, "
                                 r"vector, memory measure each\)$"),
])
def test_bad_settings_stop_before_any_measurement_naming_their_key(override, error, message) -> None:
    with pytest.raises(SettingError, match=message) as refused:
        _settings(override)
    assert isinstance(refused.value.__cause__, error)


def test_an_error_keeps_the_sections_measured(tmp_path: Path, monkeypatch) -> None:
    """Any error but Ctrl-C used to write nothing."""
    def broken(inst, args):
        raise RuntimeError("vector bench broke")

    monkeypatch.setattr(bench, "bench_vector", broken)
    out = tmp_path / "bench.json"
    with pytest.raises(RuntimeError, match="vector bench broke"):
        _bench("quick=true", "only=[kernel,vector]", "instances=[ta01]", f"out={out}")
    results = json.loads(out.read_text())
    assert results["partial"] is True and results["ours"]["kernel"]["ta01"]["decisions_per_s"] > 0


def test_ctrl_c_writes_the_partial_results_and_exits_with_130(tmp_path: Path, monkeypatch) -> None:
    def interrupted(args, results, tmp):
        raise KeyboardInterrupt

    monkeypatch.setattr(bench, "run", interrupted)
    out = tmp_path / "bench.json"
    with pytest.raises(SystemExit) as stopped:
        _bench("quick=true", "only=[kernel]", "instances=[ta01]", f"out={out}")
    assert stopped.value.code == 130 and json.loads(out.read_text())["partial"] is True


def test_memory_per_extra_env_is_the_growth_over_the_envs_added(monkeypatch) -> None:
    def runner(path, options, timeout, cache=None):  # 100 MiB after the imports, then 10 per env
        envs = int(options[options.index("--num-envs") + 1])
        return {"rss_import_mb": 100.0, "rss_peak_mb": 100.0 + 10.0 * envs, "episode": {"complete": True}}

    monkeypatch.setattr(bench, "our_runner", runner)
    out = bench.bench_memory(Path("x.json"), argparse.Namespace(memory_envs=3, episode_limit=10, timeout=1.0))
    assert out["per_extra_env_mb"] == 10.0 and out["3"]["per_env_mb"] == 10.0 and out["1"]["delta_mb"] == 10.0


def test_the_wrappers_section_measures_each_forecast_wrapper_against_the_bare_env(tmp_path: Path, monkeypatch,
                                                                                 capsys) -> None:
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(bench, "WRAPPED_ENV", {**bench.WRAPPED_ENV, "num_envs": 2, "pool_size": 2})
    out = tmp_path / "bench.json"
    _bench("quick=true", "only=wrappers", "instances=[ta01]", "seconds=0.01", f"out={out}")
    wrapped = json.loads(out.read_text())["ours"]["wrappers"]
    assert list(wrapped) == ["bare", "forecast reward", "forecast features", "both"]
    assert wrapped["bare"]["ratio_to_bare"] == 1.0
    for figures in wrapped.values():
        assert figures["ratio_to_bare"] == pytest.approx(figures["steps_per_s"] / wrapped["bare"]["steps_per_s"])
    assert "| forecast features |" in capsys.readouterr().out


def test_the_scaling_section_gives_each_instances_cost_per_decision_env_step_and_lookahead_and_ratios(
        tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(bench, "SCALING_JOBS", (20, 80))
    out = tmp_path / "bench.json"
    _bench("quick=true", "only=[scaling]", "instances=[ta01]", "seconds=0.01", f"out={out}")
    scaling = json.loads(out.read_text())["ours"]["scaling"]
    assert list(scaling) == ["0.2", "0.8"] and all(list(by_jobs) == ["20", "80"] for by_jobs in scaling.values())
    printed = capsys.readouterr().out
    for utilization, by_jobs in scaling.items():
        small, large = by_jobs["20"], by_jobs["80"]
        assert small["jobs"] < large["jobs"]
        assert large["us_per_decision"] == pytest.approx(1e6 / large["decisions_per_s"])
        env = large["env"]
        assert {key: env[key] for key in bench.SCALING_ENV} == bench.SCALING_ENV
        assert env["us_per_step"] == pytest.approx(1e6 / env["steps_per_s"]) and len(env["repeats"]) == 1
        ratio = large["us_per_decision"] / small["us_per_decision"]
        env_ratio = env["us_per_step"] / small["env"]["us_per_step"]
        row = (f"| {utilization} | {large['jobs']} | {large['us_per_decision']:.2f} | {ratio:.2f} | "
               f"{env['us_per_step']:.2f} | {env_ratio:.2f} |")
        if utilization == "0.2":  # the lookahead's episodes: at the lowest utilisation target only
            lookahead = large["lookahead"]
            assert {key: lookahead[key] for key in bench.SCALING_LOOKAHEAD} == bench.SCALING_LOOKAHEAD
            assert lookahead["us_per_decision"] > 0 and len(lookahead["repeats"]) == 1
            row += (f" {lookahead['us_per_decision']:.2f} | "
                    f"{lookahead['us_per_decision'] / small['lookahead']['us_per_decision']:.2f} |")
        else:
            assert "lookahead" not in large
            row += " - | - |"
        assert row in printed


def test_the_ppo_section_times_the_agent_against_sb3s_predict_on_the_same_schedules(tmp_path: Path, monkeypatch,
                                                                                     capsys) -> None:
    monkeypatch.setattr(bench, "PPO_SEEDS", range(10_000, 10_001))
    out = tmp_path / "bench.json"
    _bench("quick=true", "only=[ppo]", "instances=[ta01]", f"out={out}")
    ppo = json.loads(out.read_text())["ours"]["ppo"]
    assert ppo["tier"] == bench.PPO_TIER and ppo["seeds"] == [10_000, 10_000] and ppo["decisions_per_episode"] > 0
    assert {name: len(times) for name, times in ppo["repeats_ms"].items()} == {"agent": 1, "sb3 predict": 1}
    for ms, ratio in (("ms_per_episode", "ratio"), ("cpu_ms_per_episode", "cpu_ratio")):
        assert ppo[ratio] == pytest.approx(ppo[ms]["sb3 predict"] / ppo[ms]["agent"])
    assert "| PPOAgent |" in capsys.readouterr().out


def test_quick_run_writes_the_schema(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    _bench("quick=true", "only=[kernel,env,vector]", "instances=[ta01]", "num_envs=[1,3]", f"out={out}")
    results = json.loads(out.read_text())
    assert results["command"] == ("python -m scripts.bench quick=true only=[kernel,env,vector] instances=[ta01] "
                                  f"num_envs=[1,3] out={out}")
    assert results["format"] == bench.FORMAT and results["partial"] is False
    assert results["settings"]["sections"] == ["kernel", "env", "vector"]
    assert results["machine"]["cores"] >= 1 and results["machine"]["numba"]
    assert results["instances"]["ta01"] == {"name": "ta01", "jobs": 15, "machines": 15, "ops": 225, "events": 0,
                                            "decisions": 225}
    ours = results["ours"]
    assert ours["kernel"]["ta01"]["decisions_per_s"] > 0
    for key in ("class", "gym_make"):
        env = ours["env"]["ta01"][key]
        assert env["steps_per_s"] > 0 and env["ops_per_s"] == env["steps_per_s"]  # one operation per step
    assert set(ours["vector"]["ta01"]) == {"1", "3", "3 parallel"}
    for vec in ours["vector"]["ta01"].values():
        assert 0 < vec["ops_per_s"] <= vec["steps_per_s"]  # autoreset transitions schedule nothing
    assert results["peers"] == {} and results["ratios"] == []
    assert all(t["met"] is None for t in results["targets"] if t["kind"] == "ratio")


def _results(env: float, vector: float, kernel: float, peer: float) -> dict:
    return {"ours": {"env": {"ta01": {"class": {"steps_per_s": env, "ops_per_s": env}},
                             "mk10": {"class": {"steps_per_s": env, "ops_per_s": env}}},  # the peer failed on it
                     "vector": {"ta01": {"256": {"steps_per_s": vector, "ops_per_s": vector},
                                         "256 parallel": {"steps_per_s": 2 * vector, "ops_per_s": 2 * vector}}},
                     "kernel": {"ta01": {"decisions_per_s": kernel}},
                     "sesc": {"large": {"seconds": 0.5}}, "cold": {"warm": {"process_s": 1.0}},
                     "memory": {"ta01": {"1": {"delta_mb": 20.0}}, "mk10": {"1": {"error": "boom"}}}},
            "peers": {"JSSEnv": {"ta01": {"steps_per_s": peer, "ops_per_s": peer / 2},
                                 "mk10": {"error": "cannot express the instance: flexible"}}}}


def test_ratios_and_targets_use_this_runs_figures() -> None:
    results = _results(env=100_000.0, vector=500_000.0, kernel=4e6, peer=10_000.0)
    rows = {r["figure"]: r for r in bench.ratios(results)}
    assert rows["env steps/s"]["ratio"] == pytest.approx(10.0)
    assert rows["env ops/s"]["ratio"] == pytest.approx(20.0)  # the peer schedules fewer operations than steps
    assert rows["vector N=256 transitions/s vs peer steps/s"]["ratio"] == pytest.approx(50.0)
    assert rows["in-kernel decisions/s vs peer steps/s"]["ratio"] == pytest.approx(400.0)
    assert all(r["instance"] == "ta01" for r in rows.values())  # the failed peer run gives no ratio
    results["ratios"] = bench.ratios(results)
    met = {t["target"]: t["met"] for t in bench.targets(results)}
    assert met == {
        "single env >= 5x JSSEnv": True,
        "vector env N=256 >= 60x JSSEnv's single env": False,
        "vector env N=256 >= 60x JSSEnv's single env (parallel=True)": True,
        "in-kernel rollouts >= 300x JSSEnv": True,
        "in-kernel rollouts >= 10,000x dsbx": None,  # not measured
        "SESC on the large preset <= 0.2 s": False,
        "cold start, warm cache <= 3 s (process)": True,
        "memory <= 50 MB per single env (worst instance; 50 MB = 47.7 MiB)": True,
    }
    failed = {"JSSEnv": {"mk10": results["peers"]["JSSEnv"]["mk10"]}}
    text = bench.report({"ours": {}, "instances": {}, "settings": {"num_envs": [256]}, "peers": failed})
    assert "| JSSEnv | mk10 | n/a | n/a |" in text and "flexible" in text


def test_the_reports_ratios_table_shows_every_figure_but_the_smaller_vector_sizes() -> None:
    results = _results(env=100_000.0, vector=500_000.0, kernel=4e6, peer=10_000.0)
    results["ours"]["vector"]["ta01"]["16"] = {"steps_per_s": 80_000.0, "ops_per_s": 80_000.0}
    results["ratios"] = bench.ratios(results)
    text = bench._ratios_table({**results, "settings": {"num_envs": [16, 256]}})
    shown = [line.split(" | ")[2] for line in text.splitlines()[4:]]
    assert shown == ["env steps/s", "env ops/s", "vector N=256 transitions/s vs peer steps/s",
                     "vector N=256 parallel transitions/s vs peer steps/s", "in-kernel decisions/s vs peer steps/s"]


def test_a_target_reached_exactly_is_met_and_memory_is_judged_on_the_worst_instance() -> None:
    results = _results(env=50_000.0, vector=600_000.0, kernel=3e6, peer=10_000.0)  # ratios 5, 60, 120 and 300
    results["ours"]["sesc"]["large"]["seconds"] = 0.2
    results["ours"]["cold"]["warm"]["process_s"] = 3.0
    results["ours"]["memory"]["mk10"] = {"1": {"delta_mb": 60.0}}  # over 47.7 MiB, where ta01's 20 is under
    results["ratios"] = bench.ratios(results)
    met = [t["met"] for t in bench.targets(results)]
    assert met == [True, True, True, True, None, True, True, False]


def _fake_python(tmp_path: Path, body: str) -> str:
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.parametrize(("body", "reason"), [
    ("echo 'ModuleNotFoundError: No module named JSSEnv' >&2; exit 1", "exit status 1: ModuleNotFoundError"),
    ("echo 'not json'", "exit status 0: not json"),
])
def test_a_failing_peer_is_reported_with_its_reason(tmp_path: Path, body: str, reason: str) -> None:
    out = tmp_path / "bench.json"
    _bench("quick=true", "only=[peers]", "instances=[ta01,mk10]", f"peer_python={_fake_python(tmp_path, body)}",
           f"out={out}")
    peers = json.loads(out.read_text())["peers"]
    assert set(peers) == {"JSSEnv", "job-shop-lib", "dsbx"}
    for peer in peers.values():
        assert peer["ta01"]["error"].startswith(reason)
        assert peer["mk10"]["error"].startswith("cannot express the instance")  # flexible: no subprocess
    assert json.loads(out.read_text())["ratios"] == []


def test_a_missing_peer_python_is_refused_before_any_measurement(tmp_path: Path) -> None:
    """It made every peer's figure "cannot run ...", found once every other section had been measured."""
    for value, reason in ((tmp_path / "nope", "no such file"), (tmp_path, "not an executable file"),
                          ("no-such-python-here", "not found on \\$PATH")):
        with pytest.raises(SettingError, match=f"^peer_python={value}: {reason} "):
            _settings("quick=true", f"peer_python={value}")
    assert _settings(f"peer_python={_fake_python(tmp_path, 'exit 1')}").peer_python == str(tmp_path / "python")


def test_a_peer_python_that_cannot_run_is_reported(tmp_path: Path) -> None:
    args = _settings("quick=true", f"peer_python={_fake_python(tmp_path, 'exit 1')}", "only=[peers]")
    (tmp_path / "python").unlink()  # gone since the settings were checked
    result = bench.bench_peer(bench.PEERS[0], "ta01", load_instance(data.path("ta01")), tmp_path, args)
    assert result["error"].startswith("cannot run")


def test_peer_inputs_round_trip_or_explain(tmp_path: Path) -> None:
    ta01 = load_instance(data.path("ta01"))
    again = load_instance(bench.write_orlib("ta01", ta01, tmp_path))
    for field in ("job_op_ptr", "elig_machine", "elig_time"):
        np.testing.assert_array_equal(getattr(again, field), getattr(ta01, field))
    written = load_instance(bench.write_dsbx("ta01", ta01, tmp_path))  # one group per machine
    np.testing.assert_array_equal(written.elig_time, ta01.elig_time)
    with pytest.raises(ValueError, match="machine speeds"):
        bench.write_orlib("ta01", dataclasses.replace(ta01, machine_speed=np.full(ta01.num_machines, 2.0)), tmp_path)
    mk10 = load_instance(data.path("mk10"))
    with pytest.raises(ValueError, match="flexible"):
        bench.write_orlib("mk10", mk10, tmp_path)
    with pytest.raises(ValueError, match="mk10"):
        bench.write_dsbx("mk10", mk10, tmp_path)


class _Countdown:
    """A driver whose episodes last ``length`` steps, each scheduling an operation every other step."""

    def __init__(self, length: int) -> None:
        self.length, self.left, self.resets = length, 0, 0

    def reset(self) -> None:
        self.left, self.resets = self.length, self.resets + 1

    def step(self) -> tuple[bool, int, int]:
        assert self.left > 0, "stepped an episode that is over"  # the timed repeats must reset it first
        self.left -= 1
        return self.left == 0, 1, self.left % 2


def test_runner_protocol_plays_an_episode_then_times_repeats() -> None:
    driver = _Countdown(5)
    args = argparse.Namespace(seconds=0.001, repeats=2, episode_limit=10.0)
    out = play(lambda: driver, args, chunk_steps=7)
    assert out["episode"] == {"steps": 5, "ops": 2, "seconds": out["episode"]["seconds"], "complete": True}
    assert len(out["repeats"]) == 2 and out["steps_per_s"] > out["ops_per_s"] > 0
    countdown = _Countdown(3)
    chunk = chunk_of(countdown, 7, done=True)
    assert chunk() == (7, 2) and countdown.resets == 3  # resets before the first step and after every third
    cut = play(lambda: _Countdown(5), argparse.Namespace(seconds=0.001, repeats=0, episode_limit=0.0))
    assert cut["episode"]["steps"] == 1 and cut["episode"]["complete"] is False and cut["steps_per_s"] is None


def test_timed_repeats_run_until_their_seconds_and_report_the_median(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(_common.time, "perf_counter", lambda: clock[0])
    steps = iter([1, 1, 5, 6, 2, 1])  # two chunks of 0.125 s each reach a repeat's 0.2 s: rates 8, 44 and 12

    def chunk() -> tuple[int, int]:
        clock[0] += 0.125
        return next(steps), 0

    rates = _common.medians(chunk, 0.2, 3)
    assert [r["steps_per_s"] for r in rates["repeats"]] == [8.0, 44.0, 12.0] and rates["steps_per_s"] == 12.0


def test_a_runner_prints_its_result_on_a_line_of_its_own_and_its_help_is_the_first_paragraph(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def measure(args: argparse.Namespace) -> dict:
        sys.stdout.write("a peer's own output, without a newline")
        return {"steps_per_s": 1.0}

    monkeypatch.setattr(sys, "argv", ["run_x", "--instance", "here.json"])
    main(measure, "Run ``x``.\n\nMore about x.")
    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert result["instance"] == "here.json" and result["steps_per_s"] == 1.0 and result["rss_peak_mb"] > 0
    monkeypatch.setattr(sys, "argv", ["run_x", "--help"])
    with pytest.raises(SystemExit):
        main(measure, "Run ``x``.\n\nMore about x.")
    text = capsys.readouterr().out
    assert "Run x." in text and "More about" not in text


def test_the_peak_memory_is_the_peak_not_the_present_size() -> None:
    block = np.ones(64 * 2**20 // 8)  # 64 MiB, written: resident
    during = _common.peak_rss_mb()
    del block  # an allocation this large goes back to the system
    assert _common.peak_rss_mb() > during - 32  # the kernel's per-thread counters may lag by some pages


class _Dsbx:
    """A dsbx ``DynaSchedEnv`` that is never done, with no legal action before ``legal_after`` advances; its advances
    return ``clock`` in turn (time, event counters), the last one again and again. It gives up after 10,000 advances,
    so that a driver that spins fails instead of hanging."""

    def __init__(self, clock: list[tuple[float, dict[str, int]]], legal_after: int | None = None) -> None:
        self.clock, self.legal_after, self.advances = clock, legal_after, 0

    def reset(self) -> None:
        self.advances = 0

    def legal_actions(self) -> list[dict[str, str]]:
        return [{"job_id": "J1"}] if self.legal_after is not None and self.advances >= self.legal_after else []

    def step(self, action: dict[str, str]) -> tuple[dict, float, bool, dict]:
        return {}, 0.0, False, {}

    def advance_if_idle(self) -> dict:
        self.advances += 1
        if self.advances > 10_000:
            raise AssertionError("spun: 10,000 advances without a legal action")
        time, events = self.clock[min(self.advances, len(self.clock)) - 1]
        return {"time": time, "dynamic_summary": {"events": events}}

    def done(self) -> bool:
        return False


def test_dsbx_runner_reports_an_env_that_no_longer_moves(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A dsbx episode that can neither act nor advance (e.g. a job routed through a group with no machine) made the
    runner loop forever, without the JSON line of the protocol."""
    env = _Dsbx([(0.0, {}), (2.5, {"arrival": 1})])
    monkeypatch.setattr(sys, "argv", ["run_dsbx", "--instance", "stuck", "--repeats", "0"])
    with pytest.raises(SystemExit) as exit_info:
        main(lambda args: play(lambda: run_dsbx.Driver(env, UniformPicker()), args), run_dsbx.__doc__)
    assert exit_info.value.code == 1
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {
        "error": "RuntimeError: dsbx made no progress at t=2.5: no legal action, not done, advance_if_idle() changed "
                 "nothing"}
    assert env.advances == 3  # the first advance that repeats the one before


def test_dsbx_runner_waits_through_events_at_one_time() -> None:
    """Events applied without the clock moving are progress: the driver advances on to the legal action."""
    env = _Dsbx([(1.0, {"arrival": 1}), (1.0, {"arrival": 2}), (4.0, {"arrival": 2})], legal_after=3)
    assert run_dsbx.Driver(env, UniformPicker()).step() == (False, 1, 1)
    assert env.advances == 3


def test_dsbx_runner_ends_an_episode_an_advance_finished_without_a_step() -> None:
    """The last events can end dsbx's episode with no legal action left: done, and no step or operation counted."""
    env = _Dsbx([(1.0, {"arrival": 1}), (2.0, {"arrival": 1})])
    env.done = lambda: env.advances >= 2  # type: ignore[method-assign]
    assert run_dsbx.Driver(env, UniformPicker()).step() == (True, 0, 0)
    assert env.advances == 2


def test_dsbx_runner_picks_uniformly_among_the_legal_actions_and_ends_with_dsbx_s_done() -> None:
    """Each step plays one of the legal actions at random (not always the first), and the episode is over when
    dsbx's step says so."""
    played: list[str] = []

    class Legal(_Dsbx):
        def legal_actions(self) -> list[dict[str, str]]:
            return [{"job_id": job} for job in ("J1", "J2", "J3")]

        def step(self, action: dict[str, str]) -> tuple[dict, float, bool, dict]:
            played.append(action["job_id"])
            return {}, 0.0, len(played) == 60, {}

    driver = run_dsbx.Driver(Legal([(0.0, {})]), UniformPicker(0))
    assert [driver.step() for _ in range(60)] == [(False, 1, 1)] * 59 + [(True, 1, 1)]
    assert set(played) == {"J1", "J2", "J3"}


class _Scripted:
    """A single env (``num_envs`` None) or a vector env whose steps end episodes as ``script`` says: each item is
    (terminated, truncated), of bools or of per-sub-environment lists; it records the seeds of its resets."""

    def __init__(self, script: list[tuple], num_envs: int | None = None) -> None:
        self.script, self.seeds, self.calls = script, [], 0
        self.mask = np.ones(3, dtype=np.int8) if num_envs is None else np.ones((num_envs, 3), dtype=np.int8)
        if num_envs is not None:
            self.num_envs = num_envs

    def reset(self, seed: int | None = None) -> tuple[dict, dict]:
        self.seeds.append(seed)
        return {"action_mask": self.mask}, {}

    def step(self, action: object) -> tuple[dict, float, object, object, dict]:
        terminated, truncated = (np.array(x) for x in self.script[self.calls])
        self.calls += 1
        return {"action_mask": self.mask}, 0.0, terminated, truncated, {}


def test_the_env_driver_counts_one_operation_a_step_and_seeds_only_its_first_reset() -> None:
    """A truncated episode is over too; the driver's seed makes the first episode reproducible, later resets go on
    from the env's stream (as gymnasium asks)."""
    env = _Scripted([(False, False), (False, True), (True, False)])
    driver = run_dynasched.EnvDriver(env, seed=7)
    driver.reset()
    assert [driver.step(), driver.step()] == [(False, 1, 1), (True, 1, 1)]
    driver.reset()
    assert driver.step() == (True, 1, 1)
    assert env.seeds == [7, None]


def test_the_vector_driver_is_done_once_every_sub_env_finished_and_leaves_autoreset_steps_out_of_the_ops() -> None:
    """Sub-environment 0 ends its episode at the second step (truncated) and 1 at the third: done from the third
    step on; a step after an episode's end autoresets that sub-environment and schedules nothing there. A reset of
    the vector env starts afresh: nothing is done and no sub-environment is autoresetting."""
    script = [([False, False], [False, False]), ([False, False], [True, False]), ([False, True], [False, False]),
              ([False, False], [False, False]), ([False, False], [False, False])]
    venv = _Scripted(script, num_envs=2)
    driver = run_dynasched.VectorDriver(venv, seed=3)
    driver.reset()
    assert [driver.step() for _ in range(4)] == [(False, 2, 2), (False, 2, 2), (True, 2, 1), (True, 2, 1)]
    driver.reset()
    assert driver.step() == (False, 2, 2)
    assert venv.seeds == [3, None]
    driver.reset()
    venv.calls = 2
    driver.step()  # sub-environment 1's episode ends
    driver.reset()
    assert driver.step() == (False, 2, 2)


def test_uniform_picker_stays_in_the_mask() -> None:
    pick = UniformPicker(0, block=8)
    mask = np.array([0, 1, 0, 1, 1], dtype=np.int8)
    assert {pick.valid(mask) for _ in range(100)} == {1, 3, 4}
    rows = pick.valid_rows(np.array([[1, 1, 0], [0, 0, 1], [1, 0, 1]]))
    assert rows[1] == 2 and rows[0] in (0, 1) and rows[2] in (0, 2)


def test_a_sweep_writing_one_results_file_is_refused_before_any_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """``-m seed=0,1``: every job wrote its results to the one ``out``, each over the one before; refused before any
    measurement, and a per-job ``out`` is taken."""
    out = tmp_path / "bench.json"
    quick = ["quick=true", "only=[kernel]", "instances=[ta01]", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    monkeypatch.setattr(sys, "argv", ["bench", "-m", "seed=0,1", f"out={out}", *quick])
    with pytest.raises(SystemExit) as exit_info:
        bench.main()
    assert exit_info.value.code == 2 and list(tmp_path.iterdir()) == []
    assert capsys.readouterr().err == (f"error: sweep jobs #0 and #1 (seed=1 out={out} quick=True only=[kernel] "
                                       "instances=[ta01]) would "
                                       f"both write into out={out}; give each job its own, e.g. with "
                                       "${hydra:job.num} in it\n")
    monkeypatch.setattr(sys, "argv", ["bench", "-m", "seed=0,abc", f"out={tmp_path}/${{hydra:job.num}}.json", *quick])
    with pytest.raises(SystemExit):
        bench.main()
    assert capsys.readouterr().err.startswith("error: sweep job #1 (seed=abc ")


def _runner(*arguments: str) -> tuple[int, str]:
    """``python -m scripts.peers.run_dynasched <arguments>``: (exit status, last stdout line)."""
    proc = subprocess.run([sys.executable, "-m", "scripts.peers.run_dynasched", *arguments], cwd=bench.ROOT,
                          capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else ""


def test_a_runner_given_bad_arguments_fails_by_the_protocol() -> None:
    """argparse's own error left no JSON line and exit status 2, where the protocol says {"error": ...} and 1."""
    status, last = _runner("--seconds", "1")
    assert status == 1
    assert json.loads(last) == {"error": "bad arguments: the following arguments are required: --instance"}


@pytest.mark.parametrize(("arguments", "message"), [
    # nan made every timed repeat loop forever (elapsed >= nan is never true)
    (["--seconds", "nan"], r"^argument --seconds: must be a finite number of seconds >= 0, got 'nan'$"),
    (["--episode-limit", "-1"], r"^argument --episode-limit: must be a finite number of seconds >= 0, got '-1'$"),
    (["--repeats", "-1"], r"^argument --repeats: must be an integer >= 0, got '-1'$"),  # was: no repeat, null rates
    (["--seed", "-1"], r"^argument --seed: must be an integer >= 0, got '-1'$"),  # was numpy's, naming no argument
    (["--num-envs", "0"], r"^argument --num-envs: must be an integer >= 1, got '0'$"),  # was: one env, num_envs 0
])
def test_runner_arguments_out_of_range_are_refused_naming_them(arguments: list[str], message: str) -> None:
    p = parser("test")
    run_dynasched._configure(p)
    with pytest.raises(ArgumentsError, match=message):
        p.parse_args(["--instance", "mk01", *arguments])
    assert p.parse_args(["--instance", "mk01", "--seconds", "0", "--episode-limit", "0", "--repeats", "0",
                         "--num-envs", "2"]).num_envs == 2
