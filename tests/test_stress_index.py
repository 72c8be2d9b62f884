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


@pytest.mark.parametrize("jobs", [16, 1000])
def test_due_date_pressure_and_size_components(jobs: int) -> None:
    """``due_date_pressure`` = x/(1+x) of 1 / due_date_tightness (each job due 6 after its release, P = 4.25: the mean
    of 3 and 1.5 on group A, then 2), ``size`` = log10(jobs) / 4 (docs/ssi.md, "Components")."""
    components = _ssi(jobs=_jobs(jobs)).components
    x = 4.25 / 6.0
    assert components["due_date_pressure"] == pytest.approx(x / (1 + x), rel=1e-12)
    assert components["size"] == pytest.approx(math.log10(jobs) / 4, rel=1e-12)


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


def _a_work(j: int, a_time: float, a_late: float) -> float:
    """Work of job ``j``'s op 0 in :func:`_uneven_jobs`."""
    return (a_time if j < 8 else a_late) + j % 3


def _uneven_jobs(a_time: float, b_time: float, a_late: float | None = None) -> list[Job]:
    """16 jobs released at alternating gaps 2.5, 1.5 (H = 30.5), due 9 after 2j, weights 1 and 2: op 0 on group A
    (A0 at ``a_time + j % 3``, ``a_late + j % 3`` from job 8 on, A1 at half that), then for the even jobs only op 1
    on B0 at ``b_time``."""
    late = a_time if a_late is None else a_late
    return [Job(f"J{j}", [{0: _a_work(j, a_time, late), 1: _a_work(j, a_time, late) / 2},
                          *([{2: b_time}] if j % 2 == 0 else [])],
                release=2.0 * j + 0.5 * (j % 2), due=2.0 * j + 9.0, weight=1.0 + j % 2) for j in range(16)]


#: Downtime for :func:`_uneven_jobs`: 3 on the speed-2 machine A1, 1 on B0 (MTTR 2).
UNEVEN_DOWNTIME = (Event(4.0, E.BREAKDOWN, machine=1, duration=3.0), Event(10.0, E.BREAKDOWN, machine=2, duration=1.0))


def test_the_diffusion_term_gets_the_documented_drift_and_variance(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps 1-3 of docs/ssi.md by hand: per bin k and group g, drift mu_k = arriving work_k / (H / K) - S_g A_g, and
    sigma^2 = (N_g / H)(c_a^2 + c_e^2)(W_g / N_g)^2 with c_a^2 thinned by the share p_g of jobs visiting g and
    c_e^2 = c_s,g^2 + 2 A (1 - A) MTTR / t_g. The downtime is speed-weighted (the breakdown is on the speed-2 machine),
    only the even jobs visit group B (p = 1/2), and the arrival gaps alternate (arrival SCV above 0)."""
    jobs = _uneven_jobs(2.0, 2.0)
    seen = {}

    def spy(drift: np.ndarray, variance: np.ndarray, horizon: float) -> np.ndarray:
        seen.update(drift=drift.copy(), variance=variance.copy(), horizon=horizon)
        return mean_reflected_workload(drift, variance, horizon)

    monkeypatch.setattr("dynasched_gym.generation.stress_index.mean_reflected_workload", spy)
    _ssi(*UNEVEN_DOWNTIME, jobs=jobs)

    h, mttr = 30.5, 2.0
    gaps = np.diff([job.release for job in jobs])
    arrival_scv = gaps.var() / gaps.mean() ** 2
    work_a = np.array([2.0 + j % 3 for j in range(16)])  # each op's work: the mean of time x speed, (t + t/2 x 2) / 2
    speed = {"A": 3.0, "B": 1.0}
    availability = {"A": 1 - 2.0 * 3.0 / (h * 3.0), "B": 1 - 1.0 / h}  # speed-weighted downtime share
    c_s2 = {"A": (work_a**2).mean() / work_a.mean() ** 2 - 1, "B": 0.0}
    mean_time = {"A": (0.75 * work_a).mean(), "B": 2.0}  # expected time over the eligible machines
    ops, work, share = {"A": 16, "B": 8}, {"A": work_a.sum(), "B": 16.0}, {"A": 1.0, "B": 0.5}
    variance = []
    for g in "AB":
        a = availability[g]
        c_a2 = share[g] * arrival_scv + (1 - share[g])
        c_e2 = c_s2[g] + 2 * a * (1 - a) * mttr / mean_time[g]
        variance.append(ops[g] / h * (c_a2 + c_e2) * (work[g] / ops[g]) ** 2)
    # two bins of width H / 2: jobs 0-7 (released before 15.25), then 8-15
    arriving = [[work_a[:8].sum(), 8.0], [work_a[8:].sum(), 8.0]]
    drift = [arriving[k][i] / (h / 2) - speed[g] * availability[g] for k in range(2) for i, g in enumerate("AB")]
    assert seen["horizon"] == h
    assert seen["variance"] == pytest.approx(variance * 2, rel=1e-12)
    assert seen["drift"] == pytest.approx(drift, rel=1e-12)


def test_waits_flow_times_and_stress_follow_the_documented_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steps 2, 4 and 5 of docs/ssi.md by hand, given the diffusion term (tested above), on an instance whose group B
    (one machine) is overloaded in both bins and group A (two) in the first only: wait_k,g = (mean fluid backlog
    over bin k + diffusion less mu_k^+ H / 2) / c_g, times rho_k^(sqrt(2(m+1)) - 2) with rho_k capped at 1;
    F_j = sum (t_o / A_g + wait), variance sum (t_o / A_g)^2 c_s^2 + sum wait^2, slack due - release;
    stress = sum w E[T] / sum w P; the congestion component from the same flow times."""
    from dynasched_gym.generation import stress_index

    jobs = _uneven_jobs(6.0, 5.0, a_late=1.0)
    seen = {}

    def workload(drift: np.ndarray, variance: np.ndarray, horizon: float) -> np.ndarray:
        seen["drift"], seen["diffusion"] = drift.copy(), mean_reflected_workload(drift, variance, horizon)
        return seen["diffusion"]

    def excess(mean: np.ndarray, var: np.ndarray, slack: np.ndarray) -> np.ndarray:
        seen.update(mean=mean.copy(), var=var.copy(), slack=slack.copy())
        seen["excess"] = lognormal_excess(mean, var, slack)
        return seen["excess"]

    lognormal_excess = stress_index._lognormal_excess
    monkeypatch.setattr(stress_index, "mean_reflected_workload", workload)
    monkeypatch.setattr(stress_index, "_lognormal_excess", excess)
    result = _ssi(*UNEVEN_DOWNTIME, jobs=jobs)

    h, bins = 30.5, 2
    availability = np.array([1 - 2.0 * 3.0 / (h * 3.0), 1 - 1.0 / h])
    rate = np.array([3.0, 1.0]) * availability
    machines = np.array([2, 1])
    # per job: (group, work, expected time) of each operation; jobs 0-7 arrive in bin 0, 8-15 in bin 1
    ops = [[(0, _a_work(j, 6.0, 1.0), 0.75 * _a_work(j, 6.0, 1.0)), *([(1, 5.0, 5.0)] if j % 2 == 0 else [])]
           for j in range(16)]
    arriving = np.zeros((bins, 2))
    for j, job_ops in enumerate(ops):
        for g, work, _ in job_ops:
            arriving[j // 8, g] += work
    capacity = rate * h / bins
    backlog = [np.zeros(2)]
    for k in range(bins):
        backlog.append(np.maximum(0.0, backlog[k] + arriving[k] - capacity))
    # overloaded bins cap rho and carry a backlog over (A's into its light second bin, where pooling discounts)
    assert (arriving > capacity).tolist() == [[True, True], [False, True]] and backlog[1][0] > 0
    drift = arriving / (h / bins) - rate
    diffusion = np.maximum(seen["diffusion"].reshape(bins, 2) - np.maximum(drift, 0.0) * h / 2, 0.0)
    pooling = np.minimum(arriving / capacity, 1.0) ** (np.sqrt(2 * (machines + 1)) - 2)
    wait = [(0.5 * (backlog[k] + backlog[k + 1]) + diffusion[k]) / rate * pooling[k] for k in range(bins)]
    works = np.array([work for job_ops in ops for _, work, _ in job_ops])
    scv = works.var() / works.mean() ** 2
    flow = [sum(t / availability[g] + wait[j // 8][g] for g, _, t in job_ops) for j, job_ops in enumerate(ops)]
    var = [sum((t / availability[g]) ** 2 * scv + wait[j // 8][g] ** 2 for g, _, t in job_ops)
           for j, job_ops in enumerate(ops)]
    assert seen["drift"] == pytest.approx(drift.ravel(), rel=1e-12)
    assert seen["mean"] == pytest.approx(flow, rel=1e-9)
    assert seen["var"] == pytest.approx(var, rel=1e-9)
    assert seen["slack"] == pytest.approx([job.due - job.release for job in jobs], rel=1e-12)
    weights = np.array([job.weight for job in jobs])
    ptime = np.array([sum(t for _, _, t in job_ops) for job_ops in ops])
    assert result.stress == pytest.approx((weights * seen["excess"]).sum() / (weights * ptime).sum(), rel=1e-12)
    # congestion: x/(1+x) of the weighted mean predicted delay per unit of work
    delay = np.average(np.array(flow) / ptime - 1.0, weights=weights)
    assert result.components["congestion"] == pytest.approx(delay / (1 + delay), rel=1e-9)


@pytest.mark.parametrize(("jobs", "bins"), [(7, 1), (16, 2), (31, 3), (260, 32), (300, 32)])
def test_jobs_fall_into_bins_of_about_eight_arrivals_and_at_most_32(monkeypatch: pytest.MonkeyPatch, jobs: int,
                                                                    bins: int) -> None:
    """K = min(max(J // 8, 1), 32) bins over [0, H] (docs/ssi.md, step 2): one drift per bin and group."""
    seen = {}

    def spy(drift: np.ndarray, variance: np.ndarray, horizon: float) -> np.ndarray:
        seen["drift"] = drift
        return mean_reflected_workload(drift, variance, horizon)

    monkeypatch.setattr("dynasched_gym.generation.stress_index.mean_reflected_workload", spy)
    _ssi(jobs=_jobs(jobs))
    assert len(seen["drift"]) == bins * 2
