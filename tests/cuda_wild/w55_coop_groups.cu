// RMSNorm with cooperative groups, as newer extension code writes it: the block and its warps as
// groups (cg::this_thread_block, cg::tiled_partition<32>), a device function taking the tile by
// const reference and reducing with tile.shfl_xor, the warps' partials through __shared__ memory
// indexed by meta_group_rank, block.sync(), and cg::reduce with cg::greater for the row's largest
// magnitude.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

__device__ float tile_sum(const cg::thread_block_tile<32>& t, float v)
{
    for (int o = t.size() / 2; o > 0; o /= 2)
        v += t.shfl_xor(v, o);
    return v;
}

__global__ void rms_cg(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y, int n)
{
    auto block = cg::this_thread_block();
    auto warp = cg::tiled_partition<32>(block);
    __shared__ float part[2];
    const float* xr = x + blockIdx.x * n;
    float s = 0.f;
    for (int c = block.thread_rank(); c < n; c += block.size())
        s += xr[c] * xr[c];
    s = tile_sum(warp, s);
    if (warp.thread_rank() == 0)
        part[warp.meta_group_rank()] = s;
    block.sync();
    const float tot = part[0] + part[1];
    const float mx = cg::reduce(warp, fabsf(xr[threadIdx.x % n]), cg::greater<float>());
    const float r = rsqrtf(tot / n + 1e-5f);
    for (int c = block.thread_rank(); c < n; c += block.size())
        y[blockIdx.x * n + c] = xr[c] * r * w[c] + 0.01f * mx;
}
