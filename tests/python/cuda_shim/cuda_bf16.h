// CPU stand-in for cuda_bf16.h (tests only): __nv_bfloat16 as its bits, round to nearest even.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

struct __nv_bfloat16 {
    uint16_t bits;
};
inline float __bfloat162float(__nv_bfloat16 b)
{
    uint32_t u = (uint32_t)b.bits << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float x)
{
    uint32_t u;
    std::memcpy(&u, &x, 4);
    __nv_bfloat16 b;
    if (std::isnan(x)) { b.bits = 0x7fc0; return b; }
    u += 0x7fffu + ((u >> 16) & 1u); // ties to even
    b.bits = (uint16_t)(u >> 16);
    return b;
}
inline __nv_bfloat16 __double2bfloat16(double x)
{ // one rounding from the double: through float is exact except for rare double-rounding ties
    float f = (float)x;
    return __float2bfloat16_rn(f);
}
inline __nv_bfloat16 __ll2bfloat16_rn(long long x) { return __double2bfloat16((double)x); }
inline __nv_bfloat16 __ull2bfloat16_rn(unsigned long long x) { return __double2bfloat16((double)x); }
inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b)
{
    return __float2bfloat16_rn(__bfloat162float(a) + __bfloat162float(b));
}
inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b)
{
    return __float2bfloat16_rn(__bfloat162float(a) * __bfloat162float(b));
}
inline bool operator>(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) > __bfloat162float(b); }
inline bool operator<(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) < __bfloat162float(b); }
inline bool operator==(__nv_bfloat16 a, __nv_bfloat16 b) { return __bfloat162float(a) == __bfloat162float(b); }
