// RUN: check %s:ew3 --block 4,2,2 --wrt a --out out --grid 2,3,3 --shape a=5x6x7 --shape out=5x6x7 --arg D=5 --arg H=6 --arg W=7
// RUN: check %s:vol3 --block 4,2,2 --wrt a,b --out out --grid 2,3,3 --shape a=5x6x7 --shape b=5x6x7 --shape out=5x6x7 --arg D=5 --arg H=6 --arg W=7
// RUN: check %s:vol3 --block 4,2,2 --wrt a,b --out out --grid 1,2,2 --shape a=5x6x7 --shape b=5x6x7 --shape out=5x6x7 --arg D=5 --arg H=6 --arg W=7
// RUN: check %s:zsmooth --block 4,2,2 --wrt a --out out --grid 2,3,3 --shape a=5x6x7 --shape out=5x6x7 --arg D=5 --arg H=6 --arg W=7
// RUN: check %s:zsmooth --block 4,2,2 --wrt a --out out --grid 1,2,2 --shape a=5x6x7 --shape out=5x6x7 --arg D=5 --arg H=6 --arg W=7
// Kernels on 3-D blocks: threadIdx.x, .y and .z are the digits tid % BX, (tid / BX) % BY and
// (tid / BX) / BY of one thread index, which the access analysis reads as an injective split (a
// pair q % BY, q / BY gives q = tid / BX, and q with tid % BX gives tid): plain stores where the
// blocks tile the volume, site rows for the central difference along z, and a gather kernel for
// the smoothing along z with `continue` (its positions: x, y and z, digits of the thread index).
__global__ void ew3(const float* a, float* out, int D, int H, int W)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= W || y >= H || z >= D)
        return;
    int i = (z * H + y) * W + x;
    out[i] = sinf(a[i]) * a[i];
}

__global__ void vol3(const float* a, const float* b, float* out, int D, int H, int W)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= W || y >= H || z >= D)
        return;
    int i = (z * H + y) * W + x;
    float up = z + 1 < D ? a[i + H * W] : 0.f;
    float dn = z > 0 ? a[i - H * W] : 0.f;
    out[i] = b[i] * (up - dn) + sinf(a[i]);
}

__global__ void zsmooth(const float* a, float* out, int D, int H, int W)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    int z = blockIdx.z * blockDim.z + threadIdx.z;
    if (x >= W || y >= H || z >= D)
        return;
    float s = 0.f;
    for (int dz = -1; dz <= 1; dz++) {
        int zz = z + dz;
        if (zz < 0 || zz >= D)
            continue;
        s += a[(zz * H + y) * W + x];
    }
    out[(z * H + y) * W + x] = s * s;
}
