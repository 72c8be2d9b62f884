"""Where numba caches the compiled kernels: a directory keyed by the kernels' source code.

numba invalidates a cached function only when its own file changes, not when a jitted function it
calls (in another module) does; a stale cache then runs old code. Keying the cache directory by a
hash of every kernel source file (and the numba and Python versions) makes any change start from a
clean cache, and keeps compiled files out of the installed package.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import numba

from dynasched_gym.paths import user_cache_dir

_PACKAGE = Path(__file__).resolve().parents[1]


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


def _imported_modules(source: Path) -> list[Path]:
    """The files of the package's own modules (outside ``envs``, listed whole) that ``source`` imports."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source.read_bytes())):
        names = [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else (
            [alias.name for alias in node.names] if isinstance(node, ast.Import) else [])
        for name in names:
            parts = name.split(".")
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
    return directory


def compile_note() -> str | None:
    """A line for a long-running script to show before its first kernel call when the kernel cache is empty (the
    first run after an install or a kernel change), where numba compiles for a minute or two without output;
    ``None`` when compiled kernels are cached."""
    directory = Path(numba.config.CACHE_DIR)
    if directory.is_dir() and any(directory.rglob("*.nbi")):
        return None
    return (f"compiling the simulator's kernels (the first run after an install or a change of the kernels: a minute "
            f"or two without progress; cached in {directory} from then on)")
