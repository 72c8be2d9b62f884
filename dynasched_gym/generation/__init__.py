"""Calibrated instance generation: scenarios, the generator, realised metrics, SSI, SESC, tiers."""

from dynasched_gym.generation.generator import GENERATOR_VERSION, Draft, draft, generate
from dynasched_gym.generation.realised import METRIC_NAMES, realised_metrics
from dynasched_gym.generation.scenario import BottleneckWindow, Scenario, Targets, Tolerances, size_presets
from dynasched_gym.generation.sesc import CalibrationResult, calibrate
from dynasched_gym.generation.stress_index import SSI_VERSION, TIER_BANDS, TIERS, SSIResult, ssi, tier_of
from dynasched_gym.generation.tiers import MAX_SEEDS, TierPool, tier_pool

__all__ = [
    "GENERATOR_VERSION",
    "MAX_SEEDS",
    "METRIC_NAMES",
    "SSI_VERSION",
    "TIERS",
    "TIER_BANDS",
    "BottleneckWindow",
    "CalibrationResult",
    "Draft",
    "SSIResult",
    "Scenario",
    "Targets",
    "TierPool",
    "Tolerances",
    "calibrate",
    "draft",
    "generate",
    "realised_metrics",
    "size_presets",
    "ssi",
    "tier_of",
    "tier_pool",
]
