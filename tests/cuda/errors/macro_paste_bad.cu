// RUN: ir %s:k --block 32
// '##' must make one token: '+' pasted to 'y' makes two.
#define JOIN(a, b) a##b
__global__ void k(float *y) { float v = 1.0f JOIN(+, y)[0]; y[threadIdx.x] = v; }
