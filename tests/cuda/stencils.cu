// RUN: check %s:blur1d --block 64 --wrt x --out y --grid 3 --shape x=150 --shape y=150 --arg n=150
// RUN: check %s:lap5 --block 8,4 --wrt u --out out --grid 3,4 --shape u=13x21 --shape out=13x21 --arg H=13 --arg W=21
// RUN: check %s:lap5 --block 8,4 --wrt u --out out --grid 2,2 --shape u=13x21 --shape out=13x21 --arg H=13 --arg W=21
// Two stencils whose input gradients are gathers (docs/AD.md, "Gather"): a 1-D blur with the
// neighbours taken under `?:`, and a 5-point Laplacian on a 2-D grid of 2-D blocks that skips the
// border with an early `return` and indexes through a size_t. Each tap's mask holds at its own
// position only, so that the gather kernel's stores are distinct elements follows from the hull
// of the taps' masks (what every tap's mask implies: 0 <= column < W), not from one common test.
__global__ void blur1d(const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float l = i > 0 ? x[i - 1] : 0.0f;
    float r = i + 1 < n ? x[i + 1] : 0.0f;
    y[i] = 0.25f * l + 0.5f * x[i] + 0.25f * r;
}

__global__ void lap5(const float* __restrict__ u, float* __restrict__ out, int H, int W)
{
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const int r = blockIdx.y * blockDim.y + threadIdx.y;
    if (r < 1 || c < 1 || r >= H - 1 || c >= W - 1)
        return;
    const size_t idx = (size_t)r * W + c;
    out[idx] = u[idx - W] + u[idx + W] + u[idx - 1] + u[idx + 1] - 4.0f * u[idx];
}
