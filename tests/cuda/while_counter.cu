// RUN: check %s:prefix_until_neg --block 32 --wrt x --out y --grid 1 --shape x=20x8 --shape y=20 --arg rows=20 --arg cols=8
// A per-thread while loop with a data-dependent break: the counter c advances only in the threads
// still running, so it is no affine function of the iteration; the reverse sweep reads it back from
// the tape (recorded as a float64, exact for an int) with acc's masks.
__global__ void prefix_until_neg(const float* x, float* y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float acc = 0.f;
    int c = 0;
    while (c < cols) {
        float v = x[r * cols + c];
        if (v < 0.f) break;
        acc += v * v;
        c++;
    }
    y[r] = acc;
}
