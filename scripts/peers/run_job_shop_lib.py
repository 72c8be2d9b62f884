"""job-shop-lib: ``SingleJobShopGraphEnv`` on an OR-library text instance, random valid actions.

Run by the peer interpreter (protocol: ``_common.py``). The env is built as in the package's
README example (disjunctive graph, the ``IS_READY`` job feature, default reward and ready-operation
filter); each step dispatches one operation (a (job, machine) pair of ``available_operations_with_ids``).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import time
from typing import Any

from scripts.peers._common import UniformPicker, main, play


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """The measurements of job_shop_lib's dispatcher on ``args.instance`` (see ``_common``)."""
    began = time.perf_counter()
    from job_shop_lib import JobShopInstance
    from job_shop_lib.dispatching import DispatcherObserverConfig
    from job_shop_lib.dispatching.feature_observers import FeatureObserverType, FeatureType
    from job_shop_lib.graphs import build_disjunctive_graph
    from job_shop_lib.reinforcement_learning import SingleJobShopGraphEnv

    import_s = time.perf_counter() - began

    class Driver:
        def __init__(self) -> None:
            instance = JobShopInstance.from_taillard_file(args.instance)
            features = [DispatcherObserverConfig(FeatureObserverType.IS_READY,
                                                 kwargs={"feature_types": [FeatureType.JOBS]})]
            self.env = SingleJobShopGraphEnv(build_disjunctive_graph(instance), feature_observer_configs=features)
            self.pick = UniformPicker(args.seed)

        def reset(self) -> None:
            self.available = self.env.reset()[1]["available_operations_with_ids"]

        def step(self) -> tuple[bool, int, int]:
            _, machine, job = self.available[self.pick(len(self.available))]
            _, _, done, _, info = self.env.step((job, machine))
            self.available = info["available_operations_with_ids"]
            return bool(done), 1, 1

    return {"package": "job-shop-lib", "version": importlib.metadata.version("job-shop-lib"),
            "api": "job_shop_lib.reinforcement_learning.SingleJobShopGraphEnv step", "import_s": import_s,
            **play(Driver, args)}


if __name__ == "__main__":
    main(measure, __doc__)
