"""Instance loaders (one module per format) behind one auto-detecting :func:`load_instance`.

Formats: native JSON (:mod:`.native`), FJSPLIB ``.fjs`` (:mod:`.fjsp`), OR-Library/Taillard JSSP
(:mod:`.jssp`), the reference package's generated instance directory (:mod:`.dsbx_dir`) and its
single-file JMS format (:mod:`.dsbx_jms`).
"""

from __future__ import annotations

import codecs
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dynasched_gym.checks import check_path
from dynasched_gym.errors import InstanceFormatError, user_stacklevel
from dynasched_gym.instance import INSTANCE_FORMAT, Instance
from dynasched_gym.io import dsbx_dir, dsbx_jms, fjsp, jssp, native
from dynasched_gym.io.text import byte_error, read_json

# Every loader by name (``load_instance(path, format=name)``).
FORMATS = {
    "native": native,
    "dsbx-dir": dsbx_dir,
    "dsbx-jms": dsbx_jms,
    "fjsp": fjsp,
    "jssp": jssp,
}
# Detection parses a file holding a JSON object once and tells native from JMS by its content; any other
# path goes to the first of these formats whose sniff() accepts it (order matters).
SNIFFED = ("dsbx-dir", "dsbx-jms", "fjsp", "jssp")


def detect_format(path: str | os.PathLike[str]) -> str:
    """Name of the format of ``path`` (a key of :data:`FORMATS`).

    A file holding a JSON object is parsed: it is a native instance if its ``format`` field (wherever
    it is in the file) says so, a JMS file if it has ``static_info``; another ``format`` raises.
    """
    return _detect(check_path("path", path))[0]


def load_instance(path: str | os.PathLike[str], format: str | None = None) -> Instance:
    """Load an instance from ``path``, detecting the format unless ``format`` names one."""
    p = check_path("path", path, " (it is loaded already)" if isinstance(path, Instance) else "")
    if format is None:
        name, data = _detect(p)
        return FORMATS[name].load(p) if data is None else instance_from_json(data, p)
    if not isinstance(format, str) or format not in FORMATS:  # a list was "unhashable type"
        raise InstanceFormatError(f"unknown format name (known: {', '.join(FORMATS)})", field="format", value=format)
    return FORMATS[format].load(p)


def _detect(p: Path) -> tuple[str, Any]:
    """The format of ``p`` and, for a JSON file, its parsed content (``None`` for other formats)."""
    if not p.exists():
        from dynasched_gym import data

        hint = (f" ({p.name!r} is an embedded instance: load_instance(dynasched_gym.data.path({p.name!r})), or "
                f"resolve_instance({p.name!r}))") if str(p) in data.EMBEDDED else ""
        raise InstanceFormatError(f"no such file or directory{hint}", source=str(p), value=str(p))
    head = ""
    if p.is_file():
        try:
            with p.open("rb") as fh:
                raw = fh.read(4096)
        except OSError as exc:
            raise InstanceFormatError(f"cannot read: {exc.strerror}", source=str(p), value=str(p)) from None
        try:  # final=False: the 4096 bytes may end inside a character
            head = codecs.getincrementaldecoder("utf-8-sig")().decode(raw, final=False)
        except UnicodeDecodeError as exc:  # a UTF-16 or binary file was "unrecognised instance format" with mojibake
            raise byte_error("not a UTF-8 text file", p, exc.object, exc.start) from None
        if "\x00" in head:  # valid UTF-8, but no instance format holds NUL (UTF-16 of ASCII text without a BOM)
            raise byte_error("not a text file (it holds NUL bytes: UTF-16 or binary?)", p, raw, raw.index(b"\x00"))
        if not head.strip() and len(raw) < 4096:  # was "unrecognised instance format (got '')"
            raise InstanceFormatError("empty file", source=str(p), line=1, value=head)
    if head.lstrip().startswith("{"):  # (head is empty unless p is a file)
        data = read_json(p)
        return _json_format(data, p), data
    for name in SNIFFED:
        if FORMATS[name].sniff(p, head):
            return name, None
    if p.is_dir():  # only a dsbx instance directory is one
        raise InstanceFormatError(f"a directory that is no instance (a dsbx instance directory holds "
                                  f"{dsbx_dir.EVENTS}, a JMS one a single JMS .jsonl file; files are read in the "
                                  f"formats {', '.join(FORMATS)})",
                                  source=str(p), value=sorted(child.name for child in p.iterdir())[:8])
    raise InstanceFormatError(f"unrecognised instance format (known: {', '.join(FORMATS)})", source=str(p),
                              line=1, value=head[:40])


def instance_from_json(data: Any, path: str | os.PathLike[str]) -> Instance:
    """The instance of the JSON object ``data`` already read from ``path`` (native or JMS, by its content)."""
    p = Path(path)
    if not isinstance(data, Mapping):
        raise InstanceFormatError("an instance file holds a JSON object", source=str(p), value=data)
    return FORMATS[_json_format(data, p)].from_json(data, p)


def _json_format(data: Any, p: Path) -> str:
    """The format of the JSON object ``data`` read from ``p``: native or JMS by its keys, else raise."""
    if "format" in data:
        if data["format"] != INSTANCE_FORMAT:
            from dynasched_gym.schedule import SCHEDULE_FORMAT  # here: that module imports this package

            reason = (f"a schedule file, not an instance (format {INSTANCE_FORMAT!r}): give the instance that the "
                      "schedule's 'instance' field names" if data["format"] == SCHEDULE_FORMAT
                      else f"unknown instance file format (this version reads {INSTANCE_FORMAT!r})")
            raise InstanceFormatError(reason, source=str(p), field="format", value=data["format"])
        return "native"
    if dsbx_jms.KEY in data:
        return "dsbx-jms"
    raise InstanceFormatError(f'unrecognised JSON instance file (no "format": {INSTANCE_FORMAT!r} and no '
                              f'"{dsbx_jms.KEY}" as in a JMS file)', source=str(p), value=sorted(data)[:8])


def resolve_instance(spec: Instance | str | os.PathLike[str]) -> Instance:
    """An :class:`Instance` as is, the instance of a file (any format above; an existing file wins), or an
    embedded instance by name (``mk01``, ``ta01``, ..., :data:`dynasched_gym.data.EMBEDDED`; a warning when a file
    or folder has that name too)."""
    from dynasched_gym import data

    if isinstance(spec, Instance):
        return spec
    if isinstance(spec, str) and spec in data.EMBEDDED:
        if not Path(spec).exists():
            return load_instance(data.path(spec))
        # e.g. an output folder named mk01 would replace FJSP-v0's default instance unseen
        warnings.warn(f"instance {spec!r} names both {Path(spec).resolve()} and an embedded instance: reading the "
                      f"former (pass './{spec}' for it, or dynasched_gym.data.path({spec!r}) for the embedded one, "
                      "to say which)", UserWarning, stacklevel=user_stacklevel())
    if isinstance(spec, str) and not spec.strip():
        raise ValueError(f"instance must be a path or an embedded name ({', '.join(data.EMBEDDED)}), got {spec!r}")
    if isinstance(spec, (str, os.PathLike)):
        path = check_path("instance", spec)
        if not path.exists():  # a misspelt embedded name as much as a missing file
            embedded = ", ".join(data.EMBEDDED)
            raise InstanceFormatError(f"no such file or directory, nor an embedded instance ({embedded})",
                                      source=str(path), value=str(path))
        return load_instance(path)
    raise TypeError(f"instance must be an Instance, a path or an embedded name ({', '.join(data.EMBEDDED)}), "
                    f"got {type(spec).__name__}: {spec!r:.80}")


__all__ = ["FORMATS", "detect_format", "instance_from_json", "load_instance", "resolve_instance"]
