"""The atlas: one shipped spec per known attention variant (package data, ``*.derive.toml``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ATLAS_DIR", "ORDER", "PROPERTIES", "SOURCES", "spec_paths"]

ATLAS_DIR = Path(__file__).resolve().parent

ORDER = ("gpt2", "qwen2", "rope_bias_after", "alibi", "t5", "qk_norm", "softcap", "softmax1",
         "gpt_oss_sinks", "zero_token", "sigmoid", "key_shift")

# spec → the works it follows (keys of derive.document.references); listed under References
SOURCES = {
    "gpt2": ("radford2019",), "qwen2": ("yang2024", "su2021"), "rope_bias_after": ("su2021",),
    "alibi": ("press2022",), "t5": ("raffel2020",), "qk_norm": ("dehghani2023",), "softcap": ("gemma2-2024",),
    "softmax1": ("miller2023",), "gpt_oss_sinks": ("gpt-oss2025", "su2021"), "zero_token": ("pytorch-mha",),
    "sigmoid": ("ramapuram2025",), "key_shift": (),
}

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
