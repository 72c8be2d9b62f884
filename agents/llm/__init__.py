"""LLM scheduling agents: any OpenAI-compatible chat model as a dispatcher (docs/llm.md).

- :mod:`.prompts`: observability levels ``L1 | L2 | L3 | oracle``, candidate pruning, prompt variants;
- :mod:`.parsing`: the answer's JSON schema and tolerant parsing;
- :mod:`.tools`: ``simulate_action`` (snapshot rollouts) and ``inspect_action``;
- :mod:`.client`: the Chat Completions client (retries, concurrency limit, disk cache, token counts);
- :mod:`.agent`: :class:`LLMAgent`, built by ``dynasched_gym.agents.make("llm", model=..., ...)``.
"""

from typing import Any

from dynasched_gym.agents.llm.prompts import LEVELS, MODES, VARIANTS

__all__ = ["LEVELS", "MODES", "REFINEMENTS", "USAGE_FIELDS", "VARIANTS", "DecisionRecord", "LLMAgent"]


def __getattr__(name: str) -> Any:
    """The agent's names load :mod:`.agent` (and ``openai``) on first use, not with the prompts."""
    if name in ("REFINEMENTS", "USAGE_FIELDS", "DecisionRecord", "LLMAgent"):
        from dynasched_gym.agents.llm import agent

        return getattr(agent, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
