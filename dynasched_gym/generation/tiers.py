"""Tier pools: calibrated instances of one SSI tier, deterministic by seed, cached on disk.

Tiers ``easy | medium | hard | extreme`` are bands of the SSI score
(:data:`~dynasched_gym.generation.stress_index.TIER_BANDS`: [0, 25), [25, 50), [50, 75), [75, 100]).
``tier_pool(tier, size)`` gives a :class:`TierPool`; ``pool.instance(seed)`` is the pool's instance
for that seed: the same bytes on every call and on every x86-64 CPU with AVX2 and FMA (docs/generation.md,
"Determinism": no step rounds by CPU).

**Generation of seed s** (:func:`generate_member`), for tier t (index i in ``TIERS``) and size preset z:
for attempt a = 0, 1, ..., ``MAX_ATTEMPTS`` - 1, ``rng = numpy.random.default_rng([s, i, a])``
draws every target of the tier prior uniformly in its [low, high] (in ``TARGET_NAMES`` order;
unlisted targets keep the preset's value), then a calibration seed ``rng.integers(2**31)``;
``calibrate(Scenario.preset(z), targets, method="sesc", seed=...)`` builds the instance. It is
accepted when the calibration converged (every target within tolerance) and ``ssi(instance).tier
== t``; else the next attempt runs. After ``MAX_ATTEMPTS`` rejections a :class:`RuntimeError`
names the scores seen. The accepted instance is named ``<t>-<z>-seed<s>``. :func:`attempts` yields
the attempts one by one (score, convergence, acceptance), which scripts/tier_acceptance.py counts.

**Tier priors** live in ``conf/tier/<tier>.yaml`` (``prior``: target -> [low, high]; ``sizes``:
per-size-preset replacements of some ranges, needed because the SSI of one target vector grows
with the number of jobs). See docs/generation.md for the ranges and measured acceptance rates.

**Cache.** Directory ``cache_dir`` (default ``$DYNASCHED_CACHE``, else ``~/.cache/dynasched_gym/pools``),
one sub-directory per pool named by its key: the SHA-256 of the canonical JSON (sorted keys, no
spaces) of the **key inputs** — ``POOL_VERSION``, tier, size, the preset scenario as a dict, the
effective prior, ``GENERATOR_VERSION``, ``SSI_VERSION``, the calibration method and options and
``MAX_ATTEMPTS``. Layout::

    <cache_dir>/<key>/manifest.json      {"format": "dynasched-pool/1", "key": ..., "inputs": {...}}
    <cache_dir>/<key>/seed-<s>.json      the instance, native JSON (loadable by load_instance)
    <cache_dir>/<key>/seed-<s>.sha256    "<sha256 hex>  seed-<s>.json" (``sha256sum -c`` format)

Every file is written atomically (temporary file + rename), the instance before its checksum.
Opening a pool compares the manifest with the key inputs; a manifest that does not match (stale
or corrupt) clears the directory (under a lock on ``<cache_dir>/.<key>.lock``, so that processes opening one
stale pool at once clear it only once). A missing seed is generated; a seed file that does not match its
checksum (or lacks one) is regenerated. Both rebuilds issue a :class:`CacheWarning` naming the
file; a cached file is never used unverified.
:meth:`TierPool.prepare` verifies the cached seeds it is given, then generates the missing and corrupt ones in
worker processes with a progress bar, persisting each as soon as it is done (an interrupted run resumes where it
stopped).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import os
import shutil
import uuid
import warnings
from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from dynasched_gym import conf
from dynasched_gym.checks import check_bool, check_choice, check_integer, check_path
from dynasched_gym.errors import InstanceFormatError, user_stacklevel
from dynasched_gym.generation import generator, stress_index
from dynasched_gym.generation.scenario import (
    TARGET_NAMES,
    Scenario,
    check_target,
    read_conf_yaml,
    replace_targets,
    size_presets,
)
from dynasched_gym.generation.sesc import calibrate
from dynasched_gym.generation.stress_index import TIERS, ssi
from dynasched_gym.instance import Instance, write_text_atomic
from dynasched_gym.interrupts import WorkerPool
from dynasched_gym.paths import file_lock, locks_available, user_cache_dir

#: Bumped whenever the pool algorithm (not the generator or the SSI) changes what a seed yields.
POOL_VERSION = "1"
POOL_FORMAT = "dynasched-pool/1"
MAX_ATTEMPTS = 50
CALIBRATION: dict[str, Any] = {"method": "sesc", "options": {}}
MANIFEST = "manifest.json"
#: The keys of a tier file ``conf/tier/<tier>.yaml`` (``name`` is documentation only).
TIER_FILE_KEYS = ("name", "prior", "sizes")


class CacheWarning(UserWarning):
    """A cached pool file was corrupt, incomplete or stale and is being rebuilt."""


def default_cache_dir() -> Path:
    """``$DYNASCHED_CACHE`` when set, else ``$XDG_CACHE_HOME`` (or ``~/.cache``) ``/dynasched_gym/pools``
    (:func:`dynasched_gym.paths.user_cache_dir`: a temporary directory, with a warning, where that cannot be
    written)."""
    return user_cache_dir("pools", "DYNASCHED_CACHE")


def tier_prior(tier: str, size: str) -> dict[str, list[float]]:
    """The prior of ``tier`` for size preset ``size``: target -> [low, high] (``conf/tier/<tier>.yaml``).

    The whole file is checked, every ``sizes`` entry included: its keys must be :data:`TIER_FILE_KEYS`, ``sizes``
    keys size presets (:func:`~dynasched_gym.generation.scenario.size_presets`), and every range a ``[low, high]`` with
    low <= high and both ends allowed values of the target
    (:data:`~dynasched_gym.generation.scenario.TARGET_RANGES`), so that no draw can fall outside them; the ranges
    for ``size`` are also checked against its preset (a load_cv target is at most sqrt(groups - 1)).
    An :class:`~dynasched_gym.errors.InstanceFormatError` names the file, the key and the value.
    """
    check_choice("tier", tier, TIERS)
    path = conf.CONF_DIR / "tier" / f"{tier}.yaml"
    data = read_conf_yaml(path)
    if not isinstance(data, Mapping):
        raise InstanceFormatError("expected a mapping", source=str(path), value=data)
    unknown_keys = sorted(set(data) - set(TIER_FILE_KEYS), key=str)
    if unknown_keys:  # a misspelt "sizes" was ignored: every size drew from the medium preset's ranges
        raise InstanceFormatError(f"unknown key (known: {', '.join(TIER_FILE_KEYS)})", source=str(path),
                                  field=str(unknown_keys[0]), value=data[unknown_keys[0]])
    sizes = data.get("sizes") or {}
    _check_mapping(path, "sizes", sizes)
    unknown = sorted(set(sizes) - set(size_presets()), key=str)
    if unknown:
        raise InstanceFormatError(f"unknown size preset (known: {', '.join(size_presets())})", source=str(path),
                                  field=f"sizes.{unknown[0]}", value=unknown[0])
    sections = {"prior": _prior_ranges(path, "prior", data.get("prior")),
                **{f"sizes.{z}": _prior_ranges(path, f"sizes.{z}", ranges) for z, ranges in sizes.items()}}
    ranges = {**sections["prior"], **sections.get(f"sizes.{size}", {})}
    prior = {name: ranges[name] for name in TARGET_NAMES if name in ranges}
    # some allowed values depend on the preset (load_cv <= sqrt(groups - 1)): a range past them failed at the
    # attempts that drew there, naming a target of "<scenario>", not this file
    preset_text = (conf.CONF_DIR / "size" / f"{size}.yaml").read_text(encoding="utf-8")
    refused = _preset_refusal(size, preset_text, tuple((name, tuple(bounds)) for name, bounds in prior.items()))
    if refused:
        name, i, reason = refused
        key = f"sizes.{size}" if name in sections.get(f"sizes.{size}", {}) else "prior"
        raise InstanceFormatError(f"not a target of the {size} preset: {reason}", source=str(path),
                                  field=f"{key}.{name}[{i}]", value=prior[name][i])
    return prior


@functools.lru_cache(maxsize=32)
def _preset_refusal(size: str, preset_text: str,
                    prior: tuple[tuple[str, tuple[float, ...]], ...]) -> tuple[str, int, str] | None:
    """The first bound of ``prior`` that the preset ``size`` refuses as a target: (target, index, why); None if
    it takes them all. Memoised (``preset_text``, the preset file's, is in the key, so an edited file is checked
    again): a pool is opened for every instance an evaluation plays, and the check (the preset's YAML and a
    validated scenario per bound) costs ~16 ms."""
    scenario = Scenario.preset(size)
    for name, bounds in prior:
        for i, bound in enumerate(bounds):
            try:
                replace_targets(scenario, **{name: bound})
            except InstanceFormatError as exc:
                return name, i, exc.reason
    return None


def _check_mapping(path: Path, key: str, value: Any) -> None:
    if not isinstance(value, Mapping):
        raise InstanceFormatError("expected a mapping", source=str(path), field=key, value=value)


def _prior_ranges(path: Path, key: str, ranges: Any) -> dict[str, list[float]]:
    """The checked ranges of one section (``prior`` or ``sizes.<preset>``) of tier file ``path``."""
    _check_mapping(path, key, ranges)
    out = {}
    for name, bounds in ranges.items():
        where = f"{key}.{name}"
        if name not in TARGET_NAMES:
            raise InstanceFormatError(f"unknown target (known: {', '.join(TARGET_NAMES)})", source=str(path),
                                      field=where, value=bounds)
        if not isinstance(bounds, list) or len(bounds) != 2:
            raise InstanceFormatError("must be [low, high]", source=str(path), field=where, value=bounds)
        try:
            for i, bound in enumerate(bounds):
                check_target(name, bound, f"{where}[{i}]")
        except InstanceFormatError as exc:
            raise exc.located(str(path)) from None
        if bounds[0] > bounds[1]:
            raise InstanceFormatError("must be [low, high] with low <= high", source=str(path), field=where,
                                      value=bounds)
        out[name] = [float(v) for v in bounds]
    return out


def key_inputs(tier: str, size: str) -> dict[str, Any]:
    """Everything a pool's instances depend on (hashed into the cache key; stored in the manifest)."""
    return {"pool_version": POOL_VERSION, "tier": tier, "size": size,
            "scenario": Scenario.preset(size).to_dict(), "prior": tier_prior(tier, size),
            "generator_version": generator.GENERATOR_VERSION, "ssi_version": stress_index.SSI_VERSION,
            "calibration": CALIBRATION, "max_attempts": MAX_ATTEMPTS}


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def pool_key(inputs: Mapping[str, Any]) -> str:
    """The cache key of a pool: the SHA-256 of the canonical JSON of its key ``inputs`` (module docstring)."""
    return hashlib.sha256(_canonical(inputs).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Attempt:
    """One attempt at a pool member (module docstring, "Generation of seed s")."""

    number: int  # 0-based attempt index a
    instance: Instance  # the calibrated instance, not yet renamed
    converged: bool  # every calibration target within tolerance
    score: float  # its SSI score, in [0, 100]
    tier: str  # the tier of that score
    accepted: bool  # converged, and in the pool's tier


def attempts(inputs: Mapping[str, Any], seed: int) -> Iterator[Attempt]:
    """The attempts at pool member ``seed`` for the key ``inputs``, in order, lazily: the first accepted one is the
    member (:func:`generate_member`); all ``max_attempts`` of them when none is."""
    scenario = Scenario.from_dict(inputs["scenario"])
    tier, prior = inputs["tier"], inputs["prior"]
    for number in range(inputs["max_attempts"]):
        rng = np.random.default_rng([seed, TIERS.index(tier), number])
        targets = {name: float(rng.uniform(*prior[name])) for name in TARGET_NAMES if name in prior}
        result = calibrate(scenario, targets, method=inputs["calibration"]["method"],
                           seed=int(rng.integers(2**31)), **inputs["calibration"]["options"])
        index = ssi(result.instance)
        yield Attempt(number, result.instance, result.converged, index.score, index.tier,
                      result.converged and index.tier == tier)


def generate_member(inputs: Mapping[str, Any], seed: int) -> str:
    """Native JSON of the pool member ``seed`` for the key ``inputs`` (module docstring)."""
    seen = []
    for attempt in attempts(inputs, seed):
        if attempt.accepted:
            return attempt.instance.replace(name=f"{inputs['tier']}-{inputs['size']}-seed{seed}").to_json()
        seen.append(f"{attempt.score:.1f}" if attempt.converged else "not converged")
    raise RuntimeError(f"no calibrated {inputs['tier']!r} instance for size {inputs['size']!r}, seed {seed} in "
                       f"{len(seen)} attempts (SSI scores: {', '.join(seen)}); retune conf/tier/{inputs['tier']}.yaml "
                       f"for SSI version {inputs['ssi_version']}")


class TierPool:
    """Calibrated instances of one tier and size preset, by seed, cached under ``cache_dir`` (module docstring).

    ``workers``: processes used by :meth:`prepare`, an integer >= 1 (default ``min(2, cpu_count)``).
    """

    def __init__(self, tier: str, size: str = "small", cache_dir: str | os.PathLike[str] | None = None,
                 workers: int | None = None) -> None:
        self.tier = tier
        self.size = size
        self.workers = check_integer("workers", workers, 1) if workers is not None else min(2, os.cpu_count() or 1)
        self._inputs = key_inputs(tier, size)
        self.key = pool_key(self._inputs)
        root = default_cache_dir() if cache_dir is None else check_path("cache_dir", cache_dir)
        if cache_dir is not None and not os.fspath(cache_dir).strip():  # Path("") is the current directory
            raise ValueError(f"cache_dir must be a directory path or None (the default cache), got {cache_dir!r}")
        self.directory = root / self.key
        self._open()

    def __repr__(self) -> str:
        return f"TierPool(tier={self.tier!r}, size={self.size!r}, directory='{self.directory}')"

    def instance(self, seed: int) -> Instance:
        """The pool's instance for ``seed`` (an integer >= 0, bools not), generated and cached on first use."""
        seed = _check_seed(seed)
        text = self._read(seed)
        if text is None:
            text = generate_member(self._inputs, seed)
            self._write(seed, text)
        return Instance.from_dict(json.loads(text), source=str(self._paths(seed)[0]))

    def prepare(self, seeds: Iterable[int], progress: bool = True) -> None:
        """Generate the seeds that are not cached yet, in ``workers`` processes, persisting each when done; at most
        :data:`MAX_SEEDS` seeds a call (a ValueError before any work otherwise). Cached seeds are verified first, as
        :meth:`instance` does: one that does not match its checksum is regenerated, with a :class:`CacheWarning`
        naming the file."""
        check_bool("progress", progress)  # "no" would show the bar
        if not isinstance(seeds, Iterable) or isinstance(seeds, (str, bytes, Mapping)):  # b"abc" was seeds 97..99
            raise TypeError(f"seeds must be an iterable of integer seeds such as range(100), got "
                            f"{type(seeds).__name__}: {seeds!r:.80}")
        wanted = list(itertools.islice(seeds, MAX_SEEDS + 1))  # range(10**30) would fill the memory first
        if len(wanted) > MAX_SEEDS:
            raise ValueError(f"prepare takes at most {MAX_SEEDS} seeds a call (each is an instance to generate), "
                             f"got more: {seeds!r:.80}")
        # each cached seed verified against its checksum now (a CacheWarning naming a corrupt file), not when an
        # episode draws it: a truncated member was left in place, and its regeneration fell to the first draw
        missing = [s for s in dict.fromkeys(map(_check_seed, wanted)) if self._read(s) is None]
        workers = min(self.workers, len(missing))
        # no bar when every seed is cached: scripts prepare their pools on every run
        with tqdm(total=len(missing), desc=f"{self.tier}/{self.size} pool", unit="instance",
                  disable=not (progress and missing)) as bar:
            if workers <= 1:
                for seed in missing:
                    self._write(seed, generate_member(self._inputs, seed))
                    bar.update()
                return
            # spawned workers that ignore Ctrl-C (it reaches the whole process group): no traceback of theirs, and
            # the members they are generating finish and are kept below
            with WorkerPool(workers) as pool:
                futures = {pool.submit(generate_member, self._inputs, seed): seed for seed in missing}
                written = set()
                try:
                    for future in as_completed(futures):
                        self._write(futures[future], future.result())
                        written.add(future)
                        bar.update()
                except BaseException as exc:
                    pool.shutdown(cancel_futures=True)  # waits for the members being generated
                    # keep every member finished meanwhile (done, or running when interrupted), not only those
                    # as_completed handed over before the interrupt
                    with contextlib.suppress(Exception):
                        for future, seed in futures.items():
                            if future not in written and future.done() and not future.cancelled() \
                                    and future.exception() is None:
                                self._write(seed, future.result())
                                bar.update()
                    if isinstance(exc, BrokenProcessPool):  # most often a script without the __main__ guard
                        raise RuntimeError(
                            f"a worker generating the {self.tier}/{self.size} pool ended abruptly ({exc}). In a "
                            "script, call prepare() under `if __name__ == \"__main__\":` (its workers are spawned and "
                            "import the script again), or make the pool with workers=1") from exc
                    raise

    # ------------------------------------------------------------------ files
    def _paths(self, seed: int) -> tuple[Path, Path]:
        return self.directory / f"seed-{seed}.json", self.directory / f"seed-{seed}.sha256"

    def _open(self) -> None:
        """Check the manifest against the key inputs; clear the directory when it is stale or corrupt.

        A matching manifest needs no lock. Otherwise the check is made again, and the directory cleared and the
        manifest written, under an exclusive lock on the sibling ``.<key>.lock`` (:func:`_pool_lock`): processes
        opening one stale pool at once cleared it under each other's feet (one's rmtree met files the other's had
        removed, or new ones, and crashed; or deleted the fresh files of the process that had already rebuilt it).
        """
        manifest = {"format": POOL_FORMAT, "key": self.key, "inputs": self._inputs}
        if self._manifest_problem(manifest) is None:
            return
        with _pool_lock(self.directory.with_name(f".{self.key}.lock")):
            problem = self._manifest_problem(manifest)  # another process may have rebuilt it meanwhile
            if problem is None:
                return
            if problem:
                warnings.warn(f"tier pool cache: {problem}; rebuilding {self.directory}", CacheWarning,
                              stacklevel=user_stacklevel())
                _remove_directory(self.directory)
            write_text_atomic(self.directory / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")

    def _manifest_problem(self, manifest: Mapping[str, Any]) -> str | None:
        """None when the manifest matches ``manifest``; "" when the directory is new (no manifest, no files); else
        why it must be cleared."""
        path = self.directory / MANIFEST
        # listed before the manifest is looked at, hidden entries left out: those are other processes' atomic writes
        # in flight (their manifest first of all), and a new pool opened by two processes at once was cleared under
        # the other's feet, which then crashed
        try:
            files = [p.name for p in self.directory.iterdir() if not p.name.startswith(".")]
        except FileNotFoundError:  # none, or renamed away between the check and the listing by a process clearing it
            files = []
        if path.is_file():
            try:
                if json.loads(path.read_text(encoding="utf-8")) == json.loads(_canonical(manifest)):
                    return None
            except (OSError, ValueError):
                pass
            return f"{path} does not match this pool (stale or corrupt)"
        return f"{path} is missing" if files else ""

    def _read(self, seed: int) -> str | None:
        """The verified cached text of ``seed``; None (with a warning when files exist) otherwise."""
        data_path, sum_path = self._paths(seed)
        if not data_path.exists() and not sum_path.exists():
            return None
        try:
            data = data_path.read_bytes()
            expected = sum_path.read_text(encoding="ascii").split()[0]
            problem = None if hashlib.sha256(data).hexdigest() == expected else "checksum mismatch"
        except (OSError, UnicodeDecodeError, IndexError) as exc:
            problem = f"unreadable: {exc}"
        if problem is None:
            return data.decode("utf-8")
        warnings.warn(f"tier pool cache: {data_path} is corrupt or incomplete ({problem}); regenerating it",
                      CacheWarning, stacklevel=user_stacklevel())
        return None

    def _write(self, seed: int, text: str) -> None:
        data_path, sum_path = self._paths(seed)
        write_text_atomic(data_path, text)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        write_text_atomic(sum_path, f"{digest}  {data_path.name}\n")


#: Most seeds one call of :meth:`TierPool.prepare`, and one run of the scripts (a seed range, a training pool), may
#: name: each is an instance to generate and cache (a small one: about 0.02 s on one core and 12 kB on disk, so a
#: million is hours and gigabytes); a range of 10**30 seeds filled the memory before the first.
MAX_SEEDS = 1_000_000


def _pool_lock(path: Path) -> contextlib.AbstractContextManager[None]:
    """An exclusive :func:`~dynasched_gym.paths.file_lock` on ``path``; where locks are missing (Windows) none, and
    concurrent openings of a stale pool may then discard each other's new files."""
    return file_lock(path) if locks_available() else contextlib.nullcontext()


def _remove_directory(directory: Path) -> None:
    """Remove ``directory`` by renaming it to a hidden unique sibling first, then deleting that: the pool's path is
    at once free, and the deletion meets no other process's files (nor fails if the directory is already gone)."""
    aside = directory.with_name(f".{directory.name}.stale-{uuid.uuid4().hex}")
    try:
        os.rename(directory, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def _check_seed(seed: int) -> int:
    """``seed`` as an ``int``; an error naming ``seed`` unless it is an integer >= 0 (NumPy ones too, bools not)."""
    return check_integer("seed", seed, 0)


def tier_pool(tier: str, size: str = "small", **kwargs: Any) -> TierPool:
    """The pool of ``tier`` instances of size preset ``size`` (keyword arguments: see :class:`TierPool`)."""
    return TierPool(tier, size, **kwargs)
