#include <type_traits>
template <typename T>
__global__ void cast_scale(const T* x, float* y, int n, float a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v;
    if constexpr (std::is_same<T, float>::value) {
        v = x[i];
    } else {
        v = static_cast<float>(x[i]);
    }
    y[i] = a * v * v;
}
