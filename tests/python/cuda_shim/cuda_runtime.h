// A CPU stand-in for the CUDA runtime, for tests/python/test_emit_cuda.py only: it lets g++ compile
// kad's emitted CUDA C kernels (the part before the launcher) as host code and run each block
// with one std::thread per thread of the block (threadIdx, blockIdx thread_local; __syncthreads a
// std::barrier; __shared__ a function-static array, one block at a time).  Not a CUDA
// implementation: just enough of the device API that the emitter prints.
#pragma once
#include <atomic>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>

struct kad_dim3 {
    unsigned x, y, z;
};
inline thread_local kad_dim3 threadIdx, blockIdx;
inline kad_dim3 gridDim, blockDim;
inline std::barrier<> *kad_barrier;
inline std::mutex kad_atomic_mutex;

#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(n)
#define __restrict__

inline void __syncthreads() { kad_barrier->arrive_and_wait(); }

// __syncthreads_or: a barrier that returns whether any thread's p was nonzero (a count that
// thread (0, 0, 0) clears once every thread has read it).
inline std::atomic<int> kad_or_count{0};
inline int __syncthreads_or(int p)
{
    if (p)
        kad_or_count.fetch_add(1);
    kad_barrier->arrive_and_wait();
    const int r = kad_or_count.load() != 0;
    kad_barrier->arrive_and_wait();
    if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0)
        kad_or_count.store(0);
    kad_barrier->arrive_and_wait();
    return r;
}

// Warp shuffles: every thread of the block calls them (kad's modules: uniform control flow; the
// kernels' own sources: a converged block), each writes its value, a barrier, each reads its
// source lane, a barrier.  Warps of 32 threads, numbered by the flattened thread index.
inline unsigned char kad_shfl_buf[1024][8];
inline unsigned kad_tid() { return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z); }
template <typename T> inline T kad_shfl(T v, unsigned src)
{
    static_assert(sizeof(T) <= 8, "a shuffle of at most 8 bytes");
    unsigned t = kad_tid();
    std::memcpy(kad_shfl_buf[t], &v, sizeof v);
    __syncthreads();
    T r;
    std::memcpy(&r, kad_shfl_buf[src], sizeof r);
    __syncthreads();
    return r;
}
template <typename T> inline T __shfl_xor_sync(unsigned, T v, int o)
{
    unsigned t = kad_tid();
    return kad_shfl(v, (t & ~31u) | ((t & 31u) ^ (unsigned)o));
}
template <typename T> inline T __shfl_down_sync(unsigned, T v, int o)
{
    unsigned t = kad_tid();
    return kad_shfl(v, (t & 31u) + (unsigned)o < 32u ? t + (unsigned)o : t);
}
template <typename T> inline T __shfl_sync(unsigned, T v, int src)
{
    unsigned t = kad_tid();
    return kad_shfl(v, (t & ~31u) | ((unsigned)src & 31u));
}

template <typename T, typename U> inline T atomicAdd(T *p, U v)
{
    std::lock_guard<std::mutex> g(kad_atomic_mutex);
    T old = *p;
    *p = (T)(old + v);
    return old;
}
template <typename T> inline T atomicMax(T *p, T v)
{
    std::lock_guard<std::mutex> g(kad_atomic_mutex);
    T old = *p;
    *p = old > v ? old : v;
    return old;
}
template <typename T> inline T atomicMin(T *p, T v)
{
    std::lock_guard<std::mutex> g(kad_atomic_mutex);
    T old = *p;
    *p = old < v ? old : v;
    return old;
}
template <typename T> inline T atomicExch(T *p, T v)
{
    std::lock_guard<std::mutex> g(kad_atomic_mutex);
    T old = *p;
    *p = v;
    return old;
}

using std::isinf;
using std::isnan;
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float exp10f(float x) { return std::pow(10.0f, x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __expf(float x) { return std::exp(x); }
inline float __sinf(float x) { return std::sin(x); }
inline float __cosf(float x) { return std::cos(x); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fadd_rz(float a, float b)
{ // a + b rounded toward zero: from the exact double sum (exact for floats of close exponents)
    double s = (double)a + (double)b;
    float f = (float)s;
    if ((double)f != s && std::fabs((double)f) > std::fabs(s))
        f = std::nextafter(f, 0.0f);
    return f;
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __saturatef(float x) { return x > 0 ? (x < 1 ? x : 1.0f) : 0.0f; }
inline uint32_t __umulhi(uint32_t a, uint32_t b) { return (uint32_t)(((uint64_t)a * b) >> 32); }
inline int32_t __mulhi(int32_t a, int32_t b) { return (int32_t)(((int64_t)a * b) >> 32); }
inline int32_t __float_as_int(float x) { int32_t i; std::memcpy(&i, &x, 4); return i; }
inline uint32_t __float_as_uint(float x) { uint32_t i; std::memcpy(&i, &x, 4); return i; }
inline float __int_as_float(int32_t i) { float x; std::memcpy(&x, &i, 4); return x; }
inline float __uint_as_float(uint32_t i) { float x; std::memcpy(&x, &i, 4); return x; }
