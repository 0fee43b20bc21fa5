// RUN: ir %s:scale --block 32
// A template parameter with neither --sig nor an explicit instantiation.
template <typename T, int N>
__global__ void scale(const T* x, T* y) { y[threadIdx.x] = x[threadIdx.x] * (T)N; }
