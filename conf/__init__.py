"""Hydra configuration tree, installed as ``dynasched_gym.conf`` (use ``pkg://dynasched_gym.conf``)."""

from pathlib import Path

CONF_DIR = Path(__file__).resolve().parent
