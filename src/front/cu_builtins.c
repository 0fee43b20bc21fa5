/* cu_builtins.c -- the builtins CUDA C / HIP kernels call, lowered to the IR:
 * the math library (float and double forms, C++ overloads by the argument's
 * type), min/max/abs, conversions (__float2half and friends, bit casts),
 * half arithmetic, __syncthreads and the fences, __ldg, atomicAdd, warp
 * shuffles (a gather within each warp, refused outside a converged warp),
 * vector constructors (make_float4), isnan/isinf, assert.  cu_lower.c
 * calls cu_call_builtin for a name that is no __device__ function.
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/cu.h"

typedef struct MathFn {
    const char *name;
    OpKind op;
    char ty; /* 'f' float, 'd' double, 0: by the argument (C++ overloads) */
    int nargs;
} MathFn;

static const MathFn math_fns[] = {
    {"exp", OP_EXP, 0, 1}, {"expf", OP_EXP, 'f', 1}, {"__expf", OP_EXP, 'f', 1},
    {"exp2", OP_EXP2, 0, 1}, {"exp2f", OP_EXP2, 'f', 1}, {"expm1", OP_EXPM1, 0, 1}, {"expm1f", OP_EXPM1, 'f', 1},
    {"exp10", OP_EXP10, 0, 1}, {"exp10f", OP_EXP10, 'f', 1}, {"__exp10f", OP_EXP10, 'f', 1},
    {"log", OP_LOG, 0, 1}, {"logf", OP_LOG, 'f', 1}, {"__logf", OP_LOG, 'f', 1},
    {"log2", OP_LOG2, 0, 1}, {"log2f", OP_LOG2, 'f', 1}, {"__log2f", OP_LOG2, 'f', 1},
    {"log10", OP_LOG10, 0, 1}, {"log10f", OP_LOG10, 'f', 1}, {"__log10f", OP_LOG10, 'f', 1},
    {"log1p", OP_LOG1P, 0, 1}, {"log1pf", OP_LOG1P, 'f', 1},
    {"sqrt", OP_SQRT, 0, 1}, {"sqrtf", OP_SQRT, 'f', 1}, {"__fsqrt_rn", OP_SQRT, 'f', 1},
    {"rsqrt", OP_RSQRT, 0, 1}, {"rsqrtf", OP_RSQRT, 'f', 1}, {"cbrt", OP_CBRT, 0, 1}, {"cbrtf", OP_CBRT, 'f', 1},
    {"sin", OP_SIN, 0, 1}, {"sinf", OP_SIN, 'f', 1}, {"__sinf", OP_SIN, 'f', 1},
    {"cos", OP_COS, 0, 1}, {"cosf", OP_COS, 'f', 1}, {"__cosf", OP_COS, 'f', 1},
    {"tan", OP_TAN, 0, 1}, {"tanf", OP_TAN, 'f', 1}, {"__tanf", OP_TAN, 'f', 1},
    {"asin", OP_ASIN, 0, 1}, {"asinf", OP_ASIN, 'f', 1}, {"acos", OP_ACOS, 0, 1}, {"acosf", OP_ACOS, 'f', 1},
    {"atan", OP_ATAN, 0, 1}, {"atanf", OP_ATAN, 'f', 1}, {"sinh", OP_SINH, 0, 1}, {"sinhf", OP_SINH, 'f', 1},
    {"cosh", OP_COSH, 0, 1}, {"coshf", OP_COSH, 'f', 1}, {"tanh", OP_TANH, 0, 1}, {"tanhf", OP_TANH, 'f', 1},
    {"asinh", OP_ASINH, 0, 1}, {"asinhf", OP_ASINH, 'f', 1}, {"acosh", OP_ACOSH, 0, 1}, {"acoshf", OP_ACOSH, 'f', 1},
    {"atanh", OP_ATANH, 0, 1}, {"atanhf", OP_ATANH, 'f', 1},
    {"erf", OP_ERF, 0, 1}, {"erff", OP_ERF, 'f', 1}, {"erfc", OP_ERFC, 0, 1}, {"erfcf", OP_ERFC, 'f', 1},
    {"erfinv", OP_ERFINV, 0, 1}, {"erfinvf", OP_ERFINV, 'f', 1}, {"normcdf", OP_NORMCDF, 0, 1},
    {"normcdff", OP_NORMCDF, 'f', 1}, {"lgamma", OP_LGAMMA, 0, 1}, {"lgammaf", OP_LGAMMA, 'f', 1},
    {"tgamma", OP_TGAMMA, 0, 1}, {"tgammaf", OP_TGAMMA, 'f', 1},
    {"floor", OP_FLOOR, 0, 1}, {"floorf", OP_FLOOR, 'f', 1}, {"ceil", OP_CEIL, 0, 1}, {"ceilf", OP_CEIL, 'f', 1},
    {"trunc", OP_TRUNC, 0, 1}, {"truncf", OP_TRUNC, 'f', 1}, {"rint", OP_RINT, 0, 1}, {"rintf", OP_RINT, 'f', 1},
    {"nearbyint", OP_RINT, 0, 1}, {"nearbyintf", OP_RINT, 'f', 1},
    {"fabs", OP_ABS, 0, 1}, {"fabsf", OP_ABS, 'f', 1}, {"__saturatef", OP_SATURATE, 'f', 1},
    {"pow", OP_POW, 0, 2}, {"powf", OP_POW, 'f', 2}, {"__powf", OP_POW, 'f', 2},
    {"atan2", OP_ATAN2, 0, 2}, {"atan2f", OP_ATAN2, 'f', 2}, {"fmax", OP_MAXIMUM, 0, 2},
    {"fmaxf", OP_MAXIMUM, 'f', 2}, {"fmin", OP_MINIMUM, 0, 2}, {"fminf", OP_MINIMUM, 'f', 2},
    {"fmod", OP_REM, 0, 2}, {"fmodf", OP_REM, 'f', 2}, {"hypot", OP_HYPOT, 0, 2}, {"hypotf", OP_HYPOT, 'f', 2},
    {"copysign", OP_COPYSIGN, 0, 2}, {"copysignf", OP_COPYSIGN, 'f', 2}, {"fdim", OP_FDIM, 0, 2},
    {"fdimf", OP_FDIM, 'f', 2}, {"__fdividef", OP_DIV, 'f', 2}, {"__fdiv_rn", OP_DIV, 'f', 2},
    {"__fmul_rn", OP_MUL, 'f', 2}, {"__fadd_rn", OP_ADD, 'f', 2}, {"__fsub_rn", OP_SUB, 'f', 2},
    {"__dmul_rn", OP_MUL, 'd', 2}, {"__dadd_rn", OP_ADD, 'd', 2}, {"__ddiv_rn", OP_DIV, 'd', 2},
    {"fma", OP_FMA, 0, 3}, {"fmaf", OP_FMA, 'f', 3}, {"__fmaf_rn", OP_FMA, 'f', 3}, {"__fma_rn", OP_FMA, 'd', 3},
};

static CVal call_math(Lw *L, const MathFn *m, CVal *a, Loc loc)
{
    const CuTy *t;
    if (m->ty == 'f')
        t = cu_scalar_ty(L, TY_FLOAT, DT_F32);
    else if (m->ty == 'd')
        t = cu_scalar_ty(L, TY_FLOAT, DT_F64);
    else {
        t = a[0].t;
        for (int i = 1; i < m->nargs; i++)
            t = cu_common(L, t, a[i].t);
        if (t->k != TY_FLOAT)
            t = cu_scalar_ty(L, TY_FLOAT, DT_F64); /* sqrt(int) calls the double overload */
        if (t->dt == DT_F16 || t->dt == DT_BF16)
            t = cu_scalar_ty(L, TY_FLOAT, DT_F32);
    }
    bool tile = false;
    for (int i = 0; i < m->nargs; i++) {
        if (a[i].t && cu_is_num(a[i].t) && !a[i].v)
            return cu_bad(L); /* an argument that failed (its error is given) */
        if (!cu_is_num(a[i].t) || !a[i].v) {
            diag_error(L->d, loc, "'%s' takes numbers", m->name);
            return cu_bad(L);
        }
        a[i] = cu_convert(L, a[i], t, loc);
        tile |= cu_is_tile(L, a[i].v);
    }
    ValId args[3];
    for (int i = 0; i < m->nargs; i++)
        args[i] = tile ? cu_bcast(L, a[i].v, loc) : a[i].v;
    Type rt = ir_type(L->f, args[0]);
    CVal r = {.t = t};
    r.v = ir_emit(L->f, L->b, m->op, args, m->nargs, &rt, 1, loc)->res[0];
    return r;
}

/* The lane the value comes from in a warp shuffle; 0 when refused. */
static ValId shuffle(Lw *L, const char *name, CVal v, CVal arg, int width, Loc loc)
{
    ValId m = cu_m(L);
    if (cu_is_tile(L, m) && m != L->active && !cu_warp_uniform(L, m)) {
        diag_error(L->d, loc,
                   "'%s' inside divergent control flow: a shuffle needs its whole warp converged (move it out of "
                   "the branch that depends on threadIdx, or branch on the warp: threadIdx.x / warpSize)", name);
        return 0;
    }
    if (L->nl % L->warp && L->nl > L->warp) {
        diag_error(L->d, loc, "'%s' with %d threads per block: warp shuffles need whole warps of %d threads", name,
                   L->nl, L->warp);
        return 0;
    }
    if (width > L->lp)
        width = L->lp;
    const CuTy *it = cu_ty_int(L);
    arg = cu_convert(L, arg, it, loc);
    ValId t = L->tid, w1 = cu_cint(L, DT_I32, width - 1, loc);
    ValId lane = cu_op2(L, OP_AND, t, w1, loc);
    ValId base = cu_op2(L, OP_SUB, t, lane, loc);
    ValId src;
    if (strstr(name, "xor")) {
        src = cu_op2(L, OP_OR, base, cu_op2(L, OP_AND, cu_op2(L, OP_XOR, lane, arg.v, loc), w1, loc), loc);
    } else if (strstr(name, "down")) {
        ValId l2 = cu_op2(L, OP_ADD, lane, arg.v, loc);
        ValId in = cu_op2(L, OP_LT, l2, cu_cint(L, DT_I32, width, loc), loc);
        ValId from = cu_op2(L, OP_ADD, t, arg.v, loc);
        src = cu_where(L, in, from, t, loc);
    } else if (strstr(name, "up")) {
        ValId in = cu_op2(L, OP_GE, lane, arg.v, loc);
        ValId from = cu_op2(L, OP_SUB, t, arg.v, loc);
        src = cu_where(L, in, from, t, loc);
    } else {
        src = cu_op2(L, OP_OR, base, cu_op2(L, OP_AND, arg.v, w1, loc), loc);
    }
    (void)v;
    return src;
}

/* v read from lane `shuffle`'s source (kind: the __shfl* name; width: the lanes it spans): a
 * gather along the lanes; v itself where every lane holds it. */
static CVal shuffled(Lw *L, const char *kind, CVal v, CVal arg, int width, Loc loc)
{
    if (!v.v || !cu_is_num(v.t) || !arg.v)
        return cu_bad(L);
    if (!cu_is_tile(L, v.v))
        return v; /* every lane holds the same value */
    ValId src = shuffle(L, kind, v, arg, width, loc);
    if (!src)
        return cu_bad(L);
    Type rt = ir_type(L->f, v.v);
    Inst *in = ir_emit(L->f, L->b, OP_GATHER, (ValId[]){v.v, src}, 2, &rt, 1, loc);
    in->ival = 0;
    return (CVal){.t = v.t, .v = in->res[0]};
}

/* __ballot_sync(mask, p): per lane, the bits of its warp's lanes whose p holds (lanes outside the
 * current mask give 0): each lane's bit, then an OR across the warp by xor-shuffles (butterfly:
 * every lane gets the whole word).  u32 for 32-lane warps, u64 for 64-lane wavefronts. */
static CVal ballot(Lw *L, const char *name, CVal p, Loc loc)
{
    ValId c = cu_truth(L, p, loc);
    if (!c)
        return cu_bad(L);
    Dtype dt = L->warp == 64 ? DT_U64 : DT_U32;
    const CuTy *wt = cu_scalar_ty(L, TY_INT, dt);
    if (!shuffle(L, name, p, cu_const_int(L, cu_ty_int(L), 1, loc), L->warp, loc))
        return cu_bad(L); /* the shuffles' rules: a converged warp */
    ValId lane = cu_op2(L, OP_AND, L->tid, cu_cint(L, DT_I32, L->warp - 1, loc), loc);
    CVal lw = cu_convert(L, (CVal){.t = cu_ty_int(L), .v = lane}, wt, loc);
    ValId bit = cu_op2(L, OP_SHL, cu_bcast(L, cu_cint(L, dt, 1, loc), loc), lw.v, loc);
    ValId on = cu_and(L, cu_bcast(L, c, loc), cu_bcast(L, cu_m(L), loc), loc);
    ValId v = cu_where(L, on, bit, cu_bcast(L, cu_cint(L, dt, 0, loc), loc), loc);
    for (int o = L->warp / 2; o > 0; o /= 2) {
        ValId src = shuffle(L, "__shfl_xor_sync", (CVal){.t = wt, .v = v}, cu_const_int(L, cu_ty_int(L), o, loc),
                            L->warp, loc);
        if (!src)
            return cu_bad(L);
        Type rt = ir_type(L->f, v);
        Inst *g = ir_emit(L->f, L->b, OP_GATHER, (ValId[]){v, src}, 2, &rt, 1, loc);
        g->ival = 0;
        v = cu_op2(L, OP_OR, v, g->res[0], loc);
    }
    return (CVal){.t = wt, .v = v};
}

/* __popc(x) / __popcll(x): the bits set, by the SWAR sums (pairs, nibbles, bytes, then a multiply
 * that adds the bytes into the top one). */
static CVal popcount(Lw *L, CVal x, bool wide, Loc loc)
{
    Dtype dt = wide ? DT_U64 : DT_U32;
    x = cu_convert(L, x, cu_scalar_ty(L, TY_INT, dt), loc);
    if (!x.v)
        return cu_bad(L);
    ValId v = x.v;
    uint64_t m1 = 0x5555555555555555ull, m2 = 0x3333333333333333ull, m4 = 0x0f0f0f0f0f0f0f0full,
             h = 0x0101010101010101ull;
    if (!wide)
        m1 &= 0xffffffffu, m2 &= 0xffffffffu, m4 &= 0xffffffffu, h &= 0xffffffffu;
#define K(c) cu_cint(L, dt, (int64_t)(c), loc)
    v = cu_op2(L, OP_SUB, v, cu_op2(L, OP_AND, cu_op2(L, OP_SHR, v, K(1), loc), K(m1), loc), loc);
    v = cu_op2(L, OP_ADD, cu_op2(L, OP_AND, v, K(m2), loc), cu_op2(L, OP_AND, cu_op2(L, OP_SHR, v, K(2), loc), K(m2), loc),
               loc);
    v = cu_op2(L, OP_AND, cu_op2(L, OP_ADD, v, cu_op2(L, OP_SHR, v, K(4), loc), loc), K(m4), loc);
    v = cu_op2(L, OP_SHR, cu_op2(L, OP_MUL, v, K(h), loc), K(wide ? 56 : 24), loc);
#undef K
    return cu_convert(L, (CVal){.t = cu_scalar_ty(L, TY_INT, dt), .v = v}, cu_ty_int(L), loc);
}

/* A pair (x, y) of vector type t (half2, float2, ...), each converted to its field's type. */
static CVal pair(Lw *L, const CuTy *t, CVal a, CVal b, Loc loc)
{
    if (!t || !a.v || !b.v)
        return cu_bad(L);
    CVal x = {.t = t};
    x.f = arena_alloc(L->a, sizeof *x.f * 2);
    x.f[0] = cu_convert(L, a, t->st->fty[0], loc);
    x.f[1] = cu_convert(L, b, t->st->fty[1], loc);
    return x;
}

/* Field k of a two-field vector value v ('.x' or '.y'); bad unless v is one. */
static CVal half_of(Lw *L, CVal v, int k, const char *fn, Loc loc)
{
    if (!v.t || v.t->k != TY_STRUCT || v.t->st->n != 2 || !v.f) {
        diag_error(L->d, loc, "'%s' takes a pair (__half2, __nv_bfloat162, float2)", fn);
        return cu_bad(L);
    }
    return v.f[k];
}

/* The paired half intrinsics of cuda_fp16.h / cuda_bf16.h (__hadd2, __half22float2, __low2float,
 * ...) on two-field vectors: each lane of the pair as the scalar intrinsic would compute it.
 * handled false when n is none of them. */
static CVal half_pairs(Lw *L, const CuExpr *e, const char *n, bool *handled)
{
    Loc loc = e->loc;
    int na = e->nargs;
    bool bf = strstr(n, "bfloat16") != NULL;
    const CuTy *h2 = cu_vec_type(L, bf ? "__nv_bfloat162" : "__half2"), *f2 = cu_vec_type(L, "float2");
    const CuTy *h = cu_scalar_ty(L, TY_FLOAT, bf ? DT_BF16 : DT_F16), *f = cu_scalar_ty(L, TY_FLOAT, DT_F32);
    static const struct { const char *name; const char *op; } ops2[] = {
        {"__hadd2", "+"}, {"__hsub2", "-"}, {"__hmul2", "*"}, {"__h2div", "/"}, {"__hadd2_rn", "+"},
        {"__hmul2_rn", "*"}, {"__hsub2_rn", "-"},
    };
    for (size_t k = 0; k < sizeof ops2 / sizeof *ops2; k++)
        if (!strcmp(n, ops2[k].name) && na == 2) {
            CVal a = cu_expr(L, e->args[0]), b = cu_expr(L, e->args[1]);
            CVal a0 = half_of(L, a, 0, n, loc), a1 = half_of(L, a, 1, n, loc);
            CVal b0 = half_of(L, b, 0, n, loc), b1 = half_of(L, b, 1, n, loc);
            if (!a0.v || !b0.v)
                return cu_bad(L);
            return pair(L, a.t, cu_binop(L, ops2[k].op, a0, b0, loc), cu_binop(L, ops2[k].op, a1, b1, loc), loc);
        }
    if (!strcmp(n, "__hfma2") && na == 3) {
        CVal a = cu_expr(L, e->args[0]), b = cu_expr(L, e->args[1]), c = cu_expr(L, e->args[2]);
        CVal r[2];
        for (int k = 0; k < 2; k++) { /* one rounding, as the fused op: in float, then to half */
            CVal ak = half_of(L, a, k, n, loc), bk = half_of(L, b, k, n, loc), ck = half_of(L, c, k, n, loc);
            if (!ak.v || !bk.v || !ck.v)
                return cu_bad(L);
            CVal p = cu_binop(L, "*", cu_convert(L, ak, f, loc), cu_convert(L, bk, f, loc), loc);
            r[k] = cu_binop(L, "+", p, cu_convert(L, ck, f, loc), loc);
        }
        return pair(L, a.t, r[0], r[1], loc);
    }
    if (!strcmp(n, "__hneg2") && na == 1) {
        CVal a = cu_expr(L, e->args[0]);
        CVal a0 = half_of(L, a, 0, n, loc), a1 = half_of(L, a, 1, n, loc);
        if (!a0.v)
            return cu_bad(L);
        return pair(L, a.t, (CVal){.t = a0.t, .v = ir_op1(L->f, L->b, OP_NEG, ir_type(L->f, a0.v), a0.v, loc)},
                    (CVal){.t = a1.t, .v = ir_op1(L->f, L->b, OP_NEG, ir_type(L->f, a1.v), a1.v, loc)}, loc);
    }
    if ((!strcmp(n, "__half22float2") || !strcmp(n, "__bfloat1622float2")) && na == 1) {
        CVal a = cu_expr(L, e->args[0]);
        return pair(L, f2, half_of(L, a, 0, n, loc), half_of(L, a, 1, n, loc), loc);
    }
    if ((!strcmp(n, "__float22half2_rn") || !strcmp(n, "__float22bfloat162_rn")) && na == 1) {
        CVal a = cu_expr(L, e->args[0]);
        return pair(L, h2, half_of(L, a, 0, n, loc), half_of(L, a, 1, n, loc), loc);
    }
    if ((!strcmp(n, "__floats2half2_rn") || !strcmp(n, "__halves2half2") || !strcmp(n, "__floats2bfloat162_rn") ||
         !strcmp(n, "__halves2bfloat162")) && na == 2)
        return pair(L, h2, cu_expr(L, e->args[0]), cu_expr(L, e->args[1]), loc);
    if ((!strcmp(n, "__float2half2_rn") || !strcmp(n, "__half2half2") || !strcmp(n, "__float2bfloat162_rn") ||
         !strcmp(n, "__bfloat162bfloat162")) && na == 1) {
        CVal a = cu_expr(L, e->args[0]);
        return pair(L, h2, a, a, loc);
    }
    static const struct { const char *name; int k; bool to_float; } parts[] = {
        {"__low2float", 0, true}, {"__high2float", 1, true}, {"__low2half", 0, false}, {"__high2half", 1, false},
        {"__low2bfloat16", 0, false}, {"__high2bfloat16", 1, false},
    };
    for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
        if (!strcmp(n, parts[k].name) && na == 1) {
            CVal a = cu_expr(L, e->args[0]);
            CVal v = half_of(L, a, parts[k].k, n, loc);
            return v.v ? cu_convert(L, v, parts[k].to_float ? f : v.t ? v.t : h, loc) : cu_bad(L);
        }
    *handled = false;
    return cu_bad(L);
}

/* ---- cooperative groups ---- */

const CuTy *cu_cg_type(Lw *L, bool tile, int64_t n, Loc loc)
{
    if (tile && (n < 1 || n > L->warp || (n & (n - 1)) || L->nl % n)) {
        diag_error(L->d, loc, "cg::thread_block_tile<%lld>: kad knows tiles of a power of two threads up to the "
                              "warp (%d) that divide the block (%d threads)", (long long)n, L->warp, L->nl);
        return NULL;
    }
    CuTy *t = arena_alloc(L->a, sizeof *t);
    *t = (CuTy){.k = TY_CG, .cub_threads = n, .cg_tile = tile};
    return t;
}

/* A shuffle within the group g's lanes (width: the tile's size; the block: refused). */
static CVal cg_shuffle(Lw *L, const char *kind, const char *method, const CuTy *g, CVal v, CVal arg, Loc loc)
{
    if (!g->cg_tile) {
        diag_error(L->d, loc, "'%s' of a thread_block: shuffles are a tile's (cg::tiled_partition<32>(block))", method);
        return cu_bad(L);
    }
    return shuffled(L, kind, v, arg, (int)g->cub_threads, loc);
}

/* cg::reduce(tile, v, op): every lane of the tile gets op over its lanes, by xor-shuffle
 * butterflies (each pair of lanes combines the same two values, so every lane gets the same bits). */
static CVal cg_reduce(Lw *L, const CuExpr *e)
{
    Loc loc = e->loc;
    if (e->nargs != 3) {
        diag_error(L->d, loc, "cg::reduce takes (tile, value, op)");
        return cu_bad(L);
    }
    CVal g = cu_expr(L, e->args[0]);
    CVal v = cu_expr(L, e->args[1]);
    const CuExpr *f = e->args[2];
    const char *fn = f->kind == CE_CALL && !f->nargs ? f->name : NULL;
    const char *op = !fn ? NULL : !strcmp(fn, "plus") ? "+" : !strcmp(fn, "bit_and") ? "&" : !strcmp(fn, "bit_or") ? "|"
                     : !strcmp(fn, "bit_xor") ? "^" : NULL;
    bool mx = fn && (!strcmp(fn, "greater") || !strcmp(fn, "maximum")),
         mn = fn && (!strcmp(fn, "less") || !strcmp(fn, "minimum"));
    if (!g.t || g.t->k != TY_CG || !g.t->cg_tile) {
        diag_error(L->d, e->args[0]->loc, "cg::reduce reduces over a thread_block_tile");
        return cu_bad(L);
    }
    if (!op && !mx && !mn) {
        diag_error(L->d, f->loc, "cg::reduce: kad knows the operators cg::plus, cg::greater, cg::less, cg::bit_and, "
                                 "cg::bit_or, cg::bit_xor (and CCCL's maximum/minimum)");
        return cu_bad(L);
    }
    if (!v.v || !cu_is_num(v.t))
        return cu_bad(L);
    for (int o = (int)g.t->cub_threads / 2; o > 0; o /= 2) {
        CVal u = cg_shuffle(L, "__shfl_xor_sync", "reduce", g.t, v, cu_const_int(L, cu_ty_int(L), o, loc), loc);
        if (!u.v)
            return cu_bad(L);
        if (op)
            v = cu_binop(L, op, v, u, loc);
        else {
            ValId a = cu_bcast(L, v.v, loc), b = cu_bcast(L, u.v, loc);
            bool fl = v.t->k == TY_FLOAT;
            ValId r = fl ? cu_op2(L, mx ? OP_MAXIMUM : OP_MINIMUM, a, b, loc)
                         : cu_where(L, cu_op2(L, mx ? OP_GT : OP_LT, a, b, loc), a, b, loc);
            v = (CVal){.t = v.t, .v = r};
        }
    }
    return v;
}

CVal cu_cg_method(Lw *L, const CuExpr *e, CVal g)
{
    Loc loc = e->loc;
    const char *m = e->name + 1;
    int na = e->nargs;
    if (!g.t || g.t->k != TY_CG)
        return cu_bad(L);
    const CuTy *u32 = cu_scalar_ty(L, TY_INT, DT_U32);
    int64_t n = g.t->cub_threads;
    if (!strcmp(m, "sync") && !na) {
        if (!g.t->cg_tile)
            cu_syncthreads(L, loc);
        else if (cu_is_tile(L, cu_m(L)) && cu_m(L) != L->active && !cu_warp_uniform(L, cu_m(L)))
            diag_error(L->d, loc, "a tile's sync() inside divergent control flow is not supported");
        return (CVal){.t = cu_scalar_ty(L, TY_VOID, DT_VOID)};
    }
    if ((!strcmp(m, "size") || !strcmp(m, "num_threads")) && !na)
        return cu_const_int(L, u32, n, loc);
    if (!strcmp(m, "thread_rank") && !na) {
        ValId r = g.t->cg_tile ? cu_op2(L, OP_AND, L->tid, cu_cint(L, DT_I32, n - 1, loc), loc) : L->tid;
        return cu_convert(L, (CVal){.t = cu_ty_int(L), .v = r}, u32, loc);
    }
    if (g.t->cg_tile && (!strcmp(m, "meta_group_rank") || !strcmp(m, "meta_group_size")) && !na) {
        if (!strcmp(m, "meta_group_size"))
            return cu_const_int(L, u32, L->nl / n, loc);
        ValId r = cu_op2(L, OP_DIV, L->tid, cu_cint(L, DT_I32, n, loc), loc);
        return cu_convert(L, (CVal){.t = cu_ty_int(L), .v = r}, u32, loc);
    }
    static const struct { const char *m; const char *as; } shf[] = {
        {"shfl", "__shfl_sync"}, {"shfl_down", "__shfl_down_sync"}, {"shfl_up", "__shfl_up_sync"},
        {"shfl_xor", "__shfl_xor_sync"},
    };
    for (size_t k = 0; k < sizeof shf / sizeof *shf; k++)
        if (!strcmp(m, shf[k].m) && na == 2)
            return cg_shuffle(L, shf[k].as, m, g.t, cu_expr(L, e->args[0]), cu_expr(L, e->args[1]), loc);
    if (g.t->cg_tile && (!strcmp(m, "any") || !strcmp(m, "all") || !strcmp(m, "ballot")) && na == 1 && n == L->warp) {
        CVal p = cu_expr(L, e->args[0]);
        CVal b = p.v ? ballot(L, "ballot", p, loc) : cu_bad(L);
        if (!b.v || !strcmp(m, "ballot"))
            return b;
        CVal ref = !strcmp(m, "any") ? cu_const_int(L, b.t, 0, loc)
                                     : ballot(L, "all", (CVal){.t = cu_ty_bool(L), .v = L->tru}, loc);
        if (!ref.v)
            return cu_bad(L);
        ValId r = cu_op2(L, !strcmp(m, "any") ? OP_NE : OP_EQ, b.v, cu_bcast(L, ref.v, loc), loc);
        return cu_convert(L, (CVal){.t = cu_ty_bool(L), .v = r}, cu_ty_int(L), loc);
    }
    diag_error(L->d, loc, "'%s' of a cooperative group: kad knows sync, size, num_threads, thread_rank, "
                          "meta_group_rank, meta_group_size, shfl, shfl_down, shfl_up, shfl_xor (tiles) and any, "
                          "all, ballot (tiles of a whole warp)", m);
    return cu_bad(L);
}

/* std::numeric_limits<T>::NAME() for the number types kad lowers. */
static CVal numeric_limit(Lw *L, const CuExpr *e, const char *what)
{
    const CuTy *t = e->ntargs == 1 && e->targs[0].type ? cu_resolve_type(L, e->targs[0].type) : NULL;
    if (!t || !cu_is_num(t)) {
        diag_error(L->d, e->loc, "std::numeric_limits takes one number type");
        return cu_bad(L);
    }
    if (t->k == TY_FLOAT) {
        static const struct { Dtype dt; double max, min, eps; } fl[] = {
            {DT_F32, 3.4028234663852886e38, 1.1754943508222875e-38, 1.1920928955078125e-07},
            {DT_F64, 1.7976931348623157e308, 2.2250738585072014e-308, 2.220446049250313e-16},
            {DT_F16, 65504.0, 6.103515625e-05, 0.0009765625},
            {DT_BF16, 3.3895313892515355e38, 1.1754943508222875e-38, 0.0078125},
        };
        for (size_t k = 0; k < sizeof fl / sizeof *fl; k++) {
            if (fl[k].dt != t->dt)
                continue;
            double v = !strcmp(what, "infinity") ? INFINITY : !strcmp(what, "quiet_NaN") ? NAN
                     : !strcmp(what, "max") ? fl[k].max : !strcmp(what, "lowest") ? -fl[k].max
                     : !strcmp(what, "min") ? fl[k].min : !strcmp(what, "epsilon") ? fl[k].eps : 0.0;
            if (v == 0.0)
                break;
            return cu_const_float(L, t, v, e->loc);
        }
    } else if (t->k == TY_INT) {
        int bits = dtype_bits(t->dt);
        bool sg = dtype_is_signed(t->dt);
        int64_t mx = bits >= 64 ? (sg ? INT64_MAX : -1) : sg ? (int64_t)((1ull << (bits - 1)) - 1) : (int64_t)((1ull << bits) - 1);
        int64_t mn = sg ? (bits >= 64 ? INT64_MIN : -(int64_t)(1ull << (bits - 1))) : 0;
        if (!strcmp(what, "max"))
            return cu_const_int(L, t, mx, e->loc);
        if (!strcmp(what, "min") || !strcmp(what, "lowest"))
            return cu_const_int(L, t, mn, e->loc);
    }
    diag_error(L->d, e->loc, "std::numeric_limits<%s>::%s is not one kad knows (max, min, lowest, epsilon, infinity, "
               "quiet_NaN)", e->targs[0].type->name, what);
    return cu_bad(L);
}

static const MathFn *math_fn(const char *name)
{
    for (size_t k = 0; k < sizeof math_fns / sizeof *math_fns; k++)
        if (!strcmp(math_fns[k].name, name))
            return &math_fns[k];
    return NULL;
}

/* sincosf(v, &s, &c) (sincos for double): s = sin(v), c = cos(v), stored through the two
 * pointers: `&local` assigns the variable, any other pointer expression p its element *p. */
static CVal sincos_call(Lw *L, const CuExpr *e, bool f32)
{
    if (e->nargs != 3) {
        diag_error(L->d, e->loc, "'%s' takes 3 arguments (the angle and two pointers), %d given", e->name, e->nargs);
        return cu_bad(L);
    }
    CVal v = cu_expr(L, e->args[0]);
    if (!v.v || !cu_is_num(v.t))
        return cu_bad(L);
    CVal r[2] = {call_math(L, math_fn(f32 ? "sinf" : "sin"), &v, e->loc),
                 call_math(L, math_fn(f32 ? "cosf" : "cos"), &v, e->loc)};
    for (int k = 0; k < 2; k++) {
        const CuExpr *p = e->args[1 + k], *lhs = p;
        if (p->kind == CE_UNARY && !strcmp(p->op, "&"))
            lhs = p->l;
        else {
            CuExpr *d = arena_alloc(L->a, sizeof *d);
            *d = (CuExpr){.kind = CE_UNARY, .loc = p->loc, .op = "*", .l = (CuExpr *)p};
            lhs = d;
        }
        if (r[k].v)
            cu_assign(L, lhs, r[k], p->loc);
    }
    return (CVal){.t = cu_scalar_ty(L, TY_VOID, DT_VOID)};
}

CVal cu_call_builtin(Lw *L, const CuExpr *e, bool *handled)
{
    const char *n = e->name;
    Loc loc = e->loc;
    int na = e->nargs;
    *handled = true;
    if (!strncmp(n, "numeric_limits::", 16))
        return numeric_limit(L, e, n + 16);
    if (!strcmp(n, "static_assert")) { /* static_assert(cond[, "message"]): checked when the kernel is lowered */
        int64_t ok = 0;
        if (na < 1 || na > 2 || !cu_const_eval(L, e->args[0], &ok)) {
            diag_error(L->d, loc, "static_assert needs a constant condition (and an optional message string)");
            return cu_bad(L);
        }
        if (!ok) {
            const char *msg = na == 2 && e->args[1]->kind == CE_STRING ? e->args[1]->tok->text : NULL;
            diag_error(L->d, loc, "static_assert failed for this specialization%s%s", msg ? ": " : "", msg ? msg : "");
        }
        return (CVal){.t = cu_scalar_ty(L, TY_VOID, DT_VOID)};
    }
    if (!strcmp(n, "is_same")) { /* std::is_same<A, B>::value: the same C type */
        const CuTy *a = e->ntargs == 2 && e->targs[0].type ? cu_resolve_type(L, e->targs[0].type) : NULL;
        const CuTy *b = a && e->targs[1].type ? cu_resolve_type(L, e->targs[1].type) : NULL;
        if (!b) {
            diag_error(L->d, loc, "std::is_same takes two types");
            return cu_bad(L);
        }
        bool same = a == b || (a->k == b->k && a->dt == b->dt && a->k != TY_PTR && a->k != TY_STRUCT);
        if (a->k == TY_PTR && b->k == TY_PTR)
            same = a->elem == b->elem || (a->elem->k == b->elem->k && a->elem->dt == b->elem->dt);
        if (a->k == TY_STRUCT && b->k == TY_STRUCT)
            same = a->st == b->st;
        return (CVal){.t = cu_ty_bool(L), .v = same ? L->tru : L->fls, .cst = true, .ci = same};
    }
    if (!strcmp(n, "sincosf") || !strcmp(n, "__sincosf") || !strcmp(n, "sincos"))
        return sincos_call(L, e, n[strlen(n) - 1] == 'f');
    for (size_t k = 0; k < sizeof math_fns / sizeof *math_fns; k++)
        if (!strcmp(math_fns[k].name, n)) {
            if (na != math_fns[k].nargs) {
                diag_error(L->d, loc, "'%s' takes %d arguments, %d given", n, math_fns[k].nargs, na);
                return cu_bad(L);
            }
            CVal a[3];
            for (int i = 0; i < na; i++)
                a[i] = cu_expr(L, e->args[i]);
            return call_math(L, &math_fns[k], a, loc);
        }
    if (!strcmp(n, "this_thread_block") && !na)
        return (CVal){.t = cu_cg_type(L, false, L->nl, loc)};
    if (!strcmp(n, "tiled_partition") && na == 1) {
        const CuExpr *ge = e->args[0];
        Var *gv = ge->kind == CE_IDENT ? cu_lookup(L, ge->name) : NULL;
        CVal g = gv && gv->t && gv->t->k == TY_CG ? gv->val : cu_expr(L, ge);
        int64_t tn = 0;
        if (!g.t || g.t->k != TY_CG || g.t->cg_tile || e->ntargs != 1 || !e->targs[0].expr ||
            !cu_const_eval(L, e->targs[0].expr, &tn)) {
            diag_error(L->d, loc, "kad knows cg::tiled_partition<N>(block) with N a constant and block the "
                                  "thread_block");
            return cu_bad(L);
        }
        const CuTy *t = cu_cg_type(L, true, tn, loc);
        return t ? (CVal){.t = t} : cu_bad(L);
    }
    if (!strcmp(n, "reduce") && na == 3)
        return cg_reduce(L, e);
    if ((!strcmp(n, "__ballot_sync") && na == 2) || (!strcmp(n, "__ballot") && na == 1)) {
        CVal p = cu_expr(L, e->args[na - 1]);
        return p.v ? ballot(L, n, p, loc) : cu_bad(L);
    }
    if ((!strcmp(n, "__any_sync") || !strcmp(n, "__all_sync")) && na == 2) {
        /* any: some lane's bit; all: the bits of every lane the current mask holds */
        CVal p = cu_expr(L, e->args[1]);
        CVal b = p.v ? ballot(L, n, p, loc) : cu_bad(L);
        if (!b.v)
            return cu_bad(L);
        CVal ref = !strcmp(n, "__any_sync") ? cu_const_int(L, b.t, 0, loc)
                                            : ballot(L, n, (CVal){.t = cu_ty_bool(L), .v = L->tru}, loc);
        if (!ref.v)
            return cu_bad(L);
        ValId r = cu_op2(L, !strcmp(n, "__any_sync") ? OP_NE : OP_EQ, b.v, cu_bcast(L, ref.v, loc), loc);
        return cu_convert(L, (CVal){.t = cu_ty_bool(L), .v = r}, cu_ty_int(L), loc);
    }
    if ((!strcmp(n, "__popc") || !strcmp(n, "__popcll")) && na == 1) {
        CVal x = cu_expr(L, e->args[0]);
        return x.v ? popcount(L, x, !strcmp(n, "__popcll"), loc) : cu_bad(L);
    }
    if (!strcmp(n, "__activemask")) { /* in converged code of whole warps: every lane */
        if (na || (cu_is_tile(L, cu_m(L)) && cu_m(L) != L->active) || L->nl % L->warp) {
            diag_error(L->d, loc, "__activemask() %s: kad knows it in code every thread of whole warps runs (the "
                                  "full mask)", na ? "takes no arguments" : "in divergent control flow");
            return cu_bad(L);
        }
        return cu_const_int(L, cu_scalar_ty(L, TY_INT, DT_U32), L->warp == 64 ? -1 : 0xffffffffLL, loc);
    }
    if (!strcmp(n, "__syncthreads") || !strcmp(n, "__syncwarp") || !strcmp(n, "__threadfence") ||
        !strcmp(n, "__threadfence_block") || !strcmp(n, "printf")) {
        if (!strcmp(n, "__syncthreads"))
            cu_syncthreads(L, loc);
        else if (!strcmp(n, "__syncwarp") && cu_is_tile(L, cu_m(L)) && cu_m(L) != L->active)
            diag_error(L->d, loc, "'__syncwarp' inside divergent control flow is not supported");
        return (CVal){.t = cu_scalar_ty(L, TY_VOID, DT_VOID)};
    }
    if (!strcmp(n, "min") || !strcmp(n, "max") || !strcmp(n, "umin") || !strcmp(n, "umax") || !strcmp(n, "abs") ||
        !strcmp(n, "llabs") || !strcmp(n, "labs")) {
        bool un = !strcmp(n, "abs") || !strcmp(n, "llabs") || !strcmp(n, "labs");
        if (na != (un ? 1 : 2)) {
            diag_error(L->d, loc, "'%s' takes %d arguments", n, un ? 1 : 2);
            return cu_bad(L);
        }
        CVal a = cu_expr(L, e->args[0]);
        if (!a.v || !cu_is_num(a.t))
            return cu_bad(L);
        if (un) {
            a = cu_convert(L, a, cu_promote(L, a.t), loc);
            return (CVal){.t = a.t, .v = ir_op1(L->f, L->b, OP_ABS, ir_type(L->f, a.v), a.v, loc)};
        }
        CVal b = cu_expr(L, e->args[1]);
        if (!b.v || !cu_is_num(b.t))
            return cu_bad(L);
        const CuTy *t = cu_common(L, a.t, b.t);
        a = cu_convert(L, a, t, loc), b = cu_convert(L, b, t, loc);
        return (CVal){.t = t, .v = cu_op2(L, strstr(n, "min") ? OP_MINIMUM : OP_MAXIMUM, a.v, b.v, loc)};
    }
    struct { const char *name; Dtype to; } convs[] = {
        {"__float2half", DT_F16}, {"__float2half_rn", DT_F16}, {"__double2half", DT_F16}, {"__half2float", DT_F32},
        {"__float2bfloat16", DT_BF16}, {"__float2bfloat16_rn", DT_BF16}, {"__bfloat162float", DT_F32},
        {"__int2float_rn", DT_F32}, {"__uint2float_rn", DT_F32}, {"__float2int_rz", DT_I32},
        {"__double2float_rn", DT_F32}, {"__int2double_rn", DT_F64}, {"__ll2float_rn", DT_F32},
        {"__float2ll_rz", DT_I64}, {"__float2uint_rz", DT_U32}, {"__half2float_rn", DT_F32},
        {"__float2int_rn", DT_I32}, {"__float2int_rd", DT_I32}, {"__float2int_ru", DT_I32},
        {"__double2int_rz", DT_I32},
    };
    for (size_t k = 0; k < sizeof convs / sizeof *convs; k++)
        if (!strcmp(convs[k].name, n)) {
            if (na != 1) {
                diag_error(L->d, loc, "'%s' takes one argument", n);
                return cu_bad(L);
            }
            CVal a = cu_expr(L, e->args[0]);
            if (!a.v || !cu_is_num(a.t))
                return cu_bad(L);
            const char *r = n + strlen(n) - 3;
            if (!strcmp(r, "_rn") && !dtype_is_float(convs[k].to) && a.t->k == TY_FLOAT)
                a.v = ir_op1(L->f, L->b, OP_RINT, ir_type(L->f, a.v), a.v, loc), a.cst = false;
            else if (!strcmp(r, "_rd") && a.t->k == TY_FLOAT)
                a.v = ir_op1(L->f, L->b, OP_FLOOR, ir_type(L->f, a.v), a.v, loc), a.cst = false;
            else if (!strcmp(r, "_ru") && a.t->k == TY_FLOAT)
                a.v = ir_op1(L->f, L->b, OP_CEIL, ir_type(L->f, a.v), a.v, loc), a.cst = false;
            Dtype to = convs[k].to;
            return cu_convert(L, a, cu_scalar_ty(L, dtype_is_float(to) ? TY_FLOAT : TY_INT, to), loc);
        }
    static const struct { const char *name; const char *op; } hops[] = {
        {"__hadd", "+"}, {"__hsub", "-"}, {"__hmul", "*"}, {"__hdiv", "/"}, {"__dadd", "+"},
    };
    for (size_t k = 0; k < sizeof hops / sizeof *hops; k++)
        if (!strcmp(hops[k].name, n) && na == 2) {
            CVal a = cu_expr(L, e->args[0]);
            CVal b = cu_expr(L, e->args[1]);
            return cu_binop(L, hops[k].op, a, b, loc);
        }
    if (!strcmp(n, "__hneg") && na == 1) {
        CVal a = cu_expr(L, e->args[0]);
        return a.v ? (CVal){.t = a.t, .v = ir_op1(L->f, L->b, OP_NEG, ir_type(L->f, a.v), a.v, loc)} : cu_bad(L);
    }
    if ((!strcmp(n, "__frcp_rn") || !strcmp(n, "__drcp_rn")) && na == 1) { /* 1 / x, correctly rounded */
        bool d = n[2] == 'd';
        const CuTy *t = cu_scalar_ty(L, TY_FLOAT, d ? DT_F64 : DT_F32);
        CVal a = cu_convert(L, cu_expr(L, e->args[0]), t, loc);
        return a.v ? cu_binop(L, "/", cu_convert(L, cu_const_int(L, cu_ty_int(L), 1, loc), t, loc), a, loc) : cu_bad(L);
    }
    if ((!strcmp(n, "__syncthreads_or") || !strcmp(n, "__syncthreads_and") || !strcmp(n, "__syncthreads_count")) &&
        na == 1) {
        /* a barrier, then over the block's threads: whether any / every predicate holds, or how many */
        CVal p = cu_expr(L, e->args[0]);
        ValId c = p.v ? cu_truth(L, p, loc) : 0;
        if (!c)
            return cu_bad(L);
        cu_syncthreads(L, loc);
        ValId on = cu_and(L, cu_bcast(L, c, loc), cu_bcast(L, cu_m(L), loc), loc);
        ValId one = cu_where(L, on, cu_bcast(L, cu_cint(L, DT_I32, 1, loc), loc), cu_bcast(L, cu_cint(L, DT_I32, 0, loc), loc),
                             loc);
        Inst *sm = ir_emit(L->f, L->b, OP_SUM, &one, 1, (Type[]){type_scalar(DT_I32)}, 1, loc);
        sm->ival = 0;
        ValId cnt = sm->res[0];
        if (!strcmp(n, "__syncthreads_count"))
            return (CVal){.t = cu_ty_int(L), .v = cnt};
        ValId r = !strcmp(n, "__syncthreads_or") ? cu_op2(L, OP_GT, cnt, cu_cint(L, DT_I32, 0, loc), loc)
                                                 : cu_op2(L, OP_GE, cnt, cu_cint(L, DT_I32, L->nl, loc), loc);
        return cu_convert(L, (CVal){.t = cu_ty_bool(L), .v = r}, cu_ty_int(L), loc);
    }
    static const char *const ldc[] = {"__ldcs", "__ldcg", "__ldca", "__ldlu", "__ldcv"};
    for (size_t k = 0; k < sizeof ldc / sizeof *ldc; k++)
        if (!strcmp(n, ldc[k]) && na == 1) { /* loads with a cache hint: loads */
            CVal p = cu_expr(L, e->args[0]);
            if (!p.v || p.t->k != TY_PTR) {
                diag_error(L->d, loc, "'%s' takes a pointer", n);
                return cu_bad(L);
            }
            return cu_load_ptr(L, p, loc);
        }
    static const char *const stc[] = {"__stcs", "__stcg", "__stwb", "__stwt"};
    for (size_t k = 0; k < sizeof stc / sizeof *stc; k++)
        if (!strcmp(n, stc[k]) && na == 2) { /* stores with a cache hint: stores */
            CVal p = cu_expr(L, e->args[0]);
            CVal v = cu_expr(L, e->args[1]);
            if (!p.v || p.t->k != TY_PTR || !v.v) {
                if (p.v && p.t->k != TY_PTR)
                    diag_error(L->d, loc, "'%s' takes a pointer and a value", n);
                return cu_bad(L);
            }
            cu_store_ptr(L, p, v, loc);
            return (CVal){.t = cu_scalar_ty(L, TY_VOID, DT_VOID)};
        }
    if (!strcmp(n, "__ldg") && na == 1) {
        CVal p = cu_expr(L, e->args[0]);
        if (!p.v || p.t->k != TY_PTR) {
            diag_error(L->d, loc, "'__ldg' takes a pointer");
            return cu_bad(L);
        }
        return cu_load_ptr(L, p, loc);
    }
    if ((!strcmp(n, "atomicAdd") || !strcmp(n, "atomicAdd_block") || !strcmp(n, "unsafeAtomicAdd")) && na == 2) {
        CVal p = cu_expr(L, e->args[0]);
        CVal v = cu_expr(L, e->args[1]);
        if (!p.v || p.t->k != TY_PTR || p.t->elem->k == TY_STRUCT || !v.v) {
            if (p.t && p.t->k != TY_PTR)
                diag_error(L->d, e->args[0]->loc, "atomicAdd takes a pointer into global memory");
            return cu_bad(L);
        }
        v = cu_convert(L, v, p.t->elem, loc);
        ValId pt = cu_bcast(L, p.v, loc), vt = cu_bcast(L, v.v, loc), m = cu_m(L);
        Type rt = ir_type(L->f, vt);
        Inst *in;
        if (m == L->tru)
            in = ir_emit(L->f, L->b, OP_ATOMIC_ADD, (ValId[]){pt, vt}, 2, &rt, 1, loc);
        else {
            in = ir_emit(L->f, L->b, OP_ATOMIC_ADD, (ValId[]){pt, vt, cu_bcast(L, m, loc)}, 3, &rt, 1, loc);
            in->flags |= IF_HAS_MASK;
        }
        return (CVal){.t = p.t->elem, .v = in->res[0]};
    }
    if (!strncmp(n, "__shfl", 6)) {
        bool sync = strstr(n, "_sync") != NULL;
        int first = sync ? 1 : 0;
        const char *kind = n + 6;
        bool known = !strcmp(kind, "_xor_sync") || !strcmp(kind, "_down_sync") || !strcmp(kind, "_up_sync") ||
                     !strcmp(kind, "_sync") || !strcmp(kind, "_xor") || !strcmp(kind, "_down") ||
                     !strcmp(kind, "_up") || !*kind;
        if (!known || na < first + 2 || na > first + 3) {
            diag_error(L->d, loc, "'%s' is not a warp shuffle kad knows (or has the wrong arguments)", n);
            return cu_bad(L);
        }
        CVal v = cu_expr(L, e->args[first]);
        CVal arg = cu_expr(L, e->args[first + 1]);
        int width = L->warp;
        if (na == first + 3) {
            int64_t w;
            if (!cu_const_eval(L, e->args[first + 2], &w) || w < 1 || w > L->warp || (w & (w - 1))) {
                diag_error(L->d, e->args[first + 2]->loc, "a shuffle's width must be a constant power of two <= %d",
                           L->warp);
                return cu_bad(L);
            }
            width = (int)w;
        }
        return shuffled(L, n, v, arg, width, loc);
    }
    if (!strncmp(n, "__h", 3) || !strncmp(n, "__low2", 6) || !strncmp(n, "__high2", 7) || strstr(n, "half2") ||
        strstr(n, "bfloat162")) {
        bool h = true;
        CVal r = half_pairs(L, e, n, &h);
        if (h)
            return r;
    }
    if (!strncmp(n, "make_", 5)) {
        const CuTy *t = cu_vec_type(L, n + 5);
        if (!t || na != t->st->n) {
            diag_error(L->d, loc, "'%s' is not a vector constructor kad knows (or has the wrong arguments)", n);
            return cu_bad(L);
        }
        CVal x = {.t = t};
        x.f = arena_alloc(L->a, sizeof *x.f * (size_t)na);
        for (int i = 0; i < na; i++)
            x.f[i] = cu_convert(L, cu_expr(L, e->args[i]), t->st->fty[i], loc);
        return x;
    }
    if ((!strcmp(n, "isnan") || !strcmp(n, "isinf") || !strcmp(n, "__isnanf") || !strcmp(n, "isfinite")) && na == 1) {
        CVal a = cu_expr(L, e->args[0]);
        if (!a.v || a.t->k != TY_FLOAT)
            return (CVal){.t = cu_ty_bool(L), .v = L->fls};
        if (!strcmp(n, "isfinite")) {
            ValId i1 = ir_op1(L->f, L->b, OP_ISINF, type_with_dtype(ir_type(L->f, a.v), DT_I1), a.v, loc);
            ValId i2 = ir_op1(L->f, L->b, OP_ISNAN, type_with_dtype(ir_type(L->f, a.v), DT_I1), a.v, loc);
            return (CVal){.t = cu_ty_bool(L), .v = cu_not(L, cu_or(L, i1, i2, loc), loc)};
        }
        OpKind k = strstr(n, "nan") ? OP_ISNAN : OP_ISINF;
        return (CVal){.t = cu_ty_bool(L), .v = ir_op1(L->f, L->b, k, type_with_dtype(ir_type(L->f, a.v), DT_I1), a.v, loc)};
    }
    if ((!strcmp(n, "__float_as_int") || !strcmp(n, "__int_as_float") || !strcmp(n, "__float_as_uint") ||
         !strcmp(n, "__uint_as_float")) && na == 1) {
        CVal a = cu_expr(L, e->args[0]);
        Dtype to = !strcmp(n, "__float_as_int") ? DT_I32 : !strcmp(n, "__float_as_uint") ? DT_U32 : DT_F32;
        Dtype from = to == DT_F32 ? (strstr(n, "uint") ? DT_U32 : DT_I32) : DT_F32;
        a = cu_convert(L, a, cu_scalar_ty(L, from == DT_F32 ? TY_FLOAT : TY_INT, from), loc);
        if (!a.v)
            return cu_bad(L);
        return (CVal){.t = cu_scalar_ty(L, to == DT_F32 ? TY_FLOAT : TY_INT, to),
                      .v = ir_op1(L->f, L->b, OP_BITCAST, type_with_dtype(ir_type(L->f, a.v), to), a.v, loc)};
    }
    if (!strcmp(n, "assert") && na == 1) {
        ValId c = cu_truth(L, cu_expr(L, e->args[0]), loc);
        c = cu_or(L, c, cu_not(L, cu_m(L), loc), loc);
        Inst *in = ir_emit(L->f, L->b, OP_ASSERT, &c, 1, NULL, 0, loc);
        in->sattr = arena_printf(L->a, "%s:%d: assertion failed", loc.file, loc.line);
        return (CVal){.t = cu_scalar_ty(L, TY_VOID, DT_VOID)};
    }
    *handled = false;
    return cu_bad(L);
}

