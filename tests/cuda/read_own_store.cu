// RUN: check %s:act_scale --block 32 --wrt x,w --out act,y --grid 2 --shape x=50 --shape w=50 --shape act=50 --shape y=50 --arg n=50
// A kernel that stores one output and reads it back for another (act[i], then y[i] from act[i]
// and its square), as extension kernels keep their saved activations: a thread's load sees its own
// earlier store, so kad reads the stored value instead of the output buffer, which the backward
// could not recompute.
__global__ void act_scale(const float* __restrict__ x, const float* __restrict__ w, float* act, float* y, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        act[i] = x[i] / (1.0f + expf(-x[i]));
        y[i] = act[i] * w[i] + act[i] * act[i];
    }
}
