"""Refuse bad Hydra settings: overrides that add a key a script does not read, and values it cannot use.

Hydra composes ``+key=value`` into the config whatever the key, and a script reads only its own keys: ``+tier=hard``
(which Hydra itself suggests when ``tier=hard`` names no key) or a misspelt ``+seeds.cout=5`` would run with the
defaults, silently. :func:`check_added_keys` composes the same config without the ``+`` overrides and refuses every
key the user added, unless it lies under one of the script's free-form mappings (an agent's keyword arguments,
calibrate's ``options``), which the script checks itself. A key set without ``+`` that the config lacks
(``seed.count=3``), for which Hydra suggests that ``+``, is refused naming the nearest one: :func:`check_setting_keys`.

A value the script cannot use (``seeds.count=abc``, ``tiers=[nightmare]``) is a :class:`SettingError` naming the key
and the value: the checks of a script's settings run inside :func:`settings_checked`, before any work, and the
script's ``main`` runs inside :func:`setting_errors_exit`, which prints ``error: <message>`` and exits with status 2
(a usage error, as argparse's), without a traceback and without the empty run folder Hydra made for the run.

A launcher whose Hydra plugin is not installed (``-m launcher=slurm`` or Hydra's own
``hydra/launcher=submitit_slurm`` without hydra-submitit-launcher) fails in Hydra, before any script runs, as a
config it cannot find: each script's ``hydra.main`` is made by :func:`checked_main`, which refuses it first
the same way, naming the extra that installs the plugin. It refuses too an override choosing a config that its
config group lacks (``size=huge``, ``agent=[rules,nosuch]``, ``-m size=small,huge``) or null, which Hydra reports as a
multi-line error or a traceback (leaving a sweep's folder behind), one choosing or deleting a config of a group the
script's config does not select (``tier=hard`` for train, ``~tier``), and one deleting a config the script reads
(``~env``): :func:`check_config_groups`.

In a ``-m`` sweep, every job's settings are checked before the first job runs, with the script's own checks
(:func:`check_sweep_jobs`), where Hydra ran the jobs before a bad one; a job's follow-up commands leave its launcher
out (:func:`single_run_overrides`), and its report goes to a folder of its own (:func:`job_folder`).
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import inspect
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from omegaconf import DictConfig, OmegaConf

from dynasched_gym.cli import doc_summary, reader_gone
from dynasched_gym.errors import MissingExtraError, missing_extra
from scripts.interrupts import interrupted_exit

#: The config path of every script's ``hydra.main`` (:func:`checked_main`), where it looks up config groups.
CONFIG_PATH = "pkg://dynasched_gym.conf"

#: The project's launchers (``conf/launcher/<name>.yaml``) -> the package of the Hydra plugin each selects (in the
#: ``dist`` extra; its module is ``hydra_plugins.<package with underscores>``).
LAUNCHER_PLUGINS = {"joblib": "hydra-joblib-launcher", "ray": "hydra-ray-launcher", "slurm": "hydra-submitit-launcher"}

#: Hydra's own launcher configs that those plugins provide (``hydra/launcher=<name>``) -> the plugin's package.
HYDRA_LAUNCHER_PLUGINS = {"joblib": "hydra-joblib-launcher", "ray": "hydra-ray-launcher",
                          "ray_aws": "hydra-ray-launcher", "submitit_slurm": "hydra-submitit-launcher",
                          "submitit_local": "hydra-submitit-launcher"}


#: What a ``-m`` sweep stopped by Ctrl-C or SIGTERM outside its jobs (a parallel launcher waiting on them) says.
SWEEP_STOPPED = ("the sweep was stopped; the jobs that had started say above what they kept and how to resume, and "
                 "those not started did not run")


class SettingError(ValueError):
    """A setting of a script's Hydra config that the script refuses; the message names the key and the value."""


@contextmanager
def settings_checked() -> Iterator[None]:
    """Re-raise a TypeError, ValueError, FileNotFoundError or :class:`~dynasched_gym.errors.MissingExtraError` of
    the block as a :class:`SettingError` (its cause the original): wrap the checks of a script's settings in it
    (each check's message names its key), and no work, where an error would be a bug to trace."""
    try:
        yield
    except SettingError:
        raise
    except (TypeError, ValueError, FileNotFoundError, MissingExtraError) as exc:
        raise SettingError(str(exc)) from exc


def mapping_setting(cfg: DictConfig, key: str, hint: str = "") -> dict[str, Any]:
    """The setting ``key`` (dotted) as a plain dict; a :class:`SettingError` naming it (with ``hint``) where it is no
    mapping (``options=null`` failed in OmegaConf with "Input cfg is not an OmegaConf config object", ``seeds=null``
    with an AttributeError traceback, naming no setting)."""
    node = OmegaConf.select(cfg, key)
    if not isinstance(node, DictConfig):
        raise SettingError(f"{key} must be a mapping{hint}, got {node!r:.80}")
    return OmegaConf.to_container(node, resolve=True)


def output_folder(key: str, value: Any) -> Path:
    """The setting ``key``: a folder to write into, made absolute from the launch directory; a file there or where
    one of its parents belongs, or a value that is no path (null, 1.5, a list; digits, which Hydra reads as an
    integer, are a name), is a :class:`SettingError`."""
    from dynasched_gym.instance import writable_folder

    folder = _setting_path(key, value, "folder")
    try:
        return writable_folder(folder)
    except OSError as exc:
        raise SettingError(f"{key} must be a {_writable(exc)}folder path, got {folder} ({exc.filename}: "
                           f"{exc.strerror})") from None


def output_file(key: str, value: Any, read_only: bool = False) -> Path:
    """The setting ``key``: a file to write (or, ``read_only``, only to read), made absolute from the launch
    directory; a value that is no path, or a path that is no :func:`~dynasched_gym.instance.writable_file` (or no
    :func:`~dynasched_gym.instance.regular_file`: a folder, ``/dev/null``, found after all the work otherwise), is a
    :class:`SettingError`."""
    from dynasched_gym.instance import regular_file, writable_file

    file = _setting_path(key, value, "file")
    try:
        return regular_file(file) if read_only else writable_file(file)
    except OSError as exc:
        raise SettingError(f"{key} must be a {_writable(exc)}regular file path, got {file} ({exc.filename}: "
                           f"{exc.strerror})") from None


def _writable(exc: OSError) -> str:
    """The word that says what a path refused for ``exc`` lacked, where it is no folder-or-file confusion."""
    return "writable " if isinstance(exc, PermissionError) else ""


def _setting_path(key: str, value: Any, kind: str) -> Path:
    """The setting ``key`` as a path made absolute from the launch directory; a value that is no path is a
    :class:`SettingError` naming the ``kind`` of path it should be."""
    from hydra.utils import to_absolute_path

    if isinstance(value, bool) or not isinstance(value, (str, int, os.PathLike)):
        raise SettingError(f"{key} must be a {kind} path, got {type(value).__name__}: {value!r:.80}")
    if not str(value).strip():  # Path("") is the launch folder: calibrate said it existed, train wrote into it
        raise SettingError(f"{key} must be a {kind} path, got {str(value)!r}")
    return Path(to_absolute_path(str(value)))


def _hydra_files_only(folder: Path) -> bool:
    """``folder`` holds nothing but what Hydra writes at the start of a run (``.hydra/``, an empty log)."""
    return all(path.is_dir() or path.stat().st_size == 0 or path.relative_to(folder).parts[0] == ".hydra"
               for path in folder.rglob("*"))


def _sequential_sweep(hydra: Any) -> bool:
    """The running job is one of a ``-m`` sweep whose jobs run one after another in this process (Hydra's basic
    launcher), so none writes into the sweep folder once this process exits."""
    from hydra.types import RunMode

    return hydra.mode == RunMode.MULTIRUN and str(hydra.launcher.get("_target_", "")).endswith(".BasicLauncher")


def job_folder(out: str) -> str:
    """Where a script writes its report (``out``): ``out``, or in a sweep (``-m``) ``out/<job number>`` (as Hydra
    numbers the sweep's job folders, whose ``.hydra/overrides.yaml`` says what each job ran), so that the jobs do not
    write their reports over one another (a sweep of ``scripts.observability`` kept only its last job's)."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized() or HydraConfig.get().mode != RunMode.MULTIRUN:
        return out
    return str(Path(out) / str(HydraConfig.get().job.num))


def later_sweep_jobs(script: str) -> str | None:
    """In a job of a ``-m`` sweep whose jobs run one after another (Hydra's basic launcher): the commands that run
    each job after this one alone (``python -m <script> <its overrides>``), which the sweep does not run once this
    job stops it, as a note to print with the job's own; None elsewhere, and for the sweep's last job. The sweep's
    overrides are those of its ``multirun.yaml`` (:func:`_sweep_overrides`)."""
    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized() or not _sequential_sweep(hydra := HydraConfig.get()):
        return None
    sweep = OmegaConf.load(Path(hydra.runtime.cwd, hydra.sweep.dir, "multirun.yaml"))
    loader = GlobalHydra.instance().config_loader() if GlobalHydra.instance().is_initialized() else None
    parsed = _sweep_overrides(sweep, loader)
    jobs = [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch][hydra.job.num + 1:]
    if not jobs:
        return None
    commands = "\n".join(" ".join(["  python -m", script, *map(shlex.quote, single_run_overrides(job))])
                         for job in jobs)
    return f"the sweep's {len(jobs)} later job(s) did not run; each alone:\n{commands}"


def _sweep_overrides(sweep: DictConfig, loader: Any) -> list[Any]:
    """The overrides that Hydra's BasicSweeper expands into the jobs of the sweep whose config is ``sweep``: its
    ``hydra.sweeper.params``, then the command line's (unresolved: ``out=runs/${hydra:job.num}`` is not the running
    job's folder), parsed with Hydra's config ``loader`` (None: no ``glob`` over a config group)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = [f"{key}={value}" for key, value in (sweep.hydra.sweeper.get("params") or {}).items()]
    task = OmegaConf.to_container(sweep.hydra.overrides.task, resolve=False)
    return OverridesParser.create(config_loader=loader).parse_overrides([*params, *task])


def remove_empty_run_folder() -> None:
    """Delete the running Hydra job's output folder if it holds only Hydra's own files, and the parent folders
    that leaves empty below the working directory (``outputs/evaluate/<date>/``). In a sequential sweep stopped
    by its first job, the sweep folder's ``multirun.yaml`` goes too: the sweep ran nothing."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return
    hydra = HydraConfig.get()
    folder, top = Path(hydra.runtime.output_dir).resolve(), Path(hydra.runtime.cwd).resolve()
    if not folder.is_dir() or folder == top or not _hydra_files_only(folder):
        return
    shutil.rmtree(folder, ignore_errors=True)
    if (_sequential_sweep(hydra) and folder.parent != top and folder.parent not in top.parents  # nor above it
            and [p.name for p in folder.parent.iterdir()] == ["multirun.yaml"]):
        folder = folder.parent
        shutil.rmtree(folder, ignore_errors=True)
    for parent in folder.parents:
        if parent == top or top not in parent.parents:
            break
        try:
            parent.rmdir()
        except OSError:  # not empty: another run's
            break


@contextmanager
def file_errors_exit(cleanup: Callable[[], None] | None = None) -> Iterator[None]:
    """Run a script's work in this: an OSError of a file or folder (one removed mid-run, a full disk, a permission
    changed) prints ``error: <path>: <reason>`` on stderr and exits with status 1 after ``cleanup``, where it was a
    traceback of wherever the write was; an OSError naming no file is raised (a failure to trace). With
    ``HYDRA_FULL_ERROR=1`` it is raised, for the whole traceback, after ``cleanup`` as well."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None:
            raise
        if cleanup:
            cleanup()
        _usage_error_exit(f"{exc.filename}: {exc.strerror}", status=1)


@contextmanager
def setting_errors_exit() -> Iterator[None]:
    """Run a Hydra script's ``main`` in this: a :class:`SettingError` prints ``error: <message>`` on stderr and exits
    with status 2, leaving no empty run folder (:func:`remove_empty_run_folder`); an OSError of a file or folder does
    the same with status 1 (:func:`file_errors_exit`). With ``HYDRA_FULL_ERROR=1`` either is raised, for the whole
    traceback, once the folder is removed as well."""
    try:
        with file_errors_exit(remove_empty_run_folder):
            yield
    except SettingError as exc:
        remove_empty_run_folder()
        _usage_error_exit(exc)


def _usage_error_exit(exc: Exception | str, status: int = 2) -> NoReturn:
    """Print ``error: <exc>`` on stderr and exit with ``status``; with ``HYDRA_FULL_ERROR=1`` (Hydra's switch for the
    whole traceback) raise the exception being handled instead. Call it while handling one."""
    if os.environ.get("HYDRA_FULL_ERROR") == "1":
        raise
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(status)


def _plugin_installed(package: str) -> bool:
    """The Hydra plugin ``package`` is importable (found, not imported: Ray's plugin would import Ray)."""
    try:
        return importlib.util.find_spec(f"hydra_plugins.{package.replace('-', '_')}") is not None
    except ModuleNotFoundError:  # no Hydra plugin at all: no hydra_plugins namespace
        return False


def check_launcher(overrides: Sequence[str], multirun: bool = True) -> None:
    """Raise a :class:`~dynasched_gym.errors.MissingExtraError` naming the extra to install when the command line's
    ``overrides`` pick one of the project's launchers (``launcher=ray``, also among swept values) or one of Hydra's
    launcher configs (``hydra/launcher=submitit_slurm``) whose Hydra plugin is not installed; Hydra would refuse it
    as a config it cannot find. Without ``multirun`` (no ``-m``), a launcher of either group is a
    :class:`SettingError`: Hydra ignores launchers outside sweeps, and would run the whole job here, silently, with
    the launcher config's settings (``workers=1``). An override Hydra cannot parse is left to Hydra to report."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.core.override_parser.types import ChoiceSweep
    from hydra.errors import OverrideParseException

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except OverrideParseException:
        return
    groups = {"launcher": LAUNCHER_PLUGINS, "hydra/launcher": HYDRA_LAUNCHER_PLUGINS}
    for override in parsed:
        plugins = groups.get(override.key_or_group)
        if plugins is None or override.is_delete():
            continue
        value = override.value()
        if not multirun and value is not None:
            raise SettingError(f"{override.input_line} picks the launcher of -m sweeps, and this is no sweep: add -m "
                               "(without it, Hydra would ignore the launcher and run the job here)")
        for name in value.list if isinstance(value, ChoiceSweep) else [value]:
            package = plugins.get(name) if isinstance(name, str) else None
            if package is not None and not _plugin_installed(package):
                raise missing_extra("dist", f"{override.key_or_group}={name}", package)


def single_run_overrides(overrides: Sequence[str]) -> list[str]:
    """A sweep job's ``overrides`` for a command that runs it alone, without ``-m``: those that pick a launcher
    (``launcher=joblib``) left out, since :func:`check_launcher` refuses a launcher outside a sweep (the follow-up
    commands that a job of ``-m launcher=joblib`` printed were refused when copied)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(overrides))
    return [o.input_line for o in parsed if o.key_or_group not in ("launcher", "hydra/launcher")]


def _chosen(value: Any) -> list[Any]:
    """The config names a config group override's value chooses: the value, a list's items, a choice sweep's values
    (each a name or a list of names)."""
    from hydra.core.override_parser.types import ChoiceSweep

    values = value.list if isinstance(value, ChoiceSweep) else [value]
    return [name for item in values for name in (item if isinstance(item, list) else [item])]


def _check_selected(loader: Any, config_name: str, parsed: Sequence[Any]) -> None:
    """Raise a :class:`SettingError` where one of the ``parsed`` overrides chooses, or ``~`` deletes, a config of a
    group that the config ``config_name`` does not select (``tier=hard`` for train; Hydra: "Could not override
    'tier'. No match in the defaults list", status 1), or deletes a config it selects, which the script reads
    (``~env``: a traceback, ``~size``: an error about ``size.scenario``). Deleting a group whose choice is null
    (``~launcher``) changes nothing and passes; so do Hydra's own groups (``hydra/...``), which Hydra checks.

    Hydra decides what is selected: its defaults list, computed as for the run (a ``-m`` sweep's first job) but
    without the deletions, and with its record of the overrides it used. Where Hydra cannot compute it (a config
    that does not exist, null for a group), nothing is raised: the caller reports those."""
    from hydra.core.object_type import ObjectType
    from hydra.errors import HydraException

    try:  # Hydra's private API (1.3): where another version lacks it, Hydra reports these overrides itself
        from hydra._internal.defaults_list import Overrides, _create_defaults_list
        parse = loader._parse_overrides_and_create_caching_repo
    except (ImportError, AttributeError):
        return
    job = _job_overrides([o for o in parsed if not o.is_delete()])  # a sweep's first job stands for all
    try:
        job_overrides, repo = parse(config_name, job)
        used = Overrides(repo, job_overrides)
        # Hydra's create_defaults_list, but for its raising on the first override it could not use
        defaults, _ = _create_defaults_list(repo, config_name, used, prepend_hydra=True, skip_missing=True)
    except (HydraException, ValueError):
        return
    selected = {key: [] if name is None else [name] for key, name in used.known_choices.items()}
    for default in defaults:  # a list of configs (agent: [rules, random]) has a config per item but no choice
        group, _, name = default.config_path.rpartition("/")
        if group and default.override_key is None and not (default.is_self or default.primary):
            selected.setdefault(group, []).append(name)
    selected = {key: names for key, names in selected.items() if key.split("/")[0] != "hydra"}
    groups = f"its config groups are {', '.join(sorted(selected))}" if selected else "it has no config groups"
    for override in parsed:
        group = override.key_or_group
        if (override.is_hydra_override() or override.is_add() or isinstance(override.value(), dict)
                or not repo.group_exists(group)):  # a + adds what it names; a dict sets keys of the config
            continue
        key = override.get_key_element().lstrip("~")
        if override.is_delete():
            names = selected.get(key)
            if names == [] and override.value() is None:
                continue
            if names:
                raise SettingError(f"{override.input_line}: {config_name} reads its {group} config"
                                   f"{'s' if len(names) > 1 else ''} ({', '.join(names)}), which cannot be deleted "
                                   f"(leave {group} out for the script's default); choose one of "
                                   f"{', '.join(repo.get_group_options(group, ObjectType.CONFIG))}")
        else:
            record = used.override_metadata.get(key)
            if record is None or record.used:  # used, or a sweep Hydra expands itself (range, glob)
                continue
        raise SettingError(f"{override.input_line}: {config_name} selects no {group} config"
                           f"{f' ({group} is null)' if key in selected else f'; {groups}'}")


def _parsed_and_loader(overrides: Sequence[str], config_dir: str | None) -> tuple[list[Any], Any] | None:
    """The command line's ``overrides`` parsed by Hydra, and Hydra's config loader over the run's search path:
    :data:`CONFIG_PATH`, Hydra's own and ``--config-dir`` (``hydra.searchpath`` comes with the overrides); None
    where Hydra cannot parse them or the ``--config-dir`` is no folder (Hydra says so)."""
    from hydra._internal.config_loader_impl import ConfigLoaderImpl
    from hydra._internal.utils import create_config_search_path
    from hydra.core.config_search_path import SearchPathQuery
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    try:
        parsed = OverridesParser.create().parse_overrides(list(overrides))
    except HydraException:
        return None
    search_path = create_config_search_path(CONFIG_PATH)
    if config_dir is not None:
        if not os.path.isdir(config_dir):
            return None
        # where Hydra's main puts it
        search_path.prepend("command-line", f"file://{os.path.abspath(config_dir)}", SearchPathQuery("schema"))
    return parsed, ConfigLoaderImpl(config_search_path=search_path)


def _job_overrides(parsed: Sequence[Any]) -> list[str]:
    """The ``parsed`` overrides as a ``-m`` sweep's first job gets them: a choice sweep's first value for all."""
    from hydra.core.override_parser.types import ChoiceSweep

    # a choice sweep's job overrides are "key=value" for each value (Hydra's BasicSweeper)
    return [f"{o.get_key_element()}={next(o.sweep_string_iterator())}" if isinstance(o.value(), ChoiceSweep)
            else o.input_line for o in parsed]


def check_config_groups(overrides: Sequence[str], config_dir: str | None = None,
                        config_name: str | None = None) -> None:
    """Raise a :class:`SettingError` naming the group's configs when one of the command line's ``overrides`` chooses
    a config that its config group lacks (``size=huge``, ``+size=huge``, ``hydra/launcher=nosuch``, also in a list,
    ``agent=[rules,nosuch]``, or among swept values, ``size=small,huge``), or null, which Hydra refuses for a group;
    and, for the primary config ``config_name``, one that chooses or deletes a config of a group it does not select,
    or deletes one it selects (:func:`_check_selected`). Hydra lists the group's configs in the search path of the
    run: :data:`CONFIG_PATH`, Hydra's own, ``--config-dir`` and ``hydra.searchpath`` (of the command line, or of the
    primary config). What Hydra cannot parse or look up (a missing ``--config-dir``), and the sweeps it expands
    itself (``glob``, ``range``), are left to Hydra to report."""
    from hydra.core.object_type import ObjectType
    from hydra.core.override_parser.types import ChoiceSweep, Sweep
    from hydra.errors import HydraException

    found = _parsed_and_loader(overrides, config_dir)
    if found is None:
        return
    parsed, loader = found
    if config_name is not None:
        _check_selected(loader, config_name, parsed)
    for override in parsed:
        value = override.value()
        # a deletion chooses no config, and Hydra reads a dict as values of the config's key, not as a choice
        if override.is_delete() or isinstance(value, dict) or (isinstance(value, Sweep)
                                                              and not isinstance(value, ChoiceSweep)):
            continue
        try:  # with the overrides, for their hydra.searchpath
            options = loader.get_group_options(override.key_or_group, ObjectType.CONFIG, config_name, list(overrides))
        except HydraException:  # a bad hydra.searchpath or --config-name
            return
        chosen = _chosen(value)
        missing = [name for name in chosen if name not in options]
        if not options or not missing:  # no config group (a key of the config), or every config is there
            continue
        group = override.key_or_group
        if missing[0] is None:
            problem = f"a config group takes one of its configs, not null (leave {group} out for the script's default)"
        else:
            problem = f"no such {group} config{f' {missing[0]!r}' if len(chosen) > 1 else ''}"
        raise SettingError(f"{override.input_line}: {problem}; choose one of {', '.join(options)}")


def check_setting_keys(overrides: Sequence[str], config_dir: str | None = None, config_name: str = "") -> None:
    """Raise a :class:`SettingError` naming the nearest setting when one of the command line's ``overrides`` sets a key
    that the config ``config_name`` lacks (``seed.count=3`` for ``seeds.count``, ``total_timesteps=...`` for
    train's ``train.total_timesteps``), or adds, with ``+``, a config group that only the top-level configs have
    where ``config_name`` lies in a folder (``+tier=hard`` for ``train/ppo``, which Hydra looks up as
    ``train/tier``). Hydra reports the first as "Could not override 'seed.count'. To append to your config use
    +seed.count=3", whose ``+`` :func:`check_added_keys` then refuses, and the second as "Could not find
    'train/tier/hard'", both with exit status 1. The config is composed as for the run (a sweep's first job) from
    the other overrides; what Hydra cannot compose is left to Hydra to report."""
    from hydra.errors import HydraException
    from hydra.types import RunMode

    found = _parsed_and_loader(overrides, config_dir)
    if found is None:
        return
    parsed, loader = found
    repo, folder = loader.repository, config_name.rpartition("/")[0]
    keys, groups = [], []  # plain key overrides; + overrides of a group that Hydra looks up in the config's folder
    for override in parsed:
        if override.is_hydra_override() or override.package is not None or override.is_delete():
            continue
        name, is_group = override.key_or_group, repo.group_exists(override.key_or_group)
        if override.is_add():
            if folder and is_group and not repo.group_exists(f"{folder}/{name}"):
                groups.append(override)
        elif not override.is_force_add() and (not is_group or isinstance(override.value(), dict)):
            keys.append(override)
    if not keys and not groups:
        return
    others = [o for o in parsed if o not in keys and o not in groups]
    try:
        cfg = loader.load_configuration(config_name, _job_overrides(others), RunMode.RUN)
    except (HydraException, ValueError):
        return
    tree = {key: value for key, value in OmegaConf.to_container(cfg, resolve=False).items() if key != "hydra"}
    missing = [o.key_or_group for o in groups if o.key_or_group not in tree]
    missing += [o.key_or_group for o in keys if _lacks(tree, o.key_or_group)]
    missing += [key for o in keys for key in _dict_keys_lacking(tree, o.key_or_group, o.value())]
    if missing:
        problems = "; ".join(f"{key} ({_nearest_setting(key, tree)})" for key in dict.fromkeys(missing))
        raise SettingError(f"{config_name}: no such setting{'s' if len(missing) > 1 else ''}: {problems}; set an "
                           "existing one (a + override adds a key only where the script takes free-form settings, "
                           "such as an agent's kwargs)")
    for override in keys:
        _check_not_replacing_mapping(tree, override)


def _dict_keys_lacking(tree: Mapping[str, Any], key: str, value: Any) -> list[str]:
    """The dotted keys that the dict ``value`` of an override of ``key`` sets and ``tree`` lacks, the topmost of
    each (``seeds={start: 1, cnt: 5}``: ``seeds.cnt``; Hydra merges a dict into the mapping there, and refused
    these with "Key 'cnt' is not in struct", status 1)."""
    if not isinstance(value, dict):
        return []
    lacking: list[str] = []
    for path in _paths(value):
        dotted = ".".join((key, *path))
        if _lacks(tree, dotted) and not any(dotted.startswith(f"{k}.") for k in lacking):
            lacking.append(dotted)
    return lacking


def _check_not_replacing_mapping(tree: Mapping[str, Any], override: Any) -> None:
    """Raise a :class:`SettingError` where ``override`` sets a key that holds settings (a mapping) to one value
    or a list (``seeds=5`` for ``seeds.count=5``): Hydra takes it, and the script failed reading ``seeds.start`` from
    5 with a traceback. Null is left to the script (an agent's ``kwargs=null`` means none); so are the sweeps that
    Hydra expands itself."""
    from hydra.core.override_parser.types import ChoiceSweep, Sweep

    node: Any = tree
    for part in override.key_or_group.split("."):
        node = node.get(part) if isinstance(node, Mapping) else None
    value = override.value()
    values = value.list if isinstance(value, ChoiceSweep) else [] if isinstance(value, Sweep) else [value]
    if not isinstance(node, Mapping) or all(v is None or isinstance(v, dict) for v in values):
        return
    key = override.key_or_group
    hint = f"set one by name, e.g. {key}.{next(iter(node))}=..." if node else f"add one by name, +{key}.<name>=..."
    raise SettingError(f"{override.input_line}: {key} holds settings ({', '.join(map(str, node)) or 'none yet'}), "
                       f"not a value; {hint}")


def _lacks(tree: Mapping[str, Any], key: str) -> bool:
    """The dotted ``key`` branches off ``tree`` at a mapping that lacks it (through a list, a null or a value, Hydra
    decides)."""
    node: Any = tree
    for part in key.split("."):
        if not isinstance(node, Mapping):
            return False
        if part not in node:
            return True
        node = node[part]
    return False


def _nearest_setting(key: str, tree: Mapping[str, Any]) -> str:
    """``did you mean <the setting nearest the dotted key>?`` among the settings below the mapping where ``key``
    branches off ``tree`` (``seed.count`` -> ``seeds.count``, ``total_timesteps`` -> ``train.total_timesteps``),
    else the keys that mapping has."""
    parts, node = key.split("."), tree
    while len(parts) > 1 and isinstance(node.get(parts[0]), Mapping):
        node = node[parts.pop(0)]
    prefix = key[:len(key) - len(".".join(parts))]
    close = difflib.get_close_matches(".".join(parts), [".".join(path) for path in _paths(node)], n=1)
    if close:
        return f"did you mean {prefix}{close[0]}?"
    return f"known: {', '.join(sorted(map(str, node)))}" if node else f"{prefix.rstrip('.') or 'the config'} is empty"


def check_command_line(overrides: Sequence[str], multirun: bool, config_dir: str | None, config_name: str,
                       own_configs: bool = True) -> None:
    """The checks :func:`checked_main` makes of a command line: :func:`check_launcher`, then, where the run reads
    the project's configs (``own_configs``: no ``--config-path``), :func:`check_config_groups` and
    :func:`check_setting_keys` against the primary config ``config_name``."""
    check_launcher(overrides, multirun)
    if own_configs:
        check_config_groups(overrides, config_dir, config_name)
        check_setting_keys(overrides, config_dir, config_name)


def check_sweep_jobs(overrides: Sequence[str], config_dir: str | None, config_name: str, task_name: str,
                     check: Callable[[DictConfig], Path | None]) -> None:
    """Run a script's settings ``check`` on the config of every job of the ``-m`` sweep of ``overrides``, composed
    as Hydra's basic sweeper and launchers compose it (the config's ``hydra.sweeper.params`` swept too, a ``glob``
    over a config group expanded, and each job's ``${now:...}`` the sweep's, as Hydra copies it), with the job's
    ``hydra:`` settings (its name, its number, its output folder) set: a :class:`SettingError` of one job is raised
    naming the job (``sweep job #1 (seeds.count=abc ...): seeds.count must be ...``) before any job runs, where
    Hydra ran the jobs before it (a training sweep's earlier tiers: hours) and stopped at it. ``check`` must write
    nothing; it returns the folder (``out``) the job writes into as its own, or None, and two jobs given one such
    folder are refused too (each would overwrite the other's files: ``train -m seed=0,1 out=runs/x`` kept only the
    last job's model). A sweep that another sweeper expands (``hydra/sweeper=...``, on the command line or in a
    config), or that Hydra cannot compose, is left to Hydra to report, and any other error of a check to the job,
    which reports it when it runs. An ``interval(...)``, which the basic sweeper cannot expand (Hydra: a traceback),
    is refused."""
    import copy

    from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.override_parser.types import IntervalSweep
    from hydra.core.utils import JobRuntime, setup_globals
    from hydra.errors import HydraException
    from hydra.types import RunMode
    from omegaconf import open_dict, read_write

    found = _parsed_and_loader(overrides, config_dir)
    if found is None:
        return
    loader = found[1]
    setup_globals()  # the resolvers of ${now:...} and ${hydra:...}, as Hydra registers them for the run
    JobRuntime.instance().set("name", task_name)
    try:  # the sweep's config, its jobs and theirs as Hydra's multirun, BasicSweeper and BasicLauncher make them
        sweep = loader.load_configuration(config_name, [*overrides, "hydra.mode=MULTIRUN"], RunMode.MULTIRUN)
        if not str(sweep.hydra.sweeper.get("_target_", "")).endswith(".BasicSweeper"):
            return
        str(sweep.hydra.sweep.dir)  # resolved once: each job's ${now:...} reads the sweep's (copied below)
        parsed = _sweep_overrides(sweep, loader)
    except Exception:  # what Hydra cannot compose (omegaconf's errors too), Hydra reports as it runs
        return
    for override in parsed:  # Hydra: a traceback ending "BasicSweeper does not support sweep type : INTERVAL_SWEEP"
        if isinstance(override.value(), IntervalSweep):
            raise SettingError(f"{override.input_line}: Hydra's basic sweeper cannot sweep an interval (a sampling "
                               "sweeper's); list the values, e.g. key=1,2,3, or give range(start,stop,step)")
    try:
        jobs = [job for batch in BasicSweeper.split_arguments(parsed, None) for job in batch]
    except HydraException:
        return
    hydra_config = HydraConfig.instance()
    previous = hydra_config.cfg
    owners: dict[Path, int] = {}  # a job's own folder -> the job
    try:
        for num, job in enumerate(jobs):
            try:
                cfg = loader.load_sweep_config(sweep, list(job))
                with open_dict(cfg):
                    cfg.hydra.job.id = cfg.hydra.job.num = num
                hydra_config.set_config(cfg)  # before its folder, which may read ${hydra:...}, as in Hydra's run_job
                with read_write(cfg.hydra.runtime), open_dict(cfg.hydra.runtime):
                    cfg.hydra.runtime.output_dir = os.path.abspath(os.path.join(str(cfg.hydra.sweep.dir),
                                                                                str(cfg.hydra.sweep.subdir)))
                hydra_config.set_config(cfg)
                task = copy.deepcopy(cfg)
                with open_dict(task):
                    del task["hydra"]
            except Exception:  # as the sweep's config above: a job Hydra cannot compose, Hydra reports as it runs
                return
            try:
                own = check(task)
            except SettingError as exc:
                raise SettingError(f"sweep job #{num} ({' '.join(job)}): {exc}") from exc
            except Exception:  # not a setting the script refuses: the job meets it again, and reports it
                return
            # resolved: runs/../runs/x (or a symlink to it) is runs/x
            if own is not None and owners.setdefault(own.resolve(), num) != num:
                raise SettingError(f"sweep jobs #{owners[own.resolve()]} and #{num} ({' '.join(job)}) would both write "
                                   f"into out={own}; give each job its own, e.g. with ${{hydra:job.num}} in it")
    finally:
        hydra_config.cfg = previous


def check_one_mode(command_line: Any) -> None:
    """Raise a :class:`SettingError` where the parsed ``command_line`` asks Hydra for more than one of ``--run``,
    ``--multirun``, ``--cfg``, ``--info`` and ``--shell-completion`` (``-m ... --cfg job``), which Hydra refused with a
    ValueError traceback."""
    given = {"--run": command_line.run, "--multirun": command_line.multirun, "--cfg": command_line.cfg is not None,
             "--info": command_line.info is not None, "--shell-completion": command_line.shell_completion}
    modes = [flag for flag, on in given.items() if on]
    if len(modes) > 1:
        raise SettingError(f"{' and '.join(modes)}: Hydra takes one of --run, --multirun, --cfg, --info and "
                           "--shell-completion at a time (a sweep job's config: --cfg job with that job's values, "
                           "without -m)")


def checked_main(config_name: str, check: Callable[[DictConfig], Path | None] | None = None
                 ) -> Callable[[Callable[[DictConfig], None]], Callable[..., Any]]:
    """Decorate a script's ``main(cfg)`` with this: ``hydra.main`` of the config ``config_name`` in
    :data:`CONFIG_PATH` (version base 1.3), which, run from the command line, first refuses a launcher whose plugin
    is missing, or a launcher without ``-m`` (:func:`check_launcher`), and a config group option that does not exist
    or that the config cannot take (:func:`check_config_groups`), and a key the config lacks
    (:func:`check_setting_keys`), with ``error: <message>`` and status 2 (the traceback with ``HYDRA_FULL_ERROR=1``),
    where Hydra would print "Could not find 'hydra/launcher/...'" or "Could not override 'tier'" and exit with 1, or
    ignore the launcher. In a ``-m`` sweep, ``check`` (the script's checks of its settings, writing nothing; it
    returns the folder a job writes into alone, or None) runs on every job's config before the first job
    (:func:`check_sweep_jobs`), and a Ctrl-C outside the jobs ends the sweep with one line (:data:`SWEEP_STOPPED`). A
    config passed in (Hydra's ``cfg_passthrough``) skips the checks, as it skips the command line; so does
    ``--config-path``, which replaces :data:`CONFIG_PATH`. ``--help`` prints the script's summary (its docstring's
    first paragraph) above Hydra's help."""

    def decorate(main: Callable[[DictConfig], None]) -> Callable[..., Any]:
        import hydra

        hydra_main = hydra.main(config_path=CONFIG_PATH, config_name=config_name, version_base="1.3")(main)

        @functools.wraps(main)
        def checked(*args: Any, **kwargs: Any) -> Any:
            if not args and not kwargs:
                from hydra._internal.utils import (
                    detect_calling_file_or_module_from_task_function,
                    detect_task_name,
                    get_args_parser,
                )

                try:
                    command_line = get_args_parser().parse_known_args()[0]
                    check_one_mode(command_line)
                    name, own_configs = command_line.config_name or config_name, command_line.config_path is None
                    check_command_line(command_line.overrides, command_line.multirun, command_line.config_dir, name,
                                       own_configs)
                    if check is not None and command_line.multirun and own_configs and not command_line.help:
                        with interrupted_exit("nothing ran: the sweep's jobs were being checked"):
                            check_sweep_jobs(command_line.overrides, command_line.config_dir, name,
                                             detect_task_name(*detect_calling_file_or_module_from_task_function(main)),
                                             check)  # Hydra's name: __main__ under python -m
                except (MissingExtraError, SettingError) as exc:
                    _usage_error_exit(exc)
                if command_line.help:  # Hydra's help (conf/hydra/help/script.yaml) follows: groups and config
                    try:
                        print(f"{doc_summary(inspect.getmodule(main).__doc__)}\n")
                        return hydra_main(*args, **kwargs)
                    except BrokenPipeError:  # --help | head: Hydra's print raised a traceback
                        sys.exit(reader_gone())
                if command_line.multirun:  # a launcher's process (joblib's) met Ctrl-C with a traceback
                    with interrupted_exit(SWEEP_STOPPED):
                        return hydra_main(*args, **kwargs)
            return hydra_main(*args, **kwargs)

        return checked

    return decorate


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


def base_overrides(task: Sequence[str]) -> list[str]:
    """The command line's overrides without those that add keys (``+``, ``++``) and without those that set a key
    under an added one (``+agent@agent.llm.kwargs=llm agent.llm.kwargs.model=m``: the second has nothing to set
    once the first is gone)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    parsed = OverridesParser.create().parse_overrides(list(task))
    added = [o.package or o.key_or_group for o in parsed if o.is_add() or o.is_force_add()]
    return [o.input_line for o in parsed if not (o.is_add() or o.is_force_add())
            and not any(o.key_or_group == key or o.key_or_group.startswith(f"{key}.") for key in added)]


def check_added_keys(cfg: DictConfig, free: Sequence[str] = ()) -> None:
    """Raise a :class:`SettingError` naming every key that a ``+``/``++`` override added to the running Hydra app's
    config and that the script does not read (none of its config files has it), with the keys it has at that
    level."""
    from hydra import compose
    from hydra.core.hydra_config import HydraConfig

    hydra_config = HydraConfig.get()
    task = list(hydra_config.overrides.task)
    if not any(o.startswith("+") for o in task):
        return
    # the run's config search path (hydra.searchpath=...), without which a config group it adds cannot be found
    search_path = [o for o in hydra_config.overrides.hydra if o.lstrip("+").startswith("hydra.searchpath")]
    base = compose(config_name=hydra_config.job.config_name, overrides=[*search_path, *base_overrides(task)])
    base_tree = OmegaConf.to_container(base, resolve=False)
    added = added_keys(OmegaConf.to_container(cfg, resolve=False), base_tree, free)
    if not added:
        return
    problems = [f"{key} ({_nearest_setting(key, base_tree)})" for key in added]
    raise SettingError(f"{hydra_config.job.config_name}: no such setting{'s' if len(problems) > 1 else ''}: "
                     f"{'; '.join(problems)}. A + override adds a key the script would not read; set an existing "
                     "one without +")


__all__ = ["CONFIG_PATH", "HYDRA_LAUNCHER_PLUGINS", "LAUNCHER_PLUGINS", "SWEEP_STOPPED", "SettingError", "added_keys",
           "base_overrides", "check_added_keys", "check_command_line", "check_config_groups", "check_launcher",
           "check_one_mode", "check_setting_keys", "check_sweep_jobs", "checked_main", "file_errors_exit",
           "job_folder", "later_sweep_jobs", "mapping_setting", "output_folder", "remove_empty_run_folder",
           "setting_errors_exit", "settings_checked", "single_run_overrides"]
