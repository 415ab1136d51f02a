"""Loading the implementation under test and calling it on numpy or torch inputs.

``FILE.py:func`` and ``package.module:func`` (``func`` may be dotted, ``Class.method``)
both work; importing runs the user's code. The callable takes a row array (numpy or
torch: detected by calling it once) and returns the weights; it may also take ``dim``
(or ``axis``), ``mask`` (boolean, True = allowed) and the normalizer's parameters as
keywords, which are then passed.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from derive.errors import InputError

__all__ = ["ImplRaised", "Target", "brief", "load", "wrap"]


class ImplRaised(Exception):
    """The implementation raised on a valid input."""

    def __init__(self, exc: BaseException, x: np.ndarray):
        super().__init__(brief(exc))
        self.exc, self.shape = exc, tuple(x.shape)
        flat = [float(v) for v in np.ravel(x)]
        shown = ", ".join(repr(v) if np.isfinite(v) else ("inf" if v > 0 else "-inf") for v in flat[:8])
        self.values = "[" + shown + (", ..." if len(flat) > 8 else "") + "]"


def brief(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    if len(first) > 160:
        first = first[:157] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _quiet():
    """The user's code may print: send it to stderr, so stdout holds only the report."""
    return contextlib.redirect_stdout(sys.stderr)


def _import(spec: str):
    if ":" not in spec:
        raise InputError(f"cannot import {spec!r}: expected MODULE_OR_FILE:FUNCTION, e.g. impl.py:softmax1")
    where, _, attr = spec.rpartition(":")
    if not where or not attr:
        raise InputError(f"cannot import {spec!r}: expected MODULE_OR_FILE:FUNCTION, e.g. impl.py:softmax1")
    try:
        if where.endswith(".py") or os.sep in where or "/" in where:
            path = Path(where)
            if not path.is_file():
                raise InputError(f"cannot import {spec!r}: no file {where}")
            name = "derive_impl_target_" + "".join(c if c.isalnum() else "_" for c in str(path.resolve()))
            mod_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[name] = module
            with _quiet():
                mod_spec.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path and "" not in sys.path:
                sys.path.insert(0, os.getcwd())
            with _quiet():
                module = importlib.import_module(where)
    except InputError:
        raise
    except ModuleNotFoundError as exc:
        raise InputError(f"cannot import {spec!r}: no module named {exc.name!r}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module failed while importing
        raise InputError(f"cannot import {spec!r}: importing it raised {brief(exc)}") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"cannot import {spec!r}: {where} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise InputError(f"cannot import {spec!r}: {attr} is not callable")
    return obj


def _keywords(fn) -> set[str] | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return {p.name for p in sig.parameters.values()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


TORCH_DTYPES = ("float64", "float32", "float16", "bfloat16")


@dataclass
class Target:
    name: str
    fn: object
    api: str = "numpy"  # numpy | torch
    keywords: set[str] | None = None
    dim_kw: str | None = None
    takes_mask: bool = False
    param_kws: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)

    def _kwargs(self, dim: int, mask, params: dict) -> dict:
        kw = dict(self.extra)
        if self.dim_kw:
            kw[self.dim_kw] = dim
        if self.takes_mask and mask is not None:
            kw["mask"] = mask
        for p in self.param_kws:
            if p in params:
                kw[p] = params[p]
        return kw

    def call(self, x: np.ndarray, dtype: str, dim: int, mask=None, params=None, grad=None):
        """Output as float64 numpy (and, with ``grad`` weights c, d⟨c, y⟩/dx)."""
        params = params or {}
        if self.api == "numpy":
            xin = x.astype(dtype)
            m = None if mask is None else mask.copy()
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings(), _quiet():
                    warnings.simplefilter("ignore")
                    y = self.fn(xin, **self._kwargs(dim, m, params))
            except Exception as exc:  # noqa: BLE001 - any error of the user's code is reported
                raise ImplRaised(exc, x) from None
            return _as_float64(y), None
        torch = _torch()
        xt = torch.tensor(x, dtype=getattr(torch, dtype))
        if grad is not None:
            xt.requires_grad_(True)
        mt = None if mask is None else torch.tensor(mask)
        try:
            with warnings.catch_warnings(), _quiet():
                warnings.simplefilter("ignore")
                y = self.fn(xt, **self._kwargs(dim, mt, params))
                g = None
                if grad is not None and isinstance(y, torch.Tensor) and y.requires_grad \
                        and tuple(y.shape) == tuple(x.shape):
                    c = torch.tensor(grad, dtype=y.dtype)
                    (g,) = torch.autograd.grad((y * c).sum(), xt, allow_unused=True)
                    g = np.zeros(x.shape) if g is None else g.detach().to(torch.float64).numpy()
        except Exception as exc:  # noqa: BLE001 - any error of the user's code is reported
            raise ImplRaised(exc, x) from None
        return _as_float64(y), g


def _as_float64(y) -> np.ndarray:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(y, torch.Tensor):
        return y.detach().to(torch.float64).cpu().numpy()
    return np.asarray(y, dtype=np.float64)


def wrap(fn, name: str, params: tuple[str, ...], dim: int, dtype: str) -> Target:
    """A :class:`Target` for ``fn``, with the calling convention and the API detected."""
    kws = _keywords(fn)
    target = Target(name=name, fn=fn, keywords=kws)
    if kws is not None:
        target.dim_kw = "dim" if "dim" in kws else ("axis" if "axis" in kws else None)
        target.takes_mask = "mask" in kws
        target.param_kws = tuple(p for p in params if p in kws)
    shape = [1] * (dim + 1 if dim >= 0 else -dim)
    shape[dim] = 2
    probe = np.reshape(np.array([0.0, 1.0]), shape)
    mask = np.ones(shape, dtype=bool) if target.takes_mask else None
    probe_params = {p: 0.0 for p in target.param_kws}
    attempts = [("numpy", None)] + ([("torch", None)] if _torch() is not None else [])
    if kws is None:  # a builtin: try passing dim first, then nothing
        attempts = [(api, kw) for api, _ in attempts for kw in ("dim", None)]
    first_error = None
    for api, dim_kw in attempts:
        target.api = api
        if kws is None:
            target.dim_kw = dim_kw
        probe_dtype = dtype if (api == "torch" or dtype != "bfloat16") else "float32"
        try:
            raw = _raw_call(target, probe, probe_dtype, dim, mask, probe_params)
        except ImplRaised as exc:
            first_error = first_error or exc
            continue
        torch = sys.modules.get("torch")
        if api == "numpy" and torch is not None and isinstance(raw, torch.Tensor):
            target.api = "torch"
        return target
    raise InputError(f"{name} raised {first_error} on the input [0.0, 1.0]")


def _raw_call(target: Target, x, dtype, dim, mask, params):
    if target.api == "numpy":
        args = x.astype(dtype)
    else:
        torch = _torch()
        args = torch.tensor(x, dtype=getattr(torch, dtype))
        mask = None if mask is None else torch.tensor(mask)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings(), _quiet():
            warnings.simplefilter("ignore")
            return target.fn(args, **target._kwargs(dim, mask, params))
    except Exception as exc:  # noqa: BLE001 - any error of the user's code is reported
        raise ImplRaised(exc, x) from None


def load(spec: str, params: tuple[str, ...], dim: int, dtype: str) -> Target:
    return wrap(_import(spec), spec, params, dim, dtype)
