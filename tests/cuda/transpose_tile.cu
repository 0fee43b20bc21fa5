// RUN: check %s:transpose --block 16,16 --wrt in --out out --grid 2,3 --shape in=40x27 --shape out=27x40 --arg rows=40 --arg cols=27
// RUN: check %s:first_negative --block 32 --wrt x --out y --grid 2 --shape x=40x6 --shape y=40 --arg n=40 --arg K=6
// A tiled transpose through a padded two-dimensional __shared__ array (each thread writes its own
// element, reads another's after the barrier), and a per-thread loop that leaves early with
// `break` (the lane leaves the mask until the loop ends).
#define TILE 16

__global__ void transpose(const float* __restrict__ in, float* __restrict__ out, int rows, int cols)
{
    __shared__ float tile[TILE][TILE + 1];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
    if (x < cols && y < rows)
        tile[threadIdx.y][threadIdx.x] = in[y * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;
    y = blockIdx.x * TILE + threadIdx.y;
    if (x < rows && y < cols)
        out[y * rows + x] = tile[threadIdx.x][threadIdx.y];
}

__global__ void first_negative(const float* __restrict__ x, float* __restrict__ y, int n, int K)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float acc = 0.0f;
    for (int k = 0; k < K; k++) {
        float v = x[i * K + k];
        if (v < -0.5f)
            break;
        acc += v * v;
    }
    y[i] = acc;
}
