"""The Schedule Stress Index (SSI): difficulty from an instance, without simulating it.

The SSI is a queueing estimate of the quantity that empirical difficulty measures — weighted
tardiness relative to weighted work (:mod:`dynasched_gym.generation.difficulty`) — mapped onto
0..100. Formula and rationale: docs/ssi.md. In short, per machine group g (H: the last release time):

1. Effective work W_g: static work routed to g (each operation's work split evenly over its
   eligible machines) plus the work the event stream adds or removes (processing-time changes,
   rework, route changes, cancellations); capacity rate c_g = S_g * A_g (group speed times
   observed availability A_g = 1 - speed-weighted downtime share in [0, H], at least 0.05);
   load rho_g = W_g / (H * c_g).
2. Load over time: [0, H] is cut into K = min(max(J // 8, 1), 32) equal bins (J jobs: about 8
   arrivals per bin), each job in the bin of its release; the fluid backlog
   B_k = max(0, B_(k-1) + work arriving in bin k - c_g H / K) follows the binned arrival rate.
3. Variability around it: per bin, a reflected Brownian motion started empty with drift
   mu_k = arriving work rate_k - c_g and variance rate sigma^2 = (N_g / H) (c_a^2 + c_e^2) (W_g / N_g)^2
   (N_g operations at g; c_a^2 = p_g * realised arrival_scv + (1 - p_g), thinned by the share
   p_g = min(N_g / J, 1); c_e^2 = c_s,g^2 + 2 A_g (1 - A_g) MTTR / t_g, with c_s,g^2 the SCV of
   the work of g's operations, MTTR the mean downtime length and t_g the mean operation time at g).
   Its expected value E[Z(t)] = mu t Phi(a) + sigma sqrt(t) phi(a) + sigma^2 / (2 mu) (2 Phi(a) - 1),
   a = mu sqrt(t) / sigma, averaged over [0, H], less the part already in the fluid backlog
   (max(mu_k, 0) H / 2), is the diffusion term (finite for any load: no clamping, no saturation).
4. Wait at g in bin k = (mean fluid backlog over the bin + diffusion term) / c_g, scaled by
   rho_k^(sqrt(2(m+1)) - 2) for the pooling of m parallel machines (Sakasegawa), with rho_k the
   bin's arriving work over its capacity, capped at 1.
5. Job flow time F_j = sum over operations of (t_o / A_g + wait_g in the job's arrival bin), with
   variance sum (t_o / A_g)^2 * realised processing_scv + sum wait_g^2, taken as log-normal;
   expected tardiness E[(F_j - s_j)+] (s_j = due in force - release), weighted by the weight in
   force after priority changes: stress = sum_j w_j E[T_j] (jobs with a due date) / sum_j w_j P_j
   (all jobs; P_j the expected processing time).
6. score = 100 * sqrt(stress) / (sqrt(stress) + sqrt(STRESS_HALF)): 50 when the expected weighted
   tardiness is STRESS_HALF times the weighted work; each tier spans a factor 9 of stress.

Tiers are score bands: easy [0, 25), medium [25, 50), hard [50, 75), extreme [75, 100].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dynasched_gym.checks import is_real
from dynasched_gym.generation import libm
from dynasched_gym.generation.realised import (
    MetricInputs,
    column_sums,
    group_columns,
    horizon,
    instance_inputs,
    measure,
)
from dynasched_gym.instance import EventType, FrozenDict, Instance, check_instance

TIERS = ("easy", "medium", "hard", "extreme")
#: SSI score bands [low, high): extreme's bound includes 100 and the score formula's float rounding past it
#: (100.00000000000001 at the loaders' magnitude bound).
TIER_BANDS = {"easy": (0.0, 25.0), "medium": (25.0, 50.0), "hard": (50.0, 75.0), "extreme": (75.0, 100.0 + 1e-9)}
SSI_VERSION = "4"
STRESS_HALF = 0.3


@dataclass(frozen=True)
class SSIResult:
    """SSI ``score`` (0..100), its ``tier`` and the ``components`` that drive it.

    Components are on comparable scales, in 0..1 except ``bottleneck_utilization``, the largest
    effective group load rho_g, unclamped: above 1 when a group gets more work than it can do by
    the horizon (docs/ssi.md, "Components").
    """

    score: float
    tier: str
    stress: float  # estimated weighted tardiness / weighted work
    components: dict[str, float]  # read-only: ssi() memoises the result on the instance

    def __post_init__(self) -> None:
        object.__setattr__(self, "components", FrozenDict(self.components))


def tier_of(score: float) -> str:
    """The tier whose band holds ``score``."""
    if not is_real(score):  # "50" failed comparing str with float, True was a score of 1
        raise TypeError(f"score must be a number (an SSI score, 0..100), got {score!r}")
    for name, (lo, hi) in TIER_BANDS.items():
        if lo <= score < hi:
            return name
    raise ValueError(f"SSI score {score} outside 0..100")


def score_stress(score: float | np.ndarray) -> float | np.ndarray:
    """The stress a score stands for: the inverse of score = 100 sqrt(stress) / (sqrt(stress) + sqrt(STRESS_HALF))
    (infinite at 100)."""
    score = np.asarray(score, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return STRESS_HALF * (score / (100.0 - score)) ** 2


def _squash(x: float) -> float:
    return float(x / (1.0 + x)) if x > 0 else 0.0


def _norm_cdf(x: np.ndarray) -> np.ndarray:
    """Standard normal CDF (Abramowitz & Stegun 7.1.26 erf, |error| < 1.5e-7)."""
    z = np.abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * z)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = 1.0 - poly * libm.exp(-z * z)
    return 0.5 * (1.0 + np.sign(x) * erf)


def _norm_pdf(x: np.ndarray) -> np.ndarray:
    return libm.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def mean_reflected_workload(drift: np.ndarray, variance: np.ndarray, horizon: float, points: int = 64) -> np.ndarray:
    """Time average over [0, horizon] of E[Z(t)] for reflected Brownian motions started at 0."""
    t = (np.arange(points) + 0.5) / points * horizon
    mu = drift[:, None]
    sigma = np.sqrt(np.maximum(variance, 1e-18))[:, None]
    mu = np.where(np.abs(mu) < 1e-12, 1e-12, mu)
    a = mu * np.sqrt(t) / sigma
    value = mu * t * _norm_cdf(a) + sigma * np.sqrt(t) * _norm_pdf(a) + sigma**2 / (2 * mu) * (2 * _norm_cdf(a) - 1)
    return np.maximum(value, 0.0).mean(axis=1)


def ssi(instance: Instance) -> SSIResult:
    """The Schedule Stress Index of ``instance`` (module docstring; docs/ssi.md); memoised on the instance."""
    cached = check_instance("instance", instance)._cache.get("ssi")
    if cached is None:
        cached = instance._cache["ssi"] = _ssi(instance)
    return cached


def _ssi(instance: Instance) -> SSIResult:
    inputs = instance_inputs(instance)
    realised = measure(inputs)
    h = horizon(inputs)
    num_groups = int(inputs.machine_group.max()) + 1
    speed = inputs.machine_speed
    group_speed = np.bincount(inputs.machine_group, weights=speed, minlength=num_groups)
    group_size = np.bincount(inputs.machine_group, minlength=num_groups).astype(np.float64)
    op_group_share = group_columns(inputs.op_machine_share, inputs.machine_group, num_groups)  # (O, G)

    lost = np.zeros(num_groups)
    repairs = []
    for m, start, end in zip(inputs.down_machine, inputs.down_start, inputs.down_end):
        lost[inputs.machine_group[m]] += speed[m] * max(0.0, min(end, h) - max(start, 0.0))
        repairs.append(end - start)
    availability = np.clip(1.0 - lost / (h * group_speed), 0.05, 1.0)
    mttr = float(np.mean(repairs)) if repairs else 0.0

    work_delta, weight, due, dynamic_events = _stream_effects(instance, inputs)
    # Weights are relative (stress and congestion are ratios of weighted sums): the sums take them scaled by the
    # power of two that brings the largest into [1, 2), which changes no digit, so that they stay finite (weights
    # of 1e305 made the score NaN) and the floors below negligible (weights of 1e-300 scored about 0).
    shift = math.frexp(float(weight.max()))[1] - 1
    relative = np.ldexp(weight, -shift)
    # congestion's floor, which lets weights that are all 0 average, scales with weights below 1 so as to stay
    # negligible beside them (with weights from 1 up, the sums are those of the weights as given, to the last digit)
    congestion_weight = np.ldexp(weight + math.ldexp(1e-12, min(shift, 0)), -shift)
    op_group_work = (inputs.op_work + work_delta)[:, None] * op_group_share  # (O, G)
    group_work = np.maximum(op_group_work.sum(axis=0), 1e-12)
    group_ops = np.maximum(op_group_share.sum(axis=0), 1e-12)
    rate = group_speed * availability
    rho = group_work / (h * rate)
    group_time = column_sums(inputs.op_time, op_group_share) / group_ops
    mean_work = column_sums(inputs.op_work, op_group_share) / group_ops
    c_s2 = column_sums(inputs.op_work**2, op_group_share) / group_ops / np.maximum(mean_work, 1e-12) ** 2 - 1.0
    c_e2 = np.maximum(c_s2, 0.0) + 2 * availability * (1 - availability) * mttr / np.maximum(group_time, 1e-12)
    num_jobs = len(inputs.release)
    visit = np.minimum(group_ops / num_jobs, 1.0)  # thinning pulls the arrival SCV towards 1
    c_a2 = visit * realised["arrival_scv"] + (1.0 - visit)
    variance = group_ops / h * (c_a2 + c_e2) * (group_work / group_ops) ** 2

    # Load over time: jobs fall into bins of ~8 arrivals; the fluid backlog follows the binned
    # arrival rate, the diffusion term adds the variability around it.
    ptr = inputs.job_op_ptr[:-1]
    bins = int(np.clip(num_jobs // 8, 1, 32))
    job_bin = np.minimum((inputs.release / h * bins).astype(np.int64), bins - 1)
    job_group_work = np.add.reduceat(op_group_work, ptr, axis=0)  # (J, G)
    arriving = np.zeros((bins, num_groups))
    np.add.at(arriving, job_bin, job_group_work)
    capacity = rate * h / bins
    backlog = np.zeros((bins + 1, num_groups))
    for k in range(bins):
        backlog[k + 1] = np.maximum(0.0, backlog[k] + arriving[k] - capacity)
    bin_drift = arriving / (h / bins) - rate  # (bins, G)
    diffusion = mean_reflected_workload(bin_drift.ravel(), np.tile(variance, bins), h).reshape(bins, num_groups)
    diffusion = np.maximum(diffusion - np.maximum(bin_drift, 0.0) * h / 2, 0.0)
    bin_rho = np.minimum(arriving / capacity, 1.0)
    pooling = libm.power(np.maximum(bin_rho, 1e-6), np.sqrt(2 * (group_size + 1)) - 2)
    wait = (0.5 * (backlog[:-1] + backlog[1:]) + diffusion) / rate * pooling  # (bins, G)

    op_time = inputs.op_time * (op_group_share / availability).sum(axis=1)
    op_job = np.repeat(np.arange(num_jobs), np.diff(inputs.job_op_ptr))
    op_wait = (op_group_share * wait[job_bin[op_job]]).sum(axis=1)
    flow = np.add.reduceat(op_time + op_wait, ptr)
    flow_var = np.add.reduceat(op_time**2 * realised["processing_scv"] + op_wait**2, ptr)
    ptime = np.add.reduceat(inputs.op_time, ptr)
    has_due = ~np.isnan(due)
    tardiness = _lognormal_excess(flow[has_due], flow_var[has_due], (due - inputs.release)[has_due])
    stress = float((relative[has_due] * tardiness).sum() / max((relative * ptime).sum(), 1e-12))
    score = 100.0 * math.sqrt(stress) / (math.sqrt(stress) + math.sqrt(STRESS_HALF))

    components = {
        "congestion": _squash(float(np.average(flow / ptime - 1.0, weights=congestion_weight))),
        "bottleneck_utilization": float(rho.max()),
        "due_date_pressure": 1.0 / (1.0 + max(realised["due_date_tightness"], 0.0)) if has_due.any() else 0.0,
        "disturbance": realised["disturbance"],
        "dynamism": _squash(dynamic_events / num_jobs),
        "flexibility": float(np.mean(np.diff(instance.op_elig_ptr)) / instance.num_machines),
        "size": min(1.0, math.log10(max(num_jobs, 1)) / 4.0),
    }
    return SSIResult(score=score, tier=tier_of(score), stress=stress, components=components)


def _lognormal_excess(mean: np.ndarray, var: np.ndarray, slack: np.ndarray) -> np.ndarray:
    """E[(F - s)+] for log-normal F with the given mean and variance (Black-Scholes form); E[F] - s exactly where
    s <= 0 (a due date at or before the release), as F > 0."""
    sigma2 = libm.log1p(var / np.maximum(mean, 1e-12) ** 2)
    sigma = np.sqrt(np.maximum(sigma2, 1e-12))
    s = np.maximum(slack, 1e-12)
    d1 = (libm.log(mean / s) + sigma2 / 2) / sigma
    # the expectation of a non-negative variable; the difference of two nearly equal terms can
    # round to slightly below 0 (-7e-17 for a job that cannot be late) when the excess is ~0
    excess = np.maximum(mean * _norm_cdf(d1) - s * _norm_cdf(d1 - sigma), 0.0)
    # the floor of s alone lost how far before its release a job is due (due -1000 scored as due = release)
    return np.where(slack > 0, excess, mean - slack)


def _stream_effects(instance: Instance, inputs: MetricInputs) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Per-op work change, final weights and due dates implied by the event stream; disruptive count."""
    delta = np.zeros_like(inputs.op_work)
    weight = instance.job_weight.copy()
    due = instance.job_due.copy()
    ptr = inputs.job_op_ptr
    changed: dict[int, float] = {}  # op -> its work after the processing-time changes so far
    disruptive = 0
    for e in instance.events:
        if e.job is None:
            continue
        first, last = ptr[e.job], ptr[e.job + 1]
        if e.type == EventType.PRIORITY_CHANGE:
            weight[e.job] = e.weight
        elif e.type == EventType.DUE_DATE_CHANGE:
            due[e.job] = e.due
        elif e.type == EventType.PTIME_CHANGE and e.op < last - first:
            o = first + e.op
            old = changed.get(o, inputs.op_work[o])  # factors compound and a value resets them, as in the simulator
            changed[o] = new = old * e.factor if e.factor is not None else e.value
            delta[o] += new - old
            disruptive += 1
        elif e.type == EventType.REWORK and e.op < last - first:
            delta[first + e.op] += inputs.op_work[first + e.op]
            disruptive += 1
        elif e.type == EventType.ROUTE_CHANGE:
            new = sum(float(np.mean([t * instance.machine_speed[m] for m, t in op.items()])) for op in e.ops)
            old = float(inputs.op_work[first:last].sum())
            delta[first:last] += (new - old) / 2 * inputs.op_work[first:last] / max(old, 1e-12)
            disruptive += 1
        elif e.type == EventType.CANCELLATION:
            delta[first:last] -= 0.5 * inputs.op_work[first:last]
            disruptive += 1
    return delta, weight, due, disruptive
