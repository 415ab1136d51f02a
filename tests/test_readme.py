"""The README's example spec says what it shows: run it and compare with the text around it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_readme_example_gives_the_verdicts_and_exit_code_it_states(tmp_path):
    spec = re.search(r"```toml\n(name = \"QKV bias with RoPE\".*?)```", README, re.DOTALL).group(1)
    path = tmp_path / "variant.toml"
    path.write_text(spec, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "derive", "check", str(path), "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT, check=False)
    assert "Here it exits 1" in README
    assert proc.returncode == 1, proc.stderr
    import json

    claims = {c["name"]: c for c in json.loads(proc.stdout)["specs"][0]["claims"]}
    assert claims["k_bias_still_redundant_with_rope"]["verdict"] == "refuted"
    assert claims["q_bias_matters"]["verdict"] == "proved"
    assert "(0.5, 0.5) to (0.419444…, 0.580556…)" in README
    assert "0.419444" in proc.stdout
