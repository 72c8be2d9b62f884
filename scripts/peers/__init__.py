"""Runners timing the peer environments and ours on one instance, each in its own interpreter (``_common``
has the protocol; ``scripts/bench.py`` drives them)."""
