// RUN: ir %s:k --block 32
// kad reads one file: an include of the kernel's own header is refused, located.
#include <cuda_runtime.h>
#include "my_helpers.cuh"
__global__ void k(float* y) { y[threadIdx.x] = 0.0f; }
