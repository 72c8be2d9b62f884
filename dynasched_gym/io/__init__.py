"""Instance loaders (one module per format) behind one auto-detecting :func:`load_instance`.

Formats: native JSON (:mod:`.native`), FJSPLIB ``.fjs`` (:mod:`.fjsp`), OR-Library/Taillard JSSP
(:mod:`.jssp`), the reference package's generated instance directory (:mod:`.dsbx_dir`) and its
single-file JMS format (:mod:`.dsbx_jms`).
"""

from __future__ import annotations

import os
from pathlib import Path

from dynasched_gym.errors import InstanceFormatError
from dynasched_gym.instance import Instance
from dynasched_gym.io import dsbx_dir, dsbx_jms, fjsp, jssp, native

# Order matters: the first format whose sniff() accepts the path loads it.
FORMATS = {
    "native": native,
    "dsbx-dir": dsbx_dir,
    "dsbx-jms": dsbx_jms,
    "fjsp": fjsp,
    "jssp": jssp,
}


def detect_format(path: str | os.PathLike[str]) -> str:
    """Name of the format of ``path`` (a key of :data:`FORMATS`)."""
    p = Path(path)
    if not p.exists():
        raise InstanceFormatError("no such file or directory", source=str(p), value=str(p))
    head = ""
    if p.is_file():
        with p.open("r", encoding="utf-8", errors="replace") as fh:
            head = fh.read(4096)
    for name, module in FORMATS.items():
        if module.sniff(p, head):
            return name
    raise InstanceFormatError(f"unrecognised instance format (known: {', '.join(FORMATS)})", source=str(p),
                              line=1, value=head[:40])


def load_instance(path: str | os.PathLike[str], format: str | None = None) -> Instance:
    """Load an instance from ``path``, detecting the format unless ``format`` names one."""
    name = format or detect_format(path)
    if name not in FORMATS:
        raise InstanceFormatError(f"unknown format name (known: {', '.join(FORMATS)})", field="format", value=name)
    return FORMATS[name].load(Path(path))


def resolve_instance(spec: Instance | str | os.PathLike[str]) -> Instance:
    """An :class:`Instance` as is, the instance of a file (any format above; an existing file wins), or an
    embedded instance by name (``mk01``, ``ta01``, ..., :data:`dynasched_gym.data.EMBEDDED`)."""
    from dynasched_gym import data

    if isinstance(spec, Instance):
        return spec
    if isinstance(spec, str) and spec in data.EMBEDDED and not Path(spec).exists():
        return load_instance(data.path(spec))
    if isinstance(spec, (str, os.PathLike)):
        return load_instance(spec)
    raise TypeError(f"instance must be an Instance, a path or an embedded name ({', '.join(data.EMBEDDED)}), "
                    f"got {type(spec).__name__}")


__all__ = ["FORMATS", "detect_format", "load_instance", "resolve_instance"]
