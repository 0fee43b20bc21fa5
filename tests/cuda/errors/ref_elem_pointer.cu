// RUN: ir %s:k --block 32
// A reference to an element of memory is copied in and back; the callee also has the pointer, so
// it could reach the element without the reference: refused, located at the pointer argument.
__device__ void bump(const float *x, float &y) { y = x[0] + 1.0f; }
__global__ void k(const float *x, float *y) { bump(x, y[threadIdx.x]); }
