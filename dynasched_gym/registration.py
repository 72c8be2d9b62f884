"""Registration of the DynaSched environment ids with Gymnasium (run on ``import dynasched_gym``).

Importing this module imports Gymnasium's registry only: the environments themselves (and numba)
load when an id is made.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

_DFJSP = "dynasched_gym.envs.dfjsp"

#: Registered id -> (entry point, vector entry point, default kwargs).
ENV_SPECS: dict[str, tuple[str, str, dict[str, object]]] = {
    "DynaSched/DFJSP-v0": (f"{_DFJSP}.env:DFJSPEnv", f"{_DFJSP}.vector:DFJSPVectorEnv", {}),
    "DynaSched/DFJSP-Rules-v0": (f"{_DFJSP}.env:DFJSPRulesEnv", f"{_DFJSP}.vector:DFJSPRulesVectorEnv", {}),
    "DynaSched/FJSP-v0": (f"{_DFJSP}.env:FJSPEnv", f"{_DFJSP}.vector:FJSPVectorEnv", {"instance": "mk01"}),
}


def register_envs() -> None:
    """Register every id of :data:`ENV_SPECS` that is not registered yet (idempotent)."""
    for env_id, (entry_point, vector_entry_point, kwargs) in ENV_SPECS.items():
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point, vector_entry_point=vector_entry_point, kwargs=kwargs)
