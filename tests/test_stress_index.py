"""The SSI formula (docs/ssi.md) on hand-made instances: how each event of the stream enters it, the components,
the reflected-workload term, and pinned values of the whole index (which decide tier pool membership)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dynasched_gym.generation import SSI_VERSION, ssi
from dynasched_gym.generation.stress_index import mean_reflected_workload, score_stress
from dynasched_gym.instance import Event, EventType, Instance, Job, Machine

E = EventType
PLANT = (Machine("A0", "GA"), Machine("A1", "GA", speed=2.0), Machine("B0", "GB"))


def _jobs(n: int = 16, due: bool = True) -> list[Job]:
    """``n`` jobs of two operations (group A, then machine B0), released 0, 2, 4, ..., due 6 after release."""
    return [Job(f"J{j}", [{0: 3.0, 1: 1.5}, {2: 2.0}], release=2.0 * j, due=2.0 * j + 6.0 if due else None,
                weight=1.0 + j % 3) for j in range(n)]


def _ssi(*events: Event, jobs: list[Job] | None = None, plant=PLANT) -> object:
    return ssi(Instance.build("ssi", plant, jobs if jobs is not None else _jobs(), events))


def _same(a, b) -> bool:
    return math.isclose(a.score, b.score, rel_tol=1e-12) and math.isclose(a.stress, b.stress, rel_tol=1e-12)


def _with(jobs: list[Job], job: int, **fields) -> list[Job]:
    """``jobs`` with job ``job``'s fields replaced (``times``: every operation's times multiplied)."""
    out = list(jobs)
    j = out[job]
    factor = fields.pop("times", None)
    ops = [{m: t * f for m, t in op.items()} for op, f in zip(j.ops, factor)] if factor else j.ops
    out[job] = Job(j.name, ops, fields.pop("release", j.release), fields.pop("due", j.due),
                   fields.pop("weight", j.weight))
    return out


@pytest.mark.parametrize(("event", "field"), [
    (Event(1.0, E.PRIORITY_CHANGE, job=3, weight=10.0), {"weight": 10.0}),
    (Event(1.0, E.DUE_DATE_CHANGE, job=3, due=7.0), {"due": 7.0}),
    (Event(1.0, E.DUE_DATE_CHANGE, job=3, due=40.0), {"due": 40.0}),
])
def test_priority_and_due_date_changes_score_as_the_values_they_set(event, field):
    """Stress weighs each job by the weight in force after PRIORITY_CHANGEs and measures its slack from the due date in
    force after DUE_DATE_CHANGEs: the event scores as the job holding that value from the start."""
    changed, static = _ssi(event), _ssi(jobs=_with(_jobs(), 3, **field))
    assert _same(changed, static) and not _same(changed, _ssi())


def test_a_rework_adds_the_operations_work_as_a_processing_time_factor_of_two():
    """A REWORK of op k adds op k's static work to the load (docs/ssi.md, step 1), as a PTIME_CHANGE doubling it does
    (new - old = the work again); on the bottleneck (B0, each job's last operation) either raises the stress."""
    rework = _ssi(Event(1.0, E.REWORK, job=5, op=1))
    doubled = _ssi(Event(1.0, E.PTIME_CHANGE, job=5, op=1, factor=2.0))
    assert _same(rework, doubled) and rework.stress > _ssi().stress
    assert rework.components["bottleneck_utilization"] > _ssi().components["bottleneck_utilization"]


def test_a_cancellation_removes_half_of_the_jobs_work():
    """A CANCELLATION counts as minus half the job's work (docs/ssi.md, step 1): as a factor 0.5 on each operation."""
    cancelled = _ssi(Event(1.0, E.CANCELLATION, job=5))
    halved = _ssi(*(Event(1.0, E.PTIME_CHANGE, job=5, op=k, factor=0.5) for k in (0, 1)))
    assert _same(cancelled, halved) and cancelled.stress < _ssi().stress


def test_a_route_change_adds_half_the_difference_of_work():
    """A ROUTE_CHANGE adds half of (new route's work - old chain's work), spread over the old operations in proportion
    to their work (docs/ssi.md, step 1): new work 15 against old 5 (3 x speed 1 on group A, 2 on B0) adds 5, as
    a factor 2 on both operations does."""
    route = _ssi(Event(1.0, E.ROUTE_CHANGE, job=5, ops=({2: 15.0},)))
    doubled = _ssi(*(Event(1.0, E.PTIME_CHANGE, job=5, op=k, factor=2.0) for k in (0, 1)))
    assert _same(route, doubled)


def test_dynamism_counts_the_disruptive_events_per_job():
    """``dynamism`` = x/(1+x) of (processing-time changes, reworks, route changes, cancellations) per job; priority
    and due-date changes and machine events are not disruptive."""
    events = [Event(1.0, E.PTIME_CHANGE, job=1, op=1, factor=1.5), Event(1.0, E.REWORK, job=2, op=0),
              Event(1.0, E.ROUTE_CHANGE, job=3, ops=({2: 2.0},)), Event(1.0, E.CANCELLATION, job=4),
              Event(1.0, E.PRIORITY_CHANGE, job=5, weight=3.0), Event(1.0, E.DUE_DATE_CHANGE, job=6, due=20.0),
              Event(2.0, E.MAINTENANCE, machine=0, duration=1.0)]
    x = 4 / 16
    assert _ssi(*events).components["dynamism"] == pytest.approx(x / (1 + x), rel=1e-12)
    assert _ssi().components["dynamism"] == 0.0


def test_flexibility_is_the_mean_share_of_eligible_machines():
    """``flexibility`` = mean eligible machines per operation / machines: (2 + 1) / 2 / 3 here."""
    assert _ssi().components["flexibility"] == pytest.approx(0.5, rel=1e-12)
    one = [Job(f"J{j}", [{0: 3.0}, {2: 2.0}], release=2.0 * j, due=2.0 * j + 6.0) for j in range(16)]
    assert _ssi(jobs=one).components["flexibility"] == pytest.approx(1 / 3, rel=1e-12)


def test_an_instance_without_due_dates_has_no_stress_and_no_due_date_pressure():
    """No due date, no tardiness: stress, score and ``due_date_pressure`` are 0 however loaded the plant is."""
    result = _ssi(jobs=_jobs(due=False))
    assert (result.score, result.stress, result.components["due_date_pressure"]) == (0.0, 0.0, 0.0)
    assert result.components["bottleneck_utilization"] > 1.0


def test_the_weighted_work_counts_the_jobs_without_a_due_date():
    """stress = sum over jobs with a due date of w E[T] / sum over ALL jobs of w P (docs/ssi.md, step 5): a job due
    1100 before its completion, alone with one on-time job, gives 1100 / 2; a third job with no due date makes it
    1100 / 3."""
    due = [Job("J0", [{0: 1.0}], due=1000.0), Job("J1", [{0: 1.0}], release=100.0, due=-1000.0)]
    plant = (Machine("M0"),)
    two = _ssi(jobs=due, plant=plant)
    three = _ssi(jobs=[*due, Job("J2", [{0: 1.0}], release=50.0)], plant=plant)
    assert two.stress == pytest.approx(1101 / 2, rel=1e-4)
    assert three.stress == pytest.approx(1101 / 3, rel=1e-4)


def test_downtime_after_the_horizon_is_not_lost_capacity():
    """Availability counts downtime within [0, H] only (H = last release, 30 here): a breakdown from 20 lasting 10
    and one lasting 1000 remove the same capacity."""
    short = _ssi(Event(20.0, E.BREAKDOWN, machine=2, duration=10.0))
    long = _ssi(Event(20.0, E.BREAKDOWN, machine=2, duration=1000.0))
    assert short.components["bottleneck_utilization"] == long.components["bottleneck_utilization"]
    # group B (one machine): work 16 x 2 = 32 over H = 30 at availability 1 - 10/30
    assert long.components["bottleneck_utilization"] == pytest.approx(32 / (30 * (1 - 10 / 30)), rel=1e-12)


def test_availability_is_floored_at_five_percent():
    """A group down over more than 95 % of [0, H] counts as available 5 % of it (docs/ssi.md, "Known limits")."""
    loads = [_ssi(Event(0.0, E.BREAKDOWN, machine=2, duration=d)).components["bottleneck_utilization"]
             for d in (30 * 0.95, 30 * 0.99, 30.0)]
    assert loads == pytest.approx([32 / (30 * 0.05)] * 3, rel=1e-9)


def _reference_rbm(mu: float, var: float, horizon: float, points: int = 64) -> float:
    """The time average of E[Z(t)] (docs/ssi.md, step 3) at the midpoints of ``points`` equal cells, with math.erf."""
    sigma = math.sqrt(var)
    total = 0.0
    for i in range(points):
        t = (i + 0.5) / points * horizon
        a = mu * math.sqrt(t) / sigma
        cdf, pdf = 0.5 * (1 + math.erf(a / math.sqrt(2))), math.exp(-a * a / 2) / math.sqrt(2 * math.pi)
        total += max(mu * t * cdf + sigma * math.sqrt(t) * pdf + var / (2 * mu) * (2 * cdf - 1), 0.0)
    return total / points


def test_mean_reflected_workload_is_the_reflected_brownian_motion_expectation():
    """E[Z(t)] = mu t Phi(a) + sigma sqrt(t) phi(a) + sigma^2 / (2 mu) (2 Phi(a) - 1), a = mu sqrt(t) / sigma, averaged
    over [0, H], for negative and positive drifts (the normal CDF is the A&S approximation: |error| < 1.5e-7)."""
    drift, variance = np.array([-2.0, -0.5, 0.3, 1.5]), np.array([1.0, 4.0, 2.0, 0.5])
    got = mean_reflected_workload(drift, variance, 10.0)
    expected = [_reference_rbm(mu, var, 10.0) for mu, var in zip(drift, variance)]
    assert got == pytest.approx(expected, rel=1e-5)
    # steady state of a stable queue: sigma^2 / (2 |mu|) (Kingman), approached over a long horizon
    assert mean_reflected_workload(np.array([-1.0]), np.array([2.0]), 1e6)[0] == pytest.approx(1.0, rel=1e-2)


def _pinned_instance() -> Instance:
    """24 jobs in bursts (three bins of 8 arrivals), a loaded two-machine group, a breakdown, a maintenance and one
    event of each job kind."""
    plant = (Machine("A0", "GA"), Machine("A1", "GA", speed=1.5), Machine("B0", "GB"), Machine("B1", "GB"))
    jobs = [Job(f"J{j}", [{0: 2.0 + j % 3, 1: (2.0 + j % 3) / 1.5}, {2: 1.0 + j % 2, 3: 1.5}],
                release=float(j // 8 * 10 + (j % 8) * (0.5 if j < 8 else 1.2)), due=j // 8 * 10 + 9.0 + j % 5,
                weight=(1.0, 2.0, 0.5)[j % 3]) for j in range(24)]
    events = [Event(3.0, E.BREAKDOWN, machine=0, duration=4.0), Event(12.0, E.MAINTENANCE, machine=2, duration=2.0),
              Event(1.0, E.PTIME_CHANGE, job=2, op=0, factor=1.5), Event(4.0, E.REWORK, job=3, op=1),
              Event(5.0, E.ROUTE_CHANGE, job=9, ops=({3: 4.0},)), Event(6.0, E.CANCELLATION, job=10),
              Event(7.0, E.PRIORITY_CHANGE, job=11, weight=10.0), Event(8.0, E.DUE_DATE_CHANGE, job=12, due=15.0)]
    return Instance.build("pinned", plant, jobs, sorted(events, key=lambda e: e.time))


#: SSI of :func:`_pinned_instance` under SSI_VERSION "4".
PINNED = {"version": "4", "score": 61.60359065945957, "stress": 0.7722396237029877,
          "components": {"congestion": 0.557975620373144, "bottleneck_utilization": 1.083084577114428,
                         "due_date_pressure": 0.338369019597358, "disturbance": 0.046948356807511735,
                         "dynamism": 0.14285714285714285, "flexibility": 0.5, "size": 0.3450528104279015}}


def test_the_ssi_of_a_fixed_instance_is_pinned():
    """The whole formula (bins of ~8 arrivals, fluid backlog, diffusion, the pooling correction, log-normal tardiness,
    the components) on one instance. Tier pools are keyed by ``SSI_VERSION``: a change that moves these values must
    bump it (stale pools would otherwise be served), then re-pin."""
    result = ssi(_pinned_instance())
    assert SSI_VERSION == PINNED["version"], "SSI_VERSION changed: re-pin the values below for it"
    assert result.score == pytest.approx(PINNED["score"], rel=1e-9)
    assert result.stress == pytest.approx(PINNED["stress"], rel=1e-9)
    assert result.components == pytest.approx(PINNED["components"], rel=1e-9)


def test_score_stress_inverts_the_score() -> None:
    """validate_ssi reads the SSI's stress back from the stored scores."""
    result = ssi(_pinned_instance())
    assert float(score_stress(result.score)) == pytest.approx(result.stress, rel=1e-9)
    assert score_stress(50.0) == pytest.approx(0.3) and score_stress(100.0) == math.inf and score_stress(0.0) == 0.0


def test_the_memoised_ssi_cannot_be_changed_through_a_result() -> None:
    """ssi() memoises its result on the instance: ``ssi(inst).components["congestion"] = 99`` changed what every
    later ssi(inst) returned (the result is a frozen dataclass, its components dict was not)."""
    import json
    import pickle

    inst = Instance.build("ssi", PLANT, _jobs())
    result = ssi(inst)
    before = dict(result.components)
    for change in (lambda c: c.__setitem__("congestion", 99.0), lambda c: c.update(size=1.0), lambda c: c.clear()):
        with pytest.raises(TypeError, match="cannot be changed"):
            change(result.components)
    assert ssi(inst).components == before and json.loads(json.dumps(result.components)) == before
    assert pickle.loads(pickle.dumps(result)) == result
