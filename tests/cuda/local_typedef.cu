// RUN: check %s:k --block 64 --wrt x --out y --grid 2 --shape x=100 --shape y=100 --arg n=100
// RUN: ir %s:k --block 64
// Type names declared in a kernel's body: `typedef T name;` and `using name = T;`, scoped to their
// block (the inner acc_t is float, the outer double), and `using namespace std;` (ignored).
template <typename scalar_t>
__global__ void k(const scalar_t* __restrict__ x, scalar_t* __restrict__ y, int n)
{
    typedef double acc_t;
    using namespace std;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float w;
        {
            using acc_t = float;
            acc_t t = (acc_t)x[i];
            w = t;
        }
        acc_t v = static_cast<acc_t>(x[i]);
        y[i] = w + static_cast<scalar_t>(v * v);
    }
}
template __global__ void k<float>(const float*, float*, int);
