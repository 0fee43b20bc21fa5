// scan along a row per thread with a running max (cummax) and a do/while
__global__ void cummax_rows(const float* x, float* y, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows) return;
    float m = x[r * cols];
    int c = 0;
    do {
        m = fmaxf(m, x[r * cols + c]);
        y[r * cols + c] = m;
        ++c;
    } while (c < cols);
}
