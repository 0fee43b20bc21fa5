// RUN: check %s:k --block 96 --wrt x --out y --grid 2 --shape x=300 --shape y=300 --arg cols=300
// A grid-stride loop with a block that is no power of two (96 threads: 128 lanes, 32 masked off):
// the trip count's division keeps the masked lanes' divisor nonzero, which makes it a tile, and
// its maximum over the lanes bounds the loop (an IR verifier error before 2026-12-03).
__global__ void k(const float* x, float* y, int cols)
{
    for (int c = blockIdx.x * 96 + threadIdx.x; c < cols; c += gridDim.x * 96)
        y[c] = x[c] * 2.f;
}
