# The 3x3 box filter (a CUDA C source, 2-D blocks): its input gradient as a gather kernel,
# box3x3_bwd_gather_in, on the forward's grid plus two blocks along x and y: each thread sums, in a
# fixed order, the 9 taps that read its pixel (recomputed at the neighbours' positions) and stores
# once; no atomics, no partials. The backward kernel itself runs only when the flag is false, its
# taps then added with atomicAdd.
# RUN: grad tests/cuda/box3x3.cu:box3x3 --block 8,4 --wrt in --out out --emit cuda
