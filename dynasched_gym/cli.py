"""The ``dynasched-gym`` command line: inspect, convert, roll out and validate instances.

Examples::

    dynasched-gym info mk01                      # an embedded instance, or any path
    dynasched-gym rollout ta01 --rule MWKR --out ta01-mwkr.json
    dynasched-gym validate ta01-mwkr.json
    dynasched-gym convert shared/reference/dsbx/DynaSched-Grid/<dir> --to native medium.json
    dynasched-gym compare                        # six rules (or --rules) on the embedded instances
    dynasched-gym gantt ta01-mwkr.json --out gantt.html [--by job]   # also .png, .pdf, .svg
    dynasched-gym timeline ta01-mwkr.json --out timeline.png         # an instance works too
    dynasched-gym curves ta01-mwkr.json --out curves.png
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

from dynasched_gym import data
from dynasched_gym.checks import check_path
from dynasched_gym.errors import InstanceFormatError, MissingExtraError
from dynasched_gym.instance import writable_file, writable_folder
from dynasched_gym.interrupts import interrupt_handled, sigterm_as_interrupt
from dynasched_gym.io import resolve_instance
from dynasched_gym.metrics import METRIC_KEYS
from dynasched_gym.viz.timeline import MAX_BINS

#: The embedded instance ``rollout`` plays first, untimed, to load the compiled kernels.
WARM_UP_INSTANCE = "mk01"


def _cmd_info(args: argparse.Namespace) -> int:
    inst = resolve_instance(args.instance)
    counts: dict[str, int] = {}
    for e in inst.events:
        counts[e.type.name] = counts.get(e.type.name, 0) + 1
    print(inst)
    print(f"groups: {sorted(set(inst.machine_groups))}")
    print(f"releases: {inst.job_release.min():g} .. {inst.job_release.max():g}")
    print("events: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"))
    return 0


def _cmd_rollout(args: argparse.Namespace) -> int:
    from dynasched_gym.core import rollout
    from dynasched_gym.validate import validate_schedule

    inst = resolve_instance(args.instance)
    began = time.perf_counter()
    # numba loads the compiled kernels on their first call in a process, which takes far longer than simulating a
    # mid-sized instance: a warm-up on an embedded one takes it, so that the time printed is the simulation's
    rollout(resolve_instance(WARM_UP_INSTANCE), rule=args.rule)
    loading = time.perf_counter() - began
    began = time.perf_counter()
    schedule = rollout(inst, rule=args.rule, seed=0 if args.seed is None else args.seed)
    seconds = time.perf_counter() - began
    report = validate_schedule(schedule)
    if args.out:  # before the printing, which stops where stdout's reader is gone (| head -3)
        schedule.to_json(args.out)
    for key, value in schedule.metrics.items():
        print(f"{key:>26}: {value:g}")
    print(f"{'decisions':>26}: {schedule.decisions} in {seconds:.3f} s (after {loading:.2f} s loading the compiled "
          f"kernels); validator: {'ok' if report.ok else report}")
    if args.out:
        print(f"schedule written to {args.out}")
    return 0 if report.ok else 1


def _cmd_validate(args: argparse.Namespace) -> int:
    from dynasched_gym.schedule import load_schedule_dict
    from dynasched_gym.validate import validate_schedule

    # loaded here, not by validate_schedule (which reports a load error as a violation): a file that is no schedule,
    # or whose instance does not load, is bad input (2), not an invalid schedule (1)
    report = validate_schedule(load_schedule_dict(args.schedule))
    print(report.describe(args.limit or None))
    return 0 if report.ok else 1


def _cmd_convert(args: argparse.Namespace) -> int:
    inst = resolve_instance(args.instance)
    if args.output == STDOUT:
        print(inst.to_json(indent=1))
        return 0
    if args.to == "native":
        inst.to_json(args.output, indent=1)
    else:
        from dynasched_gym.io import dsbx_dir

        try:
            dsbx_dir.save(inst, Path(args.output), drop_unsupported=args.drop_unsupported)
        except InstanceFormatError as exc:  # the writer names the instance, not the file the user gave
            if exc.source != f"<{inst.name}>":
                raise
            raise exc.located(args.instance) from None
    print(f"{inst.name}: written to {args.output} ({args.to})")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from dynasched_gym.core import rollout
    from dynasched_gym.validate import validate_schedule

    names = args.instances or list(data.EMBEDDED)
    rules = args.rules
    rows = []
    failures = 0
    instances = [resolve_instance(name) for name in names]  # a bad name fails before the rollouts, not after
    for name, inst in tqdm(zip(names, instances), total=len(names), desc="instances", unit="inst"):
        row = [name]
        for rule in rules:
            schedule = rollout(inst, rule=rule)
            report = validate_schedule(schedule)
            failures += not report.ok
            value = schedule.metrics[args.metric]
            row.append(f"{value:.6g}" + ("" if report.ok else "!"))
        rows.append(row)
    header = ["instance", *rules]
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{args.metric} by rule (! = schedule failed validation)")
    for r in [header, *rows]:
        print("  ".join(str(c).rjust(w) for c, w in zip(r, widths)))
    return 1 if failures else 0


def _written(path: str, began: float) -> int:
    print(f"{path}: written in {time.perf_counter() - began:.2f} s")
    return 0


def _cmd_gantt(args: argparse.Namespace) -> int:
    from dynasched_gym.schedule import load_schedule
    from dynasched_gym.viz import save_gantt

    began = time.perf_counter()
    save_gantt(load_schedule(args.schedule), args.out, by=args.by)
    return _written(args.out, began)


def _cmd_timeline(args: argparse.Namespace) -> int:
    from dynasched_gym.io import instance_from_json
    from dynasched_gym.io.text import read_json
    from dynasched_gym.schedule import SCHEDULE_FORMAT, schedule_dict, schedule_from_dict
    from dynasched_gym.viz import save_timeline

    began = time.perf_counter()
    path = Path(args.source)
    source = None
    if path.is_file():  # parsed once, a schedule or an instance by its content, whatever its name
        try:
            content = read_json(path)
        except InstanceFormatError:  # not JSON: an instance in a text format (or an error the loader names)
            content = None
        if isinstance(content, dict) and content.get("format") == SCHEDULE_FORMAT:
            source = schedule_from_dict(schedule_dict(content, path), source=str(path))
        elif isinstance(content, dict):
            source = instance_from_json(content, path)
    save_timeline(source if source is not None else resolve_instance(args.source), args.out, bins=args.bins)
    return _written(args.out, began)


def _cmd_curves(args: argparse.Namespace) -> int:
    from dynasched_gym.schedule import load_schedule
    from dynasched_gym.viz import save_curves

    began = time.perf_counter()
    save_curves(load_schedule(args.schedule), args.out)
    return _written(args.out, began)


def rule_argument(text: str) -> str:
    """An argparse type: a rule name the library knows (also used by ``scripts.bench``)."""
    from dynasched_gym.core.rules import parse_rule

    try:
        parse_rule(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def output_file_argument(text: str) -> Path:
    """An argparse type: a file to write, refused now (not after the work) when a folder, a device such as
    ``/dev/null`` or a file is in the way (:func:`~dynasched_gym.instance.writable_file`; also used by the scripts)."""
    try:
        return writable_file(check_path("path", _nonblank(text, "a file path")))
    except ValueError as exc:  # a NUL character
        raise argparse.ArgumentTypeError(str(exc)) from None
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"{exc.filename}: {exc.strerror}") from None


def output_folder_argument(text: str) -> Path:
    """An argparse type: a folder to write files into, made by the script once every option is accepted; a file in
    the way is refused now, before the work (:func:`~dynasched_gym.instance.writable_folder`; used by the scripts)."""
    try:
        return writable_folder(check_path("path", _nonblank(text, "a folder path")))
    except ValueError as exc:  # a NUL character
        raise argparse.ArgumentTypeError(str(exc)) from None
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot be a folder: {exc.strerror} ({exc.filename})") from None


#: convert's output argument meaning standard output (native JSON only), as in Unix tools.
STDOUT = "-"


def _nonblank(text: str, what: str) -> str:
    """``text`` unless blank, which is an argparse error (``Path("")`` is the working directory: ``--out ''`` was
    refused as ".: Is a directory", or, for convert, written as a folder of ``--to dsbx-dir`` there)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return text


def _output(text: str) -> str:
    """An argparse type: convert's output, a file or a folder (by ``--to``) or :data:`STDOUT`, never blank."""
    return _nonblank(text, "a file or folder path")


def _rules(text: str) -> list[str]:
    """An argparse type: comma-separated rule names the library knows, each once (``SPT,SPT:EET`` rolled one rule
    out twice, in two columns)."""
    from dynasched_gym.core.rules import rule_name

    first: dict[str, str] = {}  # the one spelling -> the name given
    for name in text.split(","):
        spelling = rule_name(rule_argument(name))
        if spelling in first:
            raise argparse.ArgumentTypeError(f"{name!r} repeats {first[spelling]!r} (both {spelling}): name each "
                                             "rule once")
        first[spelling] = name
    return list(first.values())


def _integer(text: str) -> int:
    """``int(text)``; anything else is an argparse error that names the text (not the type function)."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def _instance(text: str) -> str:
    """An argparse type: a path or an embedded name, which is never blank (``resolve_instance`` raises on one)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a path or an embedded name ({', '.join(data.EMBEDDED)}), "
                                         f"got {text!r}")
    return text


def _schedule_file(text: str) -> str:
    """An argparse type: an existing schedule file; an instance's name or path gets the way to make one."""
    if not Path(text).is_file():
        made_by = "dynasched-gym rollout <instance> --out schedule.json"
        raise argparse.ArgumentTypeError(f"{text}: no such schedule file (a schedule JSON, as `{made_by}` writes)")
    return text


def _bins(text: str) -> int:
    """An argparse type: a number of time bins, 1 to :data:`~dynasched_gym.viz.timeline.MAX_BINS`."""
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    if value > MAX_BINS:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_BINS}, got {value}")
    return value


def _limit(text: str) -> int:
    """An argparse type: how many violations to list, 0 for all."""
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0 (0: all), got {value}")
    return value


def _seed(text: str) -> int:
    """An argparse type: a seed of the kernels' random stream."""
    seed = _integer(text)
    if not 0 <= seed < 2**32:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**32), got {seed}")
    return seed


def doc_summary(doc: str | None) -> str:
    """The first paragraph of a module docstring, for a command's ``--help``, without reST's literal quotes (empty
    under ``python -OO``, which strips docstrings)."""
    return (doc or "").split("\n\n")[0].replace("``", "")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``dynasched-gym``."""
    from dynasched_gym import __version__

    parser = argparse.ArgumentParser(prog="dynasched-gym", description=doc_summary(__doc__))
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="summarise an instance")
    instance_help = "instance file or folder, or an embedded name (" + ", ".join(data.EMBEDDED) + ")"
    p.add_argument("instance", type=_instance, help=instance_help)
    p.set_defaults(func=_cmd_info)
    p = sub.add_parser("rollout", help="simulate with a dispatching rule and print metrics")
    p.add_argument("instance", type=_instance, help=instance_help)
    p.add_argument("--rule", type=rule_argument, default="SPT", help="job rule[:machine rule], e.g. MWKR or EDD:EET")
    p.add_argument("--seed", type=_seed, help="seed of the RANDOM rule, in [0, 2**32) (default 0)")
    p.add_argument("--out", type=output_file_argument, help="write the schedule JSON here")
    p.set_defaults(func=_cmd_rollout)
    p = sub.add_parser("validate", help="check a schedule JSON file with the independent validator")
    p.add_argument("schedule", type=_schedule_file, help="schedule JSON file (from rollout --out)")
    p.add_argument("--limit", type=_limit, default=20, help="list at most this many violations (0: all; default 20)")
    p.set_defaults(func=_cmd_validate)
    p = sub.add_parser("convert", help="write an instance in another format")
    p.add_argument("instance", type=_instance, help=instance_help)
    p.add_argument("output", type=_output, help="the file (native JSON) or folder (dsbx-dir) to write; - for standard "
                                                "output (native JSON)")
    p.add_argument("--to", choices=("native", "dsbx-dir"), default="native", help="the output format")
    p.add_argument("--drop-unsupported", action="store_true",
                   help="dsbx-dir: drop what the format cannot express (REWORK events, the restart breakdown policy, "
                        "...) with a warning, instead of refusing the instance")
    p.set_defaults(func=_cmd_convert)
    p = sub.add_parser("compare", help="rules side by side (six by default; --rules) on instances (default: the "
                                       "embedded ones)")
    p.add_argument("instances", nargs="*", type=_instance, help="instances as for info (default: every embedded one)")
    p.add_argument("--metric", choices=METRIC_KEYS, default="makespan", help="the metric compared")
    p.add_argument("--rules", type=_rules, default="SPT:EET,FIFO:EET,MWKR:EET,MOPNR:EET,EDD:EET,ATC:EET",
                   help="comma-separated rules, job rule[:machine rule] each")
    p.set_defaults(func=_cmd_compare)
    p = sub.add_parser("gantt", help="draw a schedule's Gantt chart (PNG, PDF, SVG or interactive HTML)")
    p.add_argument("schedule", type=_schedule_file, help="schedule JSON file (from rollout --out)")
    p.add_argument("--out", type=output_file_argument, required=True, help="output file; its suffix picks the type")
    p.add_argument("--by", choices=("machine", "job"), default="machine", help="one row per machine or per job")
    p.set_defaults(func=_cmd_gantt)
    p = sub.add_parser("timeline", help="draw the event timeline of an instance or a schedule")
    p.add_argument("source", type=_instance, help="schedule JSON file, instance path or embedded name")
    p.add_argument("--out", type=output_file_argument, required=True, help="output file (.png, .pdf or .svg)")
    p.add_argument("--bins", type=_bins, default=60, help=f"number of time bins of the histogram (1 to {MAX_BINS})")
    p.set_defaults(func=_cmd_timeline)
    p = sub.add_parser("curves", help="draw WIP, jobs, busy/down machines and utilisation over time")
    p.add_argument("schedule", type=_schedule_file, help="schedule JSON file (from rollout --out)")
    p.add_argument("--out", type=output_file_argument, required=True, help="output file (.png, .pdf or .svg)")
    p.set_defaults(func=_cmd_curves)
    return parser


def reader_gone() -> int:
    """After a BrokenPipeError of stdout (its reader is gone: ``| head``): the status to stop with quietly, 141, as a
    tool killed by SIGPIPE does; stdout is sent to ``os.devnull``, as the exit's flush would raise again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 128 + 13  # SIGPIPE's number, as a shell reports such a tool; signal.SIGPIPE does not exist on Windows


_PACKAGE = Path(__file__).resolve().parent
_PYTHON_FORMAT = warnings.formatwarning


def _format_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                    line: str | None = None) -> str:
    """The package's own warnings as ``warning: <message>``, as errors are printed: the source line that raised one
    (Python's format) says nothing to a command-line user. Others (a dependency's) keep Python's format."""
    if Path(filename).resolve().is_relative_to(_PACKAGE):
        return f"warning: {message}\n"
    return _PYTHON_FORMAT(message, category, filename, lineno, line)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit status (2 on bad input, a file that cannot be written or a missing optional
    package, 1 on an invalid schedule, 130 on Ctrl-C or SIGTERM, 141 when the reader of stdout is gone: files are
    written whole or not at all)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "rollout" and args.seed is not None:
        from dynasched_gym.core.rules import is_random_rule, parse_rule

        if not is_random_rule(parse_rule(args.rule)[0]):  # it would be ignored: the other rules draw nothing
            parser.error(f"argument --seed: only the RANDOM rule draws from it; {args.rule} makes no random choice "
                         "(leave --seed out)")
    if getattr(args, "drop_unsupported", False) and args.to != "dsbx-dir":  # else ignored without a word
        parser.error("convert: --drop-unsupported applies to --to dsbx-dir only (the native format expresses all)")
    if getattr(args, "output", None) == STDOUT and args.to != "native":
        parser.error(f"convert: {STDOUT} (standard output) takes --to native only; --to {args.to} writes a folder")
    formatwarning, warnings.formatwarning = warnings.formatwarning, _format_warning
    try:
        with sigterm_as_interrupt():  # SIGTERM's default action kills at once, leaving a write's temporary file
            status = args.func(args)
            sys.stdout.flush()  # here, where a reader gone is caught, not at the exit
            return status
    except BrokenPipeError:
        return reader_gone()
    except (InstanceFormatError, OSError, MissingExtraError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # a traceback of wherever the work was says nothing to a user who pressed Ctrl-C
        interrupt_handled()  # python -m dynasched_gym: exit with 130, not by SIGINT
        print("\ninterrupted", file=sys.stderr)
        return 130
    finally:
        warnings.formatwarning = formatwarning


if __name__ == "__main__":
    sys.exit(main())
