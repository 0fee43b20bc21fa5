// a per-thread switch with fallthrough, break, default, and a continue of the enclosing loop
__global__ void k(const float* x, const int* mode, float* y, int n, int reps)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i], acc = 0.f;
    for (int r = 0; r < reps; r++) {
        switch (mode[i] % 4) {
        case 0:
            acc += v;          // falls through
        case 1:
            acc += v * v;
            break;
        case 2:
            if (v > 0.f) continue;
            acc -= sinf(v);
            break;
        default:
            acc += 2.f * v;
        }
        acc *= 0.5f;
    }
    y[i] = acc;
}
