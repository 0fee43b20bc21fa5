# The same private copy of the output gradient in HIP's spelling (hipMallocAsync, hipMemcpyAsync,
# hipFreeAsync).
# RUN: grad tests/cuda/float4_lanes.cu:scale_sq4 --block 64 --wrt x --out y --emit hip
