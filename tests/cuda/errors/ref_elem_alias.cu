// RUN: check %s:k --block 32 --wrt x --out y --grid 1 --shape x=32 --shape y=64 --arg o=0
// Two references to elements of one array: they must be two elements (aliases would see each
// other's writes, kad's copies do not). With o=0 they are one: the forward's assert says so.
__device__ void pair(float v, float &a, float &b) { a = v; b = 2.0f * v; }
__global__ void k(const float *x, float *y, int o)
{
    int i = threadIdx.x;
    pair(x[i], y[2 * i], y[2 * i + o]);
}
