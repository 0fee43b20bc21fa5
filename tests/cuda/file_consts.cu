// RUN: ir %s:k --block 32
// File-scope constants computed with division and remainder (lowered before the kernel's mask
// exists: the fuzzer's find of 2026-12-03).
const int a = 7;
const int b = a / 2 + 5 % 3;
const float c = 1.0f / 3;
__global__ void k(float* x) { x[threadIdx.x] = b * c; }
