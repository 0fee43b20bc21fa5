// RUN: ir %s:k --block 32
// A struct with a constructor and a tensor member is host code; a kernel that takes it is refused
// where it names it, saying which member.
#include <torch/extension.h>
struct Spec {
    torch::Tensor t;
    Spec(torch::Tensor x) : t(x) {}
};
__global__ void k(Spec s, float *y) { y[threadIdx.x] = 0.0f; }
