// Warp votes and bit counts: __ballot_sync's word, its __popc, __any_sync/__all_sync, and a
// __shfl_sync broadcast of lane 0, every thread of the block voting (the out-of-range threads with
// a zero).
__global__ void vote(const float* __restrict__ x, float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.f;
    unsigned pos = __ballot_sync(0xffffffffu, v > 0.f);
    int big = __any_sync(0xffffffffu, v > 1.5f);
    int ok = __all_sync(0xffffffffu, v > -2.5f);
    float first = __shfl_sync(0xffffffffu, v, 0);
    if (i < n)
        y[i] = v * (float)__popc(pos) + (float)big + 2.0f * (float)ok + first * v;
}
