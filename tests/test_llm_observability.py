"""scripts/observability.py: levels x tiers x seeds against a scripted server, the report, resuming, PPO labels."""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_module
from omegaconf import DictConfig
from test_llm_client import ChatServer

from scripts import observability


def config(tmp_path: Path, server: ChatServer, *overrides: str) -> DictConfig:
    base = ["agent.model=test-model", f"agent.base_url={server.url}", f"agent.cache_dir={tmp_path / 'llm'}",
            "agent.timeout=2.0", "tiers=[easy]", "seeds.count=1", "levels=[L1,L3]", "variants=[padded]",
            f"store={tmp_path / 'store.jsonl'}", f"out={tmp_path / 'out'}", "progress=false", "resamples=200"]
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        return compose(config_name="observability", overrides=[*base, *overrides])


def test_the_fallback_rate_counts_only_the_decisions_that_asked_the_model() -> None:
    """8 of 10 decisions had one pair (no request, no fallback possible); 1 fallback among the 2 that asked: 50 %,
    not 10 %. The other figures stay per decision, and a failed episode's counters are left out."""
    usage = {"decisions": 10, "single_candidate": 8, "requests": 2, "prompt_tokens": 100, "completion_tokens": 10,
             "total_tokens": 110, "prompt_chars": 400, "fallbacks": 1, "cache_hits": 0, "latency_s": 1.0}
    failed = {"agent": "llm:L2", "status": "invalid", "usage": {**usage, "decisions": 90, "fallbacks": 50}}
    cost = observability.llm_cost([{"agent": "llm:L2", "status": "ok", "usage": usage}, failed])["llm:L2"]
    assert cost["fallback_rate"] == 0.5 and cost["requests_per_decision"] == 0.2 and cost["latency_s"] == 0.1


def test_a_misspelt_tier_of_a_checkpoint_map_is_refused() -> None:
    """It was read as "no checkpoint for this tier": the policy did not play, and the report said none was given."""
    with pytest.raises(ValueError, match=r"^ppo\.full\.hardd: no such tier; a \{tier: path\} map takes easy, "):
        observability._checkpoint({"hard": "shipped", "hardd": "shipped"}, "easy", "ppo.full")
    assert observability._checkpoint({"hard": "shipped"}, "hard", "ppo.full") == "shipped"
    assert observability._checkpoint({"hard": ""}, "hard", "ppo.full") is None  # an empty path: no checkpoint
    assert observability._checkpoint("", "hard", "ppo.full") is None


def test_the_report_names_its_seeds_and_an_agent_without_an_episode_that_played_not_run() -> None:
    """Every episode failed: no mean to show (it printed nan [nan, nan])."""
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        cfg = compose(config_name="observability", overrides=["tiers=[easy]", "sizes=[small]", "seeds.start=10",
                                                              "seeds.count=5"])
    nan = float("nan")
    entry = {"size": "small", "tier": "easy", "agent": "SPT", "episodes": 0, "failed": 3, "mean": nan, "ci_low": nan,
             "ci_high": nan}
    text = observability.markdown(cfg, [entry], {}, [], [])
    assert "| SPT | not run |" in text and "pool seeds 10..14," in text


def test_experiment_reports_every_level_with_its_cost_and_resumes(tmp_path: Path, server: ChatServer,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "pools"))
    report = observability.run(config(tmp_path, server))
    agents = {r["agent"] for r in report.rows}
    assert agents == {"llm:L1", "llm:L3", "llm:L2+padded", "rule:ATC:LWL", "rule:EDD:EET", "ppo:concise"}
    assert all(r["status"] == "ok" for r in report.rows)
    llm_rows = [r for r in report.rows if r["agent"].startswith("llm:")]
    assert all(r["usage"]["decisions"] == r["decisions"] for r in llm_rows)
    asked = [r["usage"]["decisions"] - r["usage"]["single_candidate"] for r in llm_rows]  # one pair: no request
    assert sum(asked) == server.requests > 0
    assert [r["tokens"]["prompt"] for r in llm_rows] == [50 * n for n in asked]  # the server's usage, per request
    cost = report.cost["llm:L3"]
    assert cost["prompt_tokens_per_decision"] == 50 * cost["requests_per_decision"] and cost["fallback_rate"] == 0
    text = report.markdown
    for agent in sorted(agents):
        assert f"| {agent} | " in text
    assert "no shipped PPO checkpoint ppo-easy-small-full.zip" in text  # ppo.full=shipped:full ships medium only
    assert [f.name for f in report.files] == ["observability.md", "observability.csv",
                                              "observability-weighted_tardiness-small.png"]
    assert all(f.stat().st_size > 0 for f in report.files)
    # a second run resumes from the store: no episode, no request
    again = observability.run(config(tmp_path, server))
    assert server.requests == sum(asked) and again.markdown == text


def test_a_mislabelled_ppo_checkpoint_is_refused(tmp_path: Path, server: ChatServer,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "pools"))
    cfg = config(tmp_path, server, "levels=[]", "variants=[]", "baselines=[]", "ppo.full=shipped")
    with pytest.raises(ValueError, match=r"ppo\.full for easy/small .* trained on 'concise' observations, not 'full'"):
        observability.run(cfg)


@pytest.mark.parametrize(("overrides", "error", "message"), [
    (["resamples=0"], ValueError, r"^resamples must be an integer >= 1, got 0$"),  # was an IndexError at the end
    (["env.max_candidates=0"], ValueError, r"^env=\{'max_candidates': 0\}: max_candidates must be"),  # agent.g0.env
    (["agent.level=L3"], ValueError, r"^agent\.level=L3: the experiment sets each LLM's level from levels="),
    (["agent.variant=padded"], ValueError, r"^agent\.variant=padded: .* leave agent\.variant at none"),
    # tiers=[] ran no evaluation and wrote an empty report, status 0
    (["tiers=[]"], ValueError, r"^tiers must name at least one of \('easy', 'medium', 'hard', 'extreme'\), got \[\]$"),
    (["sizes=[]"], ValueError, r"^sizes must name at least one of \(.*'small'.*\), got \[\]$"),
])
def test_settings_are_refused_before_any_episode_naming_their_key(tmp_path: Path, server: ChatServer,
                                                                   monkeypatch: pytest.MonkeyPatch, overrides,
                                                                   error, message) -> None:
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "pools"))
    with pytest.raises(error, match=message):
        observability.run(config(tmp_path, server, *overrides))
    assert server.requests == 0 and not (tmp_path / "store.jsonl").exists()
    assert not (tmp_path / "out" / "observability.md").exists()


def test_a_single_tier_is_a_list_of_one(tmp_path: Path, server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``tiers=easy`` was iterated letter by letter (tier 'e')."""
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "pools"))
    report = observability.run(config(tmp_path, server, "tiers=easy", "levels=[]", "variants=[]", "ppo.full=null"))
    assert {r["tier"] for r in report.rows} == {"easy"}


def test_the_model_is_required(tmp_path: Path, server: ChatServer) -> None:
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        cfg = compose(config_name="observability", overrides=["tiers=[easy]"])
    with pytest.raises(ValueError, match=r"agent\.model is required"):
        observability.run(cfg)


def test_ppo_on_concise_and_full_observations(tmp_path: Path, server: ChatServer,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Both PPO checkpoints play; a ``full`` one (here untrained: the plumbing, not its quality) sees full features."""
    import gymnasium as gym
    from sb3_contrib import MaskablePPO

    from dynasched_gym.agents.policy import SlotPolicy

    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "pools"))
    env = gym.make("DynaSched/DFJSP-v0", tier="easy", size="small", observability="full", pool_size=1)
    MaskablePPO(SlotPolicy, env, n_steps=8, batch_size=8, policy_kwargs={"hidden": 8}, device="cpu").save(
        tmp_path / "full.zip")
    with pytest.warns(RuntimeWarning, match="records no feature units"):  # an untrained policy saved bare
        report = observability.run(config(tmp_path, server, "levels=[]", "variants=[]", "baselines=[]",
                                          f"ppo.full={{easy: {tmp_path / 'full.zip'}}}"))
    rows = {r["agent"]: r for r in report.rows}
    assert set(rows) == {"ppo:concise", "ppo:full"} and all(r["status"] == "ok" for r in rows.values())
    assert rows["ppo:full"]["agent_config"]["env"]["observability"] == "full"
    assert rows["ppo:concise"]["agent_config"]["env"]["observability"] == "concise"
    assert "| ppo:full | " in report.markdown and "not run" not in report.markdown and server.requests == 0


def test_csv_cost_figures_are_those_of_their_tier() -> None:
    def row(tier: str, decisions: int, requests: int) -> dict:
        return {"status": "ok", "agent": "llm:L2", "size": "small", "tier": tier,
                "usage": {"decisions": decisions, "requests": requests, "total_tokens": 10 * requests}}

    rows = [row("easy", 10, 10), row("hard", 20, 10), row("hard", 20, 10)]
    entries = [{"size": "small", "tier": t, "agent": "llm:L2", "episodes": n, "failed": 0, "mean": 1.0,
                "ci_low": 1.0, "ci_high": 1.0} for t, n in (("easy", 1), ("hard", 2))]
    lines = list(csv.DictReader(io.StringIO(observability.csv_text(
        entries, observability.llm_cost(rows, by=("size", "tier", "agent"))))))
    assert [(r["tier"], r["llm_episodes"], r["llm_requests_per_decision"]) for r in lines] == [
        ("easy", "1.0", "1.0"), ("hard", "2.0", "0.5")]
    assert observability.llm_cost(rows)["llm:L2"]["episodes"] == 3  # the markdown's figure: all tiers together


def test_every_entrant_of_the_plot_has_its_own_colour(tmp_path: Path, server: ChatServer,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """With four reference lines (two rules, both PPO) the first variant's marker took ppo:full's colour."""
    from matplotlib.colors import to_hex

    cfg = config(tmp_path, server, "levels=[L1,L2]", "variants=[padded,priors]")
    agents = ["llm:L1", "llm:L2", "llm:L2+padded", "llm:L2+priors", *cfg.baselines, "ppo:concise", "ppo:full"]
    entries = [{"size": "small", "tier": "easy", "agent": a, "episodes": 1, "mean": 1.0 + i, "ci_low": 1.0 + i,
                "ci_high": 1.0 + i} for i, a in enumerate(agents)]
    drawn = []
    monkeypatch.setattr(observability, "save_figure", lambda fig, path: drawn.append(fig))
    observability.plot(cfg, entries, {}, "small", tmp_path / "plot.png")
    legend = drawn[0].axes[0].get_legend()
    colours = {text.get_text(): to_hex(handle.get_color()) for text, handle in zip(legend.get_texts(),
                                                                                  legend.legend_handles)}
    assert set(colours) == {"LLM", "+padded", "+priors", *cfg.baselines, "ppo:concise", "ppo:full"}
    assert len(set(colours.values())) == len(colours), colours


def test_the_swept_settings_are_at_the_llm_configs_defaults() -> None:
    """observability.SWEPT repeats conf/agent/llm.yaml's level and variant: a change there must reach it."""
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        llm = compose(config_name="observability", overrides=["agent.model=m"]).agent
    assert {key: llm[key] for key in observability.SWEPT} == observability.SWEPT


@pytest.mark.parametrize("name", ["evaluate", "leaderboard", "observability"])
def test_the_scripts_playing_llm_agents_keep_http_request_logs_out(name: str) -> None:
    """The openai client's transport (httpx) logs every request at INFO: under the scripts' INFO root logger a
    line per LLM decision would run through the progress bar and the run's log file."""
    with initialize_config_module("dynasched_gym.conf", version_base="1.3"):
        cfg = compose(config_name=name, return_hydra_config=True)
    assert {cfg.hydra.job_logging.loggers[name].level for name in ("httpx", "httpx2")} == {"WARNING"}
    assert cfg.hydra.job_logging.root.level == "INFO"  # the scripts' own messages still show


def test_each_size_plots_the_prompt_tokens_of_that_size(tmp_path: Path, server: ChatServer,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The figure of one size showed the prompt tokens per decision of every size together."""
    from scripts import evaluate

    def row(size: str, prompt_tokens: int) -> dict:
        return {"status": "ok", "agent": "llm:L1", "size": size, "tier": "easy",
                "usage": {"decisions": 10, "prompt_tokens": prompt_tokens}}

    rows = [row("small", 100), row("medium", 1000)]
    monkeypatch.setattr(evaluate, "run", lambda ecfg: evaluate.Summary(2, 0, 2, [], [], 0.0, rows))
    monkeypatch.setattr(observability, "aggregate", lambda rows, resamples: [
        {"size": r["size"], "tier": r["tier"], "agent": r["agent"], "episodes": 1, "failed": 0, "mean": 1.0,
         "ci_low": 1.0, "ci_high": 1.0} for r in rows])
    plotted: dict[str, dict] = {}

    def plot(cfg: DictConfig, entries: list, cost: dict, size: str, path: Path) -> Path:
        plotted[size] = cost
        return path

    monkeypatch.setattr(observability, "plot", plot)
    observability.run(config(tmp_path, server, "levels=[L1]", "variants=[]", "sizes=[small,medium]", "ppo.concise=null",
                             "ppo.full=null"))
    assert {size: cost["llm:L1"]["prompt_tokens_per_decision"] for size, cost in plotted.items()} == {
        "small": 10.0, "medium": 100.0}


def test_each_job_of_a_sweep_writes_its_own_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every job of ``-m objective=makespan,weighted_tardiness`` (or a sweep over models) wrote observability.md and
    .csv into the one ``out``: only the last job's report was left. Each job's goes to ``out/<job number>``, as the
    leaderboard's boards."""
    out = tmp_path / "out"
    monkeypatch.setattr(sys, "argv", ["observability", "-m", "objective=makespan,weighted_tardiness", "tiers=[easy]",
                                      "seeds.count=1", "levels=[]", "variants=[]", "ppo.concise=null", "ppo.full=null",
                                      "progress=false", "resamples=200", f"store={tmp_path / 'store.jsonl'}",
                                      f"out={out}", f"hydra.sweep.dir={tmp_path / 'sweep'}"])
    observability.main()
    assert sorted(p.name for p in out.iterdir()) == ["0", "1"]
    for job, objective in enumerate(("makespan", "weighted_tardiness")):
        assert f"Objective `{objective}`" in (out / str(job) / "observability.md").read_text()
        assert (out / str(job) / "observability.csv").is_file()


def test_a_sweep_with_a_bad_value_is_refused_before_any_job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """``-m objective=makespan,bogus``: job #0 played and wrote its report before job #1 was refused."""
    monkeypatch.setattr(sys, "argv", ["observability", "-m", "objective=makespan,bogus", "tiers=[easy]",
                                      "seeds.count=1", "levels=[]", "variants=[]", "ppo.concise=null", "ppo.full=null",
                                      "progress=false",
                                      f"store={tmp_path / 'store.jsonl'}", f"out={tmp_path / 'out'}",
                                      f"hydra.sweep.dir={tmp_path / 'sweep'}"])
    with pytest.raises(SystemExit) as exit_info:
        observability.main()
    assert exit_info.value.code == 2 and list(tmp_path.iterdir()) == []
    assert capsys.readouterr().err.startswith("error: sweep job #1 (objective=bogus ")
