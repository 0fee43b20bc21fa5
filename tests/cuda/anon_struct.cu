// RUN: ir %s:k --block 32
// Anonymous structs at file scope, one declaring a variable (host data): skipped, not a crash
// (the fuzzer's find of 2026-12-03: a struct without a name was compared by name).
struct { float a; };
struct { int b; } g;
__global__ void k(float* x) { x[threadIdx.x] = 1.0f; }
