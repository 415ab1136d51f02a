"""Row normalizers as data: one registry entry per normalizer (see :mod:`.registry`)."""

from derive.normalizers.registry import REGISTRY, Normalizer, get

__all__ = ["REGISTRY", "Normalizer", "get"]
