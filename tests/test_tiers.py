"""Tier pools: determinism, tier membership, and the disk cache (hits, corruption, staleness, parallel builds)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

import dynasched_gym.generation.tiers as tiers
from dynasched_gym import InstanceFormatError, conf, load_instance
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


def test_a_pool_opened_while_another_process_writes_its_manifest_is_left_alone(tmp_path: Path) -> None:
    # a second process opening a new pool meets the first one's manifest write in flight (a hidden temporary file):
    # it cleared the directory, and the first process's rename then failed (FileNotFoundError, "Directory not empty")
    directory = tmp_path / tiers.pool_key(tiers.key_inputs("easy", "small"))
    in_flight = directory / f".{tiers.MANIFEST}.x1y2z3.tmp"
    in_flight.parent.mkdir(parents=True)
    in_flight.write_text("{", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", tiers.CacheWarning)
        pool = tier_pool("easy", cache_dir=tmp_path)
    assert in_flight.exists() and (pool.directory / tiers.MANIFEST).is_file()
    shutil.rmtree(directory)
    _file(pool, 0).parent.mkdir(parents=True)
    _file(pool, 0).write_text("{}", encoding="utf-8")  # a visible file without a manifest is still cleared
    with pytest.warns(tiers.CacheWarning, match="is missing"):
        tier_pool("easy", cache_dir=tmp_path)
    assert not _file(pool, 0).exists()


def test_a_pool_cleared_between_the_check_and_the_listing_is_opened(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The unlocked first look at a pool checked that its directory exists, then listed it: another process clearing
    the stale pool (renaming it away) in between made the listing raise FileNotFoundError (1 in ~35 runs of the
    test below under load)."""
    directory = tmp_path / tiers.pool_key(tiers.key_inputs("easy", "small"))
    directory.mkdir()
    (directory / "seed-0.json").write_text("{}", encoding="utf-8")
    listing = Path.iterdir

    def cleared_meanwhile(path: Path):
        if path == directory and path.is_dir():  # the other process renames it away just before the listing
            os.rename(path, path.with_name(".cleared"))
        return listing(path)

    monkeypatch.setattr(Path, "iterdir", cleared_meanwhile)
    tier_pool("easy", cache_dir=tmp_path)._write(0, "{}")
    assert (directory / tiers.MANIFEST).is_file() and (directory / "seed-0.json").read_text() == "{}"


def test_openers_of_one_stale_pool_at_once_neither_crash_nor_delete_each_others_files(tmp_path: Path) -> None:
    # each one found the manifest stale and removed the directory with shutil.rmtree: one's rmtree met files another's
    # had removed (FileNotFoundError) or had just written ("Directory not empty"), or removed the fresh files of one
    # that had already rebuilt the pool
    directory = tmp_path / tiers.pool_key(tiers.key_inputs("easy", "small"))
    directory.mkdir()
    (directory / tiers.MANIFEST).write_text("{stale", encoding="utf-8")
    for seed in range(2000):
        (directory / f"seed-{seed}.json").write_text("{}", encoding="utf-8")
    openers = 4
    barrier, errors = threading.Barrier(openers), []

    def open_and_write(number: int) -> None:
        barrier.wait()
        try:
            tier_pool("easy", cache_dir=tmp_path)._write(10_000 + number, "{}")
        except Exception as exc:  # reported below
            errors.append(exc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tiers.CacheWarning)
        threads = [threading.Thread(target=open_and_write, args=(n,)) for n in range(openers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert sorted(p.name for p in directory.glob("seed-*.json")) == [f"seed-{10_000 + n}.json" for n in range(openers)]
    assert json.loads((directory / tiers.MANIFEST).read_text(encoding="utf-8"))["key"] == directory.name
    assert not [p.name for p in tmp_path.iterdir() if ".stale-" in p.name]  # the stale copy is gone


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


def test_prepare_shows_no_progress_bar_when_every_seed_is_cached(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """"hard/small pool: 0instance [00:00, ?instance/s]" was printed by every evaluate and train run (three times
    by train), though nothing was generated."""
    pool = tier_pool("easy", cache_dir=tmp_path, workers=1)
    pool.prepare([0], progress=True)
    assert "easy/small pool" in capsys.readouterr().err
    pool.prepare([0], progress=True)
    assert capsys.readouterr().err == ""


def test_prepare_verifies_cached_seeds_and_regenerates_corrupt_ones(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # prepare took a seed whose two files existed for done: a truncated member stayed in the pool until an episode
    # drew it
    pool = tier_pool("easy", cache_dir=tmp_path, workers=1)
    pool.prepare(range(3), progress=False)
    original = {seed: _file(pool, seed).read_bytes() for seed in range(3)}
    _file(pool, 1).write_bytes(original[1][: len(original[1]) // 2])
    generated, generate_member = [], tiers.generate_member
    monkeypatch.setattr(tiers, "generate_member", lambda inputs, seed: generated.append(seed) or generate_member(
        inputs, seed))
    with pytest.warns(tiers.CacheWarning, match=r"seed-1\.json is corrupt or incomplete \(checksum mismatch\)"):
        pool.prepare(range(3), progress=False)
    assert generated == [1]
    assert {seed: _file(pool, seed).read_bytes() for seed in range(3)} == original
    monkeypatch.setattr(tiers, "calibrate", _no_calibration)
    with warnings.catch_warnings():
        warnings.simplefilter("error", tiers.CacheWarning)
        assert pool.instance(1).to_json().encode("utf-8") == original[1]


def test_exhausted_attempts_raise_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tiers, "MAX_ATTEMPTS", 3)
    pool = tier_pool("extreme", cache_dir=tmp_path)
    monkeypatch.setattr(tiers, "ssi", lambda inst: stress_index.SSIResult(10.0, "easy", 0.0, {}))
    with pytest.raises(RuntimeError, match=r"no calibrated 'extreme' instance .* seed 7 in 3 attempts"):
        pool.instance(7)
    assert not _file(pool, 7).exists()


def test_attempt_a_of_seed_s_draws_from_its_own_generator_and_needs_convergence(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Attempt a at seed s of tier i draws its targets (uniform in the prior, in TARGET_NAMES order), then the
    calibration seed, from default_rng([s, i, a]) (docs/generation.md, "How seed *s* is generated"); an attempt in the
    tier is accepted only when the calibration converged."""
    from types import SimpleNamespace

    from dynasched_gym.generation.scenario import TARGET_NAMES

    calls = []

    def fake_calibrate(scenario, targets, method, seed, **options):
        calls.append((targets, seed))
        return SimpleNamespace(instance=None, converged=len(calls) == 3)

    monkeypatch.setattr(tiers, "calibrate", fake_calibrate)
    monkeypatch.setattr(tiers, "ssi", lambda instance: SimpleNamespace(score=60.0, tier="hard"))
    inputs = tiers.key_inputs("hard", "small")
    got = list(zip(range(3), tiers.attempts(inputs, 7)))
    for a, (targets, seed) in enumerate(calls):
        rng = np.random.default_rng([7, TIERS.index("hard"), a])
        prior = inputs["prior"]
        expected = {name: float(rng.uniform(*prior[name])) for name in TARGET_NAMES if name in prior}
        assert list(targets.items()) == list(expected.items()) and seed == int(rng.integers(2**31))
    assert [attempt.accepted for _, attempt in got] == [False, False, True]


def test_the_exhausted_attempts_error_tells_scores_from_failed_calibrations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The RuntimeError after the last rejected attempt lists each attempt's SSI score, or "not converged" where the
    calibration failed (its score says nothing about the prior)."""
    from types import SimpleNamespace

    outcomes = iter([False, True])
    monkeypatch.setattr(tiers, "calibrate", lambda *args, **kwargs: SimpleNamespace(instance=None,
                                                                                  converged=next(outcomes)))
    monkeypatch.setattr(tiers, "ssi", lambda instance: SimpleNamespace(score=42.25, tier="medium"))
    with pytest.raises(RuntimeError, match=r"in 2 attempts \(SSI scores: not converged, 42\.2\)"):
        tiers.generate_member({**tiers.key_inputs("hard", "small"), "max_attempts": 2}, 0)


def test_default_cache_dir_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "env-cache"))
    pool = tier_pool("easy")
    assert pool.directory == tmp_path / "env-cache" / pool.key
    assert (pool.directory / tiers.MANIFEST).is_file()


def test_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="tier must be one of"):
        tier_pool("impossible", cache_dir=tmp_path)
    pool = tier_pool("easy", cache_dir=tmp_path)
    with pytest.raises(ValueError, match=r"seed must be an integer >= 0, got -1"):
        pool.instance(-1)
    with pytest.raises(TypeError, match=r"seed must be an integer >= 0, got 1\.5"):
        pool.instance(1.5)


@pytest.mark.parametrize("seed", [True, 1.0, None])
def test_bool_and_float_seeds_are_rejected_naming_seed(tmp_path: Path, seed: object,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    pool = tier_pool("easy", cache_dir=tmp_path)
    monkeypatch.setattr(tiers, "calibrate", _no_calibration)
    with pytest.raises(TypeError, match=rf"seed must be an integer >= 0, got {seed!r}"):
        pool.instance(seed)  # True was seed 1
    with pytest.raises(TypeError, match=rf"seed must be an integer >= 0, got {seed!r}"):
        pool.prepare([0, seed], progress=False)
    assert not list(pool.directory.glob("seed-*"))


@pytest.mark.parametrize(("workers", "error"), [(-3, ValueError), (0, ValueError), (True, TypeError),
                                                (1.5, TypeError)])
def test_workers_must_be_a_positive_integer(tmp_path: Path, workers: object, error: type) -> None:
    with pytest.raises(error, match=rf"workers must be an integer >= 1, got {workers!r}"):
        tier_pool("easy", cache_dir=tmp_path, workers=workers)
    assert tier_pool("easy", cache_dir=tmp_path, workers=1).workers == 1


def test_prepare_progress_and_cache_dir_are_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """prepare(progress="no") showed the bar (any string was true); cache_dir=5 failed in pathlib, unnamed."""
    pool = tier_pool("easy", cache_dir=tmp_path)
    monkeypatch.setattr(tiers, "calibrate", _no_calibration)
    for bad in ("no", 0, None):
        with pytest.raises(TypeError, match=rf"^progress must be true or false, got {bad!r}$"):
            pool.prepare([0], progress=bad)
    assert not list(pool.directory.glob("seed-*"))
    with pytest.raises(ValueError, match=r"^prepare takes at most 1000000 seeds a call .* got more: range\(0, 10+\)$"):
        pool.prepare(range(10**30))  # filled the memory listing them
    assert not list(pool.directory.glob("seed-*"))
    with pytest.raises(TypeError, match=r"^cache_dir must be a path \(str or os.PathLike\), got int: 5$"):
        tier_pool("easy", cache_dir=5)
    with pytest.raises(ValueError, match=r"^cache_dir must be a directory path or None .*got ''$"):
        tier_pool("easy", cache_dir="")  # the current directory, without a word
    for bad in (5, b"abc", "012", {0: 1}):  # 5 was "'int' object is not iterable", b"abc" seeds 97, 98 and 99
        with pytest.raises(TypeError, match=r"^seeds must be an iterable of integer seeds"):
            pool.prepare(bad)
    assert not list(pool.directory.glob("seed-*"))


# ------------------------------------------------------------------------------ tier prior files
@pytest.fixture
def conf_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the size presets and tier priors that ``tier_prior`` reads instead of conf/."""
    root = tmp_path / "conf"
    for sub in ("size", "tier"):
        shutil.copytree(conf.CONF_DIR / sub, root / sub)
    monkeypatch.setattr(conf, "CONF_DIR", root)
    return root


def _edit_tier_file(root: Path, tier: str, edit) -> Path:
    import yaml

    path = root / "tier" / f"{tier}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_shipped_priors_are_valid_and_read_as_before(conf_copy: Path) -> None:
    assert tiers.tier_prior("hard", "large")["utilization"] == [0.33, 0.42]  # sizes.large replaces prior
    assert tiers.tier_prior("hard", "medium")["utilization"] == [0.35, 0.55]
    assert list(tiers.tier_prior("easy", "small")) == ["utilization", "due_date_tightness", "arrival_scv",
                                                       "processing_scv", "disturbance"]


def test_a_typo_in_a_sizes_key_is_an_error_naming_file_and_key(conf_copy: Path, tmp_path: Path) -> None:
    path = _edit_tier_file(conf_copy, "easy", lambda d: d.update(sizes={"smal": d["sizes"]["small"]}))
    for load in (lambda: tiers.tier_prior("easy", "small"), lambda: tier_pool("easy", cache_dir=tmp_path / "c")):
        with pytest.raises(InstanceFormatError, match="unknown size preset") as err:
            load()  # was silently ignored: the small pool used the medium ranges
        assert err.value.source == str(path) and err.value.field == "sizes.smal"


def test_a_typo_in_a_top_level_key_is_an_error_naming_file_and_key(conf_copy: Path, tmp_path: Path) -> None:
    path = _edit_tier_file(conf_copy, "easy", lambda d: d.update(size=d.pop("sizes")))
    for load in (lambda: tiers.tier_prior("easy", "small"), lambda: tier_pool("easy", cache_dir=tmp_path / "c")):
        with pytest.raises(InstanceFormatError, match=r"unknown key \(known: name, prior, sizes\)") as err:
            load()  # was silently ignored: the small pool used the medium ranges
        assert err.value.source == str(path) and err.value.field == "size"
    path.write_text("", encoding="utf-8")
    with pytest.raises(InstanceFormatError, match="expected a mapping") as err:
        tiers.tier_prior("easy", "small")  # was AttributeError: 'NoneType' object has no attribute 'get'
    assert err.value.source == str(path)


@pytest.mark.parametrize(("text", "line", "field", "message"), [
    ("", None, None, r"expected a mapping with the key scenario .*\(got None\)$"),  # TypeError: None not subscriptable
    ("- 1\n- 2\n", None, None, r"expected a mapping with the key scenario"),  # TypeError: list indices
    ("scenaro: {}\n", None, None, r"expected a mapping with the key scenario .*'scenaro'"),  # a KeyError
    ("SMALL\ntargets: {utilization: 0.5}\n", None, "targets", r"unknown key \(known: scenario\)"),  # was ignored
    ("SMALL\n  bad: : :\n", 35, None, r"not valid YAML .*\(got 'bad: : :'\)$"),  # yaml's ScannerError
    ("scenario: [1,\n", 2, None, r"not valid YAML .*<stream end>"),  # at the end of the file: no line to quote
])
def test_a_size_preset_file_that_is_no_preset_is_an_error_naming_it(conf_copy: Path, text: str, line: int | None,
                                                                      field: str | None, message: str) -> None:
    """A preset of one's own, conf/size/<name>.yaml, is a preset by name (size_presets lists it): an empty file, a
    list, a misspelt scenario key or invalid YAML was a TypeError, a KeyError or the YAML parser's traceback, and a
    key beside scenario (a targets block one level too high) was ignored."""
    path = conf_copy / "size" / "mine.yaml"
    small = (conf_copy / "size" / "small.yaml").read_text(encoding="utf-8")
    path.write_text(text.replace("SMALL\n", small), encoding="utf-8")
    with pytest.raises(InstanceFormatError, match=message) as err:
        Scenario.preset("mine")
    assert (err.value.source, err.value.line, err.value.field) == (str(path), line, field)
    tier_file = conf_copy / "tier" / "easy.yaml"
    tier_file.write_text("prior: {utilization: [0.1, 0.2]\nsizes: {}\n", encoding="utf-8")
    with pytest.raises(InstanceFormatError, match=r"not valid YAML .*\(got 'sizes: \{\}'\)$") as err:
        tiers.tier_prior("easy", "small")
    assert (err.value.source, err.value.line) == (str(tier_file), 2)


@pytest.mark.parametrize(("where", "field"), [(("prior",), "prior.disturbance[1]"),
                                              (("sizes", "large"), "sizes.large.disturbance[1]")])
def test_prior_ranges_outside_the_target_range_fail_on_load(conf_copy: Path, where: tuple, field: str) -> None:
    def edit(data: dict) -> None:
        node = data
        for key in where:
            node = node.setdefault(key, {})
        node["disturbance"] = [0.04, 0.9]  # disturbance targets are in [0, 0.5)

    path = _edit_tier_file(conf_copy, "hard", edit)
    with pytest.raises(InstanceFormatError, match=r"must be a number in \[0\.0, 0\.5\)") as err:
        tiers.tier_prior("hard", "small")  # found on load, whatever seed would draw there, even for another size
    assert err.value.source == str(path) and err.value.field == field and err.value.value == 0.9


@pytest.mark.parametrize(("where", "field"), [(("prior",), "prior.load_cv[1]"),
                                              (("sizes", "small"), "sizes.small.load_cv[1]")])
def test_a_prior_range_past_what_the_preset_allows_fails_on_load(conf_copy: Path, tmp_path: Path, where: tuple,
                                                                 field: str) -> None:
    """load_cv targets are at most sqrt(groups - 1), 1.41 for the presets' 3 groups: a range [1.3, 1.5] was loaded,
    and the attempts that drew above 1.41 failed naming targets.load_cv of "<scenario>", not the tier file."""
    def edit(data: dict) -> None:
        node = data
        for key in where:
            node = node.setdefault(key, {})
        node["load_cv"] = [1.3, 1.5]

    path = _edit_tier_file(conf_copy, "easy", edit)
    for load in (lambda: tiers.tier_prior("easy", "small"), lambda: tier_pool("easy", cache_dir=tmp_path / "c")):
        with pytest.raises(InstanceFormatError, match=r"not a target of the small preset: the load CV of 3 machine "
                                                      r"group\(s\) is at most sqrt\(3 - 1\) = 1\.41") as err:
            load()
        assert err.value.source == str(path) and err.value.field == field and err.value.value == 1.5
    _edit_tier_file(conf_copy, "easy", lambda d: d["prior"].update(load_cv=[1.3, 1.4]))
    if where == ("prior",):
        assert tiers.tier_prior("easy", "small")["load_cv"] == [1.3, 1.4]


def test_a_prior_range_of_one_value_is_allowed(conf_copy: Path) -> None:
    """A range is [low, high] with low <= high: low == high fixes the target."""
    _edit_tier_file(conf_copy, "medium", lambda d: d["prior"].update(utilization=[0.3, 0.3]))
    assert tiers.tier_prior("medium", "medium")["utilization"] == [0.3, 0.3]


def test_malformed_prior_ranges_name_file_and_key(conf_copy: Path) -> None:
    path = _edit_tier_file(conf_copy, "medium", lambda d: d["prior"].update(utilization=[0.5, 0.3]))
    with pytest.raises(InstanceFormatError, match="low <= high") as err:
        tiers.tier_prior("medium", "medium")
    assert err.value.source == str(path) and err.value.field == "prior.utilization"
    _edit_tier_file(conf_copy, "medium", lambda d: d["prior"].update(utilisation=[0.3, 0.5]))
    with pytest.raises(InstanceFormatError, match="unknown target") as err:
        tiers.tier_prior("medium", "medium")
    assert err.value.field == "prior.utilisation"


# ------------------------------------------------------------------------------ warnings point at the caller
def test_cache_warnings_point_at_the_callers_line(tmp_path: Path) -> None:
    pool = tier_pool("easy", cache_dir=tmp_path)
    pool.instance(0)
    (pool.directory / tiers.MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.warns(tiers.CacheWarning, match="manifest.json") as caught:
        pool = tier_pool("easy", cache_dir=tmp_path)  # was reported at tiers.py (tier_pool's own line)
    assert [w.filename for w in caught] == [__file__]
    (pool.directory / tiers.MANIFEST).write_text("{not json", encoding="utf-8")
    with pytest.warns(tiers.CacheWarning, match="manifest.json") as caught:
        TierPool("easy", cache_dir=tmp_path)
    assert [w.filename for w in caught] == [__file__]
    pool.instance(0)
    pool._paths(0)[1].unlink()
    with pytest.warns(tiers.CacheWarning, match="seed-0.json") as caught:
        pool.instance(0)
    assert [w.filename for w in caught] == [__file__]


def _openblas_dynamic_arch() -> bool:
    blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    return "openblas" in blas.get("name", "") and "DYNAMIC_ARCH" in blas.get("openblas configuration", "")


def _numpy_dispatched_features() -> list[str]:
    """The CPU features NumPy picks SIMD code for on this machine (beyond its baseline)."""
    umath = np._core._multiarray_umath if hasattr(np, "_core") else np.core._multiarray_umath
    return [f for f in getattr(umath, "__cpu_dispatch__", []) if umath.__cpu_features__.get(f)]


@pytest.mark.parametrize("cpu", [
    pytest.param({"OPENBLAS_CORETYPE": "Prescott"}, id="older-openblas-kernel", marks=pytest.mark.skipif(
        not _openblas_dynamic_arch(), reason="needs OpenBLAS with runtime kernel selection")),
    pytest.param({"NPY_DISABLE_CPU_FEATURES": ",".join(_numpy_dispatched_features())}, id="numpy-without-simd",
                 marks=pytest.mark.skipif(not _numpy_dispatched_features(), reason="NumPy dispatches no SIMD here")),
])
def test_same_bytes_and_scores_on_another_cpu(tmp_path: Path, cpu: dict[str, str]) -> None:
    """'Any machine': another OpenBLAS kernel, or NumPy without its AVX2/AVX-512 code (as on a CPU without them),
    must give the same pool bytes and SSI scores. NumPy's AVX-512 exp, power and cos round some last bits
    otherwise: 22 of 24 pool members had other bytes."""
    code = ("import sys; from dynasched_gym.generation import ssi, tier_pool\n"
            "for tier in ('easy', 'extreme'):\n"
            "    for seed in (0, 1):\n"
            "        inst = tier_pool(tier, 'small', cache_dir=sys.argv[1]).instance(seed)\n"
            "        print(inst.to_json(), repr(ssi(inst).score))\n")
    other = subprocess.run([sys.executable, "-c", code, str(tmp_path / "other")], env={**os.environ, **cpu},
                           capture_output=True, text=True, check=True).stdout.splitlines()
    here = []
    for tier in ("easy", "extreme"):
        for seed in (0, 1):
            inst = tier_pool(tier, "small", cache_dir=tmp_path / "here").instance(seed)
            here.append(f"{inst.to_json()} {ssi(inst).score!r}")
    assert other == here


def test_the_pool_cache_follows_xdg_and_falls_back_to_a_temporary_directory(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool cache ignored $XDG_CACHE_HOME, and a home that cannot be written (a container user) failed at the
    first pool instance with PermissionError."""
    monkeypatch.delenv("DYNASCHED_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tiers.default_cache_dir() == tmp_path / "xdg" / "dynasched_gym" / "pools"
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file" / "cache"))  # below a file: never writable
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    with pytest.warns(RuntimeWarning, match=r"cannot keep the pools cache in .*file/cache/dynasched_gym/pools .*"
                                            r"set \$DYNASCHED_CACHE"):
        fallback = tiers.default_cache_dir()
    assert fallback.parent.parent == tmp_path / "temp" and fallback.name == "pools"
    monkeypatch.setenv("DYNASCHED_CACHE", str(tmp_path / "given"))
    assert tiers.default_cache_dir() == tmp_path / "given"


def test_the_pool_cache_ignores_an_empty_variable_and_falls_back_from_a_folder_it_cannot_enter(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty $DYNASCHED_CACHE is unset (not the working directory); a folder that may be written but not entered
    (no search permission, which os.access stands in for: tests may run as root) is refused, and the fallback is the
    user's, the warning pointing at the line that asked for the folder."""
    monkeypatch.setenv("DYNASCHED_CACHE", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert tiers.default_cache_dir() == tmp_path / "xdg" / "dynasched_gym" / "pools"
    monkeypatch.setattr(os, "access", lambda path, mode: not mode & os.X_OK)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "temp"))
    monkeypatch.setenv("USER", "someone")
    with pytest.warns(RuntimeWarning, match=r"pools/? \(not writable\)") as caught:
        fallback = tiers.default_cache_dir()
    assert fallback == tmp_path / "temp" / "dynasched_gym-someone" / "pools"
    assert caught[0].filename == tiers.__file__


def test_an_interrupted_prepare_keeps_the_members_its_workers_finished(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while a member is written: every member already generated (that one, and those the workers finished
    meanwhile) is kept; they were dropped, and the rerun generated them again."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    class Threads(ThreadPoolExecutor):  # in-process workers, so that the monkeypatched generator is the one run
        def __init__(self, workers: int) -> None:
            super().__init__(workers)

    monkeypatch.setattr(tiers, "WorkerPool", Threads)
    monkeypatch.setattr(tiers, "generate_member", lambda inputs, seed: f'{{"seed": {seed}}}')
    write, interrupted = TierPool._write, threading.Event()

    def interrupted_write(self: TierPool, seed: int, text: str) -> None:
        if not interrupted.is_set():
            interrupted.set()
            time.sleep(0.3)  # the other members finish meanwhile
            raise KeyboardInterrupt
        write(self, seed, text)

    monkeypatch.setattr(TierPool, "_write", interrupted_write)
    pool = tier_pool("medium", cache_dir=tmp_path, workers=2)
    with pytest.raises(KeyboardInterrupt):
        pool.prepare(range(4), progress=False)
    kept = sorted(int(p.stem.split("-")[1]) for p in pool.directory.glob("seed-*.sha256"))
    assert kept == [0, 1, 2, 3] and all(pool._read(seed) == f'{{"seed": {seed}}}' for seed in kept)


def test_a_script_without_the_main_guard_is_told_how_to_prepare_a_pool(tmp_path: Path) -> None:
    """Spawned workers import the script again and die starting their own pool: that was a bare BrokenProcessPool."""
    script = tmp_path / "unguarded.py"
    script.write_text("from dynasched_gym.generation import tier_pool\n"
                      f"tier_pool('easy', 'small', cache_dir={str(tmp_path / 'cache')!r}, workers=2)"
                      ".prepare(range(2), progress=False)\n")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(Path(tiers.__file__).parents[2])})
    assert run.returncode == 1
    # at exit CPython's resource tracker may warn of the semaphores the dead workers' own pools left (its warning
    # and source line, after the traceback): the workers' doing, in the user's script, not the error raised
    lines = [line for line in run.stderr.rstrip().splitlines() if "resource_tracker" not in line]
    assert lines[-1].startswith("RuntimeError: a worker generating the easy/small pool ended abruptly")
    assert 'call prepare() under `if __name__ == "__main__":`' in run.stderr
