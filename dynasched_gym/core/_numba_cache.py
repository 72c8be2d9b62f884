"""Where numba caches the compiled kernels: a directory keyed by the kernels' source code.

numba invalidates a cached function only when its own file changes, not when a jitted function it
calls (in another module) does; a stale cache then runs old code. Keying the cache directory by a
hash of every kernel source file (and the numba and Python versions) makes any change start from a
clean cache, and keeps compiled files out of the installed package.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import shutil
import sys
import time
from pathlib import Path

import numba

from dynasched_gym.paths import user_cache_dir

_PACKAGE = Path(__file__).resolve().parents[1]
#: A file in each kernel directory of this package, touched at every import: what :func:`prune` may delete, and when
#: it was last used (numba only reads its cached files).
MARKER = "dynasched-kernels"
#: A kernel directory no import has used for this long is deleted when another one is first made.
STALE_DAYS = 30


def _kernel_sources() -> list[Path]:
    """Every Python file of core and the environments, and every package module that a file using numba imports
    (transitively): the kernels, and the module constants numba freezes into them (feature columns, rule codes,
    ``metrics.EPS``, event type codes), which may live in files without kernels; over-inclusive on purpose."""
    import importlib.util

    files = sorted((_PACKAGE / "core").glob("*.py"))
    spec = importlib.util.find_spec("dynasched_gym.envs")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            files += sorted(Path(location).rglob("*.py"))
    seen, pending = set(files), [path for path in files if b"numba" in path.read_bytes()]
    while pending:
        for path in _imported_modules(pending.pop()):
            if path not in seen:
                seen.add(path)
                files.append(path)
                pending.append(path)
    return files


# the modules a line imports: "from dynasched_gym.x import ..." or "import a, dynasched_gym.x as y" (a regular
# expression, not ast: this runs at every import of the package, and parsing the kernel files took 75 ms)
_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+(dynasched_gym[\w.]*)[ \t]+import\b|import[ \t]+([^\n#;]+))", re.MULTILINE)


def _imported_modules(source: Path) -> list[Path]:
    """The files of the package's own modules (outside ``envs``, listed whole) that ``source`` imports."""
    found = []
    for from_name, import_names in _IMPORT.findall(source.read_bytes()):
        names = [from_name] if from_name else [name.split()[0] for name in import_names.split(b",") if name.strip()]
        for name in names:
            parts = name.decode().split(".")
            if parts[0] != "dynasched_gym" or parts[1:2] == ["envs"]:
                continue
            base = _PACKAGE.joinpath(*parts[1:])
            for path in (base.with_suffix(".py"), base / "__init__.py"):
                if path.is_file():
                    found.append(path)
    return found


def configure() -> Path:
    """Point numba's cache at ``$NUMBA_CACHE_DIR`` (or the user cache, :func:`dynasched_gym.paths.user_cache_dir`) /
    <hash of the kernel sources>."""
    digest = hashlib.sha256(f"{numba.__version__} {sys.version}".encode())
    for path in _kernel_sources():
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    directory = user_cache_dir("numba", "NUMBA_CACHE_DIR") / digest.hexdigest()[:16]
    numba.config.CACHE_DIR = str(directory)
    with contextlib.suppress(OSError):  # a read-only cache still serves its kernels
        if not directory.is_dir():
            prune(directory.parent, keep=directory)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / MARKER).touch()
    return directory


def prune(parent: Path, keep: Path, max_age_days: float = STALE_DAYS) -> list[Path]:
    """Delete the kernel directories in ``parent`` (those holding :data:`MARKER`) other than ``keep`` whose marker
    is older than ``max_age_days``: each change of the kernels, an upgrade, leaves 5-35 MB behind. Directories of
    other programs sharing ``$NUMBA_CACHE_DIR`` have no marker and are left alone. Returns those deleted."""
    cutoff = time.time() - max_age_days * 86400
    deleted = []
    for marker in parent.glob(f"*/{MARKER}"):
        directory = marker.parent
        with contextlib.suppress(OSError):
            if directory != keep and marker.stat().st_mtime < cutoff:
                shutil.rmtree(directory)
                deleted.append(directory)
    return deleted


def _kernel_subpaths() -> list[str]:
    """The folders below the cache directory where numba keeps this checkout's kernels (core's and the
    environments'): one per source folder, named by a hash of its absolute path, so another checkout of the same
    sources (a clone, a CI workspace) fills other ones and compiles again; ``["."]`` (any kernel cached) where numba
    no longer names them so."""
    import importlib.util

    try:
        from numba.core.caching import _CacheLocator

        subpath = _CacheLocator.get_suitable_cache_subpath
    except (ImportError, AttributeError):  # a private API: the note must not break a script
        return ["."]
    folders = [Path(__file__).parent]  # as the modules' __file__, unresolved: numba hashes os.path.abspath of it
    spec = importlib.util.find_spec("dynasched_gym.envs")
    if spec is not None and spec.submodule_search_locations:
        folders += [Path(location) / "dfjsp" for location in spec.submodule_search_locations]
    return [subpath(str(folder / "kernels.py")) for folder in folders]


def compile_note() -> str | None:
    """A line for a long-running script to show before its first kernel call when the kernel cache is empty (the
    first run after an install or a kernel change), where numba compiles for a minute or two without output;
    ``None`` when compiled kernels are cached."""
    directory = Path(numba.config.CACHE_DIR)
    if all(any((directory / subpath).rglob("*.nbi")) for subpath in _kernel_subpaths()):
        return None
    return (f"compiling the simulator's kernels (the first run after an install or a change of the kernels: a minute "
            f"or two without progress; cached in {directory} from then on)")
