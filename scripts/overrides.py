"""Refuse Hydra overrides that add settings a script does not read.

Hydra composes ``+key=value`` into the config whatever the key, and a script reads only its own keys: ``+tier=hard``
(which Hydra itself suggests when ``tier=hard`` names no key) or a misspelt ``+seeds.cout=5`` would run with the
defaults, silently. :func:`check_added_keys` composes the same config without the ``+`` overrides and refuses every
key the user added, unless it lies under one of the script's free-form mappings (an agent's keyword arguments,
calibrate's ``options``), which the script checks itself.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from omegaconf import DictConfig, OmegaConf


def _paths(node: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every key path of a nested mapping, parents before children."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            path = (*prefix, str(key))
            yield path
            yield from _paths(value, path)


def _free(path: tuple[str, ...], free: Sequence[str]) -> bool:
    """``path`` lies under a free-form mapping (a dotted pattern; ``*`` stands for any one key)."""
    for pattern in free:
        parts = pattern.split(".")
        if len(path) > len(parts) and all(p in ("*", k) for p, k in zip(parts, path)):
            return True
    return False


def added_keys(config: Mapping[str, Any], base: Mapping[str, Any], free: Sequence[str] = ()) -> list[str]:
    """The dotted keys of ``config`` that ``base`` lacks, outside the ``free`` mappings (the topmost of each)."""
    known = set(_paths(base))
    added: list[tuple[str, ...]] = []
    for path in _paths(config):
        if path not in known and not _free(path, free) and not any(path[:len(a)] == a for a in added):
            added.append(path)
    return [".".join(path) for path in added]


def check_added_keys(cfg: DictConfig, free: Sequence[str] = ()) -> None:
    """Raise a ValueError naming every key that a ``+``/``++`` override added to the running Hydra app's config and
    that the script does not read (none of its config files has it), with the keys it has at that level."""
    from hydra import compose
    from hydra.core.hydra_config import HydraConfig

    hydra_config = HydraConfig.get()
    task = list(hydra_config.overrides.task)
    if not any(o.startswith("+") for o in task):
        return
    base = compose(config_name=hydra_config.job.config_name, overrides=[o for o in task if not o.startswith("+")])
    base_tree = OmegaConf.to_container(base, resolve=False)
    added = added_keys(OmegaConf.to_container(cfg, resolve=False), base_tree, free)
    if not added:
        return
    problems = []
    for key in added:
        *parent, leaf = key.split(".")
        node: Any = base_tree
        for part in parent:
            node = node[part]
        siblings = sorted(map(str, node))
        close = difflib.get_close_matches(leaf, siblings, n=1)
        hint = f"did you mean {'.'.join([*parent, close[0]])}?" if close else f"known: {', '.join(siblings)}"
        problems.append(f"{key} ({hint})")
    raise ValueError(f"{hydra_config.job.config_name}: no such setting{'s' if len(problems) > 1 else ''}: "
                     f"{'; '.join(problems)}. A + override adds a key the script would not read; set an existing "
                     "one without +")


__all__ = ["added_keys", "check_added_keys"]
