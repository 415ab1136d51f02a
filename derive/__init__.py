"""derive: machine-checked derivations of attention-mechanism properties."""

__version__ = "0.1.0"
