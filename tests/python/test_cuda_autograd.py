"""kad.cuda.differentiable's autograd semantics on CPU tensors (docs/PYTHON.md, "CUDA C / HIP
kernels"), as the Triton path has them: outputs already in the graph and views of a base (the
gradient of the old value flows back where the kernel does not write), version counters,
torch.compile(fullgraph=True) through kad's custom operators, torch.func (grad, vjp, jvp, jacrev,
jacfwd), forward mode (torch.autograd.forward_ad), second derivatives (gradgradcheck, a
gradient of a gradient against PyTorch's) and the refusals.  Every gradient is compared with
torch's float64 autograd of the same math; kernels run in kad.f64_mode() on float64 tensors."""
import os

import pytest

torch = pytest.importorskip("torch")

import kad  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CUDA = os.path.join(ROOT, "tests", "cuda")
F64 = torch.float64
gen = torch.Generator().manual_seed(7)


def randn(*shape):
    return torch.randn(*shape, generator=gen, dtype=F64)


def close(a, b, tol=1e-9):
    assert a.shape == b.shape and torch.allclose(a, b, rtol=tol, atol=tol), (a - b).abs().max()


def square():
    return kad.cuda.differentiable(os.path.join(CUDA, "square.cu"), "square", inputs=["x"], outputs=["y"])


def layernorm():
    return kad.cuda.differentiable(os.path.join(CUDA, "layernorm_warp.cu"), "layernorm",
                                   inputs=["x", "gamma", "beta"], outputs=["y"], template={"BLOCK": 64})


def softmax():
    return kad.cuda.differentiable(os.path.join(CUDA, "softmax_rows.cu"), "softmax_rows", inputs=["x"],
                                   outputs=["y"], template={"BLOCK": 32})


def swish():
    return kad.cuda.differentiable(os.path.join(CUDA, "swish_hip.hip"), "swish", inputs=["x"], outputs=["y"])


R, C = 3, 80


def ln_call(k):
    def f(x, g, b):
        y = torch.empty_like(x)
        k[R, 64](x, g, b, y, C, 1e-5)
        return y
    return f


def ln_ref(x, g, b):
    return torch.nn.functional.layer_norm(x, (C,), g, b, eps=1e-5)


def ln_args():
    return randn(R, C), randn(C), randn(C)


def sm_call(k):
    def f(x):
        y = torch.empty_like(x)
        k[x.shape[0], 32](x, y, x.shape[1])
        return y
    return f


HEAD = """
__global__ void sq_head(const float* x, float* y, int m)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < m) y[i] = x[i] * x[i];   // y[m:] left as it was
}
"""


# ---- in-place outputs and views ----

def test_output_in_graph_written_in_part():
    # y already depends on a: the elements the kernel leaves alone keep their gradient to a
    k = kad.cuda.differentiable(HEAD, "sq_head", inputs=["x"], outputs=["y"])
    n, m = 10, 6
    x0, a0 = randn(n), randn(n)
    dy = randn(n)

    def ref(x, a):
        y = a * 2
        return torch.cat([x[:m] * x[:m], y[m:]])
    x, a = x0.clone().requires_grad_(), a0.clone().requires_grad_()
    with kad.f64_mode():
        y = a * 2
        k[1, 32](x, y, m)
        gx, ga = torch.autograd.grad(y, (x, a), dy)
    wx, wa = torch.autograd.grad(ref(x, a), (x, a), dy)
    close(gx, wx)
    close(ga, wa)
    # no input requires grad: the old value's gradient still flows (the written part gets zero)
    a = a0.clone().requires_grad_()
    with kad.f64_mode():
        y = a * 2
        k[1, 32](x0, y, m)
        ga, = torch.autograd.grad(y, a, dy)
    close(ga, torch.cat([torch.zeros(m, dtype=F64), 2 * dy[m:]]))


def test_output_view_of_a_base():
    k = square()
    n = 10
    x = randn(n).requires_grad_()
    a = randn(20).requires_grad_()
    dbuf = randn(20)
    with kad.f64_mode():
        buf = a * 3
        v = buf[5:15]
        r = k[1, 32](x, v, n)
        assert r is v
        close(buf[5:15], x.detach() ** 2)
        gx, ga = torch.autograd.grad(buf, (x, a), dbuf)
    close(gx, 2 * x.detach() * dbuf[5:15])
    want = 3 * dbuf
    want[5:15] = 0
    close(ga, want)


def test_no_grad_launch_bumps_version_counters():
    # a tensor saved by another op and then written by a kernel under no_grad: PyTorch refuses
    k = square()
    x = randn(8).requires_grad_()
    y = torch.zeros(8, dtype=F64, requires_grad=True)
    z = (y * y).sum()
    with kad.f64_mode(), torch.no_grad():
        k[1, 32](x, y, 8)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


# ---- torch.compile ----

def test_compile_fullgraph_layernorm():
    k = layernorm()
    f = ln_call(k)
    x0, g0, b0 = ln_args()
    dy = randn(R, C)
    cf = torch.compile(lambda x, g, b: (f(x, g, b) * dy).sum(), fullgraph=True)
    with kad.f64_mode():
        ins = [t.clone().requires_grad_() for t in (x0, g0, b0)]
        loss = cf(*ins)
        got = torch.autograd.grad(loss, ins)
    ref = [t.clone().requires_grad_() for t in (x0, g0, b0)]
    close(loss.detach(), (ln_ref(*ref) * dy).sum().detach())
    for a, b in zip(got, torch.autograd.grad((ln_ref(*ref) * dy).sum(), ref)):
        close(a, b, 1e-8)


def test_compile_template_type_from_dtype_fp32():
    k = swish()

    def f(x):
        y = torch.empty_like(x)
        k[2, 128](x, y, x.numel())
        return y.sum()
    x = torch.randn(300, generator=gen).requires_grad_()
    torch.compile(f, fullgraph=True)(x).backward()
    x64 = x.detach().double().requires_grad_()
    (x64 * torch.sigmoid(x64)).sum().backward()
    close(x.grad.double(), x64.grad, 1e-5)


def test_compile_in_place_buffer():
    src = """
__global__ void scale_add(float* acc, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) acc[i] = acc[i] * x[i] + 1.0f;
}
"""
    k = kad.cuda.differentiable(src, "scale_add", inputs=["acc", "x"], outputs=["acc"])
    n = 40

    def f(a, x):
        acc = a * 2
        k[1, 64](acc, x, n)
        return acc
    a0, x0, d = randn(n), randn(n), randn(n)
    with kad.f64_mode():
        a, x = a0.clone().requires_grad_(), x0.clone().requires_grad_()
        out = torch.compile(f, fullgraph=True)(a, x)
        got = torch.autograd.grad(out, (a, x), d)
    a, x = a0.clone().requires_grad_(), x0.clone().requires_grad_()
    want = torch.autograd.grad(a * 2 * x + 1, (a, x), d)
    close(out.detach(), (a0 * 2 * x0 + 1))
    for u, w in zip(got, want):
        close(u, w)


def test_compile_refuses_undeclared_store():
    src = """
__global__ void scale_note(const float* x, float* y, float* first, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.0f * x[i];
    if (i == 0) first[0] = x[0];
}
"""
    k = kad.cuda.differentiable(src, "scale_note", inputs=["x"], outputs=["y"])

    def f(x):
        y, first = torch.empty_like(x), torch.zeros(1, dtype=x.dtype)
        k[1, 64](x, y, first, x.numel())
        return y
    with kad.f64_mode(), pytest.raises(Exception, match=r"stores through 'first'.*add 'first' to outputs"):
        torch.compile(f, fullgraph=True)(randn(20).requires_grad_())


# ---- torch.func and forward mode ----

def test_func_grad_vjp_jacrev_layernorm():
    k = layernorm()
    f = ln_call(k)
    x, g, b = ln_args()
    dy = randn(R, C)
    with kad.f64_mode():
        got = torch.func.grad(lambda x, g, b: (f(x, g, b) * dy).sum(), argnums=(0, 1, 2))(x, g, b)
        out, vjp = torch.func.vjp(f, x, g, b)
        got_v = vjp(dy)
        jac = torch.func.jacrev(lambda g: f(x, g, b))(g)
    want = torch.func.grad(lambda x, g, b: (ln_ref(x, g, b) * dy).sum(), argnums=(0, 1, 2))(x, g, b)
    close(out, ln_ref(x, g, b), 1e-8)
    for u, v, w in zip(got, got_v, want):
        close(u, w, 1e-8)
        close(v, w, 1e-8)
    close(jac, torch.func.jacrev(lambda g: ln_ref(x, g, b))(g), 1e-8)


def test_func_jvp_jacfwd_and_forward_ad():
    k = softmax()
    f = sm_call(k)
    x, t = randn(3, 50), randn(3, 50)
    with kad.f64_mode():
        out, tan = torch.func.jvp(f, (x,), (t,))
        jac = torch.func.jacfwd(f)(x[:1])
        import torch.autograd.forward_ad as fwAD
        with fwAD.dual_level():
            y = f(fwAD.make_dual(x, t))
            tan2 = fwAD.unpack_dual(y).tangent
    ref_out, ref_tan = torch.func.jvp(lambda x: torch.softmax(x, 1), (x,), (t,))
    close(out, ref_out)
    close(tan, ref_tan)
    close(tan2, ref_tan)
    close(jac, torch.func.jacfwd(lambda x: torch.softmax(x, 1))(x[:1]))


def test_func_jvp_in_place_buffer():
    # the tangent of a buffer updated in place: the old value's tangent in, the new value's out
    k = kad.cuda.differentiable(HEAD.replace("const float* x, float* y", "float* y")
                                .replace("y[i] = x[i] * x[i]", "y[i] = y[i] * y[i]"), "sq_head",
                                inputs=["y"], outputs=["y"])
    n, m = 10, 6

    def f(y0):
        y = y0.clone()
        k[1, 32](y, m)
        return y

    def ref(y0):
        return torch.cat([y0[:m] ** 2, y0[m:]])
    y0, t = randn(n), randn(n)
    with kad.f64_mode():
        out, tan = torch.func.jvp(f, (y0,), (t,))
        g = torch.func.grad(lambda y: (f(y) * t).sum())(y0)
    close(out, ref(y0))
    close(tan, torch.func.jvp(ref, (y0,), (t,))[1])
    close(g, torch.func.grad(lambda y: (ref(y) * t).sum())(y0))


# ---- second derivatives ----

@pytest.mark.parametrize("which", ["square", "layernorm", "softmax"])
def test_gradgradcheck(which):
    if which == "square":
        k = square()

        def f(x):
            y = torch.empty_like(x)
            k[2, 64](x, y, x.numel())
            return y
        args = (randn(100).requires_grad_(),)
    elif which == "layernorm":
        f = ln_call(layernorm())
        args = tuple(t.requires_grad_() for t in ln_args())
    else:
        f = sm_call(softmax())
        args = (randn(2, 40).requires_grad_(),)
    with kad.f64_mode():
        assert torch.autograd.gradcheck(f, args)
        assert torch.autograd.gradgradcheck(f, args)


def test_gradient_of_gradient_against_torch():
    f = ln_call(layernorm())
    x0, g0, b0 = ln_args()
    dy, v = randn(R, C), randn(R, C)

    def hvp(fn):
        x, g, b = [t.clone().requires_grad_() for t in (x0, g0, b0)]
        gx, = torch.autograd.grad((fn(x, g, b) * dy).sum(), x, create_graph=True)
        return torch.autograd.grad((gx * v).sum(), (x, g))
    with kad.f64_mode():
        got = hvp(f)
    for u, w in zip(got, hvp(ln_ref)):
        close(u, w, 1e-8)


def test_second_derivative_refusals():
    k = square()
    x = randn(20).requires_grad_()
    with kad.f64_mode():
        # in place: refused
        src = HEAD.replace("const float* x, float* y", "float* y").replace("x[i] * x[i]", "y[i] * y[i]")
        kin = kad.cuda.differentiable(src, "sq_head", inputs=["y"], outputs=["y"])
        y = x * 1
        kin[1, 32](y, 20)
        with pytest.raises(RuntimeError, match="outputs updated in place"):
            torch.autograd.grad(y.sum(), x, create_graph=True)
        # third derivatives: refused
        y = torch.empty_like(x)
        k[1, 32](x, y, 20)
        gx, = torch.autograd.grad(y.sum(), x, create_graph=True)
        gg, = torch.autograd.grad((gx * gx).sum(), x, retain_graph=True)
        close(gg, 8 * x.detach())  # d/dx sum((2x)^2)
        with pytest.raises(RuntimeError, match="third derivatives"):
            torch.autograd.grad((gx * gx).sum(), x, create_graph=True)
        # torch.func's grad of grad: kad's operators are not twice differentiable there
        def f(x):
            y = torch.empty_like(x)
            k[1, 32](x, y, 20)
            return y.sum()
        with pytest.raises(RuntimeError, match="second derivatives are not supported yet under torch.func"):
            torch.func.grad(lambda x: torch.func.grad(f)(x).sum())(x.detach())
