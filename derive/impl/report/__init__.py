"""Reports: what a check found, as Markdown and JSON (deterministic: no timings)."""
