# A name bound only by host code at import time (`if torch.version.hip: ...`)
# cannot be read from source: the CLI reports it where the kernel uses it.
# RUN: ir tests/pkgs/kadpkg/ops/kernels.py:mod_kernel --sig 'x_ptr=*fp32,out_ptr=*fp32,n=i32,BLOCK=64'
