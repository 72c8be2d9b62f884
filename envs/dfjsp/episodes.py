"""Where episodes come from: a fixed instance or a tier pool, and what the reset info says about it.

:class:`InstanceSource` gives the instance of each episode: a fixed one (``instance=``, a path,
an embedded name or an :class:`~dynasched_gym.Instance`), or a draw from a tier's pool
(:func:`dynasched_gym.generation.tier_pool`), with an optional breakdown-policy override.
"""

from __future__ import annotations

import functools
import hashlib
import os
import warnings
from pathlib import Path
from typing import Any, Union

import numpy as np

from dynasched_gym.checks import check_choice, check_integer
from dynasched_gym.instance import BREAKDOWN_POLICIES, Instance
from dynasched_gym.io import resolve_instance
from dynasched_gym.schedule import Schedule

InstanceSpec = Union[Instance, str, "os.PathLike[str]"]
"""An instance, the path of an instance file (any format :func:`dynasched_gym.load_instance` reads),
or the name of an embedded instance (:data:`dynasched_gym.data.EMBEDDED`)."""


def final_info(schedule: Schedule) -> dict[str, Any]:
    """What the last step of an episode adds to its info: ``metrics`` (the schedule's) and ``ssi``
    (:func:`instance_ssi`). The SSI rates the whole instance, its event stream included, so it is given once
    the episode is over, never at ``reset`` (DESIGN §3: an agent sees the present and the past only)."""
    return {"metrics": schedule.metrics, "ssi": instance_ssi(schedule.instance)}


def instance_ssi(instance: Instance) -> float | None:
    """The instance's SSI score (0-100); ``None``, with a warning, when it cannot be computed on a degenerate
    instance (the episode still plays)."""
    from dynasched_gym.generation import ssi

    try:
        return float(ssi(instance).score)
    except (ArithmeticError, ValueError) as exc:
        warnings.warn(f"instance {instance.name!r}: no SSI score ({type(exc).__name__}: {exc}); info['ssi'] is None",
                      RuntimeWarning, stacklevel=3)
        return None


#: The tier episodes draw from when neither ``tier`` nor ``instance`` is given.
DEFAULT_TIER = "medium"


class InstanceSource:
    """The instance of each episode.

    Args:
        instance: a fixed instance (see :data:`InstanceSpec`), or ``None`` to draw from a tier pool.
        tier: the tier of the pool (``None``: :data:`DEFAULT_TIER`); with a fixed instance, the tier it belongs to,
            whose pool sampled futures are drawn from (``None``: unknown, and sampled futures are refused).
        size: the size of the pool (with a fixed instance, of the pool sampled futures are drawn from).
        breakdown_policy: ``"resume"`` or ``"restart"`` overrides every instance's policy; ``None`` keeps it.
        pool_start: the first pool seed episodes draw (``instance=None`` only; e.g. 10 000 for held-out
            instances when training used ``0 .. 999``).
        pool_size: episodes draw the pool's instances of seeds ``pool_start .. pool_start + pool_size - 1``
            (``instance=None`` only); each is generated once and cached on disk.
    """

    def __init__(self, instance: InstanceSpec | None, tier: str | None, size: str, breakdown_policy: str | None,
                 pool_size: int = 1000, pool_start: int = 0) -> None:
        from dynasched_gym.generation import MAX_SEEDS, TIERS, size_presets

        if tier is None and instance is None:
            tier = DEFAULT_TIER
        if tier is not None:
            check_choice("tier", tier, TIERS)  # checked with a fixed instance too: a typo must not pass unnoticed
        check_choice("size", size, size_presets())
        if breakdown_policy is not None:
            check_choice("breakdown_policy", breakdown_policy, BREAKDOWN_POLICIES)
        self.tier = tier
        self.size = size
        self.breakdown_policy = breakdown_policy
        self.pool_size = check_integer("pool_size", pool_size, 1, MAX_SEEDS)
        self.pool_start = check_integer("pool_start", pool_start, 0)
        self._pool: Any = None
        # (spec, its path key, prepared instance) of the last resolve
        self._last: tuple[Any, tuple[str, str | None] | None, Instance] | None = None
        self.fixed = None if instance is None else self.resolve(instance)

    def resolve(self, spec: InstanceSpec) -> Instance:
        """``spec`` as an instance with the policy override applied. The last one is memoised: the same
        instance object, or the same path while its files hold the same bytes (a rewritten file is read again)."""
        # a blank name is refused by resolve_instance: as a path it would be the current directory, read to hash it
        key = _path_key(spec) if isinstance(spec, (str, os.PathLike)) and str(os.fspath(spec)).strip() else None
        if self._last is not None:
            last_spec, last_key, last_instance = self._last
            # the prepared instance itself counts too (a vector reset resolves its overrides first)
            hit = (spec is last_spec or spec is last_instance) if isinstance(spec, Instance) else (
                key is not None and key == last_key)
            if hit:
                return last_instance
        instance = resolve_instance(spec)
        if self.breakdown_policy is not None and instance.breakdown_policy != self.breakdown_policy:
            instance = instance.replace(breakdown_policy=self.breakdown_policy)
        self._last = (spec, key, instance)
        return instance

    def _tier_pool(self) -> Any:
        if self._pool is None:
            from dynasched_gym.generation import tier_pool

            self._pool = tier_pool(self.tier, self.size)
        return self._pool

    def probe(self) -> Instance:
        """An instance that fixes the spaces: the fixed one, or the pool's instance of seed ``pool_start``."""
        if self.fixed is not None:
            return self.fixed
        return self.resolve(self._tier_pool().instance(self.pool_start))

    def draw(self, rng: np.random.Generator, override: InstanceSpec | None = None) -> tuple[Instance, str | None]:
        """The next episode's instance and the tier it comes from (``None`` unless drawn from a pool).

        ``override`` (``reset(options={"instance": ...})``) replaces the source for this episode.
        A pool draw takes the instance of seed ``pool_start + rng.integers(pool_size)``.
        """
        if override is not None:
            return self.resolve(override), None
        if self.fixed is not None:
            return self.fixed, None
        return self.resolve(self._tier_pool().instance(self.pool_start + int(rng.integers(self.pool_size)))), self.tier

    def future_pool(self, tier: str | None = None, size: str | None = None) -> tuple[str, str]:
        """The (tier, size) pool that sampled futures of these episodes come from: ``tier`` and ``size`` where
        given, else the source's; a fixed instance of no stated tier has none (``ValueError``)."""
        tier = tier or self.tier
        if tier is None:
            raise ValueError("sampled futures come from a tier's pool, and this env plays a fixed instance of no "
                             "stated tier: make the env with tier= (the tier the instance belongs to), or give the "
                             "futures' tier (future_tier= / future_pool=)")
        return tier, size or self.size

    def scales(self, instance: Instance, tier: str | None) -> tuple[float, float]:
        """The features' time unit tau and operations-per-job unit for an episode of ``instance``, fixed
        before it starts: a pool draw's (``tier`` set) are the size preset plant's expectations
        (:func:`pool_scales`), the same for every draw; any other instance's are its :func:`known_scales`."""
        return known_scales(instance) if tier is None else pool_scales(self.size)


@functools.cache
def pool_scales(size: str) -> tuple[float, float]:
    """The features' scales of every draw from a ``size`` tier pool: its preset plant's expected operation time
    and operations per job (:func:`~dynasched_gym.generation.scenario.expected_feature_scales`), known before
    any episode."""
    from dynasched_gym.generation import Scenario
    from dynasched_gym.generation.scenario import expected_feature_scales

    return expected_feature_scales(Scenario.preset(size).plant)


def known_scales(instance: Instance) -> tuple[float, float]:
    """The features' scales known when an episode of ``instance`` starts: the mean processing time of the
    operations of the jobs released at its first release time (each operation's mean over its eligible
    machines) and their mean number of operations. Later jobs do not count: they are the future. The first
    decision point comes at that release or later; an episode that ends before it (every job cancelled while
    hidden) has no decision, and only its one observation shows these units before the jobs are seen.
    Memoised on the instance (immutable), as every reset onto a fixed instance asks again."""
    cached = instance._cache.get("known_scales")
    if cached is None:
        first = np.flatnonzero(instance.job_release <= instance.job_release.min())
        ops = np.concatenate([np.arange(instance.job_op_ptr[j], instance.job_op_ptr[j + 1]) for j in first])
        op_mean = np.add.reduceat(instance.elig_time, instance.op_elig_ptr[:-1]) / np.diff(instance.op_elig_ptr)
        cached = instance._cache["known_scales"] = float(op_mean[ops].mean()), len(ops) / len(first)
    return cached


#: The most bytes :func:`_path_key` reads to tell whether an instance's files changed; larger ones (no instance
#: file, or one larger than any tier pool's by far) are not memoised, so the loader reads them and reports them.
MAX_KEY_BYTES = 256 * 2**20


def _path_key(spec: str | os.PathLike[str]) -> tuple[str, str | None] | None:
    """The path (or embedded name) and a digest of the bytes of its file, or of every file at the top of its
    directory, the only ones a loader reads (``None`` for a name that is no path: an embedded instance, which does
    not change); ``None`` when a file cannot be read or they hold over :data:`MAX_KEY_BYTES` (not memoised: the
    loader reports it)."""
    path = Path(spec)
    try:
        files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else []
        if sum(file.stat().st_size for file in files) > MAX_KEY_BYTES:
            return None
    except OSError:
        return None
    if not files:
        return os.fspath(spec), None
    digest = hashlib.sha256()
    try:
        for file in files:
            digest.update(f"{file.relative_to(path) if file != path else ''}\0".encode())
            digest.update(file.read_bytes())
    except OSError:
        return None
    return os.fspath(spec), digest.hexdigest()
