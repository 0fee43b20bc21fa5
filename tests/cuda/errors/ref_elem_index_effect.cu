// RUN: ir %s:k --block 32
// The index of an element bound to a reference must not change anything (it is evaluated again
// for the copy-back): refused at the index.
__device__ void set1(float &y) { y = 1.0f; }
__global__ void k(float *y) { int i = threadIdx.x; set1(y[i++]); }
