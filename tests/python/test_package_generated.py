"""Kernels generated at run time (source text made by the host, compiled and
exec'd into a module's namespace, as xformers' unroll_varargs does): kad
reads the JITFunction's own source (jit.src) and resolves its names in that
module's namespace.  CPU tensors (kad's interpreter); gradients against
PyTorch autograd of the same math."""
import linecache
import sys
import types

import pytest
import torch
import triton
import triton.language as tl

import kad
from kad._sources import generated_source

SCALE = 3.0


@triton.jit
def square(x):
    return x * x


def _template(n_inputs, name):
    """Source text of a kernel summing n_inputs inputs, each squared by a
    helper of this module, times SCALE (a module constant); the lines of the
    loads are generated, like an unrolled vararg loop."""
    loads = "\n".join(
        f"    acc += square(tl.load(x{i}_ptr + offs, mask=m, other=0.0))" for i in range(n_inputs))
    params = ", ".join(f"x{i}_ptr" for i in range(n_inputs))
    return (f"def {name}({params}, y_ptr, n, BLOCK: tl.constexpr):\n"
            "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
            "    m = offs < n\n"
            "    acc = tl.zeros([BLOCK], dtype=tl.float32)\n"
            f"{loads}\n"
            "    tl.store(y_ptr + offs, acc * SCALE, mask=m)\n")


def _make(n_inputs, name, filename, keep_linecache, namespace=None):
    src = _template(n_inputs, name)
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    scope = {}
    exec(compile(src, filename, "exec"), globals() if namespace is None else namespace, scope)
    jit = triton.jit(scope[name])  # Triton reads the source from linecache here
    if not keep_linecache:
        del linecache.cache[filename]  # kad must not need it: jit.src has the text
    return jit


def _check(jit, n_inputs, n=37, block=16):
    k = kad.differentiable(inputs=[f"x{i}_ptr" for i in range(n_inputs)], outputs=["y_ptr"])(jit)
    g = torch.Generator().manual_seed(n_inputs)
    xs = [torch.randn(n, generator=g, dtype=torch.float64).requires_grad_() for _ in range(n_inputs)]
    y = torch.empty(n, dtype=torch.float64)
    k[(triton.cdiv(n, block),)](*xs, y, n, BLOCK=block)
    w = torch.randn(n, generator=g, dtype=torch.float64)
    got = torch.autograd.grad((y * w).sum(), xs)
    ref = sum(x * x for x in xs) * SCALE
    torch.testing.assert_close(y.detach(), ref.detach())
    exp = torch.autograd.grad((ref * w).sum(), xs)
    for a, b in zip(got, exp):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("keep_linecache", [True, False])
def test_generated_kernel_resolves_names_in_its_module(keep_linecache):
    jit = _make(3, "gen_sum3", f"<kad-test-gen-{keep_linecache}>", keep_linecache)
    _check(jit, 3)


def test_generated_kernel_from_a_materialized_file(tmp_path):
    # the generated text written to a file of its own (not the module's file)
    path = str(tmp_path / "gen_sum2.py")
    src = _template(2, "gen_sum2")
    with open(path, "w") as f:
        f.write(src)
    scope = {}
    exec(compile(src, path, "exec"), globals(), scope)
    _check(triton.jit(scope["gen_sum2"]), 2)


@triton.jit
def gen_shadow(y_ptr, n, BLOCK: tl.constexpr, *x_ptrs):
    # a template of the generated kernel below (kad does not read *args)
    tl.store(y_ptr, 0.0)


def test_generated_kernel_replacing_a_def_of_the_same_name():
    # the module defines a kernel of that name whose source differs (a vararg
    # template, as in xformers): the generated one is what runs
    jit = _make(2, "gen_shadow", "<kad-test-gen-shadow>", True)
    _check(jit, 2)


def test_generated_kernel_of_a_module_without_a_file():
    # exec'd into a namespace of a module that has no source file: names come
    # from the live values (host_values), modules from their imports
    mod = types.ModuleType("kad_test_fileless")
    mod.__dict__.update(tl=tl, triton=triton, SCALE=SCALE, square=square)
    sys.modules[mod.__name__] = mod
    try:
        jit = _make(2, "gen_fileless", "<kad-test-gen-fileless>", False, namespace=mod.__dict__)
        _check(jit, 2)
    finally:
        del sys.modules[mod.__name__]


def test_generated_source_text():
    jit = _make(1, "gen_text", "<kad-test-gen-text>", True)
    name, text = generated_source(jit)
    assert name == "<kad-test-gen-text>"
    lines = text.splitlines()
    assert lines[0] == "@triton.jit" and lines[1].startswith("def gen_text(")
    assert "import triton.language as tl" in lines
    assert f"from {__name__} import SCALE, square" in lines


def test_generated_kernel_errors_point_into_its_text():
    src = "def gen_bad(x_ptr, y_ptr, n):\n    tl.store(y_ptr, tl.load(x_ptr) * undefined_name)\n"
    linecache.cache["<kad-test-gen-bad>"] = (len(src), None, src.splitlines(True), "<kad-test-gen-bad>")
    scope = {}
    exec(compile(src, "<kad-test-gen-bad>", "exec"), globals(), scope)
    k = kad.differentiable(inputs=["x_ptr"], outputs=["y_ptr"])(triton.jit(scope["gen_bad"]))
    # the def is line 2 of the synthetic module (kad's decorator is line 1)
    with pytest.raises(kad.KadError, match=r"<kad-test-gen-bad>:3:\d+: error: 'undefined_name' is not defined"):
        k[(1,)](torch.zeros(4, requires_grad=True), torch.zeros(4), 4)
