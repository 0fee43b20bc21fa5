// RUN: check %s:k --block 32 --wrt x --out y --grid 1 --shape x=32 --shape y=32
// A reference to an output's element that the callee writes only on some paths: the copy-in reads
// the output where it is not written, which kad's AD refuses (a differentiated output is
// only written), located at the argument.
__device__ void maybe(float v, float &out) { if (v > 0.0f) out = v * v; }
__global__ void k(const float *x, float *y) { maybe(x[threadIdx.x], y[threadIdx.x]); }
