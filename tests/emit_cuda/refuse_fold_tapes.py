# The LayerNorm's backward (its plan folds the grid and tapes the warp-shuffle loops) writes the
# warps' partials back at an index that is not the thread's own: a [2, 1] tile, which the CUDA C
# emitter refuses, naming the value and the line.
# RUN: grad tests/cuda/layernorm_warp.cu:layernorm --sig BLOCK=64 --block 64 --wrt x,gamma,beta --out y --emit cuda
