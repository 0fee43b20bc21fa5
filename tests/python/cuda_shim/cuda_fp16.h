// CPU stand-in for cuda_fp16.h (tests only): __half as its bits, conversions rounding to nearest even.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

struct __half {
    uint16_t bits;
};
inline float __half2float(__half h)
{
    uint32_t s = (uint32_t)(h.bits >> 15) << 31, e = (h.bits >> 10) & 31, m = h.bits & 1023, u;
    if (e == 31)
        u = s | 0x7f800000u | (m << 13);
    else if (e)
        u = s | ((e + 112) << 23) | (m << 13);
    else if (!m)
        u = s;
    else { // subnormal: m * 2^-24
        float f = (float)m * (1.0f / 16777216.0f);
        std::memcpy(&u, &f, 4);
        u |= s;
    }
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
inline __half __double2half(double x)
{ // round to nearest even through the bits of the value
    __half h;
    uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    double a = std::fabs(x);
    if (std::isnan(x)) { h.bits = 0x7e00; return h; }
    if (a >= 65520.0) { h.bits = sign | 0x7c00; return h; }
    int e;
    std::frexp(a, &e); // a = f * 2^e, f in [0.5, 1)
    int exp = e - 1;   // a = 1.x * 2^exp
    if (exp < -14)
        exp = -14;     // subnormals: a fixed scale
    double q = std::ldexp(a, 10 - exp); // the significand in units of the last place
    double r = std::nearbyint(q);       // ties to even (default rounding mode)
    uint32_t m = (uint32_t)r;
    uint32_t bits;
    if (m >= 2048) { m >>= 1; exp++; }
    if (m < 1024)
        bits = m; // subnormal
    else
        bits = ((uint32_t)(exp + 15) << 10) | (m - 1024);
    if (exp + 15 >= 31) bits = 0x7c00;
    h.bits = (uint16_t)(sign | bits);
    return h;
}
inline __half __float2half_rn(float x) { return __double2half((double)x); }
inline __half __ll2half_rn(long long x) { return __double2half((double)x); }
inline __half __ull2half_rn(unsigned long long x) { return __double2half((double)x); }
inline short __half_as_short(__half h) { return (short)h.bits; }
inline __half __short_as_half(short s) { __half h; h.bits = (uint16_t)s; return h; }
inline __half operator+(__half a, __half b) { return __float2half_rn(__half2float(a) + __half2float(b)); }
inline __half operator*(__half a, __half b) { return __float2half_rn(__half2float(a) * __half2float(b)); }
inline bool operator>(__half a, __half b) { return __half2float(a) > __half2float(b); }
inline bool operator<(__half a, __half b) { return __half2float(a) < __half2float(b); }
inline bool operator==(__half a, __half b) { return __half2float(a) == __half2float(b); }
