"""Tier pools: determinism, tier membership, and the disk cache (hits, corruption, staleness, parallel builds)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import dynasched_gym.generation.tiers as tiers
from dynasched_gym import load_instance
from dynasched_gym.generation import TIERS, Scenario, TierPool, realised_metrics, ssi, stress_index, tier_pool


def _no_calibration(*args, **kwargs):
    raise AssertionError("calibrate() called: the cache was not used")


def _file(pool: TierPool, seed: int) -> Path:
    return pool.directory / f"seed-{seed}.json"


def test_same_seed_gives_identical_bytes_across_pools_and_caches(tmp_path: Path) -> None:
    first = tier_pool("medium", "small", cache_dir=tmp_path / "a").instance(4).to_json()
    second_pool = tier_pool("medium", "small", cache_dir=tmp_path / "b")
    assert second_pool.instance(4).to_json() == first
    assert _file(second_pool, 4).read_text(encoding="utf-8") == first
    assert load_instance(_file(second_pool, 4)).to_json() == first  # the cache file is plain native JSON
    assert second_pool.instance(5).to_json() != first


@pytest.mark.parametrize("tier", TIERS)
def test_every_tier_yields_a_calibrated_instance_of_that_tier(tmp_path: Path, tier: str) -> None:
    pool = tier_pool(tier, "small", cache_dir=tmp_path)
    for seed in (0, 1):
        inst = pool.instance(seed)
        assert ssi(inst).tier == tier
        assert inst.name == f"{tier}-small-seed{seed}"
        metrics = realised_metrics(inst)
        for name, (low, high) in tiers.tier_prior(tier, "small").items():
            tol = getattr(Scenario.preset("small").tolerances, name)
            assert low * (1 - tol) <= metrics[name] <= high * (1 + tol), name


def test_cache_hit_does_not_regenerate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = tier_pool("easy", cache_dir=tmp_path).instance(2).to_json()
    monkeypatch.setattr(tiers, "calibrate", _no_calibration)
    assert tier_pool("easy", cache_dir=tmp_path).instance(2).to_json() == built
    with pytest.raises(AssertionError, match="cache was not used"):
        tier_pool("easy", cache_dir=tmp_path).instance(3)


@pytest.mark.parametrize("damage", ["truncate", "flip", "drop_checksum", "bad_checksum"])
def test_corrupt_file_is_detected_and_rebuilt_identically(tmp_path: Path, damage: str) -> None:
    pool = tier_pool("hard", cache_dir=tmp_path)
    original = pool.instance(1).to_json()
    path = _file(pool, 1)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        i = data.index(b'"release": ') + len(b'"release": ')  # a digit of the first release time
        path.write_bytes(data[:i] + bytes([data[i] ^ 0x01]) + data[i + 1:])
    elif damage == "drop_checksum":
        path.with_suffix(".sha256").unlink()
    else:
        path.with_suffix(".sha256").write_text("0" * 64 + "  seed-1.json\n", encoding="ascii")
    with pytest.warns(tiers.CacheWarning, match="seed-1.json"):
        rebuilt = tier_pool("hard", cache_dir=tmp_path).instance(1)
    assert rebuilt.to_json() == original
    assert path.read_text(encoding="utf-8") == original
    digest = path.with_suffix(".sha256").read_text(encoding="ascii").split()[0]
    assert digest == hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("edit", ["version", "prior", "garbage"])
def test_stale_or_corrupt_manifest_clears_the_pool(tmp_path: Path, edit: str) -> None:
    pool = tier_pool("easy", cache_dir=tmp_path)
    original = pool.instance(0).to_json()
    manifest = pool.directory / tiers.MANIFEST
    if edit == "garbage":
        manifest.write_text("{not json", encoding="utf-8")
    else:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        if edit == "version":
            data["inputs"]["generator_version"] += "-old"
        else:
            data["inputs"]["prior"]["utilization"] = [0.9, 0.95]
        manifest.write_text(json.dumps(data), encoding="utf-8")
    with pytest.warns(tiers.CacheWarning, match="manifest.json"):
        fresh = tier_pool("easy", cache_dir=tmp_path)
    assert not _file(fresh, 0).exists()  # nothing from the stale pool survives
    assert json.loads(manifest.read_text(encoding="utf-8"))["key"] == fresh.key
    assert fresh.instance(0).to_json() == original


def test_key_inputs_change_the_cache_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = tier_pool("easy", cache_dir=tmp_path)
    base.instance(0)
    assert tier_pool("easy", "medium", cache_dir=tmp_path).key != base.key
    assert tier_pool("medium", cache_dir=tmp_path).key != base.key
    monkeypatch.setattr(stress_index, "SSI_VERSION", stress_index.SSI_VERSION + "-next")
    bumped = tier_pool("easy", cache_dir=tmp_path)
    assert bumped.key != base.key and bumped.directory != base.directory
    monkeypatch.setattr(tiers, "calibrate", _no_calibration)
    with pytest.raises(AssertionError, match="cache was not used"):
        bumped.instance(0)  # a new SSI version never reuses instances accepted under the old one


def test_parallel_prepare_matches_serial_generation_and_resumes(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    pool = tier_pool("medium", cache_dir=tmp_path / "parallel", workers=2)
    pool.prepare([3, 0, 2, 0, 1], progress=False)
    serial = tier_pool("medium", cache_dir=tmp_path / "serial", workers=1)
    for seed in range(4):
        assert _file(pool, seed).read_text(encoding="utf-8") == serial.instance(seed).to_json()
    monkeypatch.setattr(tiers, "calibrate", _no_calibration)
    pool.prepare(range(4), progress=False)  # all cached: nothing to do
    assert sorted(p.name for p in pool.directory.glob("seed-*.json")) == [f"seed-{s}.json" for s in range(4)]


def test_exhausted_attempts_raise_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "MAX_ATTEMPTS", 3)
    pool = tier_pool("extreme", cache_dir=tmp_path)
    monkeypatch.setattr(tiers, "ssi", lambda inst: stress_index.SSIResult(10.0, "easy", 0.0, {}))
    with pytest.raises(RuntimeError, match=r"no calibrated 'extreme' instance .* seed 7 in 3 attempts"):
        pool.instance(7)
    assert not _file(pool, 7).exists()


def test_default_cache_dir_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "env-cache"))
    pool = tier_pool("easy")
    assert pool.directory == tmp_path / "env-cache" / pool.key
    assert (pool.directory / tiers.MANIFEST).is_file()


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown tier"):
        tier_pool("impossible", cache_dir=tmp_path)
    pool = tier_pool("easy", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="seeds are integers >= 0"):
        pool.instance(-1)
    with pytest.raises(TypeError):
        pool.instance(1.5)


def _openblas_dynamic_arch() -> bool:
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return "openblas" in blas.get("name", "") and "DYNAMIC_ARCH" in blas.get("openblas configuration", "")


@pytest.mark.skipif(not _openblas_dynamic_arch(), reason="needs OpenBLAS with runtime kernel selection")
def test_same_bytes_under_another_cpu_kernel(tmp_path: Path) -> None:
    """'Any machine': another OpenBLAS kernel (as on an older CPU) must give the same pool bytes."""
    code = ("import sys; from dynasched_gym.generation import tier_pool\n"
            "for tier in ('easy', 'extreme'):\n"
            "    for seed in (0, 1):\n"
            "        print(tier_pool(tier, 'small', cache_dir=sys.argv[1]).instance(seed).to_json())\n")
    env = {**os.environ, "OPENBLAS_CORETYPE": "Prescott"}
    other = subprocess.run([sys.executable, "-c", code, str(tmp_path / "other")], env=env, capture_output=True,
                           text=True, check=True).stdout.splitlines()
    here = [tier_pool(t, "small", cache_dir=tmp_path / "here").instance(s).to_json()
            for t in ("easy", "extreme") for s in (0, 1)]
    assert other == here
