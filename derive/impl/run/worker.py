"""The sandbox service of ``derive impl``: it imports and calls the implementation under test.

It runs in the child of :mod:`derive.sandbox` (``derive/sandbox/child.py worker.py RFD WFD``,
loaded by its path): it imports neither derive nor SymPy, only numpy (and torch when the
implementation needs it). It speaks a private pipe (requests pickled by the parent, replies
as JSON and the arrays' bytes, :func:`derive.sandbox.child.encode`, which the parent decodes without
pickle, so no reply can run code there), never its standard output: file descriptor 1 is a
file the parent inspects, and ``print`` goes to standard error. Every request gets one reply
from :func:`handle`:

* ``("load", spec_or_pickle, sys_path, params, dim)`` → ``("ok", None)`` or
  ``("error", message)``;
* ``("probe", dim, dtype)`` (one call on [0, 1]) → ``("ok", info)`` or ``("error", message)``;
* ``("call", x, dtype, dim, mask, params, cotangent)`` → ``("ok", y, g, notes)``,
  ``("raised", text)`` or ``("bad", message)`` (not an array of the right shape);
* ``("kprobe", form, heads)`` (one kernel-form call on a tiny input, numpy then torch) → ``("ok", info)``
  or ``("error", message)`` (which fixed list applies is never the child's word: the parent
  decides it from what it launched, :func:`derive.impl.run.triton_env.interpreted`);
* ``("kcall", form, x, v, third, params, dtype, vkey)`` (``third`` the tile size, the number of splits
  or ``dout``; ``vkey`` None or (name, shape): ``v`` is kept under the name for the next calls, and ``v``
  None then means the values last sent under that name, in that shape (the same values in another layout)) → ``("ok", names, *arrays)`` (``out`` and ``lse``, or ``dx``, ``dv`` and one array per
  parameter gradient ``d<name>``; the name ``mutated``, with an empty array, when the function
  changed one of its input arrays), ``("raised", text)`` or ``("bad", message)``;
* ``("aprobe",)`` and ``("acall", ...)``: the attention form, answered by
  ``attention_child.py`` beside this file (loaded by its path, handed this module's helpers);
* a ``SystemExit`` raised by the user's code → ``("exit", code)``, then the worker ends.

Anything else (``os._exit``, a signal, a hang) is seen by the parent from outside.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import pickle
import sys
import warnings

import numpy as np

try:
    import derive_sandbox_child as sandbox  # installed by the sandbox's runner, in the child
except ImportError:  # imported in derive's own process (documentation, tools)
    from derive.sandbox import child as sandbox

brief = sandbox.brief

DTYPES = ("float64", "float32", "float16", "bfloat16")


class Raised(Exception):
    pass


def _torch():
    if "torch" in sys.modules:
        return sys.modules["torch"]
    try:
        import torch
    except ImportError:
        return None
    return torch


def _import(spec):
    if isinstance(spec, bytes):
        try:
            return pickle.loads(spec), None
        except Exception as exc:  # noqa: BLE001 - the user's module failed while importing
            return None, f"cannot import the function in the worker process: {brief(exc)}"
    where, _, attr = spec.rpartition(":")
    factory = attr.endswith("()")  # FILE:make(): the callable make() returns (a bound method, an nn.Module)
    attr = attr[:-2] if factory else attr
    try:
        if where.endswith(".py") or os.sep in where or "/" in where:
            path = os.path.abspath(where)
            if not os.path.isfile(path):
                return None, f"cannot import {spec!r}: no file {where}"
            name = "derive_impl_target_" + "".join(c if c.isalnum() else "_" for c in path)
            mod_spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[name] = module
            mod_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(where)
    except ModuleNotFoundError as exc:
        return None, f"cannot import {spec!r}: no module named {exc.name!r}{sandbox.install_hint(exc.name)}"
    except Exception as exc:  # noqa: BLE001 - the user's module failed while importing
        return None, f"cannot import {spec!r}: importing it raised {brief(exc)}"
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            return None, f"cannot import {spec!r}: {where} has no attribute {attr!r}"
        obj = getattr(obj, part)
    if not callable(obj):
        return None, f"cannot import {spec!r}: {attr} is not callable"
    if factory:
        try:
            obj = obj()
        except Exception as exc:  # noqa: BLE001 - the user's factory failed
            return None, f"cannot build {spec!r}: calling {attr}() raised {brief(exc)}"
        if not callable(obj):
            return None, f"cannot build {spec!r}: {attr}() returned {type(obj).__name__}, which is not callable"
    return obj, None


def _keywords(fn):
    """The keywords ``fn`` takes by name, or None when its signature is unknown; ``**kwargs``
    shows as the name ``**``: it takes any keyword."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return {p.name for p in sig.parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)} | (
        {"**"} if any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values()) else set())


class Target:
    def __init__(self, fn, params, dim):
        self.fn = fn
        self.api = "numpy"
        kws = _keywords(fn)
        self.keywords = kws
        self.dim_kw = None
        self.takes_mask = False
        self.param_kws = ()
        if kws is not None:
            self.dim_kw = "dim" if "dim" in kws else ("axis" if "axis" in kws else None)
            self.takes_mask = "mask" in kws
            self.param_kws = tuple(p for p in params if p in kws or "**" in kws)

    def info(self) -> dict:
        return {"api": self.api, "keywords": None if self.keywords is None else sorted(self.keywords),
                "dim_kw": self.dim_kw, "takes_mask": self.takes_mask, "param_kws": list(self.param_kws)}

    def kwargs(self, dim, mask, params) -> dict:
        kw = {}
        if self.dim_kw:
            kw[self.dim_kw] = dim
        if self.takes_mask and mask is not None:
            kw["mask"] = mask
        for p in self.param_kws:
            if p in params:
                kw[p] = params[p]
        return kw

    def raw(self, x, dtype, dim, mask, params, cot=None):
        """(returned object, input as passed, copy of the input, gradient or None)."""
        if self.api == "numpy":
            xin = x.astype(dtype)
            m = None if mask is None else mask.copy()
            before = xin.copy()
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    y = self.fn(xin, **self.kwargs(dim, m, params))
                except Exception as exc:  # noqa: BLE001 - reported as the implementation raising
                    raise Raised(brief(exc)) from None
            return y, xin, before, None
        torch = _torch()
        xt = torch.tensor(x, dtype=getattr(torch, dtype))
        before = xt.detach().clone()
        if cot is not None:
            xt.requires_grad_(True)
        mt = None if mask is None else torch.tensor(mask)
        g = None
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                y = self.fn(xt, **self.kwargs(dim, mt, params))
                if cot is not None and isinstance(y, torch.Tensor) and y.requires_grad \
                        and tuple(y.shape) == tuple(x.shape) and not y.is_complex():
                    c = torch.tensor(cot, dtype=y.dtype)
                    (g,) = torch.autograd.grad((y * c).sum(), xt, allow_unused=True)
                    g = np.zeros(x.shape) if g is None else g.detach().to(torch.float64).numpy()
            except Exception as exc:  # noqa: BLE001 - reported as the implementation raising
                raise Raised(brief(exc)) from None
        return y, xt.detach(), before, g


def _kind(y) -> str:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(y, torch.Tensor):
        return f"a torch tensor of dtype {str(y.dtype).replace('torch.', '')}"
    if isinstance(y, np.ndarray):
        return f"a numpy array of dtype {y.dtype}"
    return f"a value of type {type(y).__module__}.{type(y).__qualname__}".replace("builtins.", "")


def _as_array(y):
    """(float64 array or None, complex?, message when not an array of numbers)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(y, torch.Tensor):
        y = y.detach().cpu()
        if y.is_complex():
            return y.to(torch.complex128).numpy(), True, None
        if y.dtype == torch.bool:
            return None, False, f"returned {_kind(y)}, not floating-point weights"
        return y.to(torch.float64).numpy(), False, None
    if isinstance(y, np.ndarray):
        if np.iscomplexobj(y):
            return y.astype(np.complex128), True, None
        if y.dtype.kind not in "fiu":
            return None, False, f"returned {_kind(y)}, not floating-point weights"
        return y.astype(np.float64), False, None
    return None, False, f"returned {_kind(y)}, not an array (numpy array or torch tensor)"


def _same(a, b) -> bool:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(a, torch.Tensor):
        a, b = a.detach().to(torch.float64).cpu().numpy(), b.to(torch.float64).cpu().numpy()
    a, b = np.asarray(a), np.asarray(b)
    # equal entry by entry is the common answer, found in one pass; NaN = NaN only when it is not
    return bool(np.array_equal(a, b) or np.array_equal(a, b, equal_nan=True))


def call(target: Target, x, dtype, dim, mask, params, cot):
    y, xin, before, g = target.raw(x, dtype, dim, mask, params, cot)
    arr, cplx, bad = _as_array(y)
    if bad is not None:
        return ("bad", bad)
    if tuple(arr.shape) != tuple(x.shape):
        return ("bad", f"returned an array of shape {list(arr.shape)} for an input of shape {list(x.shape)}: "
                       f"the weights must have the shape of the scores")
    notes = {"complex": cplx, "mutated": not _same(xin, before)}
    return ("ok", arr, g, notes)


def load(spec, sys_path, params, dim):
    sys.path[:] = list(sys_path)
    fn, error = _import(spec)
    if error:
        return ("error", error), None
    return ("ok", None), Target(fn, params, dim)


def probe(target: Target, dim, dtype):
    """Detect the API (numpy, else torch) and, for a builtin, whether it takes dim=."""
    shape = [1] * (dim + 1 if dim >= 0 else -dim)
    shape[dim] = 2
    row = np.reshape(np.array([0.0, 1.0]), shape)
    mask = np.ones(shape, dtype=bool) if target.takes_mask else None
    probe_params = {p: 0.0 for p in target.param_kws}
    has_torch = "torch" in sys.modules or importlib.util.find_spec("torch") is not None  # not imported yet
    attempts = ["numpy"] + (["torch"] if has_torch else [])
    dims = (None,) if target.keywords is not None else ("dim", None)  # a builtin: try dim=, then none
    first = None
    for api in attempts:
        for dim_kw in dims:
            target.api = api
            if target.keywords is None:
                target.dim_kw = dim_kw
            probe_dtype = dtype if (api == "torch" or dtype != "bfloat16") else "float32"
            try:
                y, _, _, _ = target.raw(row, probe_dtype, dim, mask, probe_params)
            except Raised as exc:
                first = first or str(exc)
                continue
            torch = sys.modules.get("torch")
            if api == "numpy" and torch is not None and isinstance(y, torch.Tensor):
                target.api = "torch"
            return ("ok", target.info())
    return ("error", f"raised {first} on the input [0.0, 1.0]")


def _tensor(a, dtype):
    if a is None:
        return None
    torch = _torch()
    return torch.tensor(np.asarray(a, dtype=np.float64), dtype=getattr(torch, dtype))


def kraw(target: Target, form, x, v, third, params, dtype):
    """Call a kernel-form function: fn(x, v, block | splits | dout, **params); returns
    (what it returned, whether it changed one of its input arrays in place)."""
    kw = {p: params[p] for p in target.param_kws if p in params}
    for p, val in kw.items():  # a parameter per head: an array of the call's dtype
        if isinstance(val, np.ndarray):
            kw[p] = val.astype(dtype) if target.api == "numpy" else _tensor(val, dtype)
    if target.api == "numpy":
        args = [x.astype(dtype), v.astype(dtype)]
        args.append(third.astype(dtype) if isinstance(third, np.ndarray) else int(third))
    else:
        args = [_tensor(x, dtype), _tensor(v, dtype)]
        args.append(_tensor(third, dtype) if isinstance(third, np.ndarray) else int(third))
    before = [a.clone() if hasattr(a, "clone") else (a.copy() if isinstance(a, np.ndarray) else a) for a in args]
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            y = target.fn(*args, **kw)
        except Exception as exc:  # noqa: BLE001 - reported as the implementation raising
            raise Raised(brief(exc)) from None
    mutated = any(not isinstance(a, int) and not _same(a, b) for a, b in zip(args, before))
    return y, mutated


def _scalar_or_array(y, what):
    """A returned array (or Python number) as float64 numpy, or a message saying what it is."""
    if isinstance(y, (int, float, np.number)) and not isinstance(y, (bool, np.bool_)):  # np.float32 too
        if isinstance(y, np.complexfloating):
            return None, f"returned a complex {what}"
        return np.asarray(float(y)), None
    arr, cplx, bad = _as_array(y)
    if bad is not None:
        return None, bad.replace("returned", f"returned as {what}").replace("weights", "values")
    if cplx:
        return None, f"returned a complex {what}"
    return arr, None


ROWS_CONTRACT = (" (the kernel forms pass every row of a length in one call, scores (..., n) with leading "
                  "batch and head dimensions: a function written for one row of shape (n,) must loop over "
                  "the leading dimensions)")


HELD = 4  # value arrays kept by key (derive.impl.run.target.HELD: the parent drops the same oldest one)
_HELD: dict = {}


def kcall(target: Target, form, x, v, third, params, dtype, vkey=None):
    if vkey is not None:  # (name, shape): the values kept under the name, passed in this shape
        name, shape = vkey
        if v is None:
            v = _HELD[name].reshape(shape)
        else:
            _HELD[name] = v
            while len(_HELD) > HELD:
                del _HELD[next(iter(_HELD))]
    y, mutated = kraw(target, form, x, v, third, params, dtype)
    lead = tuple(x.shape[:-1])
    dv = v.shape[-1]
    if form in ("online", "split"):
        parts = tuple(y) if isinstance(y, (tuple, list)) else (y,)
        if len(parts) not in (1, 2):
            return ("bad", f"returned {len(parts)} values; expected out or (out, lse)")
        names = ["out", "lse"][:len(parts)]
        shapes = [lead + (dv,), lead]
    else:
        parts = tuple(y) if isinstance(y, (tuple, list)) else (y,)
        if len(parts) not in (2, 3):
            return ("bad", f"returned {len(parts)} values; expected (dx, dv) or (dx, dv, dparams)")
        names, shapes = ["dx", "dv"], [tuple(x.shape), tuple(v.shape)]
        if len(parts) == 3:
            dparams = parts[2]
            if not isinstance(dparams, dict) or not all(isinstance(k, str) for k in dparams):
                return ("bad", "returned a third value that is not a dict of parameter gradients "
                               "(e.g. {\"s\": ds})")
            parts = parts[:2] + tuple(dparams[k] for k in sorted(dparams))
            for k in sorted(dparams):
                names.append("d" + k)
                shapes.append(None)
    arrays = []
    for name, part, shape in zip(names, parts, shapes):
        arr, bad = _scalar_or_array(part, name)
        if bad is not None:
            return ("bad", bad)
        if shape is not None and tuple(arr.shape) != shape:
            return ("bad", f"returned {name} of shape {list(arr.shape)}; expected {list(shape)} "
                           f"for scores of shape {list(x.shape)} and values of shape {list(v.shape)}"
                           + (ROWS_CONTRACT if x.ndim > 1 else ""))
        arrays.append(arr)
    return ("ok", names + (["mutated"] if mutated else []), *arrays, *([np.zeros(0)] if mutated else []))


def kprobe(target: Target, form, heads: int = 0):
    """Detect the API (numpy, else torch) from one call on a tiny input: one row, or with
    ``heads`` (per-head parameters) one row per head, (1, H, 2), each parameter an array (H,)."""
    x = np.array([[0.0, 1.0]])
    v = np.array([[[1.0], [2.0]]])
    if heads:
        x, v = np.repeat(x[None], heads, axis=1), np.repeat(v[None], heads, axis=1)
    third = np.ones(x.shape[:-1] + (1,)) if form == "backward" else 1
    params = {p: np.zeros(heads) if heads else 0.0 for p in target.param_kws}
    has_torch = "torch" in sys.modules or importlib.util.find_spec("torch") is not None
    first = None
    for api in ["numpy"] + (["torch"] if has_torch else []):
        target.api = api
        try:
            y, _ = kraw(target, form, x, v, third, params, "float64")
        except Raised as exc:
            first = first or str(exc)
            continue
        torch = sys.modules.get("torch")
        first_part = y[0] if isinstance(y, (tuple, list)) and y else y
        if api == "numpy" and torch is not None and isinstance(first_part, torch.Tensor):
            target.api = "torch"
        return ("ok", target.info())
    return ("error", f"raised {first} on scores {x.tolist()}, values {v.tolist()}")


_STATE: dict = {"target": None}  # the loaded target, between requests


_ATTENTION = []


def _attention():
    """The attention form's child half, loaded once by its path (this script imports no package)."""
    if not _ATTENTION:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "attention_child.py")
        spec = importlib.util.spec_from_file_location("derive_impl_attention_child", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        mod.bind({"brief": brief, "Raised": Raised, "_torch": _torch, "_as_array": _as_array, "_same": _same})
        _ATTENTION.append(mod)
    return _ATTENTION[0]


def handle(msg: tuple):
    """One request → its reply; None (an unknown request) ends the child."""
    kind, args, target = msg[0], msg[1:], _STATE["target"]
    try:
        if kind == "load":  # a new target: nothing of the last one's is kept
            _HELD.clear()
            reply, _STATE["target"] = load(*args)
            return reply
        if kind == "probe":
            return probe(target, *args)
        if kind == "call":
            return call(target, *args)
        if kind == "kprobe":
            return kprobe(target, *args)
        if kind == "kcall":
            return kcall(target, *args)
        if kind == "aprobe":
            return _attention().aprobe(target)
        if kind == "acall":
            return _attention().acall(target, *args)
    except Raised as exc:
        return ("raised", str(exc))
    return None
