"""OR-Library / Taillard "standard" JSSP text reader.

Layout: line 1 is ``n_jobs n_machines``; then, per job, ``n_machines`` pairs ``machine time`` in
routing order, with 0-based machine ids. Each pair becomes an operation with one eligible machine.
Tokens are read as one stream (see :class:`dynasched_gym.io.fjsp.TokenReader`); anything after the
last job is an error.

Naming: machines ``M0..M{n-1}`` (the file ids), group ``"default"``, speed 1; jobs ``J1..``;
release 0, no due date, weight 1, no events; the instance is named after the file stem.
"""

from __future__ import annotations

from pathlib import Path

from dynasched_gym.instance import Instance, Job
from dynasched_gym.io.fjsp import TokenReader, build, first_line_tokens, is_int


def sniff(path: Path, head: str) -> bool:
    """A file whose first line holds exactly 2 integers."""
    tokens = first_line_tokens(head)
    return path.is_file() and len(tokens) == 2 and all(is_int(t) for t in tokens)


def load(path: Path) -> Instance:
    """Read a standard-format JSSP file."""
    reader = TokenReader(path)
    n_jobs, n_machines = reader.header_ints(("n_jobs", "n_machines"))
    jobs = []
    for j in range(n_jobs):
        ops: list[dict[int, float]] = []
        seen: set[int] = set()  # not a scan of ops: that is quadratic in n_machines
        for k in range(n_machines):
            where = f"jobs[{j}].ops[{k}]"
            m = reader.integer(f"{where}.machine", 0, n_machines - 1, what="a machine id")
            if m in seen:  # the format: every job visits each machine exactly once
                raise reader.error(f"machine {m} is visited twice by job {j + 1} (each job visits every machine "
                                   "once in this format)", f"{where}.machine", m)
            seen.add(m)
            ops.append({m: reader.time(f"{where}.time")})
        jobs.append(Job(name=f"J{j + 1}", ops=ops))
    reader.expect_end()
    return build(path, reader, [f"M{m}" for m in range(n_machines)], jobs)
