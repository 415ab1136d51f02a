"""The atlas: one shipped spec per known attention variant (package data, ``*.derive.toml``), listed
in order with its sources in ``atlas.toml``."""

from __future__ import annotations

import tomllib
from pathlib import Path

__all__ = ["ATLAS_DIR", "ORDER", "PROPERTIES", "SOURCES", "spec_paths"]

ATLAS_DIR = Path(__file__).resolve().parent

_INDEX = tomllib.loads((ATLAS_DIR / "atlas.toml").read_text(encoding="utf-8"))["variant"]
ORDER = tuple(v["spec"] for v in _INDEX)  # as docs/atlas.md lists them
# spec → the works it follows (keys of derive.references); listed under References
SOURCES = {v["spec"]: tuple(v.get("sources", ())) for v in _INDEX}

# column title → claim name used by every atlas spec that has the property
PROPERTIES = {
    "K-bias redundant": "k_bias_redundant",
    "Q-bias matters": "q_bias_matters",
    "V-bias = output shift": "v_bias_shifts_output",
    "shift-invariant": "shift_invariant",
    "can abstain": "can_abstain",
    "weights sum to one": "weights_sum_to_one",
}


def spec_paths() -> list[Path]:
    return [ATLAS_DIR / f"{name}.derive.toml" for name in ORDER]
