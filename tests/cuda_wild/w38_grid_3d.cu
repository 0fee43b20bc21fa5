__global__ void add3d(const float* a, const float* b, float* c, int X, int Y, int Z)
{
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y;
    int z = blockIdx.z;
    if (x < X && y < Y && z < Z) {
        int idx = (z * Y + y) * X + x;
        c[idx] = a[idx] * b[idx] + __sinf(a[idx]);
    }
}
