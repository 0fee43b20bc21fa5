// RUN: ir %s:k --block 32
// A quoted #include whose string is not closed (the fuzzer's crash of 2026-12-03: the name's
// length was taken as the string's minus its two quotes).
#include "
__global__ void k(float* x) { x[threadIdx.x] = 0.0f; }
