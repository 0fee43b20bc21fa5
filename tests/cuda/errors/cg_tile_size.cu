// RUN: ir %s:k --block 64
// A cooperative-groups tile kad does not model (48 threads: not a power of two), and a shuffle
// asked of the whole block instead of a tile: both refused, located.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void k(const float* x, float* y)
{
    auto block = cg::this_thread_block();
    auto t48 = cg::tiled_partition<48>(block);
    float v = block.shfl_down(x[threadIdx.x], 1);
    y[threadIdx.x] = v;
}
