// RUN: ir %s:k --block 32
// A quoted include is read relative to this file; one that is not there is refused, located.
#include <cuda_runtime.h>
#include "my_helpers.cuh"
__global__ void k(float* y) { y[threadIdx.x] = 0.0f; }
