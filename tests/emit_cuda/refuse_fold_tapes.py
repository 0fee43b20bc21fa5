# A backward whose plan folds the grid and also tapes loops (the LayerNorm's warp-shuffle loops)
# is refused by the CUDA C launcher, naming the missing piece.
# RUN: grad tests/cuda/layernorm_warp.cu:layernorm --sig BLOCK=64 --block 64 --wrt x,gamma,beta --out y --emit cuda
