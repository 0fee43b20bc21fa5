# RUN: ir %s:k --sig 'x_ptr=*fp32'
import triton
import triton.language as tl
from mylib import helper
import numpy as np


@triton.jit
def k(x_ptr):
    tl.store(x_ptr, helper(1.0) + np.pi)
