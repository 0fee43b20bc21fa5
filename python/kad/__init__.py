"""kad: differentiating Triton kernels.  For now only the C library's binding.

    import kad
    ctx = kad.Context()
    ctx.add_source("softmax.py", open("softmax.py").read())
    k = ctx.specialize("softmax_kernel", "x_ptr=*fp32,...,BLOCK=128")
    k.run((n_rows,), {...}, mode="f64")
"""
from ._capi import Context, KadError, Kernel, library_path, version

__all__ = ["Context", "KadError", "Kernel", "library_path", "version"]
