"""The LLM agent against a scripted Chat Completions server: modes, refinements, fallbacks, accounting, episodes."""

from __future__ import annotations

import errno
import json
import re
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from test_llm_client import ChatServer, first_id, table_ids
from test_llm_prompts import dynamic_instance, env_of

import dynasched_gym
from dynasched_gym import Simulator, validate_schedule
from dynasched_gym.agents import make, run_episode
from dynasched_gym.agents.llm import LLMAgent
from dynasched_gym.agents.llm.client import LLMConfigError, LLMUnavailableError
from dynasched_gym.agents.lookahead import DEFAULTS
from dynasched_gym.agents.rules import RuleAgent


def agent_for(server: ChatServer, **kwargs: Any) -> LLMAgent:
    options = {"model": "test-model", "base_url": server.url, "cache": False, "timeout": 0.5, "max_retries": 1,
               "backoff": 0.01, "ask_single": True, **kwargs}
    return make("llm", **options)


def first_decision(agent: LLMAgent, instance: Any = None) -> tuple[gym.Env, dict, dict, list[int]]:
    """Reset an env, bind the agent; the observation, info and offered slots of the first decision."""
    env = env_of(instance)
    obs, info = env.reset(seed=0)
    agent.reset(env)
    return env, obs, info, [int(s) for s in np.flatnonzero(env.unwrapped.offered_pairs()[0] >= 0)]


def answer(action: int, **extra: Any) -> dict[str, Any]:
    return {"content": json.dumps({**extra, "action_id": action})}


def rollout_estimate(slot: int, env: gym.Env, objective: str = "weighted_tardiness") -> float:
    """Independent check of simulate_action on a static instance: play the pair, then each rollout rule."""
    jobs, machines = env.unwrapped.offered_pairs()
    values = []
    for rule in DEFAULTS[objective][1]:
        sim = Simulator(env.unwrapped.instance)
        sim.reset()
        sim.step(int(jobs[slot]), int(machines[slot]))
        sim.run(f"{rule}:{DEFAULTS[objective][0].split(':')[1]}")
        values.append(sim.schedule().metrics["total_weighted_tardiness"])
    return min(values)


def static_instance() -> dynasched_gym.Instance:
    """The dynamic instance without events or late releases, with tight due dates: rollouts forget nothing."""
    inst = dynamic_instance()
    return inst.replace(events=(), job_release=np.zeros(inst.num_jobs), job_due=np.full(inst.num_jobs, 6.0))


# ------------------------------------------------------------------------------------------ modes
def test_direct_greedy_plays_the_answer_with_the_schema_of_legal_ids(server: ChatServer) -> None:
    agent = agent_for(server, level="L2")
    _env, obs, info, slots = first_decision(agent)
    server.push(answer(slots[-1]))
    assert agent.act(obs, info) == slots[-1]
    body = server.bodies[0]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["action_id"]["enum"] == slots and schema["required"] == ["action_id"]  # no reasoning
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 0, 1024) and "tools" not in body
    assert agent.log[0].source == "llm" and agent.usage["requests"] == 1 and agent.usage["fallbacks"] == 0
    assert agent.log[0].prompt_chars == agent.usage["prompt_chars"] == sum(len(m["content"]) for m in body["messages"])


def test_cot_asks_for_reasoning_first_and_keeps_it(server: ChatServer) -> None:
    agent = agent_for(server, mode="cot")
    _env, obs, info, slots = first_decision(agent)
    server.push({"content": f'Let me think.\n{{"reasoning": "J1 is heavy", "action_id": {slots[1]}}}'})
    assert agent.act(obs, info) == slots[1]
    schema = server.bodies[0]["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["reasoning", "action_id"]
    assert "Reason briefly step by step" in server.bodies[0]["messages"][0]["content"]
    assert agent.log[0].reasoning == "J1 is heavy"


def test_tools_mode_runs_the_tools_then_takes_the_answer(server: ChatServer) -> None:
    agent = agent_for(server, mode="tools", level="L2")
    env, obs, info, slots = first_decision(agent, static_instance())
    server.push({"tool_calls": [("simulate_action", {"action_id": slots[0]}), ("inspect_action", {"action_id": 99}),
                                ("inspect_action", "[" * 1200), ("dance", {"action_id": slots[0]})]},
                {"tool_calls": [("inspect_action", {"action_id": slots[1]})]},
                answer(slots[1]))
    assert agent.act(obs, info) == slots[1]
    assert server.requests == 3 and agent.usage["tool_calls"] == 5
    first, second, last = server.bodies
    assert [t["function"]["name"] for t in first["tools"]] == ["simulate_action", "inspect_action"]
    for body in server.bodies:  # tools may be called in every round (the answer came before the last one)
        assert "response_format" not in body and "tool_choice" not in body and body["tools"] == first["tools"]
    results = [json.loads(m["content"]) for m in second["messages"] if m["role"] == "tool"]
    assert float(results[0]["estimated_final_objective"]) == pytest.approx(rollout_estimate(slots[0], env), abs=0.01)
    assert "not in the table" in results[1]["error"] and "integer action_id" in results[2]["error"]
    assert "unknown tool" in results[3]["error"]
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "simulate_action"
    inspected = json.loads(last["messages"][-1]["content"])
    assert inspected["action_id"] == slots[1] and "later_operations" in inspected  # L2 details
    assert "machine_bottleneck" not in inspected  # an L3 detail


def test_tools_mode_requires_an_answer_after_max_rounds(server: ChatServer) -> None:
    agent = agent_for(server, mode="tools", max_tool_rounds=1)
    env, obs, info, slots = first_decision(agent)
    server.push({"tool_calls": [("simulate_action", {"action_id": slots[0]})]}, {"content": None})
    rule = RuleAgent(DEFAULTS["weighted_tardiness"][0])  # the default fallback: the lookahead's base rule
    rule.reset(env)
    assert agent.act(obs, info) == rule.act(obs, info)
    assert server.requests == 2 and server.bodies[1]["tool_choice"] == "none"  # the last round: answer now
    assert server.bodies[1]["response_format"]["type"] == "json_schema"
    assert agent.log[0].reason == "empty" and agent.usage["fallback_empty"] == 1


def test_a_tool_call_in_the_last_round_is_answered_before_reflection(server: ChatServer) -> None:
    """A server that calls a tool despite tool_choice="none": the call gets an error reply, so the reflection's
    conversation has no unanswered call (OpenAI-compatible servers refuse one)."""
    agent = agent_for(server, mode="tools", max_tool_rounds=1, refinement="reflection", reflection_rounds=1)
    _env, obs, info, slots = first_decision(agent)
    call = {"tool_calls": [("simulate_action", {"action_id": slots[0]})]}
    server.push(call, {**call, **answer(slots[0])}, answer(slots[1]))
    assert agent.act(obs, info) == slots[1]
    messages = server.bodies[2]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "assistant", "tool", "user"]
    assert messages[5]["tool_call_id"] == messages[4]["tool_calls"][0]["id"]
    assert "no tool rounds left" in json.loads(messages[5]["content"])["error"] and agent.usage["tool_calls"] == 2


def test_tool_calls_of_the_last_round_are_counted(server: ChatServer) -> None:
    """Calls a server makes despite tool_choice="none" were left out of tool_calls (those of earlier rounds, also
    ones answered with an error, were counted): the record, usage and episode_usage count every call made."""
    agent = agent_for(server, mode="tools", max_tool_rounds=1)
    _env, obs, info, slots = first_decision(agent)
    server.push({"tool_calls": [("simulate_action", {"action_id": slots[0]})]},
                {"tool_calls": [("simulate_action", {"action_id": slots[0]}), ("dance", {})], **answer(slots[1])})
    assert agent.act(obs, info) == slots[1]
    assert server.requests == 2 and server.bodies[1]["tool_choice"] == "none"
    assert agent.log[0].tool_calls == agent.usage["tool_calls"] == agent.episode_usage["tool_calls"] == 3


# ------------------------------------------------------------------------------------------ refinement
def test_reflection_shows_the_answer_and_takes_the_revised_one(server: ChatServer) -> None:
    agent = agent_for(server, refinement="reflection", reflection_rounds=2)
    _env, obs, info, slots = first_decision(agent)
    server.push(answer(slots[0]), answer(slots[2]), {"content": "I am not sure"})
    assert agent.act(obs, info) == slots[2]  # the last valid answer
    second, third = server.bodies[1], server.bodies[2]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant", "user"]
    assert f"Review your choice, action {slots[0]}" in second["messages"][-1]["content"]
    assert second["temperature"] == 0.3 and len(third["messages"]) == 6
    assert agent.usage["invalid_answers"] == 1 and agent.usage["fallbacks"] == 0


def test_reflection_repairs_an_invalid_answer(server: ChatServer) -> None:
    agent = agent_for(server, refinement="reflection")
    _env, obs, info, slots = first_decision(agent)
    server.push(answer(999), answer(slots[1]))
    assert agent.act(obs, info) == slots[1]
    assert "rejected (illegal_action" in server.bodies[1]["messages"][-1]["content"]


def test_reflection_reviews_the_last_answer_and_keeps_the_last_reason(server: ChatServer) -> None:
    """Each round shows the model its latest answer (a rejected one as rejected, though an earlier one was valid);
    with no valid answer the fallback gives the last round's reason."""
    agent = agent_for(server, refinement="reflection", reflection_rounds=2)
    _env, obs, info, slots = first_decision(agent)
    server.push(answer(slots[0]), {"content": "{"}, {"content": ""})
    assert agent.act(obs, info) == slots[0]
    assert "rejected (invalid_json" in server.bodies[2]["messages"][-1]["content"]
    agent = agent_for(server, refinement="reflection")
    _env, obs, info, slots = first_decision(agent)
    server.push(answer(999), {"content": "{"})
    agent.act(obs, info)
    assert agent.log[0].reason == "invalid_json"


def test_best_of_n_majority_vote_with_distinct_seeds(server: ChatServer) -> None:
    # three concurrent requests: on a loaded machine one can pass the default test timeout of 0.5 s, and its retry
    # then takes another sample's scripted answer (failed once in the suite on 2 cores while kernels compiled)
    agent = agent_for(server, refinement="best-of-n", samples=3, seed=10, timeout=5.0)
    _env, obs, info, slots = first_decision(agent)
    server.push(answer(slots[0]), answer(slots[1]), answer(slots[1]))
    assert agent.act(obs, info) == slots[1]
    assert sorted(b["seed"] for b in server.bodies) == [10, 11, 12]
    assert {(b["temperature"], b["top_p"]) for b in server.bodies} == {(0.7, 0.95)}
    assert agent.log[0].votes == {slots[0]: 1, slots[1]: 2}


def test_best_of_n_without_a_seed_replays_each_sample_from_the_cache(server: ChatServer, tmp_path: Path) -> None:
    """The samples share one request; each is cached apart (they shared one key: the replay voted one sample's
    answer three times, and with one request at a time only one was ever asked)."""
    options = {"refinement": "best-of-n", "samples": 3, "seed": None, "max_concurrency": 1, "cache": True,
               "cache_dir": str(tmp_path)}
    agent = agent_for(server, **options)
    _env, obs, info, slots = first_decision(agent)
    server.push(answer(slots[0]), answer(slots[1]), answer(slots[1]))
    assert agent.act(obs, info) == slots[1] and server.requests == 3
    again = agent_for(server, **options)
    _env, obs, info, _slots = first_decision(again)
    assert again.act(obs, info) == slots[1] and server.requests == 3
    assert again.log[0].votes == agent.log[0].votes == {slots[0]: 1, slots[1]: 2}


def test_best_of_n_tie_goes_to_the_better_rollout(server: ChatServer) -> None:
    agent = agent_for(server, refinement="best-of-n", samples=3, timeout=5.0)  # concurrent: as above
    env, obs, info, slots = first_decision(agent, static_instance())
    a, b = slots[0], slots[-1]
    server.push(answer(a), answer(b), {"content": "{"})
    expected = min((a, b), key=lambda s: (rollout_estimate(s, env), s))
    assert rollout_estimate(a, env) != rollout_estimate(b, env)
    assert agent.act(obs, info) == expected


def test_best_of_n_without_a_valid_answer_falls_back_with_the_commonest_reason(server: ChatServer) -> None:
    agent = agent_for(server, refinement="best-of-n", samples=3, max_concurrency=1)  # the samples in order
    _env, obs, info, _slots = first_decision(agent)
    server.push({"content": "{"}, {"content": "{"}, answer(999))
    agent.act(obs, info)
    assert agent.log[0].reason == "invalid_json" and agent.usage["invalid_answers"] == 3


def test_best_of_n_respects_the_concurrency_limit(server: ChatServer) -> None:
    for limit in (1, 4):
        server.max_in_flight = 0
        # a loaded machine (the suite on 2 cores) can take a 0.15 s answer past the default test timeout of 0.5 s
        agent = agent_for(server, refinement="best-of-n", samples=4, max_concurrency=limit, timeout=5.0)
        _env, obs, info, slots = first_decision(agent)
        server.push(*[{"sleep": 0.15, **answer(slots[0])}] * 4)
        assert agent.act(obs, info) == slots[0]
        assert server.max_in_flight == 1 if limit == 1 else server.max_in_flight >= 2


# ------------------------------------------------------------------------------------------ fallbacks
@pytest.mark.parametrize(("reply", "reason"), [
    ({"content": '{"action_id": '}, "invalid_json"), ({"content": "the second one"}, "invalid_json"),
    ({"content": '{"action_id": 999}'}, "illegal_action"), ({"content": ""}, "empty"), ({"content": None}, "empty"),
    ({"sleep": 1.0, "content": "late"}, "error"), ({"status": 500}, "error"),
])
def test_bad_answers_fall_back_to_the_rule_and_are_counted(server: ChatServer, reply: dict, reason: str) -> None:
    agent = agent_for(server, fallback="EDD:EET", max_retries=0)
    env, obs, info, _slots = first_decision(agent)
    server.push(reply)
    rule = RuleAgent("EDD:EET")
    rule.reset(env)
    assert agent.act(obs, info) == rule.act(obs, info)
    usage = agent.usage
    assert (usage["fallbacks"], usage[f"fallback_{reason}"], usage["decisions"]) == (1, 1, 1)
    assert agent.log[0].source == "fallback" and agent.log[0].reason == reason
    assert usage["errors"] == (reason == "error")


def test_a_fallback_says_when_the_reply_was_cut_off_refused_or_a_tool_call(server: ChatServer) -> None:
    """A reply cut at max_tokens was explained only as 'no JSON object with an action_id in ...', and tool calls
    in the last round or a refusal (OpenAI's structured outputs: no content) as 'the model returned no text'."""
    agent = agent_for(server, mode="cot", max_tokens=64)
    _env, obs, info, slots = first_decision(agent)
    server.push({"content": '{"reasoning": "First, job J0 is', "finish_reason": "length"})
    agent.act(obs, info)
    assert agent.log[-1].reason == "invalid_json"
    assert "cut off at max_tokens=64: finish_reason length" in agent.log[-1].detail
    agent = agent_for(server, mode="tools", max_tool_rounds=1)
    _env, obs, info, slots = first_decision(agent)
    call = {"tool_calls": [("simulate_action", {"action_id": slots[0]})]}
    server.push(call, call)
    agent.act(obs, info)
    assert agent.log[-1].reason == "empty" and "called 1 tool(s) where an answer was required" in agent.log[-1].detail
    agent = agent_for(server)
    _env, obs, info, slots = first_decision(agent)
    server.push({"content": None, "refusal": "I cannot help with that."})
    agent.act(obs, info)
    assert agent.log[-1].reason == "empty" and "refused: 'I cannot help with that.'" in agent.log[-1].detail


def test_429_then_success_and_500s_are_retried(server: ChatServer) -> None:
    agent = agent_for(server, max_retries=2)
    _env, obs, info, slots = first_decision(agent)
    server.push({"status": 429}, {"status": 500}, answer(slots[1]))
    assert agent.act(obs, info) == slots[1]
    assert server.requests == 3 and agent.usage["requests"] == 3 and agent.usage["retries"] == 2
    assert agent.usage["fallbacks"] == 0


def test_a_failed_request_counts_its_latency(server: ChatServer) -> None:
    """The seconds of a request that failed after its retries, backoff included, were not counted in latency_s."""
    agent = agent_for(server, max_retries=2, backoff=0.1, max_consecutive_errors=0)
    _env, obs, info, _slots = first_decision(agent)
    server.push({"status": 500}, {"status": 500}, {"status": 500})
    agent.act(obs, info)
    assert agent.log[0].reason == "error" and agent.log[0].requests == 3
    assert agent.log[0].latency_s >= 0.3 and agent.usage["latency_s"] == agent.log[0].latency_s  # 0.1 + 0.2 backoff


def test_a_refused_request_stops_the_run(server: ChatServer) -> None:
    agent = agent_for(server)
    _env, obs, info, _slots = first_decision(agent)
    server.push({"status": 404})
    with pytest.raises(LLMConfigError, match="test-model") as refused:
        agent.act(obs, info)
    assert refused.value.stops_run  # a wrong model name: every episode would fail alike


def test_a_refused_request_is_counted(server: ChatServer) -> None:
    """A 400 (which fails that episode only, the run going on) after a 500 left both requests out of usage."""
    agent = agent_for(server, max_retries=2)
    _env, obs, info, _slots = first_decision(agent)
    server.push({"status": 500}, {"status": 400})
    with pytest.raises(LLMConfigError, match="HTTP 400") as refused:
        agent.act(obs, info)
    assert not refused.value.stops_run
    usage = agent.usage
    assert (usage["requests"], usage["retries"], usage["errors"]) == (server.requests, 1, 1) == (2, 1, 1)
    assert usage["latency_s"] > 0


def test_an_unreachable_endpoint_stops_the_episode_after_consecutive_failed_decisions() -> None:
    """Nothing listens on port 9: each decision's request fails; the third failed decision in a row stops the
    episode instead of letting the fallback rule play all of it as if it were the model."""
    agent = make("llm", model="test-model", base_url="http://127.0.0.1:9/v1", cache=False, timeout=0.5,
                 max_retries=0)
    with pytest.raises(LLMUnavailableError, match=r"127\.0\.0\.1:9/v1 failed 3 decisions in a row .*test-model"):
        run_episode(agent, env_of(), seed=0)
    usage = agent.episode_usage
    assert usage["fallback_error"] == usage["errors"] == 3
    assert [r.reason for r in agent.log if r.source != "single"] == ["error"] * 3
    assert LLMUnavailableError.stops_run  # scripts.evaluate stops the run on it
    patient = make("llm", model="test-model", base_url="http://127.0.0.1:9/v1", cache=False, timeout=0.5,
                   max_retries=0, max_consecutive_errors=0)  # 0: never stop, every decision falls back
    schedule = run_episode(patient, env_of(), seed=0)
    assert schedule.finished and patient.episode_usage["fallback_error"] > 3
    with pytest.raises(ValueError, match="max_consecutive_errors must be an integer >= 0, got -1"):
        make("llm", model="m", cache=False, max_consecutive_errors=-1)


def test_the_prompt_version_enters_the_config(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stored episodes are found by the agent's config hash: a prompt change (a new ``PROMPT_VERSION``)
    must give a new hash, or rows played with the old prompts would be reused."""
    from dynasched_gym.agents.llm import agent as agent_module
    from dynasched_gym.results import config_hash

    before = make("llm", model="m", cache=False, level="L3").config()
    monkeypatch.setattr(agent_module, "PROMPT_VERSION", agent_module.PROMPT_VERSION + 1)
    after = make("llm", model="m", cache=False, level="L3").config()
    assert after["prompt_version"] == before["prompt_version"] + 1
    assert config_hash(after) != config_hash(before)


def test_sampling_settings_are_checked_and_whole_numbers_configure_as_floats() -> None:
    """``temperature=0`` is the agent of ``temperature=0.0`` (the same config, so the same result rows); a
    value the endpoint would refuse mid-episode is refused when the agent is built."""
    from dynasched_gym.results import config_hash

    as_int = make("llm", model="m", cache=False, temperature=0, sample_temperature=1, sample_top_p=1)
    as_float = make("llm", model="m", cache=False, temperature=0.0, sample_temperature=1.0, sample_top_p=1.0)
    assert config_hash(as_int.config()) == config_hash(as_float.config())
    assert type(as_int.config()["temperature"]) is float
    for bad, error, message in (
            (dict(temperature="hot"), TypeError, "temperature must be a finite number >= 0, got 'hot'"),
            (dict(top_p=0), ValueError, r"top_p must be a finite number in \(0, 1\], got 0"),
            (dict(seed=1.5), TypeError, "seed must be an integer >= 0, got 1.5"),
            (dict(max_tokens=0), ValueError, "max_tokens must be an integer >= 1, got 0")):
        with pytest.raises(error, match=message):
            make("llm", model="m", cache=False, **bad)


def test_failed_decisions_that_are_not_consecutive_do_not_stop_the_episode(server: ChatServer) -> None:
    failing = {0, 2, 4}  # requests answered with a 500: never two in a row

    def flaky(body: dict[str, Any]) -> dict[str, Any]:
        return {"status": 500} if server.requests - 1 in failing else first_id(body)

    server.responder = flaky
    agent = agent_for(server, max_retries=0, ask_single=False, max_consecutive_errors=2)
    schedule = run_episode(agent, env_of(), seed=0)
    assert schedule.finished and validate_schedule(schedule).ok
    asked = [r.reason for r in agent.log if r.source != "single"]
    assert asked[:6] == ["error", None, "error", None, "error", None] and agent.episode_usage["fallback_error"] == 3


def test_failed_decisions_in_a_row_are_counted_per_episode(server: ChatServer) -> None:
    """A failed decision at the end of one episode and one at the start of the next are not in a row."""
    agent = agent_for(server, max_retries=0, max_consecutive_errors=2)
    for _ in range(2):
        _env, obs, info, _slots = first_decision(agent)
        server.push({"status": 500})
        agent.act(obs, info)
        assert agent.log[-1].reason == "error"


# ------------------------------------------------------------------------------------------ accounting
def test_tokens_are_the_servers_usage_and_the_cache_makes_no_request(server: ChatServer, tmp_path: Path) -> None:
    cache = tmp_path / "llm-cache"
    agent = agent_for(server, cache=True, cache_dir=str(cache))
    env, obs, info, slots = first_decision(agent)
    server.push({**answer(slots[0]), "usage": (100, 7)}, {**answer(slots[0]), "usage": (120, 9)},
                {**answer(slots[0]), "usage": (80, 5)})
    for _ in range(3):
        obs, _, _, _, info = env.step(agent.act(obs, info))
    usage = agent.episode_usage
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (300, 21, 321)
    assert agent.token_usage() == {"prompt": 300, "completion": 21, "total": 321}
    assert [r.prompt_tokens for r in agent.log] == [100, 120, 80] and usage["requests"] == 3
    # the same three decisions again, with a new agent on the same cache: no request, the same tokens
    again = agent_for(server, cache=True, cache_dir=str(cache))
    env, obs, info, _ = first_decision(again)
    for _ in range(3):
        obs, _, _, _, info = env.step(again.act(obs, info))
    assert server.requests == 3
    assert (again.usage["cache_hits"], again.usage["requests"], again.usage["prompt_tokens"]) == (3, 0, 300)
    assert again.usage["retries"] == 0


def _play(agent: LLMAgent, decisions: int) -> list[warnings.WarningMessage]:
    """Play ``decisions`` asked decisions of a fresh episode; the warnings they gave."""
    env, obs, info, _ = first_decision(agent)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(decisions):
            obs, _, _, _, info = env.step(agent.act(obs, info))
    assert [r.source for r in agent.log] == ["llm"] * decisions
    return caught


def test_a_cache_that_cannot_be_written_warns_once_and_the_episode_goes_on(server: ChatServer, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A failed write of the response cache (a read-only or full cache_dir) raised OSError and ended the episode,
    the completion already paid for; the cache is an optimisation, so it warns once, naming it, and plays on."""
    blocked = tmp_path / "not-a-folder"  # a cache_dir that even root cannot write into
    blocked.write_text("")
    caught = _play(agent_for(server, cache=True, cache_dir=str(blocked)), 3)
    assert len(caught) == 1 and issubclass(caught[0].category, RuntimeWarning) and server.requests == 3
    assert re.search(rf"response cache {re.escape(str(blocked))} .*Errno", str(caught[0].message))
    cache = tmp_path / "full"
    _play(agent_for(server, cache=True, cache_dir=str(cache)), 1)
    stored = sorted(p for p in cache.rglob("*") if p.is_file())
    assert len(stored) == 1

    def full(path: Path, text: str, *args: Any, **kwargs: Any) -> int:
        with open(path, "w") as f:  # half written, then the disk is full
            f.write(text[:len(text) // 2])
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(Path, "write_text", full)
    caught = _play(agent_for(server, cache=True, cache_dir=str(cache)), 3)  # the first decision is read from it
    assert len(caught) == 1 and "No space left on device" in str(caught[0].message) and server.requests == 3 + 1 + 2
    assert sorted(p for p in cache.rglob("*") if p.is_file()) == stored  # no partial file left


def test_config_hides_the_key_and_bad_settings_name_the_field(server: ChatServer,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECRET_LLM_KEY", "sk-do-not-leak")
    agent = agent_for(server, api_key_env="SECRET_LLM_KEY")
    _env, obs, info, _slots = first_decision(agent)
    agent.act(obs, info)
    assert server.auth[-1] == "Bearer sk-do-not-leak"
    assert "sk-do-not-leak" not in json.dumps(agent.config()) + repr(agent.client)
    assert agent.name == "llm:L2" and not agent.clairvoyant
    assert make("llm", model="m", level="oracle", cache=False).clairvoyant
    for field, value in (("level", "L4"), ("mode", "react"), ("refinement", "beam"), ("max_rows", 0),
                         ("response_format", "xml"), ("samples", 0), ("fallback", "NOPE:EET"),
                         ("prune_rules", ["SPT", "NOPE"]), ("rollout_rules", ["NOPE:EET"])):
        with pytest.raises(ValueError, match="unknown rule" if field.endswith(("fallback", "rules")) else field):
            make("llm", model="m", cache=False, **{field: value})
    for field, value in (("ask_single", "yes"), ("priors", ["hard"])):  # accepted: "yes" is true, a list failed later
        with pytest.raises(TypeError, match=field):
            make("llm", model="m", cache=False, **{field: value})


@pytest.mark.parametrize(("priors", "entry"), [
    ({"target_ranges": {"utilization": None}}, "'target_ranges'"), ({"target_ranges": {"u": ["low", 1]}},
                                                                     "'target_ranges'"),
    ({"event_rates": {"breakdown": {"mean": 1}}}, "'event_rates'"), ({"ssi": "high"}, "'ssi'"),
    ({"ssi_band": 50}, "'ssi_band'"), ({"ssi": float("nan")}, "'ssi'"), ({"size": float("inf")}, "'size'"),
    ({3: "x"}, "3"),
])
def test_priors_the_prompt_cannot_show_are_refused_naming_the_entry(server: ChatServer, priors: dict, entry: str
                                                                    ) -> None:
    """They were accepted and failed in the first L3 prompt (a TypeError out of the number formatting naming
    nothing), or in the config's hash (NaN)."""
    with pytest.raises((TypeError, ValueError), match=re.escape(f"priors[{entry}]")):
        agent_for(server, level="L3", priors=priors)
    agent = agent_for(server, level="L3", priors={"tier": "hard", "ssi_band": [50, 75], "target_ranges": {
        "utilization": [0.4, 0.8], "note": "x"}, "size": "small", "rates": [1, 2]})
    _env, obs, info, slots = first_decision(agent)
    assert agent.act(obs, info) == slots[0]


def test_the_default_table_keeps_the_fallbacks_choice_first(server: ChatServer) -> None:
    """prune_rules None: the fallback's ranking comes first, so a one-row table holds the pair it would play."""
    agent = agent_for(server, max_rows=1, fallback="LPT:EET")
    env = env_of("mk10", max_candidates=512)
    obs, info = env.reset(seed=0)
    agent.reset(env)
    rule = RuleAgent("LPT:EET")
    rule.reset(env)
    agent.act(obs, info)
    assert obs["action_mask"].sum() > 1 and table_ids(server.bodies[-1]) == [rule.act(obs, info)]


def test_one_rule_given_as_a_string_is_one_rule(server: ChatServer) -> None:
    agent = agent_for(server, prune_rules="EDD:EET", rollout_rules="SPT")  # not split into letters
    assert (agent.prune_rules, agent.rollout_rules) == (("EDD:EET",), ("SPT",))
    assert agent.config()["prune_rules"] == ["EDD:EET"] and agent.config()["rollout_rules"] == ["SPT"]
    with pytest.raises(ValueError, match="unknown rule 'NOPE'"):
        agent_for(server, prune_rules="NOPE")


@pytest.mark.parametrize(("field", "value", "error", "message"), [
    ("fallback", "XYZ", ValueError, r"^fallback: unknown rule 'XYZ'; job rules"),
    ("fallback", 3, TypeError, r"^fallback: a rule is a name"),
    ("prune_rules", ["SPT", "XYZ:EET"], ValueError, r"^prune_rules: unknown rule 'XYZ:EET'"),
    ("prune_rules", "RANDOM", ValueError, r"^prune_rules: .*deterministic rules only.*got 'RANDOM'"),
    ("rollout_rules", ["XYZ"], ValueError, r"^rollout_rules: unknown rule 'XYZ'"),
])
def test_a_bad_rule_is_refused_naming_the_setting(field: str, value: Any, error: type, message: str) -> None:
    """"unknown rule 'XYZ'" did not say which of fallback, prune_rules and rollout_rules held it."""
    with pytest.raises(error, match=message):
        make("llm", model="m", cache=False, **{field: value})


@pytest.mark.parametrize("field", ["prune_rules", "rollout_rules"])
def test_an_empty_rule_list_is_refused_naming_the_setting(field: str) -> None:
    """[] played the defaults (as None does) while the config said [], so one agent hashed two ways; the lookahead
    agent refuses an empty rollout_rules."""
    with pytest.raises(ValueError, match=rf"{field} must name at least one rule or be None.*got \[\]"):
        make("llm", model="m", cache=False, **{field: []})


def test_configs_spell_each_rule_one_way() -> None:
    """``fallback="edd:eet"`` is the agent of ``fallback="EDD:EET"``: the same config, so one set of result rows (the
    configs held the spellings given, and hashed apart). A job rule alone is ``JOB:EET`` as the fallback (a rule
    agent's rule) and stays alone among the prune and rollout rules (there it takes the fallback's machine rule).
    Canonical spellings keep the config, and so the hash, that stored rows were keyed by."""
    from dynasched_gym.results import config_hash

    canonical = make("llm", model="m", cache=False, fallback="EDD:EET", prune_rules=["SPT", "EDD:LWL"],
                     rollout_rules="ATC").config()
    # as before the spellings were normalised (818adb6fed0abb69 and 342840d83a9edc7c at prompt_version 2,
    # b85808d0369ce5d5 and 0276f1dc8002cf2f at 3, f53a78a3ca7651a8 and 7b95f67eae5ea30b at 4, ada2464980ebcc23 and
    # 0050822f4652c301 at 5, 0d2435edbb145457 and 2f09f4fe7991957a at 6)
    assert config_hash(canonical) == "f9bd5c618323faa8"
    assert config_hash(make("llm", model="m", cache=False).config()) == "39c93e2144c00713"
    for fallback, prune, rollouts in (("edd:eet", ["spt", "edd:lwl"], "atc"), ("EDD", ("Spt", "EDD:lwl"), ["ATC"])):
        assert make("llm", model="m", cache=False, fallback=fallback, prune_rules=prune,
                    rollout_rules=rollouts).config() == canonical
    assert make("llm", model="m", cache=False, fallback="").config()["fallback"] is None  # the default, as None


# ------------------------------------------------------------------------------------------ episodes
@pytest.mark.parametrize(("mode", "refinement"), [("direct", "greedy"), ("cot", "best-of-n")])
def test_an_llm_agent_plays_a_valid_episode(server: ChatServer, mode: str, refinement: str) -> None:
    agent = agent_for(server, level="L3", mode=mode, refinement=refinement, samples=2, ask_single=False)
    schedule = run_episode(agent, env_of(), seed=0)
    assert schedule.finished and validate_schedule(schedule).ok
    usage = agent.episode_usage
    assert usage["decisions"] == schedule.decisions == len(agent.log) and usage["fallbacks"] == 0
    single = [r for r in agent.log if r.source == "single"]  # one pair: played without a request
    asked = [r for r in agent.log if r.source == "llm"]
    assert single and usage["single_candidate"] == len(single) and len(asked) + len(single) == schedule.decisions
    step = 2 if refinement == "best-of-n" else 1
    assert usage["requests"] == len(asked) * step == server.requests
    assert usage["prompt_tokens"] == 50 * server.requests and all(r.requests == 0 for r in single)
    assert [r.action for r in asked] == [table_ids(b)[0] for b in server.bodies[::step]]
    again = run_episode(agent, env_of(), seed=1)  # episode counters restart, cumulative ones go on
    assert agent.episode_usage["decisions"] == again.decisions == len(agent.log)
    assert agent.episode_usage["total_tokens"] == 55 * len(asked) * step
    assert agent.usage["decisions"] == schedule.decisions + again.decisions


def test_an_episode_with_no_decision_makes_no_request(server: ChatServer) -> None:
    """Every job cancelled before its release: the one step that ends the episode offers no pair. The agent asked
    about an empty table anyway (its schema an empty enum), counting a decision and a fallback the schedule lacks."""
    inst = dynasched_gym.Instance.build("empty", [dynasched_gym.Machine("M0")],
                                        [dynasched_gym.Job("J0", [{0: 2.0}], release=5.0)],
                                        [dynasched_gym.Event(1.0, dynasched_gym.EventType.CANCELLATION, job=0)])
    agent = agent_for(server)
    schedule = run_episode(agent, gym.make("DynaSched/DFJSP-v0", instance=inst, invalid_action="raise"), seed=0)
    assert schedule.finished and schedule.decisions == 0
    assert server.requests == 0 and agent.log == [] and agent.episode_usage["decisions"] == 0


def test_reflection_keeps_its_answer_when_the_endpoint_gives_up(server: ChatServer) -> None:
    agent = agent_for(server, refinement="reflection", reflection_rounds=2, max_retries=0)
    _env, obs, info, slots = first_decision(agent)
    server.push(answer(slots[1]), {"status": 503})
    assert agent.act(obs, info) == slots[1] and server.requests == 2  # no round after the endpoint gave up
    assert agent.usage["errors"] == 1 and agent.usage["fallbacks"] == 0


def test_each_episode_shows_its_own_priors(server: ChatServer) -> None:
    """One agent, an episode of a stated tier, then one of none: the second episode's prompts show no priors."""
    agent = agent_for(server, level="L3")
    for tier, shown in (("hard", "(its tier's band), tier hard"), (None, "Design priors: none known")):
        env = env_of(**({"tier": tier, "size": "small"} if tier else {}))
        obs, info = env.reset(seed=0)
        agent.reset(env)
        agent.act(obs, info)
        assert shown in server.bodies[-1]["messages"][0]["content"]


def test_the_rule_selection_env_is_refused(server: ChatServer) -> None:
    env = gym.make("DynaSched/DFJSP-Rules-v0", instance=dynamic_instance())
    env.reset(seed=0)
    with pytest.raises(ValueError, match="DFJSP-Rules-v0"):
        agent_for(server).reset(env)
