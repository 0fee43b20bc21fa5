# RUN: ast %s
# Imports bind aliases to qualified names.  Inside module-level if/try blocks
# only imports are collected and the first binding of an alias wins; an
# unconditional rebinding replaces the earlier one.
import os, sys as system
import triton
import triton.language as tl
import numpy.linalg
from triton import cdiv as ceil_div, next_power_of_2
from triton.language.math import (rsqrt,
                                  exp2 as fast_exp2,)
from .utils import helper
from .. import sibling
from ...pkg.mod import thing
from torch import *
try:
    from triton.language.extra.cuda import libdevice
except ImportError:
    from triton.language.extra import libdevice
    IGNORED = 1
if triton.__version__ >= "3.0":
    from triton.language.extra.cuda import libdevice as ld
    import math
else:
    from triton.language.extra import libdevice as ld
import numpy as np
import torch as np
