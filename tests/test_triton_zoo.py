"""The Triton half of the zoo: real ``@triton.jit`` kernels run under Triton's CPU interpreter.

``TRITON_INTERPRET=1`` is read by ``triton.jit`` when it decorates a kernel (Triton 3.9:
``knobs.runtime.interpret``, looked up in ``os.environ`` at that moment), so the fixture
sets it before it imports the zoo modules, and the first test checks that every kernel is
an interpreted one. The kernels compute in float32; they are compared with the definition
in float64 numpy on inputs that are float32 numbers, and each faulty twin is shown wrong
on a specific input (and right where its bug cannot show). Without triton these tests
skip, with CI=true they fail. Then ``derive impl --triton-interpret`` runs a row softmax
kernel end to end.
"""

from __future__ import annotations

import importlib
import math
import re
import sys

import numpy as np

import pytest

from derive.cli import main
from derive.impl import check_implementation
from derive.impl.run.triton_env import VAR, child_env, defines_kernel, imports_triton
from tests.conftest import require_module

pytestmark = pytest.mark.triton

MODULES = ("online", "split", "softmax")
PKG = "tests.zoo.triton_kernels"


@pytest.fixture(scope="module")
def zoo():
    """The zoo modules, their kernels decorated under the interpreter.

    Triton's own library functions (``tl.max``, ``tl.sum``, …) are ``@triton.jit`` too and
    are decorated when triton is imported, and a launch imports more of triton lazily: the
    variable must be set before triton is imported and stay set while kernels run.
    """
    require_module("torch", "the Triton kernels take torch tensors")
    if "triton" in sys.modules and not sys.modules["triton"].knobs.runtime.interpret:
        pytest.fail("triton was imported in this process before TRITON_INTERPRET=1 was set: its own @jit "
                    "functions are compiled ones and cannot run under the interpreter")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(VAR, "1")
        require_module("triton", "pip install triton==3.9.0 to run the Triton kernels under its CPU interpreter")
        for name in [m for m in sys.modules if m.startswith(PKG)]:
            del sys.modules[name]  # decorated again, now under the interpreter
        yield {m: importlib.import_module(f"{PKG}.{m}") for m in MODULES}


def reference(x, v, s):
    """(out, lse) of sink attention in float64: p_j = e^{x_j} / (e^s + Σ_k e^{x_k})."""
    x, v = np.asarray(x, np.float64), np.asarray(v, np.float64)
    s = np.broadcast_to(np.asarray(s, np.float64), x.shape[:-1])
    m = np.maximum(np.max(x, axis=-1, initial=-np.inf), s)
    e = np.exp(x - m[..., None])
    den = np.exp(s - m) + e.sum(axis=-1)
    return (e[..., None] * v).sum(axis=-2) / den[..., None], m + np.log(den)


def f32(a):
    return np.asarray(a, np.float32).astype(np.float64)


def case(shape, dv=3, seed=0, scale=3.0):
    """Scores and values that are float32 numbers; row 1 (if any) fully masked."""
    rng = np.random.default_rng(seed)
    x = f32(rng.normal(size=shape) * scale)
    v = f32(rng.normal(size=(*shape, dv)))
    if x.ndim == 2 and x.shape[0] > 1:
        x[1] = -np.inf
    return x, v


def run(fn, x, v, third, s):
    import torch

    out, lse = fn(torch.tensor(x), torch.tensor(v), third, s=s)
    assert out.dtype == lse.dtype == torch.float32
    return out.double().numpy(), lse.double().numpy()


def close(got, want):
    return np.allclose(got, want, rtol=2e-5, atol=2e-6)


def test_kernels_run_under_the_interpreter(zoo):
    from triton.runtime.interpreter import InterpretedFunction

    kernels = [zoo["online"]._sink_forward, zoo["split"]._sink_partial, zoo["split"]._sink_combine,
               zoo["softmax"]._row_softmax]
    assert all(isinstance(k, InterpretedFunction) for k in kernels)


# ---- online (tiled) forward -----------------------------------------------------------------

ONLINE = [  # (shape of x, block): n = 0, below, at and above the tile, blocks not powers of two
    ((2, 0), 4), ((2, 1), 1), ((3, 5), 3), ((2, 7), 7), ((2, 8), 8), ((3, 33), 5), ((2, 16), 1),
    ((2, 3, 10), 4),
]


@pytest.mark.parametrize("shape, block", ONLINE)
def test_online_forward_matches_the_definition(zoo, shape, block):
    x, v = case(shape)
    out, lse = run(zoo["online"].sink_online, x, v, block, 0.75)
    want_out, want_lse = reference(x, v, 0.75)
    assert out.shape == want_out.shape and lse.shape == want_lse.shape
    assert close(out, want_out) and close(lse, want_lse)


def test_online_forward_with_a_sink_per_row_and_huge_scores(zoo):
    import torch

    x, v = case((3, 9))
    x[2] = f32([1e4, -1e4, 9999.5, 0, 0, 0, 0, 0, -np.inf])
    s = torch.tensor([-1.0, 2.5, 1e4], dtype=torch.float32)
    out, lse = run(zoo["online"].sink_online, x, v, 4, s)
    want_out, want_lse = reference(x, v, s.double().numpy())
    assert close(out, want_out) and close(lse, want_lse)


def test_online_forward_no_key_or_all_masked_is_zero_with_lse_s(zoo):
    """By the definition: the sink takes all the weight and has value 0, so out = 0, lse = s."""
    x = np.full((2, 6), -np.inf)
    out, lse = run(zoo["online"].sink_online, x, np.ones((2, 6, 2)), 4, 0.5)
    assert out.tolist() == [[0.0, 0.0], [0.0, 0.0]] and lse.tolist() == [0.5, 0.5]
    out, lse = run(zoo["online"].sink_online, np.zeros((1, 0)), np.zeros((1, 0, 2)), 4, 0.5)
    assert out.tolist() == [[0.0, 0.0]] and lse.tolist() == [0.5]


def test_sink_per_tile_is_right_on_one_tile_and_wrong_on_two(zoo):
    bad = zoo["online"].sink_online_sink_per_tile
    x, v = case((2, 8))
    want_out, want_lse = reference(x, v, 0.5)
    out, lse = run(bad, x, v, 8, 0.5)  # one tile: the sink is added once, which is right
    assert close(out, want_out) and close(lse, want_lse)
    out, lse = run(bad, x, v, 4, 0.5)  # two tiles: the sink is counted twice
    assert not close(out[0], want_out[0])
    assert lse[1] == pytest.approx(0.5 + math.log(2), abs=1e-6)  # masked row: log(2·e^s)
    den = math.exp(0.5) + np.exp(x[0]).sum()  # row 0: exactly one extra e^s in the denominator
    assert close(out[0], want_out[0] * den / (den + math.exp(0.5)))


# ---- split-KV partials and combine ------------------------------------------------------------

SPLIT = [  # (shape of x, splits): one split, uneven chunks, empty chunks (splits > n), n = 0
    ((2, 0), 3), ((2, 1), 1), ((3, 5), 3), ((3, 3), 7), ((3, 33), 5), ((2, 16), 1), ((2, 10), 10),
    ((2, 3, 11), 4),
]


@pytest.mark.parametrize("shape, splits", SPLIT)
def test_split_combine_matches_the_definition(zoo, shape, splits):
    x, v = case(shape)
    out, lse = run(zoo["split"].sink_split, x, v, splits, 0.75)
    want_out, want_lse = reference(x, v, 0.75)
    assert out.shape == want_out.shape and lse.shape == want_lse.shape
    assert close(out, want_out) and close(lse, want_lse)


@pytest.mark.parametrize("module, fn, third", [("online", "sink_online", 3), ("split", "sink_split", 4)])
def test_a_sink_at_minus_infinity_is_plain_softmax_attention(zoo, module, fn, third):
    x, v = case((2, 7))
    x[1] = f32([2.5, -1, *[-np.inf] * 5])  # partly masked; no row fully masked (softmax has no value there)
    out, lse = run(getattr(zoo[module], fn), x, v, third, -math.inf)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    want_out = (e[..., None] * v).sum(axis=-2) / e.sum(axis=-1)[..., None]
    assert close(out, want_out) and close(lse, reference(x, v, -math.inf)[1])


def test_split_chunks_are_numpy_array_split_chunks(zoo):
    """The partial kernel's (m_k, l_k) are those of numpy.array_split's chunk k."""
    import torch

    split = zoo["split"]
    n, splits = 11, 4
    x = f32(np.random.default_rng(3).normal(size=(1, n)))
    x[0, 8:] = -np.inf  # the last chunk (keys 8..10) is fully masked
    m, lsum = torch.empty(1, splits), torch.empty(1, splits)
    acc = torch.empty(1, splits, 1)
    split._sink_partial[(1, splits)](torch.tensor(x, dtype=torch.float32), torch.ones(1, n, 1),
                                     torch.zeros(1), m, lsum, acc, n, 1, splits, TILE_=split.TILE, DV_P2=1,
                                     SINK_IN_PARTIAL=False, EMPTY_AS_SINK=False)
    chunks = np.array_split(x[0], splits)
    assert [len(c) for c in chunks] == [3, 3, 3, 2]
    assert m[0].double().tolist() == [float(c.max()) for c in chunks]
    want_l = [np.exp(c - c.max()).sum() if np.isfinite(c.max()) else 0.0 for c in chunks]
    assert np.allclose(lsum[0].double().numpy(), want_l, rtol=1e-6)
    assert np.allclose(acc[0, :, 0].double().numpy(), want_l, rtol=1e-6)  # v = 1


def test_split_no_key_or_all_masked_is_zero_with_lse_s(zoo):
    for x in (np.full((1, 5), -np.inf), np.zeros((1, 0))):
        out, lse = run(zoo["split"].sink_split, x, np.ones((1, x.shape[1], 2)), 3, 0.5)
        assert out.tolist() == [[0.0, 0.0]] and lse.tolist() == [0.5]


def test_sink_per_split_is_right_with_one_split_only(zoo):
    bad = zoo["split"].sink_split_sink_per_split
    x, v = case((2, 9))
    want_out, want_lse = reference(x, v, 0.5)
    out, lse = run(bad, x, v, 1, 0.5)
    assert close(out, want_out) and close(lse, want_lse)
    out, lse = run(bad, x, v, 3, 0.5)  # the sink counted three times
    assert not close(out[0], want_out[0])
    assert lse[1] == pytest.approx(0.5 + math.log(3), abs=1e-6)
    den = math.exp(0.5) + np.exp(x[0]).sum()
    assert close(out[0], want_out[0] * den / (den + 2 * math.exp(0.5)))


def test_empty_split_as_sink_is_wrong_only_with_an_empty_chunk(zoo):
    bad = zoo["split"].sink_split_empty_as_sink
    x, v = case((1, 6))
    want_out, want_lse = reference(x, v, 0.5)
    out, lse = run(bad, x, v, 3, 0.5)  # every chunk has a live key: right
    assert close(out, want_out) and close(lse, want_lse)
    out, lse = run(bad, x, v, 8, 0.5)  # two empty chunks: the sink counted 1 + 2 times
    den = math.exp(0.5) + np.exp(x[0]).sum()
    assert not close(out, want_out)
    assert close(out, want_out * den / (den + 2 * math.exp(0.5)))
    x[0, :3] = -np.inf  # a fully masked chunk counts like an empty one
    want_out, _ = reference(x, v, 0.5)
    out, _ = run(bad, x, v, 2, 0.5)
    den = math.exp(0.5) + np.exp(x[0]).sum()
    assert close(out, want_out * den / (den + math.exp(0.5)))


# ---- derive impl --triton-interpret on a row softmax kernel -------------------------------------

KERNELS = "tests/zoo/triton_kernels/softmax.py"
QUICK = ["--dtype", "float32", "--examples", "20"]


def impl(capsys, *argv):
    """(exit code, stdout, stderr without the line of the time a check took, which test_impl_cli pins)."""
    code = main(["impl", *argv])
    out, err = capsys.readouterr()
    return code, out, re.sub(r"derive impl: checked in [0-9.]+ s \([^)]*\)\n", "", err)


@pytest.mark.slow
@pytest.mark.parametrize("fn, normalizer, code, text", [
    ("softmax", "softmax", 0, "**Verdict: agrees.**"),
    ("softmax1", "softmax1", 0, "**Verdict: agrees.**"),
    ("softmax_unshifted", "softmax", 1, "`no-max-subtraction`"),
    ("softmax1", "softmax", 1, "**Verdict: DISAGREES.**"),
])
def test_derive_impl_triton_interpret(zoo, capsys, monkeypatch, fn, normalizer, code, text):
    monkeypatch.delenv(VAR, raising=False)  # only the flag sets it for the child
    got, out, err = impl(capsys, f"{KERNELS}:{fn}", "--as", normalizer, *QUICK, "--triton-interpret")
    assert (got, err) == (code, "")
    assert "calling convention: torch arrays" in out
    assert text in out


# ---- derive impl --form on the real Triton kernels (slow: the interpreter runs every tile) ----------

ZOO = "tests/zoo/triton_kernels"


@pytest.mark.slow
@pytest.mark.parametrize("target, form, code, text", [
    ("online.py:sink_online", "online", 0, "**Verdict: agrees**"),
    ("online.py:sink_online_sink_per_tile", "online", 1, "**Verdict: disagrees** (float32, out) on scores of shape "
                                                        "[16, 0], block = 1, s = 0.0.\n\n- failing row 0: x = []\n"
                                                        "- its values v = []\n- out returned: [nan, nan, nan]"),
    ("online.py:sink_online_sink_per_tile", "online", 1, "**Known kernel fault: extra logit added per tile or per "
                                                        "split** (`extra_per_tile`, matched on "),
    ("online.py:sink_online_no_rescale_past_20_tiles", "online", 1, "**Verdict: disagrees** (float32, out) on scores "
                                                                   "of shape [16, 1024], head dimension 64, block = 16"),
    ("split.py:sink_split_sink_per_split", "split", 1, "**Known kernel fault: extra logit added per tile or per "
                                                      "split** (`extra_per_tile`"),
    ("split.py:sink_split_empty_as_sink", "split", 1, "**Known kernel fault: extra logit seeded twice when a split "
                                                     "is empty** (`seeded_twice_empty_split`"),
])
def test_derive_impl_form_on_triton_kernels(zoo, capsys, monkeypatch, target, form, code, text):
    """The shipped kernel code itself, checked in its form: the correct one agrees, each faulty twin is
    caught on its smallest failing input (an empty row: the sink counted 0 or 2 times) and named:
    the online twin adds the sink per tile, so a row of no tile is 0/0 (the fault model realizes
    that too) and the rows of two or more tiles name it; the split twins seed every split (empty
    ones too) or let a fully masked split report the seeded state, two ways kernels realize faults
    1 and 2."""
    monkeypatch.delenv(VAR, raising=False)
    got, out, err = impl(capsys, f"{ZOO}/{target}", "--as", "sink", "--form", form, "--dtype", "float32",
                         "--triton-interpret")
    assert (got, err) == (code, ""), out
    assert text in out


@pytest.mark.slow
def test_derive_impl_form_per_head_on_the_triton_online_kernel(zoo, capsys, monkeypatch):
    """The kernel's host code broadcasts a sink tensor against the leading dimensions: a sink per head
    (s of shape (2,), x of shape (R, 2, n)) agrees too."""
    monkeypatch.delenv(VAR, raising=False)
    got, out, err = impl(capsys, f"{ZOO}/online.py:sink_online", "--as", "sink", "--form", "online", "--per-head",
                         "--dtype", "float32", "--triton-interpret")
    assert (got, err) == (0, ""), out
    assert "Per head: s passed as an array of shape (2,)" in out and "**Verdict: agrees**" in out


def test_derive_impl_sets_the_interpreter_itself_without_a_gpu(zoo, capsys, monkeypatch):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the kernels run on it")
    monkeypatch.delenv(VAR, raising=False)
    code, out, err = impl(capsys, f"{KERNELS}:softmax", "--as", "softmax", *QUICK)
    assert code == 0 and "**Verdict: agrees.**" in out
    assert err == (f"derive impl: no CUDA device, so the Triton kernels of {KERNELS}:softmax run under "
                   f"Triton's CPU interpreter (TRITON_INTERPRET=1; --triton-interpret says so explicitly)\n")


@pytest.mark.slow
def test_a_numpy_target_that_loads_triton_gets_the_full_list(zoo, capsys, monkeypatch):
    """Which fixed list applies is derive's own decision (the child started with the interpreter
    on and a Triton kernel defined in the target's file), never the child's report: a numpy kernel
    in a module importing triton gets the full list and its bug past the 17th tile is caught, as
    is kernels_numpy.py's twin."""
    monkeypatch.delenv(VAR, raising=False)
    target = "sink_online_no_rescale_past_17_tiles"
    for where in (f"{ZOO}/numpy_late_tiles.py", "tests/zoo/kernels_numpy.py"):
        got, out, err = impl(capsys, f"{where}:{target}", "--as", "sink", "--form", "online",
                             "--dtype", "float32", "--triton-interpret")
        assert (got, err) == (1, ""), out
        assert "Fixed list: the full list" in out
        assert "**Verdict: disagrees** (float32, out) on scores of shape [16, 40], block = 1, s = 0.0." in out
    torch_target = check_implementation("tests/zoo/kernels_torch.py:sink_online", "sink", form="online",
                                        dtypes=("float32",), env={VAR: "1"}, examples=1)
    assert (torch_target.api, torch_target.fixed_list, torch_target.agrees) == ("torch", "full", True)
    r = torch_target.results[0]  # every block of the 9 short lengths (40) with every sink value, 16 rows per
    # call, then the 14 real-size partitions (200, 1024 and 1025 keys, the rows of 1025 projected from calls)
    assert (r.calls, r.rows) == (40 * 7 + 14, (40 * 7 + 14) * 16)


# ---- child_env: no triton needed ----------------------------------------------------------------

def test_child_env_flag_and_targets(monkeypatch, capsys):
    import derive.impl.run.triton_env as te

    monkeypatch.delenv(VAR, raising=False)
    monkeypatch.setattr(te, "_cuda", lambda: False)
    assert child_env(True) == {VAR: "1"}
    assert child_env(False) == {}
    assert child_env(False, "tests/zoo/softmax_numpy.py:softmax") == {}
    assert capsys.readouterr().err == ""
    assert child_env(False, "tests.zoo.triton_kernels.online:sink_online") == {VAR: "1"}
    assert capsys.readouterr().err.startswith("derive impl: no CUDA device, so the Triton kernels of "
                                              "tests.zoo.triton_kernels.online:sink_online run under")
    monkeypatch.setattr(te, "_cuda", lambda: True)
    assert child_env(False, f"{KERNELS}:softmax") == {}
    monkeypatch.setattr(te, "_cuda", lambda: False)
    monkeypatch.setenv(VAR, "0")  # the user's own setting wins
    assert child_env(False, f"{KERNELS}:softmax") == {}
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("target, expected", [
    (f"{KERNELS}:softmax", True),
    ("tests.zoo.triton_kernels.split:sink_split", True),
    ("tests/zoo/triton_kernels/_host.py:p2", True),
    ("tests/zoo/softmax1_torch.py:softmax1", False),
    ("tests.zoo.softmax_numpy:softmax", False),
    ("tests/zoo/no_such_file.py:f", False),
    ("no_such_package.mod:f", False),
])
def test_imports_triton_reads_the_file_without_importing_it(target, expected):
    before = set(sys.modules)
    assert imports_triton(target) is expected
    assert not {m for m in set(sys.modules) - before if m.startswith(("tests.zoo", "triton", "no_such"))}


@pytest.mark.slow
def test_without_the_interpreter_the_kernel_cannot_run_here(zoo, capsys, monkeypatch):
    """The user's TRITON_INTERPRET=0 is kept: without a GPU the launch fails, exit 2, no verdict."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: the kernels run on it")
    monkeypatch.setenv(VAR, "0")
    code, out, err = impl(capsys, f"{KERNELS}:softmax", "--as", "softmax", *QUICK)
    assert (code, out) == (2, "")
    assert err.startswith(f"derive: error: {KERNELS}:softmax raised RuntimeError: 0 active drivers")


def test_a_wrapper_beside_its_triton_kernels_is_seen_through_its_imports(tmp_path):
    """A torch wrapper whose Triton kernels live in a file of its folder (or below) that it imports: read
    through its imports, never imported; a file it does not import, or one outside its folder, is not."""
    kernels = "import triton\n\n\n@triton.jit\ndef _attend(x):\n    pass\n"
    (tmp_path / "kernels.py").write_text(kernels)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "inner.py").write_text(kernels)
    (tmp_path / "wrapper.py").write_text("from kernels import _attend\n\ndef attend(q, k, v):\n    return q\n")
    (tmp_path / "relative.py").write_text("from .pkg import inner\n\ndef attend(q, k, v):\n    return q\n")
    (tmp_path / "through.py").write_text("import wrapper\n\ndef attend(q, k, v):\n    return q\n")
    (tmp_path / "alone.py").write_text("import numpy\n\ndef attend(q, k, v):\n    return q\n")
    before = set(sys.modules)
    for name in ("wrapper", "relative", "through"):
        assert imports_triton(f"{tmp_path / name}.py:attend") and defines_kernel(f"{tmp_path / name}.py:attend"), name
    assert not imports_triton(f"{tmp_path}/alone.py:attend") and not defines_kernel(f"{tmp_path}/alone.py:attend")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up.py").write_text("from ..kernels import _attend\n\ndef attend(q, k, v):\n    return q\n")
    assert not defines_kernel(f"{tmp_path}/sub/up.py:attend")  # outside its own folder: not followed
    assert not {m for m in set(sys.modules) - before if m in ("kernels", "wrapper", "pkg", "triton")}
