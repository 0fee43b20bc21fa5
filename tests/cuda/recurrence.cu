// RUN: ir %s:recurrence --block 64
// RUN: check %s:recurrence --block 64 --wrt x,w --out h --grid 2 --shape x=7x100 --shape w=100 --shape h=7x100 --arg T=7 --arg N=100
// RUN: check %s:recurrence --block 64 --wrt x,w --out h --grid 3 --shape x=7x30 --shape w=30 --shape h=7x30 --arg T=7 --arg N=30
// A per-thread recurrence over time with a runtime trip count: each thread runs its own
// h_t = tanh(w * h_{t-1} + x_t); the loop's bounds are the same in every thread (an IR `for`
// carrying the per-thread state), its backward a taped loop running backwards.
__global__ void recurrence(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ h,
                           int T, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= N)
        return;
    float a = w[i];
    float s = 0.0f;
    for (int t = 0; t < T; t++) {
        s = tanhf(a * s + x[t * N + i]);
        h[t * N + i] = s;
    }
}
