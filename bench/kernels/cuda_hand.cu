// Hand-written CUDA C forward/backward kernels: bench/cuda.py's "hand" peers of kad's generated
// backwards (docs/BENCHMARKS.md, "CUDA C kernels").  Written the way a careful author writes an
// extension's pair: one pass over memory where one suffices, each element read and written once,
// float accumulation, reductions in shared memory with __syncthreads() between steps.  They stay
// inside the CUDA C subset kad's front end reads, so that on CPU tensors they run on kad's
// interpreter (bench/cuda.py --device cpu; test_bench_cuda.py checks them against torch there).
#include <cuda_runtime.h>
#include <math.h>

// ---- Swish y = x * sigmoid(x): grid-stride loops, the sigmoid recomputed in the backward ----

__global__ void swish_fwd(const float* __restrict__ x, float* __restrict__ y, int n)
{
    const int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        float s = 1.0f / (1.0f + expf(-v));
        y[i] = v * s;
    }
}

// dx = dy * (s + x * s * (1 - s)), s = sigmoid(x)
__global__ void swish_bwd(const float* __restrict__ x, const float* __restrict__ dy, float* __restrict__ dx, int n)
{
    const int stride = blockDim.x * gridDim.x;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float v = x[i];
        float s = 1.0f / (1.0f + expf(-v));
        dx[i] = dy[i] * (s + v * s * (1.0f - s));
    }
}

// ---- 3x3 box filter (tests/cuda/box3x3.cu's forward): two backwards ----

// scatter: each output pixel adds dy / count into its taps' gradients (atomics; dx zero-filled first)
__global__ void box3x3_bwd_scatter(const float* __restrict__ dy, float* __restrict__ dx, int H, int W)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H)
        return;
    int count = 0;
    for (int oy = -1; oy <= 1; ++oy)
        for (int ox = -1; ox <= 1; ++ox) {
            int xx = x + ox, yy = y + oy;
            if (xx >= 0 && xx < W && yy >= 0 && yy < H)
                count++;
        }
    float g = dy[y * W + x] / count;
    for (int oy = -1; oy <= 1; ++oy)
        for (int ox = -1; ox <= 1; ++ox) {
            int xx = x + ox, yy = y + oy;
            if (xx >= 0 && xx < W && yy >= 0 && yy < H)
                atomicAdd(&dx[yy * W + xx], g);
        }
}

// gather: each input pixel sums dy / count over the output pixels that read it (no atomics, a
// fixed order: deterministic); count of a pixel = its in-image taps, (rows in) x (columns in)
__global__ void box3x3_bwd_gather(const float* __restrict__ dy, float* __restrict__ dx, int H, int W)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= W || y >= H)
        return;
    float sum = 0.0f;
    for (int oy = -1; oy <= 1; ++oy)
        for (int ox = -1; ox <= 1; ++ox) {
            int xx = x + ox, yy = y + oy;
            if (xx < 0 || xx >= W || yy < 0 || yy >= H)
                continue;
            int rows = 3 - (yy == 0) - (yy == H - 1);
            int cols = 3 - (xx == 0) - (xx == W - 1);
            sum += dy[yy * W + xx] / (rows * cols);
        }
    dx[y * W + x] = sum;
}

// ---- row softmax (tests/cuda/softmax_rows.cu's forward): dx = y * (dy - sum(dy * y)) ----

template <int BLOCK>
__global__ void softmax_rows_bwd(const float* __restrict__ y, const float* __restrict__ dy,
                                 float* __restrict__ dx, int ncols)
{
    __shared__ float red[BLOCK];
    const int tid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * ncols;
    float s = 0.0f;
    for (int c = tid; c < ncols; c += BLOCK)
        s += dy[base + c] * y[base + c];
    red[tid] = s;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (tid < k)
            red[tid] += red[tid + k];
        __syncthreads();
    }
    const float dot = red[0];
    for (int c = tid; c < ncols; c += BLOCK)
        dx[base + c] = y[base + c] * (dy[base + c] - dot);
}

// ---- LayerNorm (tests/cuda/layernorm_warp.cu's forward): one block per row ----

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma; the row's dgamma and dbeta
// terms into per-row partials (summed over rows by layernorm_bwd_cols: no atomics)
template <int BLOCK>
__global__ void layernorm_bwd_rows(const float* __restrict__ x, const float* __restrict__ gamma,
                                   const float* __restrict__ dy, float* __restrict__ dx,
                                   float* __restrict__ pgamma, float* __restrict__ pbeta, int n, float eps)
{
    __shared__ float ra[BLOCK];
    __shared__ float rb[BLOCK];
    const int tid = threadIdx.x;
    const size_t base = (size_t)blockIdx.x * n;
    float s = 0.0f;
    for (int c = tid; c < n; c += BLOCK)
        s += x[base + c];
    ra[tid] = s;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (tid < k)
            ra[tid] += ra[tid + k];
        __syncthreads();
    }
    const float mean = ra[0] / n;
    __syncthreads();
    float q = 0.0f;
    for (int c = tid; c < n; c += BLOCK) {
        float d = x[base + c] - mean;
        q += d * d;
    }
    ra[tid] = q;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (tid < k)
            ra[tid] += ra[tid + k];
        __syncthreads();
    }
    const float rstd = rsqrtf(ra[0] / n + eps);
    __syncthreads();
    float sg = 0.0f, sgx = 0.0f;
    for (int c = tid; c < n; c += BLOCK) {
        float xhat = (x[base + c] - mean) * rstd;
        float g = dy[base + c] * gamma[c];
        sg += g;
        sgx += g * xhat;
        pgamma[base + c] = dy[base + c] * xhat;
        pbeta[base + c] = dy[base + c];
    }
    ra[tid] = sg;
    rb[tid] = sgx;
    __syncthreads();
    for (int k = BLOCK / 2; k > 0; k >>= 1) {
        if (tid < k) {
            ra[tid] += ra[tid + k];
            rb[tid] += rb[tid + k];
        }
        __syncthreads();
    }
    const float mg = ra[0] / n, mgx = rb[0] / n;
    for (int c = tid; c < n; c += BLOCK) {
        float xhat = (x[base + c] - mean) * rstd;
        dx[base + c] = rstd * (dy[base + c] * gamma[c] - mg - xhat * mgx);
    }
}

// dgamma[c] = sum over rows of pgamma[r, c], likewise dbeta: one thread per column, rows in order
__global__ void layernorm_bwd_cols(const float* __restrict__ pgamma, const float* __restrict__ pbeta,
                                   float* __restrict__ dgamma, float* __restrict__ dbeta, int rows, int n)
{
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n)
        return;
    float sg = 0.0f, sb = 0.0f;
    for (int r = 0; r < rows; r++) {
        sg += pgamma[(size_t)r * n + c];
        sb += pbeta[(size_t)r * n + c];
    }
    dgamma[c] = sg;
    dbeta[c] = sb;
}
