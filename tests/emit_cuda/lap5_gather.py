# The 5-point Laplacian of tests/cuda/stencils.cu (2-D blocks, an early return at the border, a
# size_t index): its input gradient as a gather kernel whose stores are distinct for every launch
# with one program along z (the hull of the taps' masks bounds the column), the backward kernel
# not launched when the gather's flag holds.
# RUN: grad tests/cuda/stencils.cu:lap5 --block 16,16 --wrt u --out out --emit cuda
