"""The attention form's half of the child process (loaded by :mod:`derive.impl.run.worker`, never by derive).

Like the worker it imports neither derive nor SymPy: the worker loads this file by its path
and hands it its own helpers (:func:`bind`), so one wording of exceptions and one array
conversion serve every form. Two requests:

* ``("aprobe",)`` → ``("ok", info)``: the worker's target info plus ``signature``, the
  function's parameters as ``[name, kind, has_default, default_kind]`` (``None`` when it has no
  signature; ``default_kind`` is ``pair`` for a default of two ints, a window_size), from which the
  parent decides which keywords to pass;
* ``("acall", q, k, v, kwargs, dtype, api, cot, out_shape, lse_shape, w_shape)`` → ``("ok", names,
  *arrays)``: ``fn(q, k, v, **kwargs)`` with q, k, v (and every array in ``kwargs``: sinks, an
  additive mask) in ``dtype``, numpy or torch by ``api`` (``None``: numpy, then torch when numpy
  raises; the api used is the name ``api:<name>`` in ``names``); ``kwargs["__mask_form__"]``, when
  given, is ``[name, "mask-mod" | "block-mask"]``: the boolean mask under ``name`` (B, 1, M, N) is
  passed as a FlexAttention mask_mod or BlockMask built from it (torch); ``kwargs["__tensors__"]`` names
  keywords passed as 0-d arrays of the api, ``kwargs["__dtypes__"]`` keywords given the call's dtype,
  ``kwargs["__device__"]`` the torch device of every tensor made. The first value returned is
  ``out`` of ``out_shape``; a second is ``weights`` when it has ``w_shape`` (the layout of q with the
  keys as its last axis), else ``lse`` of ``lse_shape``. With ``cot`` (torch only) the
  gradients of ⟨out, cot⟩ with respect to q, k, v and the sinks (``dq``, ``dk``, ``dv``,
  ``dsinks``, each left out when autograd gives none), by torch autograd. ``("raised", text)`` or
  ``("bad", message)`` otherwise.
"""

from __future__ import annotations

import inspect
import os
import sys
import traceback
import types
import warnings

import numpy as np

H: dict = {}  # the worker's helpers: brief, Raised, _torch, _as_array, _same


def bind(helpers: dict) -> None:
    H.update(helpers)


def _applied(fn):
    """The ``torch.autograd.Function`` subclass whose ``apply`` ``fn`` is, or None."""
    owner = getattr(fn, "__self__", None)
    if not (isinstance(owner, type) and getattr(fn, "__name__", "") == "apply"):
        return None
    torch_function = any(c.__name__ == "Function" and c.__module__.startswith("torch.autograd") for c in owner.__mro__)
    return owner if torch_function else None


def _signature(fn):
    """``fn``'s signature; for ``SomeFunction.apply`` of a ``torch.autograd.Function`` (``*args``), that of
    its ``forward`` without ``ctx``."""
    owner = _applied(fn)
    if owner is None:
        try:
            return inspect.signature(fn)
        except (TypeError, ValueError):
            sig = _doc_signature(fn)  # a builtin (torch's scaled_dot_product_attention) states it in its docstring
            if sig is None:
                raise
            return sig
    sig = inspect.signature(owner.forward)
    return sig.replace(parameters=list(sig.parameters.values())[1:])


def _doc_signature(fn):
    """The signature a builtin writes as the first line of its docstring, ``name(a, b, c=None, *, d=0)
    -> T``, parsed (``ast``, never evaluated: a default is read with ``literal_eval``, else kept as
    unknown) when the name is the function's own; None when there is none."""
    import ast

    name, doc = getattr(fn, "__name__", ""), inspect.getdoc(fn) or ""
    if not name or not doc.startswith(name + "("):
        return None
    depth, end = 0, None
    for at, ch in enumerate(doc[len(name):], len(name)):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            end = at
            break
    try:
        args = ast.parse(f"def f{doc[len(name):end + 1]}: pass").body[0].args
    except (SyntaxError, TypeError, ValueError):
        return None

    def default(node):
        try:
            return ast.literal_eval(node)
        except ValueError:
            return ...  # present, but not a literal

    P = inspect.Parameter
    positional = args.posonlyargs + args.args
    pos_defaults = [P.empty] * (len(positional) - len(args.defaults)) + [default(d) for d in args.defaults]
    params = [P(a.arg, P.POSITIONAL_ONLY if k < len(args.posonlyargs) else P.POSITIONAL_OR_KEYWORD, default=dflt)
              for k, (a, dflt) in enumerate(zip(positional, pos_defaults))]
    params += [P(a.arg, P.KEYWORD_ONLY, default=P.empty if d is None else default(d))
               for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    try:
        return inspect.Signature(params)
    except ValueError:
        return None


def aprobe(target):
    try:
        sig = _signature(target.fn)
    except (TypeError, ValueError):
        signature = None
    else:
        signature = [[p.name, p.kind.name, p.default is not inspect.Parameter.empty, _default_kind(p.default)]
                     for p in sig.parameters.values()]
    return ("ok", {**target.info(), "signature": signature})


def _default_kind(value) -> str:
    """``pair`` for a default of two numbers (a window_size=(-1, -1)), else ``""``."""
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(isinstance(x, int) for x in value):
        return "pair"
    return ""


def _flex(keep, form):
    """A FlexAttention mask_mod (``mask-mod``) or BlockMask (``block-mask``) of a boolean mask
    (B, 1, M, N), True where a key is kept."""
    torch = H["_torch"]()
    table = torch.as_tensor(np.asarray(keep, dtype=bool), device=DEVICE[0])

    def mask_mod(b, h, q_idx, kv_idx):
        return table[b, 0, q_idx, kv_idx]

    if form == "mask-mod":
        return mask_mod
    from torch.nn.attention.flex_attention import create_block_mask

    B, _, M, N = table.shape
    return create_block_mask(mask_mod, B, None, M, N, device=DEVICE[0])


DEVICE = ["cpu"]  # the torch device of the current call's inputs (--device); the reference stays on the CPU


def _convert(api, a, dtype, grad=False):
    if not isinstance(a, np.ndarray):
        return a
    if a.dtype == bool:  # a boolean mask stays boolean
        return a.copy() if api == "numpy" else H["_torch"]().as_tensor(a, device=DEVICE[0])
    if api == "numpy":
        return a.astype(dtype)
    torch = H["_torch"]()
    t = torch.tensor(np.asarray(a, dtype=np.float64), dtype=getattr(torch, dtype), device=DEVICE[0])
    return t.requires_grad_(True) if grad else t


def _tensor(api, value, dtype):
    """``value`` (a number, a flag or a pair of them) as an array of the call's API: int32 for whole
    numbers, the call's dtype otherwise."""
    whole = all(isinstance(x, (bool, int, np.integer)) for x in np.ravel(np.asarray(value, dtype=object)))
    if api == "torch":
        torch = H["_torch"]()
        return torch.tensor(value, dtype=torch.int32 if whole else getattr(torch, dtype), device=DEVICE[0])
    return np.asarray(value, dtype=np.int32 if whole else dtype)


def _numpy_has(dtype) -> bool:
    try:
        np.dtype(dtype)
    except TypeError:
        return False
    return True


def _run(target, api, q, k, v, kw, dtype, cot):
    """Call the kernel: (what it returned, q, k, v as passed, its keywords, copies of q, k, v, the
    sinks tensor it got (a keyword's, or its module's) or None)."""
    grad = cot is not None
    args = [_convert(api, a, dtype, grad) for a in (q, k, v)]
    flex = kw.get("__mask_form__")
    kwargs = {name: _convert(api, a, dtype, grad and name == kw.get("__sinks__"))
              for name, a in kw.items() if not (name.startswith("__") and name.endswith("__"))}
    for name in kw.get("__tensors__", ()):  # --tensor NAME: a 0-d tensor, int32 for a whole number
        kwargs[name] = _tensor(api, kwargs[name], dtype)
    for name in kw.get("__dtypes__", ()):  # --set NAME=@dtype: the call's dtype, as its API writes it
        kwargs[name] = getattr(H["_torch"](), dtype) if api == "torch" else np.dtype(dtype)
    if flex is not None:
        kwargs[flex[0]] = _flex(kw[flex[0]], flex[1])
    sinks = kwargs.get(kw["__sinks__"]) if "__sinks__" in kw else None
    lead = []
    if "__module__" in kw:  # fn(module, q, k, v, ...): the module first, with the call's attributes
        attrs = {name: _convert(api, a, dtype, grad and name == "sinks") for name, a in kw["__module__"].items()}
        lead = [types.SimpleNamespace(**attrs)]
        sinks = attrs.get("sinks", sinks)
    before = [a.detach().clone() if hasattr(a, "detach") else a.copy() for a in args]
    call_args, call_kwargs = _positional(target.fn, lead + args, kwargs)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            y = target.fn(*call_args, **call_kwargs)
        except Exception as exc:  # noqa: BLE001 - reported as the implementation raising
            raise H["Raised"](H["brief"](exc) + _where(exc, target.fn)) from None
    return y, args, kwargs, before, sinks


def _positional(fn, args, kwargs):
    """(args, kwargs) to call ``fn`` with: as they are, except for ``Function.apply`` of a
    ``torch.autograd.Function``, which takes no keyword: every keyword goes in its place in
    ``forward``'s order (after q, k, v), a parameter not passed at its default."""
    if _applied(fn) is None:
        return args, kwargs
    rest = list(_signature(fn).parameters.values())[3:]
    return list(args) + [kwargs.get(p.name, p.default) for p in rest], {}


def _home(fn) -> str:
    """The folder of the file ``fn`` is written in ("" for a builtin)."""
    try:
        path = inspect.getsourcefile(inspect.unwrap(fn))
    except (TypeError, ValueError):
        return ""
    return os.path.dirname(os.path.abspath(path)) if path else ""


def _where(exc, fn) -> str:
    """`` (at FILE:LINE, in NAME)``: the last frame of the traceback in the kernel's own folder (else
    the last frame below this file's call), so the report points at the kernel's line, not at
    numpy's or torch's."""
    frames = traceback.extract_tb(exc.__traceback__)[1:]  # the first is _run's call of fn
    home = _home(fn)
    own = [f for f in frames if home and os.path.abspath(f.filename).startswith(home + os.sep)]
    f = (own or frames or [None])[-1]
    return "" if f is None else f" (at {os.path.basename(f.filename)}:{f.lineno}, in {f.name})"


def _uses_torch(fn) -> bool:
    """Whether the module ``fn`` is defined in holds torch or something of it (``import torch``,
    ``from torch.nn import functional as F``): a torch kernel, whose own error is the one to show
    when numpy arrays made it raise too."""
    module = sys.modules.get(getattr(inspect.unwrap(fn), "__module__", None) or "")
    for value in vars(module).values() if module is not None else ():
        name = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if isinstance(name, str) and name.split(".")[0] == "torch":
            return True
    return False


def acall(target, q, k, v, kw, dtype, api, cot, out_shape, lse_shape, w_shape=None):
    DEVICE[0] = kw.get("__device__", "cpu")
    if DEVICE[0] != "cpu":  # --device cuda: torch inputs on that device, or no call at all
        torch = H["_torch"]()
        if torch is None or not torch.cuda.is_available():
            return ("bad", f"--device {DEVICE[0]}: " + ("torch is not installed" if torch is None else
                                                        "torch finds no CUDA device on this machine"))
        if api == "numpy":
            return ("bad", f"--device {DEVICE[0]} makes torch tensors; the kernel is a numpy function")
        api = "torch"
    first = None  # the numpy attempt's exception, unless the kernel is torch's and torch raised too
    for name in [api] if api else ["numpy", "torch"]:
        if name == "torch" and not api and H["_torch"]() is None:
            continue  # torch is imported only when numpy did not serve, and only if installed
        if name == "numpy" and not api and not _numpy_has(dtype):
            continue  # bfloat16: numpy has no such dtype, only torch can be called with it
        try:
            y, args, kwargs, before, sinks = _run(target, name, q, k, v, kw, dtype, cot if name == "torch" else None)
        except H["Raised"] as exc:
            first = exc if first is None or (name == "torch" and _uses_torch(target.fn)) else first
            continue
        # a function that returns torch tensors imported torch itself: no import needed to tell
        torch = sys.modules.get("torch") if name == "numpy" else None
        head = y[0] if isinstance(y, (tuple, list)) and y else y
        if torch is not None and isinstance(head, torch.Tensor):  # a torch function given numpy arrays
            continue
        return _reply(name, y, args, before, sinks, cot if name == "torch" else None, out_shape, lse_shape, w_shape)
    raise first


def _second(part, lse_shape, w_shape) -> tuple:
    """(name, shape) of a second value returned: the log-sum-exp, or the weights when it has their
    shape (an eager attention's ``(attn_output, attn_weights)``)."""
    shape = getattr(part, "shape", None)
    if w_shape is not None and shape is not None and tuple(shape) == tuple(w_shape):
        return "weights", w_shape
    return "lse", lse_shape


def _reply(api, y, args, before, sinks, cot, out_shape, lse_shape, w_shape=None):
    parts = tuple(y) if isinstance(y, (tuple, list)) else (y,)
    if len(parts) not in (1, 2):
        return ("bad", f"returned {len(parts)} values; expected out, (out, lse) or (out, weights)")
    names, arrays = [], []
    second = _second(parts[1], lse_shape, w_shape) if len(parts) == 2 else ("lse", lse_shape)
    for what, part, shape in zip(("out", second[0]), parts, (out_shape, second[1])):
        arr, cplx, bad = H["_as_array"](part)
        if bad is not None:
            return ("bad", bad.replace("returned", f"returned as {what}").replace("weights", "values"))
        if cplx:
            return ("bad", f"returned a complex {what}")
        if tuple(arr.shape) != tuple(shape):
            merged = what == "out" and arr.ndim == len(shape) - 1 and tuple(arr.shape[:-1]) == tuple(shape[:-2]) \
                and arr.shape[-1] == shape[-2] * shape[-1]
            return ("bad", f"returned {what} of shape {list(arr.shape)}; expected {list(shape)}"
                           + (" (its last axis holds the heads and the head dimension merged: state --out-layout "
                              "with them in parentheses, e.g. bn(hd))" if merged else "")
                           + (f" (the second value returned is checked as the log-sum-exp, or as the weights "
                              f"when it has their shape {list(w_shape)}; return out alone, (out, lse) or "
                              f"(out, weights))" if what == "lse" and w_shape is not None else ""))
        names.append(what)
        arrays.append(arr)
    if cot is not None:
        torch = H["_torch"]()
        out = parts[0]
        if not (isinstance(out, torch.Tensor) and out.requires_grad):
            return ("bad", "returned an out that does not depend on q, k, v through torch autograd "
                           "(--backward differentiates out with torch)")
        wrt = [("dq", args[0]), ("dk", args[1]), ("dv", args[2])]
        if isinstance(sinks, torch.Tensor):
            wrt.append(("dsinks", sinks))
        try:  # .backward() into the leaves, not autograd.grad: a reentrant torch.utils.checkpoint accepts only it
            loss = (out.to(torch.float64) * torch.tensor(cot, dtype=torch.float64, device=out.device)).sum()
            loss.backward()
            grads = [t.grad for _, t in wrt]
        except Exception as exc:  # noqa: BLE001 - the user's backward raised
            raise H["Raised"](H["brief"](exc)) from None
        for (name, _), g in zip(wrt, grads):
            if g is not None:
                names.append(name)
                arrays.append(g.detach().to(torch.float64).cpu().numpy())
    mutated = any(not H["_same"](a, b) for a, b in zip(args, before))
    names.append("api:" + api)
    arrays.append(np.zeros(0))
    if mutated:
        names.append("mutated")
        arrays.append(np.zeros(0))
    return ("ok", names, *arrays)
