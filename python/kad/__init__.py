"""kad: differentiating Triton kernels.

PyTorch users need one decorator (docs/PYTHON.md):

    import kad, triton, triton.language as tl

    @kad.differentiable(inputs=["x_ptr", "w_ptr"], outputs=["y_ptr"])
    @triton.jit
    def rmsnorm(x_ptr, w_ptr, y_ptr, stride, n_cols, eps, BLOCK: tl.constexpr): ...

    rmsnorm[(M,)](x, w, y, x.stride(0), N, 1e-6, BLOCK=1024)   # same launch as before
    y.sum().backward()                                           # x.grad, w.grad

    kad.backward_source(rmsnorm, (M,), x, w, y, ...)             # the generated Triton backward
    kad.check_backward(rmsnorm, (M,), args, my_backward)         # debug a hand-written one
    print(kad.audit(rmsnorm, (M,), x, w, y, ...))                # nondeterminism / batch variance
    kad.backward(rmsnorm, (M,), x, w, y, ..., grads={"y_ptr": dy})  # {"x_ptr": dx, "w_ptr": dw}

Custom derivatives of @triton.jit helpers live in a rules file the kernel
never imports (kad.vjp_of, kad.nondiff; docs/AD.md "Custom derivatives").

CUDA C / HIP kernels: kad.cuda.differentiable(path_or_text, kernel, inputs=[...],
outputs=[...]) launched as k[grid, block](*args) (docs/PYTHON.md, "CUDA C / HIP kernels").

CPU tensors run on kad's C interpreter, CUDA tensors with Triton.  The C
library's own binding (Context, Kernel) is here too:

    ctx = kad.Context()
    ctx.add_source("softmax.py", open("softmax.py").read())
    k = ctx.specialize("softmax_kernel", "x_ptr=*fp32,...,BLOCK=128")
    k.run((n_rows,), {...}, mode="f64")
"""
from ._capi import Context, KadError, Kernel, Pointer, library_path, version

from .rules import jvp_of, nondiff, vjp_of

__all__ = ["Context", "KadError", "Kernel", "Pointer", "library_path", "version", "differentiable",
           "backward_source", "check_backward", "cache_dir", "f64_mode", "audit", "__version__",
           "vjp_of", "jvp_of", "nondiff", "backward", "cuda"]

# kad.__version__ is the loaded C library's version (KAD_VERSION in include/kad.h, which
# python/setup.py also reads for the package metadata): one source of truth.  It is looked
# up on first use, so that `import kad` does not load the library.
__version__: str


# What kad.differentiable and the rest of the PyTorch layer say when torch or triton is missing:
# the tested CPU versions (README.md, "Install"; with CUDA, torch's own install instructions).
_INSTALL_TORCH = ("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu\n"
                 "    pip install triton==3.6.0")


def _torch_layer(module: str, name: str):
    """kad.<name> from the PyTorch layer's module (imported on first use), or a
    ModuleNotFoundError that says what to install when torch or triton is missing."""
    import importlib
    try:
        mod = importlib.import_module(f".{module}", __name__)
    except ModuleNotFoundError as e:
        if e.name not in ("torch", "triton"):
            raise
        raise ModuleNotFoundError(
            f"kad.{name} needs torch and triton, and {e.name} is not installed ({e}). The versions kad is "
            f"tested with, on a CPU machine:\n    {_INSTALL_TORCH}\n(or pip install \"./python[torch]\" from a "
            f"kad checkout; with CUDA, torch's own instructions). kad.Context and kad.Kernel need numpy "
            f"alone.", name=e.name) from e
    return getattr(mod, name)


def __getattr__(name: str):
    if name == "__version__":
        return version()
    # The PyTorch layer is imported on first use: the C binding alone needs
    # only numpy, and `import kad` stays cheap for the tests that use it.
    if name in ("differentiable", "cache_dir", "DifferentiableKernel", "f64_mode"):
        return _torch_layer("autograd", name)
    if name == "cuda":  # kad.cuda: CUDA C / HIP kernels as autograd ops (imported on first use)
        import importlib
        try:
            return importlib.import_module(".cuda", __name__)
        except ModuleNotFoundError as e:
            if e.name != "torch":
                raise
            return _torch_layer("cuda", "differentiable") and None
    if name in ("backward_source", "check_backward", "BackwardReport", "audit", "AuditReport", "AuditFinding",
                "backward"):
        return _torch_layer("check", name)
    raise AttributeError(f"module 'kad' has no attribute {name!r}")
