# A backward that reads and clears its output gradient (Program.cleared, STEP_COPY): the launcher
# takes d_y_numel, runs the kernel on a private copy of d_y (cudaMallocAsync, cudaMemcpyAsync) and
# frees it after the launch; the caller's d_y is kept.
# RUN: grad tests/cuda/float4_lanes.cu:scale_sq4 --block 64 --wrt x --out y --emit cuda
