# A backward that accumulates with atomicAdd on every launch (no plain-store flag: every program
# reads x[0]): the module's header says its results are not bitwise deterministic.
# RUN: grad tests/cuda/uniform_if.cu:uniform_scale --block 64 --wrt x --out y --emit cuda
