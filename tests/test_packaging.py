"""The distributions: the wheel holds the library, environments, agents, configs and checkpoints; the sdist is
the checkout (tests with their helpers and pins, scripts, configs, docs, Makefile)."""

from __future__ import annotations

import os
import tarfile
import zipfile
from pathlib import Path

import pytest

setuptools_build = pytest.importorskip("setuptools.build_meta")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    out = tmp_path_factory.mktemp("dist")
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        sdist = out / setuptools_build.build_sdist(str(out))
        wheel = out / setuptools_build.build_wheel(str(out))
    finally:
        os.chdir(cwd)
    with tarfile.open(sdist) as tar:
        sdist_names = [name.split("/", 1)[1] for name in tar.getnames() if "/" in name]
    with zipfile.ZipFile(wheel) as whl:
        wheel_names = whl.namelist()
    return {"sdist": sdist_names, "wheel": wheel_names}


def test_sdist_runs_the_tests_and_scripts(built):
    names = set(built["sdist"])
    for needed in ("Makefile", "LICENSE", "tests/conftest.py", "tests/strategies.py", "tests/data/behaviour_pins.json",
                   "scripts/train.py", "conf/train/ppo.yaml", "conf/leaderboard.yaml", "docs/agents.md",
                   "envs/dfjsp/env.py", "agents/checkpoints/ppo-medium-small.zip"):
        assert needed in names, needed
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]


def test_wheel_holds_envs_agents_configs_and_checkpoints(built):
    names = set(built["wheel"])
    for needed in ("dynasched_gym/envs/dfjsp/env.py", "dynasched_gym/agents/ppo.py",
                   "dynasched_gym/conf/train/ppo.yaml", "dynasched_gym/agents/checkpoints/ppo-medium-small.zip",
                   "dynasched_gym/agents/checkpoints/ppo-medium-small.yaml"):
        assert needed in names, needed
    configs = {f"dynasched_gym/conf/{path.relative_to(REPO / 'conf').as_posix()}"
               for path in (REPO / "conf").rglob("*.yaml")}
    assert configs - names == set()  # every config group, Hydra's own (conf/hydra/) too
    assert not [name for name in names if name.startswith(("tests/", "scripts/"))]
    assert [name for name in names if name.endswith(".dist-info/licenses/LICENSE")], "the licence text"
