"""The LLM dispatching agent: prompt at an observability level, reason in a mode, refine, parse, fall back.

One decision (:meth:`LLMAgent.act`):

1. :func:`~dynasched_gym.agents.llm.prompts.observe` reads the env's simulator (pruning the
   candidate table to ``max_rows``) and :func:`~dynasched_gym.agents.llm.prompts.messages` writes
   the system and user messages for ``level`` and ``variant``.
2. The mode: ``direct`` (answer JSON at once), ``cot`` (a ``reasoning`` string, then the id) or
   ``tools`` (the model may call ``simulate_action`` / ``inspect_action``, :mod:`.tools`, for up to
   ``max_tool_rounds`` rounds; the last round forbids tools).
3. The refinement: ``greedy`` (one answer at ``temperature``), ``reflection``
   (``reflection_rounds`` more turns showing the model its answer, or why it was rejected, at
   ``reflection_temperature``; the last valid answer wins) or ``best-of-n`` (``samples``
   conversations in parallel at ``sample_temperature`` / ``sample_top_p`` with seeds
   ``seed + i``; majority vote over the valid answers, ties broken by the ``simulate_action``
   estimate, then the lower id).
4. An answer is parsed by :func:`~dynasched_gym.agents.llm.parsing.parse_answer`. When no valid
   answer comes (empty, invalid JSON, an illegal id, or the request failed after its retries) the
   ``fallback`` rule plays and the reason is counted. After ``max_consecutive_errors`` decisions of an
   episode in a row whose requests failed, :class:`~.client.LLMUnavailableError` stops the episode: the
   endpoint is down, and a schedule of fallback decisions would pass for the model's.

Accounting: :attr:`LLMAgent.usage` (cumulative since construction), :attr:`LLMAgent.episode_usage`
(since the last :meth:`~LLMAgent.reset`) and :attr:`LLMAgent.log` (one :class:`DecisionRecord`
per decision of the episode): HTTP requests, retries, errors, cache hits, prompt and completion
tokens (the server's ``usage``), prompt characters, tool calls (every call the model made, the last round's
too), invalid answers, fallbacks by reason and latency.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from dynasched_gym.agents.base import Agent
from dynasched_gym.agents.llm.client import ChatClient, Completion, LLMConfigError, LLMError, LLMUnavailableError
from dynasched_gym.agents.llm.parsing import REASONS, Answer, answer_schema, parse_answer
from dynasched_gym.agents.llm.prompts import (
    LEVELS,
    MODES,
    PROMPT_VERSION,
    VARIANT_LEVEL,
    VARIANTS,
    MachineStats,
    View,
    agent_name,
    check_priors,
    design_priors,
    messages,
    observe,
)
from dynasched_gym.agents.llm.tools import Toolbox
from dynasched_gym.agents.lookahead import DEFAULTS, rule_codes
from dynasched_gym.agents.rules import RuleAgent
from dynasched_gym.checks import check_bool, check_choice, check_integer, check_real
from dynasched_gym.core.rules import MACHINE_RULES, parse_deterministic_rule, parse_rule, rule_list, rule_name
from dynasched_gym.envs.dfjsp.episodes import instance_ssi
from dynasched_gym.metrics import OBJECTIVES

REFINEMENTS = ("greedy", "reflection", "best-of-n")
RESPONSE_FORMATS = ("json_schema", "json_object", "text")
#: Counters of :attr:`LLMAgent.usage` (all numbers; ``latency_s`` in seconds).
USAGE_FIELDS = ("decisions", "single_candidate", "requests", "retries", "errors", "cache_hits", "prompt_tokens",
                "completion_tokens", "total_tokens", "prompt_chars", "tool_calls", "invalid_answers", "fallbacks",
                *(f"fallback_{r}" for r in REASONS), "latency_s")


@dataclass
class DecisionRecord:
    """The cost and outcome of one decision."""

    time: float
    action: int = -1
    source: str = "llm"  # "llm", "fallback" or "single" (one candidate, played without asking)
    reason: str | None = None  # why it fell back (parsing.REASONS)
    detail: str = ""
    reasoning: str | None = None
    votes: dict[int, int] = field(default_factory=dict)
    requests: int = 0
    retries: int = 0
    errors: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_chars: int = 0  # characters of the messages sent (a tokenizer-free prompt length)
    tool_calls: int = 0
    invalid_answers: int = 0
    latency_s: float = 0.0


class LLMAgent(Agent):
    """Dispatch by asking a chat model (any OpenAI-compatible endpoint); see the module docstring and docs/llm.md.

    Args:
        model: the model name the server knows (``Qwen/Qwen2.5-7B-Instruct``, ``llama3.1:8b``, ``gpt-4o-mini``).
        base_url: the endpoint root (``http://localhost:8000/v1`` vLLM, ``http://localhost:11434/v1`` Ollama);
            ``None``: the openai client's default.
        api_key_env: NAME of the environment variable holding the key (never logged or stored).
        level: observability level ``L1 | L2 | L3 | oracle`` (:mod:`.prompts`); ``oracle`` makes the agent
            clairvoyant (a reference, never ranked).
        variant: prompt ablation ``none | padded | priors | priors_tagged`` (padded and priors need L2,
            priors_tagged L3).
        mode: ``direct | cot | tools``.
        refinement: ``greedy | reflection | best-of-n``.
        fallback: the ``JOB:MACHINE`` rule played when no valid answer comes; ``None``: the lookahead's
            base rule for the objective (``ATC:LWL`` for (weighted) tardiness, ``MWKR:EET`` makespan,
            ``SPT:EET`` flow time).
        objective: the objective stated in the prompt; ``None``: the env's.
        max_rows: most candidate rows in a prompt (pruning: :mod:`.prompts`).
        prune_rules: rules whose choices and rankings choose the rows kept (``JOB:MACHINE``, or a job rule
            with the fallback's machine rule; one string is one rule); ``None``: the fallback, SPT, EDD, MWKR,
            FIFO.
        rollout_rules: rules of the ``simulate_action`` rollouts (``JOB:MACHINE``, or a job rule with the
            fallback's machine rule; one string is one rule); ``None``: the lookahead's for the objective.
        future_events: events listed at the ``oracle`` level.
        priors: design priors shown at L3 instead of those of the episode's tier.
        temperature, top_p, max_tokens, seed: sampling of greedy and reflection requests (None: not sent).
        response_format: ``json_schema`` (the answer schema with the legal ids), ``json_object`` or ``text``.
        samples, sample_temperature, sample_top_p: best-of-n.
        reflection_rounds, reflection_temperature: reflection.
        max_tool_rounds: rounds of tool calls before the answer is required (tools mode).
        ask_single: ask the model also when only one pair can start (else it is played without a request
            and counted in ``single_candidate``).
        timeout, max_retries, backoff, max_concurrency, cache, cache_dir: the client (:class:`.client.ChatClient`).
        max_consecutive_errors: decisions of an episode in a row whose requests failed (after their retries)
            before :class:`~.client.LLMUnavailableError` stops the episode; 0: never (every failed decision
            falls back to the rule). Not part of :meth:`config` (it changes no decision that is kept).
    """

    def __init__(self, model: str, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 level: str = "L2", variant: str = "none", mode: str = "direct", refinement: str = "greedy",
                 fallback: str | None = None, objective: str | None = None, max_rows: int = 20,
                 prune_rules: Sequence[str] | None = None, rollout_rules: Sequence[str] | None = None,
                 future_events: int = 25, priors: Mapping[str, Any] | None = None, temperature: float | None = 0.0,
                 top_p: float | None = None, max_tokens: int | None = 1024, seed: int | None = 0,
                 response_format: str = "json_schema", samples: int = 5, sample_temperature: float = 0.7,
                 sample_top_p: float = 0.95, reflection_rounds: int = 1, reflection_temperature: float = 0.3,
                 max_tool_rounds: int = 3, ask_single: bool = False, timeout: float = 60.0, max_retries: int = 4,
                 backoff: float = 1.0, max_concurrency: int = 4, cache: bool = True, cache_dir: str | None = None,
                 max_consecutive_errors: int = 3) -> None:
        check_choice("level", level, LEVELS)
        check_choice("variant", variant, VARIANTS)
        check_choice("mode", mode, MODES)
        check_choice("refinement", refinement, REFINEMENTS)
        check_choice("response_format", response_format, RESPONSE_FORMATS)
        if variant != "none" and level != VARIANT_LEVEL[variant]:
            raise ValueError(f"variant {variant!r} is defined at level {VARIANT_LEVEL[variant]!r}, got level {level!r}")
        if objective is not None:
            check_choice("objective", objective, OBJECTIVES)
        priors = None if priors is None else check_priors(priors)
        max_rows, future_events, samples, reflection_rounds, max_tool_rounds, max_consecutive_errors = (
            check_integer(name, value, minimum) for name, value, minimum in (
                ("max_rows", max_rows, 1), ("future_events", future_events, 0), ("samples", samples, 1),
                ("reflection_rounds", reflection_rounds, 1), ("max_tool_rounds", max_tool_rounds, 1),
                ("max_consecutive_errors", max_consecutive_errors, 0)))
        temperature, top_p = (None if value is None else check_real(name, value, *bounds) for name, value, bounds in (
            ("temperature", temperature, (0.0,)), ("top_p", top_p, (0.0, 1.0, True))))
        max_tokens, seed = (None if value is None else check_integer(name, value, minimum)
                            for name, value, minimum in (("max_tokens", max_tokens, 1), ("seed", seed, 0)))
        sample_temperature, reflection_temperature = (check_real(name, value, 0.0) for name, value in (
            ("sample_temperature", sample_temperature), ("reflection_temperature", reflection_temperature)))
        sample_top_p = check_real("sample_top_p", sample_top_p, 0.0, 1.0, open_low=True)
        prune_rules, rollout_rules = (None if rules is None else rule_list(rules)
                                      for rules in (prune_rules, rollout_rules))
        for name, rules in (("prune_rules", prune_rules), ("rollout_rules", rollout_rules)):
            if rules == ():  # it played the defaults, as None does, under a config of its own
                raise ValueError(f"{name} must name at least one rule or be None (the defaults), got []")
        # fail now on a bad name, not in the first episode, and say which setting holds it; the ranking and rollout
        # rules order the table's rows and roll out: their results must repeat
        deterministic = functools.partial(parse_deterministic_rule, use="ranking and rollout rules")
        for name, rules, parse in (("fallback", (fallback,) if fallback else (), parse_rule),
                                   ("prune_rules", prune_rules or (), deterministic),
                                   ("rollout_rules", rollout_rules or (), deterministic)):
            try:
                for rule in rules:
                    parse(rule)
            except (TypeError, ValueError) as exc:
                raise type(exc)(f"{name}: {exc}") from None
        # one spelling per rule, so that configs (and result rows) of the same agent hash alike
        fallback = rule_name(fallback) if fallback else None
        self.prune_rules, self.rollout_rules = (
            None if rules is None else tuple(rule_name(r, alone=True) for r in rules)
            for rules in (prune_rules, rollout_rules))
        self.client = ChatClient(model, base_url, api_key_env, timeout, max_retries, backoff,
                                 max_concurrency=max_concurrency, cache_dir=cache_dir, cache=cache)
        self.model, self.base_url, self.level, self.variant = model, base_url, level, variant
        self.mode, self.refinement, self.fallback, self.objective = mode, refinement, fallback, objective
        self.max_rows, self.future_events, self.priors = max_rows, future_events, priors
        self.sampling = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens, "seed": seed}
        self.response_format = response_format
        self.samples, self.sample_temperature, self.sample_top_p = samples, sample_temperature, sample_top_p
        self.reflection_rounds, self.reflection_temperature = reflection_rounds, reflection_temperature
        self.max_tool_rounds, self.ask_single = max_tool_rounds, check_bool("ask_single", ask_single)
        self.max_consecutive_errors = max_consecutive_errors
        self._consecutive_errors = 0  # decisions in a row (this episode) whose requests failed
        self.name = agent_name(level, variant)
        self.clairvoyant = level == "oracle"
        self._usage: dict[str, float] = dict.fromkeys(USAGE_FIELDS, 0)
        self._lock = threading.Lock()
        self._at_reset = self.usage
        self.log: list[DecisionRecord] = []

    # ------------------------------------------------------------------------------ the interface
    def reset(self, env: gym.Env) -> None:
        super().reset(env)
        self.require_pair_env()
        objective = self.objective or self.env.config.objective
        base, rollouts = DEFAULTS[objective]
        fallback = self.fallback or base
        self._objective = objective
        self._fallback = RuleAgent(fallback)
        self._fallback.reset(env)
        machine = MACHINE_RULES[self._fallback.machine_rule]  # a job rule alone takes the fallback's machine rule
        self._prune = rule_codes(list(dict.fromkeys(self.prune_rules or (fallback, "SPT", "EDD", "MWKR", "FIFO"))),
                                 machine)
        self._toolbox = Toolbox(rule_codes(self.rollout_rules or rollouts, machine), self.level)
        instance = self.env.instance
        self._stats = MachineStats(instance.num_jobs, instance.num_machines)
        self._episode_priors: dict[str, Any] | None = None
        self._at_reset = self.usage
        self._consecutive_errors = 0
        self.log = []

    def act(self, observation: dict[str, np.ndarray], info: dict[str, Any]) -> int:
        if self._episode_priors is None:
            self._episode_priors = self._priors_of(info)
        offered = np.flatnonzero(observation["action_mask"])
        if not offered.size:  # no decision (every job went before the first): the first step ends the episode
            return 0
        record = DecisionRecord(time=self.env.now)
        if len(offered) == 1 and not self.ask_single:  # nothing to choose: no prompt, no request, no tokens
            answer = Answer(int(offered[0]))
            record.source = "single"
        else:
            view = observe(self.env, self._stats, self._objective, self.max_rows, self._prune,
                           oracle=self.level == "oracle", future_limit=self.future_events)
            chat = messages(view, self.level, self.variant, self.mode, self._episode_priors)
            try:
                answer = self._decide(view, chat, record)
            except LLMError as exc:
                answer = Answer(None, "error", str(exc))
        if answer.ok:
            action = int(answer.action_id)
        else:
            action = self._fallback.act(observation, info)
            record.source, record.reason, record.detail = "fallback", answer.reason, answer.detail
        record.action, record.reasoning = action, answer.reasoning
        with self._lock:
            self._usage["decisions"] += 1
            self._usage["single_candidate"] += record.source == "single"
            if not answer.ok:
                self._usage["fallbacks"] += 1
                self._usage[f"fallback_{answer.reason}"] += 1
        self.log.append(record)
        self._check_endpoint(record)
        return action

    def _check_endpoint(self, record: DecisionRecord) -> None:
        """Count decisions in a row whose requests failed; at ``max_consecutive_errors`` stop the episode."""
        if record.source == "single":  # no request: says nothing about the endpoint
            return
        self._consecutive_errors = self._consecutive_errors + 1 if record.reason == "error" else 0
        if self.max_consecutive_errors and self._consecutive_errors >= self.max_consecutive_errors:
            count, self._consecutive_errors = self._consecutive_errors, 0
            raise LLMUnavailableError(
                f"the LLM endpoint {self.base_url or '(the openai default)'} failed {count} decisions in a row for "
                f"model {self.model!r} (last: {record.detail}); is the server running and reachable at base_url? "
                f"(each request: timeout={self.client.timeout} s, max_retries={self.client.max_retries}; "
                f"max_consecutive_errors={self.max_consecutive_errors})")

    def config(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model, "base_url": self.base_url, "level": self.level,
                "variant": self.variant, "mode": self.mode, "refinement": self.refinement, "fallback": self.fallback,
                "objective": self.objective, "max_rows": self.max_rows,
                "prune_rules": None if self.prune_rules is None else list(self.prune_rules),
                "rollout_rules": None if self.rollout_rules is None else list(self.rollout_rules),
                "future_events": self.future_events, "priors": None if self.priors is None else dict(self.priors),
                **self.sampling, "response_format": self.response_format, "samples": self.samples,
                "sample_temperature": self.sample_temperature, "sample_top_p": self.sample_top_p,
                "reflection_rounds": self.reflection_rounds, "reflection_temperature": self.reflection_temperature,
                "max_tool_rounds": self.max_tool_rounds, "ask_single": self.ask_single,
                "prompt_version": PROMPT_VERSION}

    # ------------------------------------------------------------------------------ accounting
    @property
    def usage(self) -> dict[str, float]:
        """Cumulative counters since construction (:data:`USAGE_FIELDS`)."""
        with self._lock:
            out = dict(self._usage)
        out["total_tokens"] = out["prompt_tokens"] + out["completion_tokens"]
        return out

    @property
    def episode_usage(self) -> dict[str, float]:
        """The counters of the current (or last) episode."""
        now = self.usage
        return {k: now[k] - self._at_reset.get(k, 0) for k in now}

    def token_usage(self) -> dict[str, int]:
        """Cumulative token counts in the evaluation rows' ``tokens`` form (``prompt``, ``completion``, ``total``)."""
        u = self.usage
        return {"prompt": int(u["prompt_tokens"]), "completion": int(u["completion_tokens"]),
                "total": int(u["total_tokens"])}

    def _count(self, record: DecisionRecord, **deltas: float) -> None:
        with self._lock:
            for name, value in deltas.items():
                setattr(record, name, getattr(record, name) + value)
                self._usage[name] += value

    # ------------------------------------------------------------------------------ deciding
    def _priors_of(self, info: Mapping[str, Any]) -> dict[str, Any]:
        if self.priors is not None:
            return dict(self.priors)
        source = getattr(self.env, "source", None)
        if source is not None and source.fixed is not None and self.env.instance is source.fixed:
            tier = source.tier  # the tier the env's instance belongs to (tier=): scripts.evaluate plays pool draws so
        elif "tier" in info:
            tier = info["tier"]
        else:
            tier = source.tier if source is not None and source.fixed is None else None
        score = instance_ssi(self.env.unwrapped.instance) if self.level == "oracle" else None
        return design_priors(tier, getattr(source, "size", None), score)

    def _response_format(self, view: View) -> dict[str, Any] | None:
        if self.response_format == "json_schema":
            return {"type": "json_schema", "json_schema": {
                "name": "dispatch_decision", "strict": True, "schema": answer_schema(view.ids, self.mode == "cot")}}
        if self.response_format == "json_object":
            return {"type": "json_object"}
        return None

    def _request(self, chat: Sequence[Mapping[str, Any]], params: Mapping[str, Any], record: DecisionRecord
                 ) -> Completion:
        """One completion, its cost counted in ``record`` and :attr:`usage`."""
        self._count(record, prompt_chars=sum(len(str(m.get("content") or "")) for m in chat))
        try:
            completion = self.client.complete(chat, **params)
        except (LLMError, LLMConfigError) as exc:  # a refusal stops the episode, but its requests were sent
            self._count(record, requests=exc.attempts, retries=exc.attempts - 1, errors=1, latency_s=exc.latency_s)
            raise
        self._count(record, requests=completion.attempts, retries=max(completion.attempts - 1, 0),
                    cache_hits=int(completion.cached), prompt_tokens=completion.prompt_tokens,
                    completion_tokens=completion.completion_tokens, latency_s=completion.latency_s)
        return completion

    def _converse(self, view: View, chat: list[dict[str, Any]], params: Mapping[str, Any], record: DecisionRecord
                  ) -> tuple[Answer, list[dict[str, Any]]]:
        """Ask until an answer comes (tool rounds in ``tools`` mode); the parsed answer and the conversation."""
        chat = list(chat)
        rounds = self.max_tool_rounds + 1 if self.mode == "tools" else 1
        for k in range(rounds):
            request = dict(params)
            final = k == rounds - 1
            if self.mode == "tools":  # JSON-constrained decoding would keep the model from calling tools
                request.update(tools=self._toolbox.definitions, tool_choice="none" if final else None)
            if final:
                request["response_format"] = self._response_format(view)
            completion = self._request(chat, request, record)
            chat.append(completion.message())
            # every tool call gets its reply, also one a server makes despite tool_choice="none": a conversation
            # that goes on (reflection) with a call left unanswered is refused by OpenAI-compatible servers; and
            # every call is counted, as one answered with an error (an unknown tool, bad arguments) is
            for call in completion.tool_calls:
                chat.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(
                    {"error": "no tool rounds left in this decision: answer with the JSON"}) if final
                    else self._toolbox.call(call.name, call.arguments, self.env.simulator, view)})
            if completion.tool_calls:
                self._count(record, tool_calls=len(completion.tool_calls))
                if not final:
                    continue
            answer = parse_answer(completion.content, view.ids)
            if not answer.ok:
                self._count(record, invalid_answers=1)
                # the cause, where the text alone would hide it (a reply cut short reads as prose without JSON)
                if completion.finish_reason == "length":
                    answer = dataclasses.replace(answer, detail=f"{answer.detail} (the reply was cut off at "
                                                 f"max_tokens={request.get('max_tokens')}: finish_reason length)")
                elif completion.refusal:
                    answer = dataclasses.replace(answer, detail=f"{answer.detail} (the model refused: "
                                                 f"{completion.refusal[:200]!r})")
                elif completion.tool_calls:
                    answer = dataclasses.replace(answer, detail=f"{answer.detail} (it called "
                                                 f"{len(completion.tool_calls)} tool(s) where an answer was required)")
            return answer, chat
        raise AssertionError("unreachable")

    def _decide(self, view: View, chat: list[dict[str, Any]], record: DecisionRecord) -> Answer:
        if self.refinement == "best-of-n":
            return self._vote(view, chat, record)
        answer, chat = self._converse(view, chat, self.sampling, record)
        if self.refinement == "greedy":
            return answer
        best = answer
        for _ in range(self.reflection_rounds):
            chat.append({"role": "user", "content": self._reflection(view, answer)})
            try:
                answer, chat = self._converse(view, chat, {**self.sampling, "temperature": self.reflection_temperature},
                                              record)
            except LLMError as exc:  # the endpoint gave up: keep what the earlier rounds gave
                answer = Answer(None, "error", str(exc))
            if answer.ok or not best.ok:  # the last valid answer; with none, the last reason
                best = answer
            if answer.reason == "error":
                break
        return best

    def _reflection(self, view: View, answer: Answer) -> str:
        if not answer.ok:
            return f"Your answer was rejected ({answer.reason}: {answer.detail}). Choose one id from the table and " \
                   "answer in the required JSON format."
        row = view.row(int(answer.action_id))
        inst = view.instance
        return (f"Review your choice, action {row.action_id} (job {inst.job_names[row.job]} on "
                f"{inst.machine_names[row.machine]}), against the table and the goal. If another candidate is better, "
                "answer with it; otherwise answer with the same id. Use the required JSON format.")

    def _vote(self, view: View, chat: list[dict[str, Any]], record: DecisionRecord) -> Answer:
        seed = self.sampling["seed"]
        params = [{**self.sampling, "temperature": self.sample_temperature, "top_p": self.sample_top_p,
                   "seed": None if seed is None else seed + i, "sample": i} for i in range(self.samples)]

        def sample(p: Mapping[str, Any]) -> Answer:
            try:
                return self._converse(view, chat, p, record)[0]
            except LLMError as exc:
                return Answer(None, "error", str(exc))

        with ThreadPoolExecutor(min(self.samples, self.client.max_concurrency)) as pool:
            answers = list(pool.map(sample, params))
        votes = Counter(int(a.action_id) for a in answers if a.ok)
        record.votes = dict(votes)
        if not votes:
            reason = Counter(a.reason for a in answers).most_common(1)[0][0]
            return next(a for a in answers if a.reason == reason)
        top = max(votes.values())
        tied = sorted(a for a, n in votes.items() if n == top)
        if len(tied) > 1:
            sim = self.env.simulator
            tied.sort(key=lambda a: (self._toolbox.simulate(sim, view.row(a).job, view.row(a).machine,
                                                            view.objective), a))
        return next(a for a in answers if a.ok and a.action_id == tied[0])
