// RUN: ir %s:k --block 32
// An unknown function and an unknown variable, both located.
__global__ void k(const float* x, float* y)
{
    int i = threadIdx.x;
    y[i] = my_activation(x[i]) + bias;
}
