"""The sandbox service that imports a FlexAttention modifier and traces it with torch.fx.

Started by :mod:`derive.flex.trace` through :class:`derive.sandbox.process.Worker` (the same
isolation as ``derive impl``: its own session, a timeout per request, standard output
watched) and served by :mod:`derive.sandbox.child`: it imports neither derive nor SymPy, only
torch. Every request gets one reply from :func:`handle`, a JSON header line (no pickle, no code):

* ``("hello",)`` → ``("ok", None)`` once torch is imported, or ``("notorch",)``;
* ``("trace", file, name, args, kind, sys_path)`` → ``("ok", tree, cpu_seconds)`` or ``("error", line, text)``.

``tree`` is ``{"nodes": [...], "out": ref, "tables": {...}, "line": N, "source": "..."}``;
a node is ``{"op": OP, "args": [ref, ...], "line": N}`` and a ref is ``{"n": index}`` (a
node), ``{"int": k}``, ``{"float": [p, q]}`` (the exact ratio of a Python float),
``{"bool": b}`` or ``null``. Ops are the parent's whitelist; anything else is an error
naming the operation and the line of the user's file.
"""

from __future__ import annotations

import builtins
import importlib.util
import io
import operator
import os
import sys
import time
import traceback

try:
    import derive_sandbox_child as sandbox  # installed by the sandbox's runner, in the child
except ImportError:  # imported in derive's own process (documentation, tools)
    from derive.sandbox import child as sandbox

_OPEN = io.open  # kept before the guard replaces it, to read the source line
ARGS = {"score": ("score", "b", "h", "q_idx", "kv_idx"), "mask": ("b", "h", "q_idx", "kv_idx")}


class Untraceable(Exception):
    def __init__(self, line, text):
        super().__init__(text)
        self.line, self.text = line, text


_brief = sandbox.brief


def _user_line(tb, path: str):
    """The last line of the user's file in a traceback (a list of FrameSummary)."""
    line = None
    for fr in tb:
        if os.path.abspath(fr.filename) == path:
            line = fr.lineno
    return line


def _blocked(what: str):
    def fn(*_a, **_k):
        raise Untraceable(None, what)

    return fn


RANDOM = ("rand", "randn", "randint", "rand_like", "randn_like", "randint_like", "randperm", "normal",
          "bernoulli", "multinomial", "poisson")


class _Guard:
    """No file I/O and no randomness while the modifier is built and traced."""

    def __init__(self, torch):
        self.torch, self.saved = torch, []

    def __enter__(self):
        import random

        def put(obj, name, repl):
            self.saved.append((obj, name, getattr(obj, name)))
            setattr(obj, name, repl)

        put(builtins, "open", _blocked("file I/O (open) is not allowed in a modifier"))
        put(io, "open", _blocked("file I/O (io.open) is not allowed in a modifier"))
        for name in RANDOM:
            if hasattr(self.torch, name):
                put(self.torch, name, _blocked(f"randomness (torch.{name}) is not allowed in a modifier"))
        for name in ("random", "randint", "uniform", "gauss", "choice"):
            put(random, name, _blocked(f"randomness (random.{name}) is not allowed in a modifier"))
        return self

    def __exit__(self, *exc):
        for obj, name, old in reversed(self.saved):
            setattr(obj, name, old)
        return False


def _functions(torch):
    """callable → op name (torch functions, their Tensor methods and Python operators)."""
    t = torch
    table = {
        operator.add: "add", operator.sub: "sub", operator.mul: "mul", operator.truediv: "div",
        operator.neg: "neg", operator.pow: "pow", operator.lt: "lt", operator.le: "le", operator.gt: "gt",
        operator.ge: "ge", operator.eq: "eq", operator.ne: "ne", operator.and_: "and", operator.or_: "or",
        operator.invert: "not", operator.getitem: "getitem", operator.abs: "abs", operator.pos: "pos",
        operator.floordiv: "floordiv", operator.mod: "mod",
        t.add: "add", t.sub: "sub", t.mul: "mul", t.div: "div", t.neg: "neg", t.pow: "pow",
        t.where: "where", t.tanh: "tanh", t.exp: "exp", t.exp2: "exp2", t.log: "log", t.abs: "abs",
        t.sqrt: "sqrt", t.clamp: "clamp", t.sign: "sign", t.minimum: "min", t.maximum: "max",
        t.logical_and: "and", t.logical_or: "or", t.logical_not: "not", t.lt: "lt", t.le: "le",
        t.gt: "gt", t.ge: "ge", t.eq: "eq", t.ne: "ne", t.sigmoid: "sigmoid", t.square: "square",
        t.rsqrt: "rsqrt",
    }
    return table


METHODS = {"add": "add", "sub": "sub", "mul": "mul", "div": "div", "neg": "neg", "pow": "pow", "tanh": "tanh",
           "exp": "exp", "exp2": "exp2", "log": "log", "abs": "abs", "sqrt": "sqrt", "clamp": "clamp",
           "sign": "sign", "sigmoid": "sigmoid", "square": "square", "rsqrt": "rsqrt", "lt": "lt", "le": "le",
           "gt": "gt", "ge": "ge", "eq": "eq", "ne": "ne", "__getitem__": "getitem", "logical_and": "and",
           "logical_or": "or", "logical_not": "not", "minimum": "min", "maximum": "max"}
WHY_METHOD = {"item": ".item() turns a traced value into a Python number",
              "tolist": ".tolist() turns a traced value into Python numbers",
              "numpy": ".numpy() leaves torch", "backward": ".backward() is not part of a modifier"}


def _import(path: str, name: str, args: list):
    mod_name = "derive_flex_mods_" + "".join(c if c.isalnum() else "_" for c in path)
    spec = importlib.util.spec_from_file_location(mod_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    spec.loader.exec_module(module)
    if not hasattr(module, name):
        raise Untraceable(None, f"{os.path.basename(path)} has no function {name!r}")
    fn = getattr(module, name)
    if args is not None:
        fn = fn(*args)
    if not callable(fn):
        raise Untraceable(None, f"{name} is not callable" if args is None else f"{name}(...) did not return a function")
    return fn


def _tensor_names(fn) -> dict:
    """id(tensor) → the name the user's code gives it (a closure variable or a global)."""
    torch = sys.modules["torch"]
    out = {}
    code = getattr(fn, "__code__", None)
    cells = getattr(fn, "__closure__", None) or ()
    if code is not None:
        for var, cell in zip(code.co_freevars, cells):
            try:
                val = cell.cell_contents
            except ValueError:
                continue
            if isinstance(val, torch.Tensor):
                out.setdefault(id(val), var)
        for var, val in getattr(fn, "__globals__", {}).items():
            if isinstance(val, torch.Tensor) and var in code.co_names:
                out.setdefault(id(val), var)
    return out


def _number(x):
    if isinstance(x, bool):
        return {"bool": x}
    if isinstance(x, int):
        return {"int": x}
    if isinstance(x, float):
        if x != x or x in (float("inf"), float("-inf")):
            return {"inf": 1 if x > 0 else -1} if x == x else None
        p, q = x.as_integer_ratio()
        return {"float": [p, q]}
    return None


def trace(path: str, name: str, args, kind: str):
    import torch
    import torch.fx as fx

    path = os.path.abspath(path)
    fn = _import(path, name, args)
    want = ARGS[kind]
    import inspect

    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        params = None
    if params is not None and len(params) != len(want):
        raise Untraceable(None, f"a {kind}_mod takes {len(want)} arguments ({', '.join(want)}); "
                                f"{name} takes {len(params)}")
    class Tracer(fx.Tracer):
        def create_node(self, *a, **k):  # the line of the user's file each operation comes from
            node = super().create_node(*a, **k)
            node.meta["derive_line"] = _user_line(traceback.extract_stack(), path)
            return node

    tracer = Tracer()
    try:
        graph = tracer.trace(fn)
    except Untraceable as exc:
        raise Untraceable(_user_line(traceback.extract_tb(exc.__traceback__), path), exc.text) from None
    except fx.proxy.TraceError as exc:
        line = _user_line(traceback.extract_tb(exc.__traceback__), path)
        if "control flow" in str(exc) or "iterate" in str(exc) or "bool" in str(exc):
            raise Untraceable(line, "a Python branch (if, while, and/or, bool()) on a traced value: the result "
                                    "would depend on data the tracer cannot see; use torch.where") from None
        raise Untraceable(line, f"cannot trace: {_brief(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - the user's code raised while being traced
        line = _user_line(traceback.extract_tb(exc.__traceback__), path)
        raise Untraceable(line, f"the modifier raised {_brief(exc)}") from None
    names = _tensor_names(fn)
    funcs = _functions(torch)
    nodes, index, tables = [], {}, {}
    root = tracer.root

    def line_of(node):
        return node.meta.get("derive_line")

    def ref(a, node):
        if isinstance(a, fx.Node):
            return {"n": index[a]}
        if a is None:
            return None
        if isinstance(a, (list, tuple)):
            return {"tuple": [ref(x, node) for x in a]}
        num = _number(a)
        if num is None:
            raise Untraceable(line_of(node), f"an argument of type {type(a).__name__} is not supported")
        return num

    def tensor_node(t, label, node):
        if t.dim() == 0:
            if t.dtype == torch.bool:
                return {"op": "const", "args": [{"bool": bool(t)}], "line": line_of(node)}
            return {"op": "const", "args": [_number(float(t))], "line": line_of(node)}
        if t.is_floating_point() or t.dtype in (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8,
                                                torch.bool):
            vals = [x.as_integer_ratio() if isinstance(x, float) else (int(x), 1)
                    for x in t.detach().flatten().tolist()]
            tables[label] = {"shape": list(t.shape), "values": vals, "integer": not t.is_floating_point(),
                             "boolean": t.dtype == torch.bool}  # True/False as 1/0, read back as a condition
            return {"op": "table", "args": [{"name": label}], "line": line_of(node)}
        raise Untraceable(line_of(node), f"a captured tensor of dtype {t.dtype} is not supported")

    for node in graph.nodes:
        if node.op == "placeholder":
            pos = len(index)
            entry = {"op": "arg", "args": [{"name": want[pos]}], "line": None}
        elif node.op == "get_attr":
            t = getattr(root, node.target)
            label = names.get(id(t), "tensor" + "".join(c for c in node.target if c.isdigit()))
            entry = tensor_node(t, label, node)
        elif node.op == "call_function":
            op = funcs.get(node.target)
            if op is None:
                shown = (getattr(node.target, "__module__", "") + "."
                         + getattr(node.target, "__name__", str(node.target)))
                raise Untraceable(line_of(node), f"the operation {shown.lstrip('.')} is not supported "
                                                 f"(supported: arithmetic, comparisons, torch.where, tanh, exp, exp2, "
                                                 f"log, abs, sqrt, clamp, sign, indexing a captured tensor)")
            if node.kwargs and not (op == "clamp" and set(node.kwargs) <= {"min", "max"}):
                raise Untraceable(line_of(node), f"keyword arguments to {op} are not supported: "
                                                 f"{', '.join(sorted(node.kwargs))}")
            args = list(node.args)
            if op == "clamp":
                args = (args + [None, None])[:3]
                if "min" in node.kwargs:
                    args[1] = node.kwargs["min"]
                if "max" in node.kwargs:
                    args[2] = node.kwargs["max"]
            entry = {"op": op, "args": [ref(a, node) for a in args], "line": line_of(node)}
        elif node.op == "call_method":
            m = node.target
            if m in WHY_METHOD:
                raise Untraceable(line_of(node), f"{WHY_METHOD[m]}: not traceable")
            if m.endswith("_") and not m.startswith("__"):
                raise Untraceable(line_of(node), f"the in-place operation .{m}() is not supported: "
                                                 f"a modifier must return a new value")
            if m not in METHODS:
                raise Untraceable(line_of(node), f"the method .{m}() is not supported")
            op = METHODS[m]
            if node.kwargs and not (op == "clamp" and set(node.kwargs) <= {"min", "max"}):
                raise Untraceable(line_of(node), f"keyword arguments to .{m}() are not supported")
            args = list(node.args)
            if op == "clamp":
                args = (args + [None, None])[:3]
                args[1] = node.kwargs.get("min", args[1])
                args[2] = node.kwargs.get("max", args[2])
            entry = {"op": op, "args": [ref(a, node) for a in args], "line": line_of(node)}
        elif node.op == "output":
            out = node.args[0]
            if not isinstance(out, fx.Node):
                num = _number(out)
                if num is None:
                    raise Untraceable(None, f"the modifier returned a {type(out).__name__}, not a value")
                nodes.append({"op": "const", "args": [num], "line": None})
                out_ref = {"n": len(nodes) - 1}
            else:
                out_ref = ref(out, node)
            src_line = line_of(out) if isinstance(out, fx.Node) else None
            return {"nodes": nodes, "out": out_ref, "tables": tables, "line": src_line,
                    "source": _source_line(path, src_line)}
        else:
            raise Untraceable(line_of(node), f"cannot trace a {node.op} node")
        index[node] = len(nodes)
        nodes.append(entry)
    raise Untraceable(None, "the trace has no output")


def _source_line(path, line):
    if line is None:
        return ""
    try:
        with _OPEN(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return ""
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""


def handle(msg: tuple):
    """One request → its reply; None (an unknown request) ends the child. A ``sys.exit`` from the
    user's code is left to the sandbox (the reply ``("exit", code)``, then the child ends)."""
    if msg[0] == "hello":  # torch is imported before any user code runs, outside its timeout
        try:
            import torch
            import torch.fx  # noqa: F401
        except ImportError:
            return ("notorch",)
        return ("ok", None)
    if msg[0] != "trace":
        return None
    _, path, name, args, kind, sys_path = msg
    sys.path[:] = list(sys_path)
    try:
        import torch

        start = time.process_time()
        with _Guard(torch):
            tree = trace(path, name, args, kind)
        return ("ok", tree, time.process_time() - start)  # CPU seconds, for benchmarks only
    except Untraceable as exc:
        return ("error", exc.line, exc.text)
    except SystemExit:
        raise
    except RecursionError:
        return ("error", None, "the modifier recursed too deeply")
    except BaseException as exc:  # noqa: BLE001 - importing or building the modifier raised
        line = _user_line(traceback.extract_tb(exc.__traceback__), os.path.abspath(path))
        return ("error", line, f"the modifier raised {_brief(exc)}")
