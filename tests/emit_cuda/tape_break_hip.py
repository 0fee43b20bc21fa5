# A tape of a loop with a break, in HIP's spelling (hipMallocAsync, hipFreeAsync).
# RUN: grad tests/cuda/transpose_tile.cu:first_negative --block 32 --wrt x --out y --emit hip
