// RUN: ir %s:k --block 32
// An angle-bracket include of a library kad does not know, and cannot find: refused, located.
#include <my_lib/helpers.h>
__global__ void k(float *y) { y[threadIdx.x] = 0.0f; }
