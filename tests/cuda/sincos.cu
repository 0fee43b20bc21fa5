// RUN: check %s:polar --block 64 --wrt th,r --out xy --grid 2 --shape th=100 --shape r=100 --shape xy=200 --arg n=100
// RUN: check %s:sc_ptr --block 64 --wrt th --out s,c --grid 2 --shape th=100 --shape s=100 --shape c=100 --arg n=100
// sincos / sincosf: the sine and cosine stored through two pointers, to locals (&s) or to global
// memory (s + i, &c[i]).
__global__ void polar(const double* __restrict__ th, const double* __restrict__ r, double* __restrict__ xy, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        double s, c;
        sincos(th[i], &s, &c);
        xy[2 * i] = r[i] * c;
        xy[2 * i + 1] = r[i] * s;
    }
}

__global__ void sc_ptr(const float* __restrict__ th, float* __restrict__ s, float* __restrict__ c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        sincosf(2.f * th[i], s + i, &c[i]);
}
