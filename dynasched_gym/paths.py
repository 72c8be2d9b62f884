"""Where the package keeps its caches (compiled kernels, tier pools) when no environment variable says."""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path


def user_cache_dir(kind: str, variable: str) -> Path:
    """``$variable`` when set; else ``$XDG_CACHE_HOME`` (or ``~/.cache``) ``/dynasched_gym/<kind>``, or, where that
    cannot be written (a container user whose home is ``/`` or missing), ``<temp dir>/dynasched_gym-<user>/<kind>``
    with a warning naming ``variable``."""
    given = os.environ.get(variable)
    if given:
        return Path(given)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dynasched_gym" / kind
    try:
        base.mkdir(parents=True, exist_ok=True)
        if os.access(base, os.W_OK | os.X_OK):
            return base
        reason = "not writable"
    except OSError as exc:
        reason = str(exc)
    user = os.environ.get("USER") or str(getattr(os, "getuid", lambda: "user")())
    fallback = Path(tempfile.gettempdir()) / f"dynasched_gym-{user}" / kind
    warnings.warn(f"cannot keep the {kind} cache in {base} ({reason}): using {fallback}; set ${variable} to "
                  "choose a directory", RuntimeWarning, stacklevel=2)
    return fallback
