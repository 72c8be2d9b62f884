"""Instance loaders: benchmark files, the reference package's formats, round trips and bad input."""

from __future__ import annotations

import csv
import json
import math
import shutil
import warnings
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from strategies import instances

from dynasched_gym import Event, EventType, Instance, InstanceFormatError, Job, Machine, load_instance
from dynasched_gym.io import detect_format, dsbx_dir

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_located(exc: pytest.ExceptionInfo[InstanceFormatError], path: Path, value: object,
                   line: int | None = None, field: str | None = None) -> None:
    """The message names the file, the line and/or field, and the offending value."""
    msg = str(exc.value)
    assert str(path) in msg, msg
    assert line is not None or field is not None
    if line is not None:
        assert f"line {line}" in msg, msg
        assert exc.value.line == line
    if field is not None:
        assert field in msg, msg
    assert repr(value) in msg, msg


# ------------------------------------------------------------------------------------------ benchmarks
def test_all_benchmark_files_match_bounds(shared: Path) -> None:
    bench = shared / "benchmarks"
    with (bench / "bounds.csv").open() as fh:
        rows = {(r["set"], r["instance"]): r for r in csv.DictReader(fh)}
    files = sorted(bench.glob("fjsp/**/*.fjs")) + sorted(bench.glob("jssp/**/*.txt"))
    assert len(files) == len(rows) == 170
    for path in files:
        row = rows[(path.parent.relative_to(bench).as_posix(), path.stem)]
        inst = load_instance(path)
        assert detect_format(path) == ("fjsp" if path.suffix == ".fjs" else "jssp")
        got = (inst.num_jobs, inst.num_machines, inst.num_ops)
        assert got == (int(row["jobs"]), int(row["machines"]), int(row["operations"])), path
        assert inst.name == path.stem and not inst.events


def test_fjs_details(shared: Path) -> None:
    mk01 = load_instance(shared / "benchmarks/fjsp/brandimarte/mk01.fjs")
    # Job 1: "6 2 1 5 3 4 3 5 3 3 5 2 1 ..." (1-based machines in the file).
    assert mk01.job_ops(0)[:2] == [{0: 5.0, 2: 4.0}, {4: 3.0, 2: 5.0, 1: 1.0}]
    assert mk01.machine_names[0] == "M1" and mk01.job_names[0] == "J1"
    assert set(mk01.machine_groups) == {"default"} and set(mk01.machine_speed) == {1.0}
    assert mk01.job_release.sum() == 0 and all(math.isnan(d) for d in mk01.job_due)
    mk06 = load_instance(shared / "benchmarks/fjsp/brandimarte/mk06.fjs")
    assert mk06.num_machines == 15 and int(mk06.elig_machine.max()) == 9  # header kept, 10 used
    ft06 = load_instance(shared / "benchmarks/jssp/ft/ft06.txt")
    assert ft06.job_ops(0)[:3] == [{2: 1.0}, {0: 3.0}, {1: 6.0}] and ft06.machine_names[0] == "M0"


def test_sniffing_without_suffix(tmp_path: Path) -> None:
    (tmp_path / "a.data").write_text("1 2 1.5\n1 2 1 3 2 4\n")
    (tmp_path / "b.data").write_text("1 2\n0 3 1 4\n")
    assert detect_format(tmp_path / "a.data") == "fjsp"
    assert detect_format(tmp_path / "b.data") == "jssp"
    assert load_instance(tmp_path / "a.data").job_ops(0) == [{0: 3.0, 1: 4.0}]
    assert load_instance(tmp_path / "b.data").job_ops(0) == [{0: 3.0}, {1: 4.0}]


def fjs_text(inst: Instance) -> str:
    """FJSPLIB text of a static instance (1-based machine ids)."""
    lines = [f"{inst.num_jobs} {inst.num_machines} 1.5"]
    for j in range(inst.num_jobs):
        toks = [len(inst.job_ops(j))]
        for op in inst.job_ops(j):
            toks.append(len(op))
            for m, t in op.items():
                toks += [m + 1, int(t)]
        lines.append(" ".join(map(str, toks)))
    return "\n".join(lines) + "\n"


@SETTINGS
@given(inst=instances(max_jobs=6, max_machines=5, with_events=False))
def test_fjs_reader_property(inst: Instance, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("fjs") / "random.fjs"
    path.write_text(fjs_text(inst))
    expected = Instance.build(
        "random", [Machine(name=f"M{m + 1}") for m in range(inst.num_machines)],
        [Job(name=f"J{j + 1}", ops=inst.job_ops(j)) for j in range(inst.num_jobs)],
    )
    assert load_instance(path) == expected


# ------------------------------------------------------------------------------------------ reference dir
def test_reference_directory(reference_dir: Path) -> None:
    assert detect_format(reference_dir) == "dsbx-dir"
    inst = load_instance(reference_dir)
    assert inst.name == reference_dir.name
    assert (inst.num_jobs, inst.num_machines, inst.num_ops) == (243, 6, 489)
    assert not any(math.isnan(d) for d in inst.job_due)  # 243 DUE_DATE_SET, all at arrival time
    # No machine_id in the sample names a group, so machine events map one to one.
    assert Counter(e.type for e in inst.events) == {
        EventType.BREAKDOWN: 59, EventType.MAINTENANCE: 36, EventType.PRIORITY_CHANGE: 28,
        EventType.PTIME_CHANGE: 10, EventType.CANCELLATION: 3, EventType.ROUTE_CHANGE: 1,
        EventType.DUE_DATE_CHANGE: 1,
    }
    assert inst.machine_names == ("G1-M1", "G1-M2", "G2-M1", "G2-M2", "G3-M1", "G3-M2")
    assert inst.machine_groups[2:4] == ("GroupB", "GroupB") and inst.machine_speed[2] == 1.2
    # Job-1-B1: routing GroupB, GroupC with nominal 1.3614, 39.1213; arrival 9.138, due 301.4394.
    assert inst.job_names[0] == "Job-1-B1" and inst.job_release[0] == 9.138 and inst.job_due[0] == 301.4394
    assert inst.job_ops(0) == [{2: 1.3614 / 1.2, 3: 1.3614 / 0.9}, {4: 39.1213 / 1.0, 5: 39.1213 / 0.7}]
    assert set(inst.job_weight) == {1.0}
    weights = Counter(e.weight for e in inst.events if e.type == EventType.PRIORITY_CHANGE)
    assert weights == {10.0: 17, 1.0: 11}  # new_priority -1 (emergency) x17, 0 x11
    (route,) = [e for e in inst.events if e.type == EventType.ROUTE_CHANGE]
    assert route.op == 0 and route.ops == ({2: 0.0356 / 1.2, 3: 0.0356 / 0.9}, {4: 1.0752, 5: 1.0752 / 0.7})
    (ddc,) = [e for e in inst.events if e.type == EventType.DUE_DATE_CHANGE]
    assert ddc.due == 818.8288 and inst.job_names[ddc.job] == "Job-132"
    ptime = next(e for e in inst.events if e.type == EventType.PTIME_CHANGE)
    assert (ptime.op, ptime.value, ptime.factor) == (0, 10.766839999999998, None)


def copy_reference(reference_dir: Path, tmp_path: Path) -> Path:
    out = tmp_path / "ref"
    shutil.copytree(reference_dir, out)
    return out


def test_dsbx_static_machines_and_group_ids(reference_dir: Path, tmp_path: Path) -> None:
    d = copy_reference(reference_dir, tmp_path)
    machines = json.loads((d / "input_model.json").read_text())["plant"]["machines"]
    (d / "input_model.json").unlink()
    (d / "static_machines.json").write_text(json.dumps({"machines": machines}))
    base = load_instance(d)
    with (d / "events.jsonl").open("a") as fh:  # group id: one event per machine of the group
        fh.write('{"time":900,"event_type":"BREAKDOWN","machine_id":"GroupC","duration":2.5}\n')
        fh.write('{"time":901,"event_type":"DUE_DATE_SET","job_id":"Job-1-B1","due_date":950}\n')
    inst = load_instance(d)
    assert inst.events[:-3] == base.events
    assert [(e.type, e.machine, e.duration) for e in inst.events[-3:-1]] == [(EventType.BREAKDOWN, 4, 2.5),
                                                                            (EventType.BREAKDOWN, 5, 2.5)]
    assert inst.events[-1] == Event(time=901.0, type=EventType.DUE_DATE_CHANGE, job=0, due=950.0)


def test_dsbx_writer_round_trip(reference_dir: Path, tmp_path: Path) -> None:
    inst = load_instance(reference_dir)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = dsbx_dir.save(inst, tmp_path / reference_dir.name)
    assert sorted(p.name for p in out.iterdir()) == ["events.jsonl", "static_jobs.json", "static_machines.json"]
    assert load_instance(out) == inst
    ref_lines = (reference_dir / "events.jsonl").read_text().splitlines()
    assert len((out / "events.jsonl").read_text().splitlines()) == len(ref_lines)
    dsbx_dir.save(inst, out)  # a previous save() output is replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == [reference_dir.name]  # no temp leftovers
    (out / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        dsbx_dir.save(inst, out)


def _grouped_machines() -> list[Machine]:
    return [Machine("A1", "A", 1.0), Machine("A2", "A", 2.0), Machine("B1", "B", 0.5)]


def test_dsbx_writer_rejects_unsupported(tmp_path: Path) -> None:
    machines = _grouped_machines()
    partial = Instance.build("x", machines, [Job("J", [{0: 4.0}])])
    with pytest.raises(InstanceFormatError) as exc:
        dsbx_dir.save(partial, tmp_path / "out")
    assert "jobs[0].ops[0].eligible" in str(exc.value) and "{0: 4.0}" in str(exc.value)
    unequal = Instance.build("x", machines, [Job("J", [{0: 4.0, 1: 4.0}])])
    with pytest.raises(InstanceFormatError, match=r"jobs\[0\]\.ops\[0\]\.eligible"):
        dsbx_dir.save(unequal, tmp_path / "out")
    bad_route = Instance.build("x", machines, [Job("J", [{2: 8.0}])],
                               [Event(time=1.0, type=EventType.ROUTE_CHANGE, job=0, ops=({0: 1.0},))])
    with pytest.raises(InstanceFormatError, match=r"events\[0\]\.ops\[0\]\.eligible"):
        dsbx_dir.save(bad_route, tmp_path / "out")
    rework = Instance.build("x", machines, [Job("J", [{0: 4.0, 1: 2.0}], weight=10.0)],
                            [Event(time=1.0, type=EventType.REWORK, job=0, op=0),
                             Event(time=2.0, type=EventType.REWORK, job=0, op=0)])
    with pytest.raises(InstanceFormatError, match="REWORK"):
        dsbx_dir.save(rework, tmp_path / "out")
    assert not list(tmp_path.iterdir())  # nothing written on error
    with pytest.warns(UserWarning, match="dropped 2"):
        out = dsbx_dir.save(rework, tmp_path / "out", drop_unsupported=True)
    back = load_instance(out)
    assert back == rework.replace(events=(), name="out")
    with pytest.raises(InstanceFormatError, match="restart"):
        dsbx_dir.save(back.replace(breakdown_policy="restart"), tmp_path / "out2")


def test_dsbx_writer_converts_factor(tmp_path: Path) -> None:
    inst = Instance.build("x", _grouped_machines(), [Job("J", [{0: 4.0, 1: 2.0}, {2: 6.0}])], [
        Event(time=1.0, type=EventType.PTIME_CHANGE, job=0, op=1, factor=1.5),
        Event(time=2.0, type=EventType.PTIME_CHANGE, job=0, op=1, factor=2.0),
    ])
    back = load_instance(dsbx_dir.save(inst, tmp_path / "x"))
    assert [(e.op, e.value) for e in back.events] == [(1, 4.5), (1, 9.0)]  # nominal 3 -> 4.5 -> 9


@SETTINGS
@given(inst=instances(max_jobs=5, max_machines=4, grouped=True,
                      event_types=[t for t in EventType if t in dsbx_dir.SUPPORTED_EVENT_TYPES]))
def test_dsbx_writer_property(inst: Instance, tmp_path_factory: pytest.TempPathFactory) -> None:
    """save -> load keeps the instance up to the documented normalisation, and is then a fixed point."""
    inst = inst.replace(breakdown_policy="resume")
    base = tmp_path_factory.mktemp("dsbx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # lossy weights are expected here
        once = load_instance(dsbx_dir.save(inst, base / "a"))
        twice = load_instance(dsbx_dir.save(once, base / "a"))
    assert twice == once
    assert dsbx_dir.render(twice) == dsbx_dir.render(once)
    assert sorted(once.job_names) == sorted(inst.job_names)
    assert list(once.job_release) == sorted(inst.job_release)
    early = [e for e in inst.events if e.type == EventType.PRIORITY_CHANGE and e.time < inst.job_release[e.job]]
    assert len(once.events) == len(inst.events) - len(early)
    for j in range(inst.num_jobs):
        k = once.job_names.index(inst.job_names[j])
        for a, b in zip(once.job_ops(k), inst.job_ops(j), strict=True):
            assert a.keys() == b.keys() and all(math.isclose(a[m], b[m]) for m in a)
        assert once.job_due[k] == inst.job_due[j] or (math.isnan(once.job_due[k]) and math.isnan(inst.job_due[j]))


# ------------------------------------------------------------------------------------------ JMS files
JMS = {
    "GEN-Bench": (6, 4, 17, {EventType.BREAKDOWN: 2}, 11.415),
    "JMS-Bench": (19, 5, 58, {EventType.CANCELLATION: 6}, 13.92),
    "MK-Bench": (11, 6, 56, {EventType.BREAKDOWN: 4, EventType.CANCELLATION: 4}, 17.3),
}


@pytest.mark.parametrize("suite", sorted(JMS))
def test_jms_samples(shared: Path, suite: str) -> None:
    jobs, machines, ops, events, emergency_release = JMS[suite]
    folder = next((shared / "reference/dsbx" / suite).iterdir())
    (file,) = folder.glob("*.jsonl")
    assert detect_format(folder) == detect_format(file) == "dsbx-jms"
    inst = load_instance(folder)
    assert inst == load_instance(file) and inst.name == file.stem
    assert (inst.num_jobs, inst.num_machines, inst.num_ops) == (jobs, machines, ops)
    assert Counter(e.type for e in inst.events) == events
    assert [e.time for e in inst.events] == sorted(e.time for e in inst.events)
    assert list(inst.job_weight) == [1.0] * (jobs - 1) + [10.0]
    assert inst.job_release[-1] == emergency_release and all(math.isnan(d) for d in inst.job_due)


def test_jms_mk01_matches_fjs(shared: Path) -> None:
    jms = load_instance(shared / "reference/dsbx/MK-Bench/Mk01/Mk01.jsonl")
    fjs = load_instance(shared / "benchmarks/fjsp/brandimarte/mk01.fjs")
    assert [jms.job_ops(j) for j in range(10)] == [fjs.job_ops(j) for j in range(10)]
    assert jms.job_release[1] == 0.55 and jms.job_names[:2] == ("J1", "J2") and jms.machine_names[0] == "M0"
    first = jms.events[4]  # machine_break [3, 10.72] + machine_repair [3, 12.47]
    assert (first.type, first.machine, first.time) == (EventType.BREAKDOWN, 3, 10.72)
    assert math.isclose(first.duration, 12.47 - 10.72)
    cancels = [jms.job_names[e.job] for e in jms.events if e.type == EventType.CANCELLATION]
    assert cancels == ["J2", "J7", "J5", "J8"]


def _jms(tmp_path: Path, **dynamic: list[list[float]]) -> Path:
    data = {"static_info": {"num_jobs": 1, "num_machines": 2, "ops_per_job": [1], "candidates": {"(1,1)": [0, 1]},
                            "proc_time": {"(1,1)": {"0": 2, "1": 3}}}, "dynamic_events": dynamic}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(data) + "\n")
    return path


def test_jms_bad_input(tmp_path: Path) -> None:
    path = _jms(tmp_path, machine_break=[[0, 1.0], [0, 5.0]], machine_repair=[[0, 2.0]])
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(path)
    assert_located(exc, path, 5.0, line=1, field="dynamic_events.machine_break[1]")
    path = _jms(tmp_path, job_cancel=[[4, 1.0]])
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(path)
    assert_located(exc, path, 4, field="dynamic_events.job_cancel[0]")
    path = _jms(tmp_path, machine_break=[[2, 1.0]], machine_repair=[[2, 3.0]])
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(path)
    assert_located(exc, path, 2, field="dynamic_events.machine_break[0]")


# ------------------------------------------------------------------------------------------ native
@SETTINGS
@given(inst=instances(max_jobs=6, max_machines=5))
def test_native_round_trip(inst: Instance, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("native") / "inst.json"
    inst.to_json(path)
    assert detect_format(path) == "native"
    back = load_instance(path)
    assert back == inst and back.events == inst.events
    assert Instance.from_dict(json.loads(inst.to_json())) == inst


def test_strategy_covers_every_event_type() -> None:
    seen: set[EventType] = set()

    @settings(max_examples=150, deadline=None, database=None)
    @given(inst=instances())
    def collect(inst: Instance) -> None:
        times = [e.time for e in inst.events]
        assert times == sorted(times)
        for e in inst.events:
            seen.add(e.type)
            if e.op is not None and e.type != EventType.ROUTE_CHANGE:
                assert e.op < int(inst.job_op_ptr[e.job + 1] - inst.job_op_ptr[e.job])

    collect()
    assert seen == set(EventType) - {EventType.COMPLETION, EventType.ARRIVAL}


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    ("text", "line", "field", "value"),
    [
        ("2 2 1\n1 1 1 5\n2 1 1 3", 3, "jobs[1].ops[1].k", "<end of file>"),  # truncated
        ("1 2 1\n1 2 1 5 x 3\n", 2, "jobs[0].ops[0].machine", "x"),  # bad token
        ("1 2 1\n1 1 7 5\n", 2, "jobs[0].ops[0].machine", 7),  # unknown machine id
        ("1 2 1\n2 1 1 5\n1 2 -3\n", 3, "jobs[0].ops[1].time", -3),  # negative time (job spans lines)
        ("1 2 1\n2 1 1 5 0\n", 2, "jobs[0].ops[1].k", 0),  # empty eligible set
        ("1 2\n1 1 1 5\n", 1, "header", "1 2"),  # 2-field header in a .fjs file
        ("1 2 1\n1 1 1 5 9\n", 2, "end", "9"),  # trailing data
        ("1 2 1\n1 2 1 5 1 3\n", 2, "jobs[0].ops[0].machine", 1),  # machine listed twice
    ],
)
def test_bad_fjs(tmp_path: Path, text: str, line: int, field: str, value: object) -> None:
    path = tmp_path / "bad.fjs"
    path.write_text(text)
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(path)
    assert_located(exc, path, value, line=line, field=field)


def test_truncated_benchmark_file(shared: Path, tmp_path: Path) -> None:
    text = (shared / "benchmarks/fjsp/brandimarte/mk01.fjs").read_text().splitlines()
    path = tmp_path / "mk01.fjs"
    path.write_text("\n".join(text[:5]) + "\n" + text[5][: len(text[5]) // 2].rstrip() + "\n")
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(path)
    assert_located(exc, path, "<end of file>", line=6)


@pytest.mark.parametrize(
    ("text", "line", "field", "value"),
    [
        ("2 2\n0 3 1 4\n1 2", 3, "jobs[1].ops[1].machine", "<end of file>"),
        ("1 2\n0 3 2 4\n", 2, "jobs[0].ops[1].machine", 2),
        ("1 2\n0 3 1 -4\n", 2, "jobs[0].ops[1].time", -4),
        ("1 2\n0 3 1 4.5.1\n", 2, "jobs[0].ops[1].time", "4.5.1"),
    ],
)
def test_bad_jssp(tmp_path: Path, text: str, line: int, field: str, value: object) -> None:
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(path)
    assert_located(exc, path, value, line=line, field=field)


def _edit_events(d: Path, line: int, new: str | None = None, swap: int | None = None) -> Path:
    path = d / "events.jsonl"
    lines = path.read_text().splitlines()
    if swap is not None:
        lines[line - 1], lines[swap - 1] = lines[swap - 1], lines[line - 1]
    else:
        lines[line - 1] = new  # type: ignore[call-overload]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_dsbx_unknown_job(reference_dir: Path, tmp_path: Path) -> None:
    d = copy_reference(reference_dir, tmp_path)
    path = _edit_events(d, 100, '{"time":133.8646,"event_type":"PTIME_CHANGE","job_id":"Job-999",'
                                '"step_index":0,"new_process_time":10.7}')
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(d)
    assert_located(exc, path, "Job-999", line=100, field="job_id")


def test_dsbx_unsorted(reference_dir: Path, tmp_path: Path) -> None:
    d = copy_reference(reference_dir, tmp_path)
    path = _edit_events(d, 11, swap=12)  # 10.6238 DUE_DATE_SET <-> 10.6883 ARRIVAL
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(d)
    assert "not sorted" in str(exc.value)
    assert_located(exc, path, 10.6238, line=12, field="time")


@pytest.mark.parametrize(
    ("line", "field", "value"),
    [
        ('{"time":5.858,"event_type":"BREAKDOWN","machine_id":"G9-M9","duration":5.75}', "machine_id", "G9-M9"),
        ('{"time":5.858,"event_type":"REWORK","job_id":"Job-1-B1","op":0}', "event_type", "REWORK"),
        ('{"time":5.858,"event_type":"BREAKDOWN","machine_id":"G2-M2","duration":-1}', "duration", -1),
        ('{"time":5.858,"event_type":"BREAKDOWN","machine_id":"G2-M2"', "event", '"machine_id":"G2-M2"'),
    ],
)
def test_dsbx_bad_event(reference_dir: Path, tmp_path: Path, line: str, field: str, value: object) -> None:
    d = copy_reference(reference_dir, tmp_path)
    path = _edit_events(d, 1, line)
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(d)
    assert_located(exc, path, value, line=1, field=field)


def test_dsbx_bad_route(reference_dir: Path, tmp_path: Path) -> None:
    d = copy_reference(reference_dir, tmp_path)
    path = _edit_events(d, 2, '{"time":9.138,"event_type":"ARRIVAL","job_id":"Job-1-B1","job_family":"ProductB",'
                              '"routing":["GroupB","GroupZ"],"process_times":[1.3614,39.1213]}')
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(d)
    assert_located(exc, path, "GroupZ", line=2, field="routing[1]")


def _native(tmp_path: Path, **changes: object) -> Path:
    data = Instance.build("n", [Machine("M0"), Machine("M1")], [Job("J0", [{0: 2.0}, {1: 3.0}])]).to_dict()
    data.update(changes)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data, indent=1))
    return path


def test_native_unsorted_events(tmp_path: Path) -> None:
    path = _native(tmp_path, events=[{"time": 5.0, "type": "CANCELLATION", "job": 0},
                                     {"time": 2.5, "type": "REPAIR", "machine": 1}])
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(path)
    assert_located(exc, path, 2.5, field="events[1].time")


def test_native_empty_eligible(tmp_path: Path) -> None:
    path = _native(tmp_path, jobs=[{"id": 0, "name": "J0", "ops": [{"eligible": {"0": 1.0}}, {"eligible": {}}]}])
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(path)
    assert_located(exc, path, {}, field="jobs[0].ops[1].eligible")


@pytest.mark.parametrize(("changes", "value", "field"), [
    ({"events": 3}, 3, "events"),  # found by a mutation fuzz: was a bare TypeError
    ({"machines": {"0": {}}}, {"0": {}}, "machines"),
    ({"jobs": "J0"}, "J0", "jobs"),
    ({"jobs": [{"id": 0, "ops": 5}]}, 5, "jobs[0].ops"),
    ({"jobs": [{"id": 0, "name": ["J", 0], "ops": [{"eligible": {"0": 1.0}}]}]}, ["J", 0], "jobs[0].name"),
    ({"machines": [{"id": 0, "group": 7}, {"id": 1}]}, 7, "machines[0].group"),
    ({"name": 12}, 12, "name"),
])
def test_native_wrong_json_types_are_located(tmp_path: Path, changes: dict, value: object, field: str) -> None:
    path = _native(tmp_path, **changes)
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(path)
    assert_located(exc, path, value, field=field)


@pytest.mark.parametrize("fmt", [None, "fjsp", "jssp", "dsbx-dir", "dsbx-jms"])
def test_missing_path(tmp_path: Path, fmt: str | None) -> None:
    path = tmp_path / "nothing.fjs"
    with pytest.raises(InstanceFormatError) as exc:
        load_instance(path, format=fmt)
    assert str(path) in str(exc.value)
