// RUN: ir %s:k --block 32
// A file-scope constant whose value kad cannot compute (a host function): unused, it is no error;
// the kernel that reads it is told why.
float compute_scale(int n) { return 1.0f / n; }
constexpr float kUnused = compute_scale(2);
constexpr float kScale = compute_scale(3);
__global__ void k(float* x) { x[threadIdx.x] *= kScale; }
