/* cu_lower.c -- types, values and expressions of CUDA C / HIP kernels,
 * lowered to kad's tile IR (the entry point cu_lower is in cu_kernel.c).
 *
 * A block's threads are the lanes of one 1-D tile of Lp lanes (the next
 * power of two of the block's thread count; lanes past it are masked off).
 * A value the same in every thread (blockIdx, kernel arguments, what is
 * computed from them alone) stays an IR scalar: that is the uniformity
 * analysis, read off each value's rank.  threadIdx.x/y/z come from
 * tid = arange(0, Lp); blockIdx from program_id, gridDim from
 * num_programs, blockDim and warpSize are constants.
 *
 * C's typing is followed exactly: the integer promotions, the usual
 * arithmetic conversions (`x * 1.0` runs in fp64 and is converted on
 * assignment, `1.0f` is float), truncating integer division (the IR's),
 * threadIdx and blockIdx unsigned.  Loads, stores and atomics take the
 * current execution mask $m (cu_stmt.c runs control flow); `&&`, `||` and
 * `?:` evaluate their right side under the narrowed mask, as C's short
 * circuit would.  Device functions are inlined (cu_kernel.c); builtins are
 * cu_builtins.c's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/cuda.h"
#include "front/cu.h"

/* ---- types ---- */

const CuTy *cu_scalar_ty(Lw *L, int k, Dtype dt)
{
    CuTy *t = arena_alloc(L->a, sizeof *t);
    t->k = k;
    t->dt = dt;
    return t;
}

const CuTy *cu_ptr_ty(Lw *L, const CuTy *elem)
{
    CuTy *t = arena_alloc(L->a, sizeof *t);
    t->k = TY_PTR;
    t->elem = elem;
    t->dt = elem->k == TY_STRUCT ? (elem->st->n ? elem->st->fty[0]->dt : DT_F32) : elem->dt;
    return t;
}

const CuTy *cu_ty_int(Lw *L) { return cu_scalar_ty(L, TY_INT, DT_I32); }
const CuTy *cu_ty_bool(Lw *L) { return cu_scalar_ty(L, TY_BOOL, DT_I1); }

Type cu_ir_type(Lw *L, const CuTy *t, bool tile)
{
    int32_t s = L->lp;
    if (t->k == TY_PTR)
        return type_ptr(t->dt, tile ? 1 : 0, &s);
    return type_tile(t->dt, tile ? 1 : 0, &s);
}

static const char *ty_str(Lw *L, const CuTy *t)
{
    switch (t->k) {
    case TY_VOID: return "void";
    case TY_BOOL: return "bool";
    case TY_PTR: return arena_printf(L->a, "%s*", ty_str(L, t->elem));
    case TY_STRUCT: return t->st->name;
    default: return dtype_name(t->dt);
    }
}

/* Vector types: float2..4, double2..4, int2..4, uint2..4. */
const CuTy *cu_vec_type(Lw *L, const char *name)
{
    static const struct { const char *p; Dtype dt; } bases[] = {
        {"float", DT_F32}, {"double", DT_F64}, {"int", DT_I32}, {"uint", DT_U32}, {"long", DT_I64},
        {"__half", DT_F16}, {"__nv_bfloat16", DT_BF16},
    };
    /* the half pairs: half2 is __half2, nv_bfloat162 is __nv_bfloat162 */
    if (!strcmp(name, "half2"))
        name = "__half2";
    else if (!strcmp(name, "nv_bfloat162"))
        name = "__nv_bfloat162";
    for (size_t k = 0; k < sizeof bases / sizeof *bases; k++) {
        size_t n = strlen(bases[k].p);
        if (strncmp(name, bases[k].p, n) || !name[n] || name[n] < '2' || name[n] > '4' || name[n + 1])
            continue;
        if ((bases[k].dt == DT_F16 || bases[k].dt == DT_BF16) && name[n] != '2')
            continue; /* no half3 */
        for (int i = 0; i < L->vecs.n; i++)
            if (!strcmp(L->vecs.v[i]->name, name)) {
                CuTy *t = arena_alloc(L->a, sizeof *t);
                t->k = TY_STRUCT;
                t->st = L->vecs.v[i];
                return t;
            }
        CuSInfo *si = arena_alloc(L->a, sizeof *si);
        si->name = arena_strdup(L->a, name);
        si->n = name[n] - '0';
        si->fname = arena_alloc(L->a, sizeof *si->fname * 4);
        si->fty = arena_alloc(L->a, sizeof *si->fty * 4);
        static const char *const xyzw[] = {"x", "y", "z", "w"};
        for (int i = 0; i < si->n; i++) {
            si->fname[i] = xyzw[i];
            si->fty[i] = cu_scalar_ty(L, dtype_is_float(bases[k].dt) ? TY_FLOAT : TY_INT, bases[k].dt);
        }
        vec_push(L->a, L->vecs, si);
        CuTy *t = arena_alloc(L->a, sizeof *t);
        t->k = TY_STRUCT;
        t->st = si;
        return t;
    }
    return NULL;
}

const CuTy *cu_base_type(Lw *L, const char *n, Loc loc)
{
    static const struct { const char *name; int k; Dtype dt; } names[] = {
        {"void", TY_VOID, DT_VOID}, {"bool", TY_BOOL, DT_I1},
        {"float", TY_FLOAT, DT_F32}, {"double", TY_FLOAT, DT_F64}, {"half", TY_FLOAT, DT_F16},
        {"__half", TY_FLOAT, DT_F16}, {"__nv_bfloat16", TY_FLOAT, DT_BF16}, {"nv_bfloat16", TY_FLOAT, DT_BF16},
        {"hip_bfloat16", TY_FLOAT, DT_BF16}, {"__hip_bfloat16", TY_FLOAT, DT_BF16},
        {"int", TY_INT, DT_I32}, {"signed", TY_INT, DT_I32}, {"signed int", TY_INT, DT_I32},
        {"int32_t", TY_INT, DT_I32}, {"unsigned", TY_INT, DT_U32}, {"unsigned int", TY_INT, DT_U32},
        {"uint32_t", TY_INT, DT_U32}, {"uint", TY_INT, DT_U32}, {"long", TY_INT, DT_I64},
        {"long int", TY_INT, DT_I64}, {"long long", TY_INT, DT_I64}, {"long long int", TY_INT, DT_I64},
        {"signed long", TY_INT, DT_I64}, {"int64_t", TY_INT, DT_I64}, {"ptrdiff_t", TY_INT, DT_I64},
        {"__int64", TY_INT, DT_I64}, {"longlong", TY_INT, DT_I64}, {"unsigned long", TY_INT, DT_U64},
        {"unsigned long int", TY_INT, DT_U64}, {"unsigned long long", TY_INT, DT_U64},
        {"unsigned long long int", TY_INT, DT_U64}, {"uint64_t", TY_INT, DT_U64}, {"size_t", TY_INT, DT_U64},
        {"short", TY_INT, DT_I16}, {"short int", TY_INT, DT_I16}, {"int16_t", TY_INT, DT_I16},
        {"unsigned short", TY_INT, DT_U16}, {"uint16_t", TY_INT, DT_U16}, {"char", TY_INT, DT_I8},
        {"signed char", TY_INT, DT_I8}, {"int8_t", TY_INT, DT_I8}, {"unsigned char", TY_INT, DT_U8},
        {"uint8_t", TY_INT, DT_U8},
    };
    for (size_t k = 0; k < sizeof names / sizeof *names; k++)
        if (!strcmp(n, names[k].name))
            return cu_scalar_ty(L, names[k].k, names[k].dt);
    const CuTy *v = cu_vec_type(L, n);
    if (v)
        return v;
    Var *tv = cu_lookup(L, n);
    if (tv && tv->kind == VK_TYPE)
        return tv->t;
    for (int u = 0; u < L->nunits; u++) {
        CuUnit *U = L->units[u];
        for (int i = 0; i < U->typedefs.n; i++)
            if (!strcmp(U->typedefs.v[i].name, n))
                return cu_resolve_type(L, U->typedefs.v[i].type);
        for (int i = 0; i < U->structs.n; i++) {
            const CuStruct *s = U->structs.v[i];
            if (!s->name || strcmp(s->name, n))
                continue;
            if (s->host) {
                diag_error(L->d, loc,
                           "struct '%s' has a member that is not a number (a method, an array or a host type such as "
                           "torch::Tensor, first at %s:%d:%d): kad lowers structs of numbers only; pass what the "
                           "kernel reads from it as parameters", n, s->host_loc.file, s->host_loc.line,
                           s->host_loc.col);
                return NULL;
            }
            CuSInfo *si = arena_alloc(L->a, sizeof *si);
            si->name = s->name;
            si->n = s->nfields;
            si->fname = arena_alloc(L->a, sizeof *si->fname * (size_t)(s->nfields + 1));
            si->fty = arena_alloc(L->a, sizeof *si->fty * (size_t)(s->nfields + 1));
            for (int j = 0; j < s->nfields; j++) {
                si->fname[j] = s->fields[j].name;
                si->fty[j] = cu_resolve_type(L, s->fields[j].type);
                if (!si->fty[j] || si->fty[j]->k == TY_VOID || si->fty[j]->k == TY_PTR) {
                    diag_error(L->d, s->fields[j].type->loc,
                               "struct member '%s': only numbers and structs of numbers are supported", si->fname[j]);
                    si->fty[j] = cu_scalar_ty(L, TY_FLOAT, DT_F32);
                }
            }
            CuTy *t = arena_alloc(L->a, sizeof *t);
            t->k = TY_STRUCT;
            t->st = si;
            return t;
        }
    }
    diag_error(L->d, loc, "unknown type '%s'", n);
    return NULL;
}

/* cub::BlockReduce<T, THREADS[, ALGORITHM, ...]>: TY_CUB of elem T; its ::TempStorage. */
static const CuTy *cub_type(Lw *L, const CuTypeSpec *ts)
{
    size_t n = strlen(ts->name), k = strlen("::TempStorage");
    if (n > k && !strcmp(ts->name + n - k, "::TempStorage")) {
        CuTypeSpec base = *ts;
        base.name = arena_strndup(L->a, ts->name, n - k);
        base.nptr = 0;
        const CuTy *b = cu_resolve_type(L, &base);
        if (!b || b->k != TY_CUB || b->cub != CUB_BLOCK_REDUCE) {
            diag_error(L->d, ts->loc, "'%s': kad knows TempStorage of cub::BlockReduce only", ts->name);
            return NULL;
        }
        CuTy *t = arena_alloc(L->a, sizeof *t);
        *t = *b;
        t->cub = CUB_TEMP;
        return t;
    }
    int64_t threads = 0;
    const CuTy *el = ts->ntargs >= 2 && ts->targs[0].type ? cu_resolve_type(L, ts->targs[0].type) : NULL;
    if (!el || (el->k != TY_INT && el->k != TY_FLOAT) || !ts->targs[1].expr ||
        !cu_const_eval(L, ts->targs[1].expr, &threads) || threads <= 0) {
        diag_error(L->d, ts->loc, "cub::BlockReduce<T, THREADS>: T a number type, THREADS a constant");
        return NULL;
    }
    if (ts->ntargs > 2 && ts->ntargs != 5 && ts->ntargs != 3) {
        diag_error(L->d, ts->loc, "cub::BlockReduce takes T, BLOCK_DIM_X[, ALGORITHM[, BLOCK_DIM_Y, BLOCK_DIM_Z]]");
        return NULL;
    }
    int64_t dims = threads;
    for (int i = 3; i < ts->ntargs; i++) {
        int64_t d = 0;
        if (!ts->targs[i].expr || !cu_const_eval(L, ts->targs[i].expr, &d) || d <= 0) {
            diag_error(L->d, ts->loc, "cub::BlockReduce's block dimensions must be constants");
            return NULL;
        }
        dims *= d;
    }
    CuTy *t = arena_alloc(L->a, sizeof *t);
    *t = (CuTy){.k = TY_CUB, .elem = el, .cub = CUB_BLOCK_REDUCE, .cub_threads = dims};
    return t;
}

const CuTy *cu_resolve_type(Lw *L, const CuTypeSpec *ts)
{
    if (!strcmp(ts->name, "auto"))
        return NULL;
    if (!strncmp(ts->name, "torch::PackedTensorAccessor", 27)) { /* <T, N, traits>: a tensor's view */
        int64_t n = 0;
        const CuTy *el = ts->ntargs >= 2 && ts->targs[0].type ? cu_resolve_type(L, ts->targs[0].type) : NULL;
        if (!el || !cu_is_num(el) || !ts->targs[1].expr || !cu_const_eval(L, ts->targs[1].expr, &n) || n < 1 || n > 6 ||
            ts->nptr) {
            diag_error(L->d, ts->loc, "%s<T, N, traits>: T a number type, N a constant from 1 to 6, by value",
                       ts->name);
            return NULL;
        }
        CuTy *t = arena_alloc(L->a, sizeof *t);
        *t = (CuTy){.k = TY_ACC, .elem = el, .cub_threads = n, .dt = strstr(ts->name, "64") ? DT_I64 : DT_I32};
        return t;
    }
    if (!strncmp(ts->name, "cg::", 4)) { /* cooperative groups: the block, and tiles of it */
        if (!strcmp(ts->name, "cg::thread_block") && !ts->ntargs && !ts->nptr)
            return cu_cg_type(L, false, L->nl, ts->loc);
        int64_t n = 0;
        if (!strcmp(ts->name, "cg::thread_block_tile") && ts->ntargs == 1 && ts->targs[0].expr && !ts->nptr &&
            cu_const_eval(L, ts->targs[0].expr, &n))
            return cu_cg_type(L, true, n, ts->loc);
        diag_error(L->d, ts->loc, "%s: kad knows cooperative_groups' thread_block and thread_block_tile<N> (N a "
                                  "constant), as values", ts->name);
        return NULL;
    }
    if (!strcmp(ts->name, "at::acc_type") || !strcmp(ts->name, "at::opmath_type")) {
        /* PyTorch's accumulation types on CUDA: half, bf16 and float accumulate in float, double
         * in double, integers in int64_t (acc_type; opmath_type keeps them) */
        const CuTy *t = ts->ntargs >= 1 && ts->targs[0].type ? cu_resolve_type(L, ts->targs[0].type) : NULL;
        if (!t || (t->k != TY_FLOAT && t->k != TY_INT && t->k != TY_BOOL) || ts->nptr) {
            diag_error(L->d, ts->loc, "%s<T>: T a number type", ts->name);
            return cu_scalar_ty(L, TY_FLOAT, DT_F32);
        }
        if (t->k == TY_FLOAT)
            return cu_scalar_ty(L, TY_FLOAT, t->dt == DT_F64 ? DT_F64 : DT_F32);
        return !strcmp(ts->name, "at::acc_type") ? cu_scalar_ty(L, TY_INT, DT_I64) : t;
    }
    if (!strncmp(ts->name, "cub::BlockReduce", 16) || strstr(ts->name, "::TempStorage")) {
        const CuTy *c = cub_type(L, ts);
        if (c && ts->nptr) {
            diag_error(L->d, ts->loc, "a pointer to a cub type is not supported");
            return NULL;
        }
        return c;
    }
    const CuTy *t = cu_base_type(L, ts->name, ts->loc);
    if (!t)
        return cu_scalar_ty(L, TY_INT, DT_I32);
    if (ts->nptr > 1) {
        diag_error(L->d, ts->loc, "pointers to pointers are not supported");
        return cu_ptr_ty(L, t);
    }
    return ts->nptr ? cu_ptr_ty(L, t) : t;
}

/* ---- names ---- */

Var *cu_lookup(Lw *L, const char *name)
{
    for (int i = L->env.n - 1; i >= 0; i--) {
        if (i < L->frame && name[0] != '$') {
            /* below the current function's frame only the file-scope constants are in scope */
            if (i >= L->g1) {
                i = L->g1;
                continue;
            }
            if (i < L->g0)
                break;
        }
        if (L->env.v[i].name && !strcmp(L->env.v[i].name, name))
            return &L->env.v[i];
    }
    return NULL;
}

Var *cu_declare(Lw *L, const char *name, int kind, const CuTy *t, Loc loc)
{
    Var v = {.name = name, .kind = kind, .t = t, .loc = loc};
    Var *m = cu_lookup(L, "$m");
    v.decl_m = m ? m->val.v : 0;
    vec_push(L->a, L->env, v);
    return &L->env.v[L->env.n - 1];
}

/* ---- IR helpers ---- */

static Loc here(const CuExpr *e) { return e->loc; }

/* ---- warp-uniform values ---- */

static bool has_fact(Lw *L, ValId v, unsigned fact) { return v < L->warpf.n && (L->warpf.v[v] & fact); }

void cu_warp_mark(Lw *L, ValId v, unsigned fact)
{
    while (L->warpf.n <= v)
        vec_push(L->a, L->warpf, 0);
    L->warpf.v[v] |= (uint8_t)fact;
}

bool cu_warp_uniform(Lw *L, ValId v) { return !cu_is_tile(L, v) || has_fact(L, v, CU_W_UNIFORM); }

static void mark_uniform(Lw *L, ValId r)
{
    if (cu_is_tile(L, r))
        cu_warp_mark(L, r, CU_W_UNIFORM);
}

/* tid + k * warpSize, k >= 0 a scalar: its quotient by a multiple of warpSize is warp-uniform */
static bool warp_lane(Lw *L, ValId v) { return cu_is_lane(L, v) || has_fact(L, v, CU_W_LANE); }

/* A scalar known to be a nonnegative multiple of warpSize. */
static bool warp_mul(Lw *L, CVal x)
{
    if (x.cst && x.t && x.t->k == TY_INT)
        return x.ci >= 0 && x.ci % L->warp == 0;
    return x.v && !cu_is_tile(L, x.v) && has_fact(L, x.v, CU_W_MUL);
}

/* A scalar known to be nonnegative: an unsigned value or a constant >= 0. */
static bool nonneg(Lw *L, CVal x)
{
    if (x.cst && x.t && x.t->k == TY_INT)
        return x.ci >= 0;
    return x.v && !cu_is_tile(L, x.v) && x.t && x.t->k == TY_INT && !dtype_is_signed(x.t->dt);
}

/* Warp facts of r = x op y (cu_binop): multiples of warpSize, lanes offset by them, and
 * their quotients by a multiple of warpSize (warp-uniform). */
static void warp_facts(Lw *L, OpKind k, CVal x, CVal y, ValId r)
{
    int w = L->warp;
    bool xt = x.v && cu_is_tile(L, x.v), yt = y.v && cu_is_tile(L, y.v);
    if (k == OP_MUL && !xt && !yt && ((warp_mul(L, x) && nonneg(L, y)) || (warp_mul(L, y) && nonneg(L, x))))
        cu_warp_mark(L, r, CU_W_MUL);
    if (k == OP_ADD && ((xt && warp_lane(L, x.v) && !yt && warp_mul(L, y)) ||
                        (yt && warp_lane(L, y.v) && !xt && warp_mul(L, x))))
        cu_warp_mark(L, r, CU_W_LANE);
    if (xt && warp_lane(L, x.v) && y.cst && y.t->k == TY_INT &&
        ((k == OP_DIV && y.ci > 0 && y.ci % w == 0) || (k == OP_SHR && y.ci >= 0 && y.ci < 31 && (1 << y.ci) % w == 0)))
        mark_uniform(L, r);
}

ValId cu_cint(Lw *L, Dtype dt, int64_t v, Loc loc) { return ir_const_int(L->f, L->b, type_scalar(dt), v, loc); }

ValId cu_bcast(Lw *L, ValId v, Loc loc)
{
    Type t = ir_type(L->f, v);
    if (t.rank)
        return v;
    int32_t s = L->lp;
    ValId r = ir_op1(L->f, L->b, OP_BROADCAST, type_with_shape(t, 1, &s), v, loc);
    cu_warp_mark(L, r, CU_W_UNIFORM);
    return r;
}

bool cu_is_tile(Lw *L, ValId v) { return ir_type(L->f, v).rank > 0; }

ValId cu_where(Lw *L, ValId c, ValId a, ValId b, Loc loc)
{
    if (c == L->tru)
        return a;
    if (c == L->fls)
        return b;
    if (a == b)
        return a;
    bool t = cu_is_tile(L, c) || cu_is_tile(L, a) || cu_is_tile(L, b);
    bool uni = cu_warp_uniform(L, c) && cu_warp_uniform(L, a) && cu_warp_uniform(L, b);
    if (t)
        c = cu_bcast(L, c, loc), a = cu_bcast(L, a, loc), b = cu_bcast(L, b, loc);
    ValId r = ir_op3(L->f, L->b, OP_WHERE, ir_type(L->f, a), c, a, b, loc);
    if (uni)
        mark_uniform(L, r);
    return r;
}

/* A binary IR op on x and y, broadcast to a common shape; the result has
 * x's dtype (i1 for comparisons). */
ValId cu_op2(Lw *L, OpKind op, ValId x, ValId y, Loc loc)
{
    bool uni = cu_warp_uniform(L, x) && cu_warp_uniform(L, y);
    if (cu_is_tile(L, x) || cu_is_tile(L, y))
        x = cu_bcast(L, x, loc), y = cu_bcast(L, y, loc);
    Type t = ir_type(L->f, x);
    if (op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE || op == OP_EQ || op == OP_NE)
        t = type_with_dtype(t, DT_I1);
    ValId r = ir_op2(L->f, L->b, op, t, x, y, loc);
    if (uni)
        mark_uniform(L, r);
    return r;
}

ValId cu_and(Lw *L, ValId a, ValId b, Loc loc)
{
    if (a == L->tru || a == b)
        return b;
    if (b == L->tru)
        return a;
    if (a == L->fls || b == L->fls)
        return L->fls;
    return cu_op2(L, OP_AND, a, b, loc);
}

ValId cu_or(Lw *L, ValId a, ValId b, Loc loc)
{
    if (a == L->fls || a == b)
        return b;
    if (b == L->fls)
        return a;
    if (a == L->tru || b == L->tru)
        return L->tru;
    return cu_op2(L, OP_OR, a, b, loc);
}

ValId cu_not(Lw *L, ValId a, Loc loc)
{
    if (a == L->tru)
        return L->fls;
    if (a == L->fls)
        return L->tru;
    ValId r = ir_op1(L->f, L->b, OP_NOT, ir_type(L->f, a), a, loc);
    if (cu_warp_uniform(L, a))
        mark_uniform(L, r);
    return r;
}

ValId cu_any(Lw *L, ValId m, Loc loc)
{
    if (!cu_is_tile(L, m))
        return m;
    if (m == L->active)
        return L->tru;
    int32_t s = L->lp;
    ValId i = ir_op1(L->f, L->b, OP_CAST, type_tile(DT_I32, 1, &s), m, loc);
    Inst *in = ir_emit(L->f, L->b, OP_MAX, &i, 1, (Type[]){type_scalar(DT_I32)}, 1, loc);
    in->ival = 0;
    ValId mx = in->res[0];
    return cu_op2(L, OP_NE, mx, cu_cint(L, DT_I32, 0, loc), loc);
}

/* The threads executing: $m, or every thread outside a function (the file-scope constants are
 * lowered before the kernel declares $m). */
ValId cu_m(Lw *L)
{
    Var *m = cu_lookup(L, "$m");
    return m ? m->val.v : L->tru;
}
void cu_set_m(Lw *L, ValId m)
{
    Var *v = cu_lookup(L, "$m");
    if (v)
        v->val.v = m;
}

/* ---- constants and conversions ---- */

bool cu_is_lane(Lw *L, ValId v)
{
    if (v == L->tid)
        return true;
    for (int i = 0; i < L->lanes.n; i++)
        if (L->lanes.v[i] == v)
            return true;
    return false;
}

CVal cu_const_int(Lw *L, const CuTy *t, int64_t v, Loc loc)
{
    CVal x = {.t = t, .cst = true};
    if (t->k == TY_FLOAT) {
        x.cf = (double)v;
        x.v = ir_const_float(L->f, L->b, type_scalar(t->dt), x.cf, loc);
        return x;
    }
    x.ci = dtype_wrap(t->dt, (uint64_t)v);
    x.v = cu_cint(L, t->dt, x.ci, loc);
    return x;
}

CVal cu_const_float(Lw *L, const CuTy *t, double v, Loc loc)
{
    CVal x = {.t = t, .cst = true, .cf = dtype_round(t->dt, v)};
    x.v = ir_const_float(L->f, L->b, type_scalar(t->dt), x.cf, loc);
    return x;
}

CVal cu_zero(Lw *L, const CuTy *t, Loc loc)
{
    if (t->k == TY_STRUCT) {
        CVal x = {.t = t};
        x.f = arena_alloc(L->a, sizeof *x.f * (size_t)(t->st->n + 1));
        for (int i = 0; i < t->st->n; i++)
            x.f[i] = cu_zero(L, t->st->fty[i], loc);
        return x;
    }
    if (t->k == TY_PTR) {
        diag_error(L->d, loc, "a pointer variable needs an initial value");
        return (CVal){.t = t};
    }
    return t->k == TY_FLOAT ? cu_const_float(L, t, 0.0, loc) : cu_const_int(L, t, 0, loc);
}

ValId cu_truth(Lw *L, CVal x, Loc loc)
{
    if (!x.v)
        return L->fls;
    if (x.t->k == TY_BOOL)
        return x.v;
    if (x.t->k == TY_STRUCT || x.t->k == TY_PTR || x.t->k == TY_VOID) {
        diag_error(L->d, loc, "a %s is not a condition", ty_str(L, x.t));
        return L->fls;
    }
    if (x.cst)
        return (x.t->k == TY_FLOAT ? x.cf != 0 : x.ci != 0) ? L->tru : L->fls;
    ValId z = x.t->k == TY_FLOAT ? ir_const_float(L->f, L->b, type_scalar(x.t->dt), 0.0, loc)
                                 : cu_cint(L, x.t->dt, 0, loc);
    return cu_op2(L, OP_NE, x.v, z, loc);
}

static bool same_ty(const CuTy *a, const CuTy *b)
{
    if (a->k != b->k)
        return false;
    if (a->k == TY_PTR)
        return same_ty(a->elem, b->elem);
    if (a->k == TY_STRUCT)
        return !strcmp(a->st->name, b->st->name);
    return a->dt == b->dt;
}

CVal cu_convert(Lw *L, CVal x, const CuTy *to, Loc loc)
{
    if (!x.v && x.t && x.t->k != TY_STRUCT)
        return (CVal){.t = to};
    if (!x.t || same_ty(x.t, to)) {
        x.t = to;
        return x;
    }
    if (to->k == TY_BOOL) {
        ValId v = cu_truth(L, x, loc);
        CVal r = {.t = to, .v = v};
        if (v == L->tru || v == L->fls)
            r.cst = true, r.ci = v == L->tru;
        return r;
    }
    if (to->k == TY_PTR && x.t->k == TY_PTR) {
        CVal r = x;
        r.t = to;
        if (to->dt != x.t->dt) {
            Type t = ir_type(L->f, x.v);
            t.elem = (uint8_t)to->dt;
            r.v = ir_op1(L->f, L->b, OP_BITCAST, t, x.v, loc);
        }
        return r;
    }
    if (to->k == TY_STRUCT || x.t->k == TY_STRUCT || to->k == TY_PTR || x.t->k == TY_PTR || to->k == TY_VOID) {
        diag_error(L->d, loc, "cannot convert %s to %s", ty_str(L, x.t), ty_str(L, to));
        return (CVal){.t = to};
    }
    CVal r = {.t = to};
    if (x.cst) {
        if (to->k == TY_FLOAT) {
            double v = x.t->k == TY_FLOAT ? x.cf : dtype_is_signed(x.t->dt) ? (double)x.ci : (double)(uint64_t)x.ci;
            if (x.t->k == TY_BOOL)
                v = (double)x.ci;
            r = cu_const_float(L, to, v, loc);
            return r;
        }
        if (x.t->k != TY_FLOAT)
            return cu_const_int(L, to, x.ci, loc);
        if (isfinite(x.cf) && fabs(x.cf) < 9.2e18)
            return cu_const_int(L, to, (int64_t)x.cf, loc);
    }
    Type t = type_with_dtype(ir_type(L->f, x.v), to->dt);
    r.v = ir_op1(L->f, L->b, OP_CAST, t, x.v, loc);
    if (to->k == TY_INT && x.t->k == TY_INT && dtype_bits(to->dt) >= 16 && cu_is_lane(L, x.v))
        vec_push(L->a, L->lanes, r.v); /* the lane index fits every such type */
    else if (to->k == TY_INT && x.t->k == TY_INT && dtype_bits(to->dt) >= 32 && warp_lane(L, x.v))
        cu_warp_mark(L, r.v, CU_W_LANE);
    if (cu_warp_uniform(L, x.v))
        mark_uniform(L, r.v);
    if (to->k == TY_INT && x.t->k == TY_INT && dtype_bits(to->dt) >= 32 && warp_mul(L, x))
        cu_warp_mark(L, r.v, CU_W_MUL);
    return r;
}

/* The integer promotions. */
const CuTy *cu_promote(Lw *L, const CuTy *t)
{
    if (t->k == TY_BOOL || (t->k == TY_INT && dtype_bits(t->dt) < 32))
        return cu_ty_int(L);
    return t;
}

static int int_rank(Dtype dt) { return dtype_bits(dt); }

/* The usual arithmetic conversions. */
const CuTy *cu_common(Lw *L, const CuTy *a, const CuTy *b)
{
    a = cu_promote(L, a), b = cu_promote(L, b);
    if (a->k == TY_FLOAT || b->k == TY_FLOAT) {
        if (a->k == TY_FLOAT && b->k == TY_FLOAT) {
            if (a->dt == b->dt)
                return a;
            if (a->dt == DT_F64 || b->dt == DT_F64)
                return cu_scalar_ty(L, TY_FLOAT, DT_F64);
            return cu_scalar_ty(L, TY_FLOAT, DT_F32); /* float with half, half with bfloat16 */
        }
        return a->k == TY_FLOAT ? a : b;
    }
    if (a->dt == b->dt)
        return a;
    bool sa = dtype_is_signed(a->dt), sb = dtype_is_signed(b->dt);
    if (sa == sb)
        return int_rank(a->dt) >= int_rank(b->dt) ? a : b;
    const CuTy *u = sa ? b : a, *s = sa ? a : b;
    if (int_rank(u->dt) >= int_rank(s->dt))
        return u;
    return s; /* a wider signed type holds every value of the unsigned one */
}

bool cu_is_num(const CuTy *t) { return t->k == TY_INT || t->k == TY_FLOAT || t->k == TY_BOOL; }

/* Folds an integer op on constants of dtype dt; false where C leaves it undefined. */
static bool fold_int(const char *op, Dtype dt, int64_t a, int64_t b, int64_t *r)
{
    bool sg = dtype_is_signed(dt);
    uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
    int bits = dtype_bits(dt);
    if (!strcmp(op, "+")) *r = (int64_t)(ua + ub);
    else if (!strcmp(op, "-")) *r = (int64_t)(ua - ub);
    else if (!strcmp(op, "*")) *r = (int64_t)(ua * ub);
    else if (!strcmp(op, "/") || !strcmp(op, "%")) {
        if (b == 0 || (sg && b == -1 && a == INT64_MIN))
            return false;
        if (sg)
            *r = op[0] == '/' ? a / b : a % b;
        else {
            uint64_t m = bits == 64 ? ~0ull : ((1ull << bits) - 1);
            ua &= m, ub &= m;
            *r = (int64_t)(op[0] == '/' ? ua / ub : ua % ub);
        }
    } else if (!strcmp(op, "&")) *r = a & b;
    else if (!strcmp(op, "|")) *r = a | b;
    else if (!strcmp(op, "^")) *r = a ^ b;
    else if (!strcmp(op, "<<")) {
        if (b < 0 || b >= bits)
            return false;
        *r = (int64_t)(ua << b);
    } else if (!strcmp(op, ">>")) {
        if (b < 0 || b >= bits)
            return false;
        if (sg)
            *r = a >> b;
        else {
            uint64_t m = bits == 64 ? ~0ull : ((1ull << bits) - 1);
            *r = (int64_t)((ua & m) >> b);
        }
    } else
        return false;
    *r = dtype_wrap(dt, (uint64_t)*r);
    return true;
}

static int cmp_fold(const char *op, double a, double b)
{
    if (!strcmp(op, "<")) return a < b;
    if (!strcmp(op, "<=")) return a <= b;
    if (!strcmp(op, ">")) return a > b;
    if (!strcmp(op, ">=")) return a >= b;
    if (!strcmp(op, "==")) return a == b;
    return a != b;
}

static CVal ptr_add(Lw *L, CVal p, CVal i, bool neg, Loc loc)
{
    const CuTy *it = cu_promote(L, i.t);
    if (it->k != TY_INT) {
        diag_error(L->d, loc, "a pointer offset must be an integer, got %s", ty_str(L, i.t));
        return p;
    }
    i = cu_convert(L, i, it, loc);
    ValId o = i.v;
    if (p.t->elem->k == TY_STRUCT && p.t->elem->st->n != 1)
        o = cu_op2(L, OP_MUL, o, cu_cint(L, it->dt, p.t->elem->st->n, loc), loc);
    if (neg)
        o = ir_op1(L->f, L->b, OP_NEG, ir_type(L->f, o), o, loc);
    ValId pv = p.v;
    if (cu_is_tile(L, o) || cu_is_tile(L, pv))
        pv = cu_bcast(L, pv, loc), o = cu_bcast(L, o, loc);
    CVal r = {.t = p.t};
    r.v = ir_op2(L->f, L->b, OP_ADDPTR, ir_type(L->f, pv), pv, o, loc);
    return r;
}

CVal cu_binop(Lw *L, const char *op, CVal x, CVal y, Loc loc)
{
    if (!x.t || !y.t || (!x.v && x.t->k != TY_STRUCT) || (!y.v && y.t->k != TY_STRUCT))
        return (CVal){.t = cu_ty_int(L)};
    bool add = !strcmp(op, "+"), sub = !strcmp(op, "-");
    if (x.t->k == TY_PTR && (add || sub))
        return ptr_add(L, x, y, sub, loc);
    if (y.t->k == TY_PTR && add)
        return ptr_add(L, y, x, false, loc);
    if (!cu_is_num(x.t) || !cu_is_num(y.t)) {
        diag_error(L->d, loc, "operator '%s' on %s and %s is not supported", op, ty_str(L, x.t), ty_str(L, y.t));
        return (CVal){.t = cu_ty_int(L)};
    }
    bool cmp = !strcmp(op, "<") || !strcmp(op, "<=") || !strcmp(op, ">") || !strcmp(op, ">=") ||
               !strcmp(op, "==") || !strcmp(op, "!=");
    bool shift = !strcmp(op, "<<") || !strcmp(op, ">>");
    const CuTy *t = shift ? cu_promote(L, x.t) : cu_common(L, x.t, y.t);
    bool intop = shift || !strcmp(op, "&") || !strcmp(op, "|") || !strcmp(op, "^") || !strcmp(op, "%");
    if (intop && (t->k != TY_INT || cu_promote(L, y.t)->k != TY_INT)) {
        diag_error(L->d, loc, "operator '%s' needs integers, got %s and %s (use fmodf for a float remainder)", op,
                   ty_str(L, x.t), ty_str(L, y.t));
        return (CVal){.t = t};
    }
    x = cu_convert(L, x, t, loc);
    y = cu_convert(L, y, shift ? cu_promote(L, y.t) : t, loc);
    if (shift && y.t->dt != t->dt)
        y = cu_convert(L, y, t, loc);
    if (x.cst && y.cst) {
        if (cmp) {
            bool r;
            if (t->k == TY_FLOAT)
                r = cmp_fold(op, x.cf, y.cf);
            else if (dtype_is_signed(t->dt))
                r = cmp_fold(op, 0, 0) * 0 + (!strcmp(op, "<") ? x.ci < y.ci : !strcmp(op, "<=") ? x.ci <= y.ci
                                              : !strcmp(op, ">") ? x.ci > y.ci : !strcmp(op, ">=") ? x.ci >= y.ci
                                              : !strcmp(op, "==") ? x.ci == y.ci : x.ci != y.ci);
            else {
                uint64_t a = (uint64_t)x.ci, b = (uint64_t)y.ci;
                int bits = dtype_bits(t->dt);
                if (bits < 64)
                    a &= (1ull << bits) - 1, b &= (1ull << bits) - 1;
                r = !strcmp(op, "<") ? a < b : !strcmp(op, "<=") ? a <= b : !strcmp(op, ">") ? a > b
                  : !strcmp(op, ">=") ? a >= b : !strcmp(op, "==") ? a == b : a != b;
            }
            return (CVal){.t = cu_ty_bool(L), .v = r ? L->tru : L->fls, .cst = true, .ci = r};
        }
        if (t->k == TY_INT) {
            int64_t r;
            if (fold_int(op, t->dt, x.ci, y.ci, &r))
                return cu_const_int(L, t, r, loc);
        } else if (t->k == TY_FLOAT && (add || sub || !strcmp(op, "*") || !strcmp(op, "/"))) {
            double r = add ? x.cf + y.cf : sub ? x.cf - y.cf : op[0] == '*' ? x.cf * y.cf : x.cf / y.cf;
            return cu_const_float(L, t, r, loc);
        }
    }
    static const struct { const char *op; OpKind k; } ops[] = {
        {"+", OP_ADD}, {"-", OP_SUB}, {"*", OP_MUL}, {"/", OP_DIV}, {"%", OP_REM}, {"&", OP_AND},
        {"|", OP_OR}, {"^", OP_XOR}, {"<<", OP_SHL}, {">>", OP_SHR}, {"<", OP_LT}, {"<=", OP_LE},
        {">", OP_GT}, {">=", OP_GE}, {"==", OP_EQ}, {"!=", OP_NE},
    };
    OpKind k = OP_COUNT;
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
        if (!strcmp(op, ops[i].op))
            k = ops[i].k;
    if (k == OP_COUNT) {
        diag_error(L->d, loc, "operator '%s' is not supported", op);
        return (CVal){.t = t};
    }
    ValId yv = y.v;
    if ((k == OP_DIV || k == OP_REM) && t->k == TY_INT) {
        /* lanes masked off still compute: keep their divisor nonzero */
        ValId m = cu_m(L);
        if (m != L->tru && (cu_is_tile(L, yv) || cu_is_tile(L, m)) && !y.cst)
            yv = cu_where(L, m, yv, cu_cint(L, t->dt, 1, loc), loc);
    }
    CVal r = {.t = cmp ? cu_ty_bool(L) : t};
    r.v = cu_op2(L, k, x.v, yv, loc);
    warp_facts(L, k, x, y, r.v);
    return r;
}

/* ---- expressions ---- */

CVal cu_bad(Lw *L) { return (CVal){.t = cu_ty_int(L)}; }

static CVal builtin_index(Lw *L, const char *base, const char *fld, Loc loc)
{
    int axis = !strcmp(fld, "x") ? 0 : !strcmp(fld, "y") ? 1 : !strcmp(fld, "z") ? 2 : -1;
    if (axis < 0) {
        diag_error(L->d, loc, "'%s' has members x, y and z", base);
        return cu_bad(L);
    }
    const CuTy *u32 = cu_scalar_ty(L, TY_INT, DT_U32);
    if (!strcmp(base, "blockDim"))
        return cu_const_int(L, u32, L->bdim[axis], loc);
    if (!strcmp(base, "blockIdx") || !strcmp(base, "gridDim")) {
        Inst *in = ir_emit(L->f, L->b, !strcmp(base, "blockIdx") ? OP_PROGRAM_ID : OP_NUM_PROGRAMS, NULL, 0,
                           (Type[]){type_scalar(DT_I32)}, 1, loc);
        in->ival = axis;
        ValId v = in->res[0];
        return (CVal){.t = u32, .v = ir_op1(L->f, L->b, OP_CAST, type_scalar(DT_U32), v, loc)};
    }
    /* threadIdx */
    int bx = L->bdim[0], by = L->bdim[1], bz = L->bdim[2];
    if (L->bdim[axis] == 1)
        return cu_const_int(L, u32, 0, loc);
    ValId t = L->tid;
    if (axis == 0 && by * bz > 1)
        t = cu_op2(L, OP_REM, t, cu_cint(L, DT_I32, bx, loc), loc);
    if (axis == 1) {
        if (bx > 1)
            t = cu_op2(L, OP_DIV, t, cu_cint(L, DT_I32, bx, loc), loc);
        if (bz > 1)
            t = cu_op2(L, OP_REM, t, cu_cint(L, DT_I32, by, loc), loc);
    }
    if (axis == 2 && bx > 1) /* (tid / BX) / BY: the quotient threadIdx.y takes % BY, so that the */
        t = cu_op2(L, OP_DIV, t, cu_cint(L, DT_I32, bx, loc), loc); /* two are digits of one value */
    if (axis == 2 && by > 1)
        t = cu_op2(L, OP_DIV, t, cu_cint(L, DT_I32, by, loc), loc);
    int32_t s = L->lp;
    CVal r = {.t = u32, .v = ir_op1(L->f, L->b, OP_CAST, type_tile(DT_U32, 1, &s), t, loc)};
    if (t == L->tid)
        vec_push(L->a, L->lanes, r.v);
    return r;
}

/* HIP's spellings: hipThreadIdx_x ... hipGridDim_z. */
static bool hip_index(Lw *L, const char *n, CVal *out, Loc loc)
{
    static const struct { const char *p; const char *base; } hs[] = {
        {"hipThreadIdx_", "threadIdx"}, {"hipBlockIdx_", "blockIdx"}, {"hipBlockDim_", "blockDim"},
        {"hipGridDim_", "gridDim"},
    };
    for (size_t k = 0; k < sizeof hs / sizeof *hs; k++) {
        size_t m = strlen(hs[k].p);
        if (!strncmp(n, hs[k].p, m) && n[m] && !n[m + 1]) {
            *out = builtin_index(L, hs[k].base, n + m, loc);
            return true;
        }
    }
    return false;
}

CVal cu_var_value(Lw *L, Var *v, Loc loc);

/* The value of a struct variable from its field variables. */
CVal cu_struct_value(Lw *L, Var *v, Loc loc)
{
    CVal x = {.t = v->t};
    x.f = arena_alloc(L->a, sizeof *x.f * (size_t)(v->t->st->n + 1));
    for (int i = 0; i < v->t->st->n; i++) {
        Var *fv = cu_lookup(L, arena_printf(L->a, "%s.%s", v->name, v->t->st->fname[i]));
        x.f[i] = fv ? cu_var_value(L, fv, loc) : cu_zero(L, v->t->st->fty[i], loc);
    }
    return x;
}

CVal cu_var_value(Lw *L, Var *v, Loc loc)
{
    if (v->kind == VK_STRUCT)
        return cu_struct_value(L, v, loc);
    if (v->kind == VK_SHARED && v->ndims == 0) /* a __shared__ scalar */
        return cu_shared_read(L, v, cu_const_int(L, cu_ty_int(L), 0, loc), loc);
    if (v->kind != VK_VAL) {
        diag_error(L->d, loc, "'%s' is an array: index it", v->name);
        return cu_bad(L);
    }
    if (!v->val.v && v->t && v->t->k != TY_STRUCT && v->t->k != TY_CG) /* (a group has no IR value) */
        v->val = cu_zero(L, v->t, loc);
    return v->val;
}

static CVal ident(Lw *L, const CuExpr *e)
{
    const char *n = e->name;
    Var *v = cu_lookup(L, n);
    if (v && v->kind == VK_CUB) {
        diag_error(L->d, e->loc, "'%s' is a cub TempStorage: only BlockReduce(%s).Sum/Reduce(...) use it", n, n);
        return cu_bad(L);
    }
    if (v && v->kind == VK_ACC) {
        diag_error(L->d, e->loc, "'%s' is a tensor accessor: kad reads it as %s[i][j]..., %s.size(d), %s.stride(d) or "
                                 "%s.data() in the kernel (not passed to a __device__ function yet)", n, n, n, n, n);
        return cu_bad(L);
    }
    if (v && v->kind != VK_TYPE)
        return cu_var_value(L, v, e->loc);
    CVal r;
    if (hip_index(L, n, &r, e->loc))
        return r;
    if (!strcmp(n, "warpSize"))
        return cu_const_int(L, cu_ty_int(L), L->warp, e->loc);
    const CuTy *f32 = cu_scalar_ty(L, TY_FLOAT, DT_F32), *f64 = cu_scalar_ty(L, TY_FLOAT, DT_F64);
    if (!strcmp(n, "INFINITY") || !strcmp(n, "HUGE_VALF") || !strcmp(n, "CUDART_INF_F"))
        return cu_const_float(L, f32, INFINITY, e->loc);
    if (!strcmp(n, "CUDART_INF") || !strcmp(n, "HUGE_VAL"))
        return cu_const_float(L, f64, INFINITY, e->loc);
    if (!strcmp(n, "NAN") || !strcmp(n, "CUDART_NAN_F"))
        return cu_const_float(L, f32, NAN, e->loc);
    if (!strcmp(n, "FLT_MAX"))
        return cu_const_float(L, f32, 3.4028234663852886e38, e->loc);
    if (!strcmp(n, "FLT_MIN"))
        return cu_const_float(L, f32, 1.1754943508222875e-38, e->loc);
    if (!strcmp(n, "FLT_EPSILON"))
        return cu_const_float(L, f32, 1.1920928955078125e-07, e->loc);
    if (!strcmp(n, "DBL_MAX"))
        return cu_const_float(L, f64, 1.7976931348623157e308, e->loc);
    if (!strcmp(n, "M_PI") || !strcmp(n, "CUDART_PI"))
        return cu_const_float(L, f64, 3.14159265358979323846, e->loc);
    if (!strcmp(n, "CUDART_PI_F"))
        return cu_const_float(L, f32, 3.14159265358979323846, e->loc);
    if (!strcmp(n, "INT_MAX"))
        return cu_const_int(L, cu_ty_int(L), INT32_MAX, e->loc);
    if (!strcmp(n, "INT_MIN"))
        return cu_const_int(L, cu_ty_int(L), INT32_MIN, e->loc);
    if (!strcmp(n, "nullptr") || !strcmp(n, "NULL")) {
        diag_error(L->d, e->loc, "null pointers are not supported in kernels");
        return cu_bad(L);
    }
    if (!strcmp(n, "threadIdx") || !strcmp(n, "blockIdx") || !strcmp(n, "blockDim") || !strcmp(n, "gridDim")) {
        diag_error(L->d, e->loc, "'%s' is used by its members .x, .y, .z", n);
        return cu_bad(L);
    }
    for (int i = 0; i < L->bad_consts.n; i++) { /* a file-scope constant that did not lower: why */
        const CuBroken *b = &L->bad_consts.v[i];
        if (strcmp(b->name, n))
            continue;
        Loc at = b->ndiags ? b->diags[0].loc : e->loc;
        diag_error(L->d, e->loc, "'%s' is a file-scope constant that kad cannot evaluate (%s:%d:%d: %s)", n,
                   at.file, at.line, at.col, b->ndiags ? b->diags[0].msg : "");
        return cu_bad(L);
    }
    diag_error(L->d, e->loc, "unknown name '%s'", n);
    return cu_bad(L);
}

/* ---- memory ---- */

static ValId zero_of(Lw *L, Dtype dt, Loc loc)
{
    return dtype_is_float(dt) ? ir_const_float(L->f, L->b, type_scalar(dt), 0.0, loc) : cu_cint(L, dt, 0, loc);
}

/* A load through IR pointer p (scalar or lanes) under $m. */
static ValId load_at(Lw *L, ValId p, Loc loc)
{
    ValId m = cu_m(L);
    Type pt = ir_type(L->f, p);
    Dtype dt = (Dtype)pt.elem;
    if (!pt.rank) {
        m = cu_any(L, m, loc);
        if (m == L->tru)
            return ir_emit(L->f, L->b, OP_LOAD, &p, 1, (Type[]){type_scalar(dt)}, 1, loc)->res[0];
        ValId z = zero_of(L, dt, loc);
        Inst *in = ir_emit(L->f, L->b, OP_LOAD, (ValId[]){p, m, z}, 3, (Type[]){type_scalar(dt)}, 1, loc);
        in->flags |= IF_HAS_MASK | IF_HAS_OTHER;
        return in->res[0];
    }
    Type rt = type_with_dtype(pt, dt);
    rt.elem = DT_VOID;
    if (m == L->tru)
        return ir_emit(L->f, L->b, OP_LOAD, &p, 1, &rt, 1, loc)->res[0];
    ValId z = cu_bcast(L, zero_of(L, dt, loc), loc);
    Inst *in = ir_emit(L->f, L->b, OP_LOAD, (ValId[]){p, cu_bcast(L, m, loc), z}, 3, &rt, 1, loc);
    in->flags |= IF_HAS_MASK | IF_HAS_OTHER;
    return in->res[0];
}

static void store_at(Lw *L, ValId p, ValId v, Loc loc)
{
    ValId m = cu_m(L);
    bool pt = cu_is_tile(L, p), vt = cu_is_tile(L, v);
    if (!pt && vt) {
        if (!cu_is_tile(L, m) || m == L->active) {
            diag_error(L->d, loc,
                       "data race: every thread of the block stores its own value to one address; guard the store "
                       "(e.g. `if (threadIdx.x == 0)`) or index it by thread");
            return;
        }
        p = cu_bcast(L, p, loc);
        pt = true;
    }
    if (pt) {
        v = cu_bcast(L, v, loc);
        if (m == L->tru) {
            ir_emit(L->f, L->b, OP_STORE, (ValId[]){p, v}, 2, NULL, 0, loc);
            return;
        }
        Inst *in = ir_emit(L->f, L->b, OP_STORE, (ValId[]){p, v, cu_bcast(L, m, loc)}, 3, NULL, 0, loc);
        in->flags |= IF_HAS_MASK;
        return;
    }
    /* one address, one value: every thread executing stores the same value once */
    m = cu_any(L, m, loc);
    if (m == L->tru) {
        ir_emit(L->f, L->b, OP_STORE, (ValId[]){p, v}, 2, NULL, 0, loc);
        return;
    }
    Inst *in = ir_emit(L->f, L->b, OP_STORE, (ValId[]){p, v, m}, 3, NULL, 0, loc);
    in->flags |= IF_HAS_MASK;
}

/* *p of a C pointer value: a number, or a struct's fields. */
CVal cu_load_ptr(Lw *L, CVal p, Loc loc)
{
    const CuTy *et = p.t->elem;
    if (et->k == TY_STRUCT) {
        CVal x = {.t = et};
        x.f = arena_alloc(L->a, sizeof *x.f * (size_t)(et->st->n + 1));
        for (int i = 0; i < et->st->n; i++) {
            if (et->st->fty[i]->k == TY_STRUCT || et->st->fty[i]->dt != p.t->dt) {
                diag_error(L->d, loc, "loads of struct '%s' need members of one number type", et->st->name);
                return cu_bad(L);
            }
            ValId q = i ? cu_op2(L, OP_ADDPTR, p.v, cu_cint(L, DT_I32, i, loc), loc) : p.v;
            x.f[i] = (CVal){.t = et->st->fty[i], .v = load_at(L, q, loc)};
        }
        return x;
    }
    if (et->k == TY_VOID) {
        diag_error(L->d, loc, "cannot load through a void pointer");
        return cu_bad(L);
    }
    return (CVal){.t = et, .v = load_at(L, p.v, loc)};
}

void cu_store_ptr(Lw *L, CVal p, CVal v, Loc loc)
{
    const CuTy *et = p.t->elem;
    v = cu_convert(L, v, et, loc);
    if (et->k == TY_STRUCT) {
        for (int i = 0; i < et->st->n; i++) {
            ValId q = i ? cu_op2(L, OP_ADDPTR, p.v, cu_cint(L, DT_I32, i, loc), loc) : p.v;
            if (v.f)
                store_at(L, q, v.f[i].v, loc);
        }
        return;
    }
    if (v.v)
        store_at(L, p.v, v.v, loc);
}

/* ---- calls ---- */

bool cu_report_broken(Lw *L, const char *name, Loc use)
{
    for (int u = 0; u < L->nunits; u++)
        for (int i = 0; i < L->units[u]->broken.n; i++) {
            const CuBroken *b = &L->units[u]->broken.v[i];
            if (!b->name || strcmp(b->name, name))
                continue;
            if (use.file)
                diag_error(L->d, use, "'%s' is a function of the file that kad could not read:", name);
            for (int k = 0; k < b->ndiags; k++) {
                const Diag *g = &b->diags[k];
                if (g->kind == DG_ERROR)
                    diag_error(L->d, g->loc, "%s", g->msg);
                else
                    diag_note(L->d, g->loc, "%s", g->msg);
            }
            return true;
        }
    return false;
}

const CuFunc *cu_find_func(Lw *L, const char *name)
{
    for (int u = 0; u < L->nunits; u++)
        for (int i = 0; i < L->units[u]->funcs.n; i++)
            if (!strcmp(L->units[u]->funcs.v[i]->name, name))
                return L->units[u]->funcs.v[i];
    return NULL;
}

/* BlockReduce(temp).Sum(v[, num_valid]) / .Reduce(v, cub::Sum() | cub::Max() | cub::Min() | cuda::maximum<>()
 * | cuda::minimum<>() | cuda::std::plus<>()[, num_valid]):
 * the block's reduction, given to every thread (CUB defines it in thread 0 only); all the block's
 * threads must reach it, as CUB requires. */
static CVal cub_reduce(Lw *L, const CuTy *br, const CuExpr *e)
{
    Loc loc = e->loc;
    bool sum = !strcmp(e->name, ".Sum");
    if (!sum && strcmp(e->name, ".Reduce")) {
        diag_error(L->d, loc, "cub::BlockReduce::%s: kad knows Sum and Reduce", e->name + 1);
        return cu_bad(L);
    }
    int nv = sum ? 1 : 2;
    if (e->nargs != nv && e->nargs != nv + 1) {
        diag_error(L->d, loc, "cub::BlockReduce::%s takes %s[, num_valid]", e->name + 1, sum ? "(v" : "(v, op");
        return cu_bad(L);
    }
    OpKind op = OP_SUM;
    if (!sum) {
        const CuExpr *f = e->args[1];
        const char *fn = f->kind == CE_CALL && !f->nargs ? f->name : NULL;
        /* cub::Max() before CUDA 13; cuda::maximum<>() (CCCL) since */
        if (fn && (!strcmp(fn, "Max") || !strcmp(fn, "maximum")))
            op = OP_MAX;
        else if (fn && (!strcmp(fn, "Min") || !strcmp(fn, "minimum")))
            op = OP_MIN;
        else if (fn && (!strcmp(fn, "Sum") || !strcmp(fn, "plus")))
            op = OP_SUM;
        else {
            diag_error(L->d, f->loc, "cub::BlockReduce::Reduce: kad knows the operators cub::Sum(), cub::Max(), "
                                     "cub::Min() and CCCL's cuda::maximum<>(), cuda::minimum<>(), cuda::std::plus<>()");
            return cu_bad(L);
        }
    }
    if (br->cub_threads != L->nl) {
        diag_error(L->d, loc, "cub::BlockReduce over %lld threads in a block of %d", (long long)br->cub_threads, L->nl);
        return cu_bad(L);
    }
    if (cu_m(L) != L->active) {
        diag_error(L->d, loc, "cub::BlockReduce inside divergent control flow: every thread of the block must call it");
        return cu_bad(L);
    }
    const CuTy *t = br->elem;
    CVal v = cu_convert(L, cu_expr(L, e->args[0]), t, loc);
    if (!v.v)
        return cu_bad(L);
    ValId x = cu_is_tile(L, v.v) ? v.v : cu_bcast(L, v.v, loc), on = L->active;
    if (e->nargs == nv + 1) { /* the first num_valid threads */
        CVal nvd = cu_convert(L, cu_expr(L, e->args[nv]), cu_scalar_ty(L, TY_INT, DT_I32), loc);
        if (!nvd.v)
            return cu_bad(L);
        on = cu_and(L, on, cu_op2(L, OP_LT, L->tid, nvd.v, loc), loc);
    }
    ValId id;
    if (t->k == TY_FLOAT)
        id = cu_const_float(L, t, op == OP_SUM ? 0.0 : op == OP_MAX ? -INFINITY : INFINITY, loc).v;
    else if (op == OP_SUM)
        id = cu_cint(L, t->dt, 0, loc);
    else if (t->dt == DT_I32 || t->dt == DT_I64 || t->dt == DT_U32) {
        int64_t lo = t->dt == DT_I32 ? INT32_MIN : t->dt == DT_I64 ? INT64_MIN : 0;
        int64_t hi = t->dt == DT_I32 ? INT32_MAX : t->dt == DT_I64 ? INT64_MAX : (int64_t)UINT32_MAX;
        id = cu_cint(L, t->dt, op == OP_MAX ? lo : hi, loc);
    } else {
        diag_error(L->d, loc, "cub::BlockReduce's Max/Min of %s: kad reduces floats and 32/64-bit ints", ty_str(L, t));
        return cu_bad(L);
    }
    x = cu_where(L, on, x, id, loc);
    Inst *in = ir_emit(L->f, L->b, op, &x, 1, (Type[]){type_scalar(t->dt)}, 1, loc);
    in->ival = 0;
    return (CVal){.t = t, .v = in->res[0]};
}

/* The accessor a[i0][i1]... indexes (its base a VK_ACC variable), its depth in *depth; NULL when e
 * is not an accessor's index. */
static Var *acc_chain(Lw *L, const CuExpr *e, const CuExpr **ix, int *depth)
{
    int n = 0;
    const CuExpr *b = e;
    while (b && b->kind == CE_INDEX && n < 8) {
        ix[n++] = b->r;
        b = b->l;
    }
    Var *v = b && b->kind == CE_IDENT ? cu_lookup(L, b->name) : NULL;
    if (!v || v->kind != VK_ACC)
        return NULL;
    for (int i = 0; i < n / 2; i++) { /* outermost index first */
        const CuExpr *t = ix[i];
        ix[i] = ix[n - 1 - i];
        ix[n - 1 - i] = t;
    }
    *depth = n;
    return v;
}

/* A field ("size" or "stride", axis k) of accessor a. */
static CVal acc_field(Lw *L, const Var *a, const char *what, int k, Loc loc)
{
    Var *f = cu_lookup(L, arena_printf(L->a, "%s.%s%d", a->name, what, k));
    return f ? cu_var_value(L, f, loc) : cu_bad(L);
}

static CVal call(Lw *L, const CuExpr *e)
{
    bool handled;
    if (e->name[0] == '.' && e->l && e->l->kind == CE_IDENT && cu_lookup(L, e->l->name) &&
        cu_lookup(L, e->l->name)->kind == VK_ACC) { /* a.size(d), a.stride(d), a.data() */
        Var *a = cu_lookup(L, e->l->name);
        int64_t d = -1;
        if (!strcmp(e->name, ".data") && !e->nargs)
            return a->val;
        if ((!strcmp(e->name, ".size") || !strcmp(e->name, ".stride")) && e->nargs == 1 &&
            cu_const_eval(L, e->args[0], &d) && d >= 0 && d < a->t->cub_threads)
            return acc_field(L, a, e->name + 1, (int)d, e->loc);
        diag_error(L->d, e->loc, "'%s' of the accessor '%s': kad knows size(d) and stride(d) with d a constant below "
                                 "%lld, and data()", e->name + 1, a->name, (long long)a->t->cub_threads);
        return cu_bad(L);
    }
    if (e->name[0] == '.' && e->l && (e->l->kind == CE_IDENT || e->l->kind == CE_CALL)) {
        /* a cooperative group's method: the object a group variable, or a call making one */
        Var *gv = e->l->kind == CE_IDENT ? cu_lookup(L, e->l->name) : NULL;
        bool cg = gv && gv->kind == VK_VAL && gv->t && gv->t->k == TY_CG;
        if (!cg && e->l->kind == CE_CALL && e->l->name[0] != '.' &&
            (!strcmp(e->l->name, "this_thread_block") || !strcmp(e->l->name, "tiled_partition")))
            cg = true;
        if (cg)
            return cu_cg_method(L, e, gv ? gv->val : cu_expr(L, e->l));
    }
    if (e->name[0] == '.') { /* obj.method(args): only cub::BlockReduce(temp)'s */
        const CuExpr *o = e->l;
        const CuTy *bt = o && o->kind == CE_CAST ? cu_resolve_type(L, o->type) : NULL;
        if (!bt || bt->k != TY_CUB || bt->cub != CUB_BLOCK_REDUCE) {
            diag_error(L->d, e->loc, "a method call ('%s'): kad knows cub::BlockReduce(temp).Sum/Reduce and "
                                     "cooperative groups' methods only",
                       e->name + 1);
            return cu_bad(L);
        }
        const CuExpr *tmp = o->nargs == 1 ? o->args[0] : NULL;
        Var *tv = tmp && tmp->kind == CE_IDENT ? cu_lookup(L, tmp->name) : NULL;
        if (!tv || tv->kind != VK_CUB) {
            diag_error(L->d, o->loc, "cub::BlockReduce(temp): temp is a __shared__ BlockReduce::TempStorage");
            return cu_bad(L);
        }
        if (tv->dirty) { /* CUB's rule: a TempStorage is reused only after a barrier */
            diag_error(L->d, o->loc, "'%s' is used by a second cub::BlockReduce without a __syncthreads() between "
                                     "(CUB needs one before its TempStorage is reused: the first reduction's threads "
                                     "may still read it)", tmp->name);
            return cu_bad(L);
        }
        tv->dirty = true;
        return cub_reduce(L, bt, e);
    }
    Var *lam = cu_lookup(L, e->name);
    if (lam && lam->kind == VK_LAMBDA)
        return cu_call_lambda(L, lam, e);
    const CuFunc *fn = cu_find_func(L, e->name);
    if (!fn) {
        CVal r = cu_call_builtin(L, e, &handled);
        if (handled)
            return r;
        if (cu_report_broken(L, e->name, e->loc))
            return cu_bad(L);
        diag_error(L->d, e->loc, "unknown function '%s' (kad knows the CUDA math library, shuffles, atomicAdd, "
                                 "__ldg and the __device__ functions of the file)", e->name);
        return cu_bad(L);
    }
    if (fn->is_global) {
        diag_error(L->d, e->loc, "a kernel cannot call the __global__ function '%s'", fn->name);
        return cu_bad(L);
    }
    return cu_call_device(L, fn, e);
}

/* ---- lvalues ---- */

/* The array variable and flat element index of a[i][j]; NULL when e is not
 * an element of a local or shared array. */
static Var *array_elem(Lw *L, const CuExpr *e, CVal *idx)
{
    const CuExpr *ix[2];
    int n = 0;
    const CuExpr *b = e;
    while (b->kind == CE_INDEX && n < 2) {
        ix[n++] = b->r;
        b = b->l;
    }
    if (b->kind != CE_IDENT)
        return NULL;
    Var *v = cu_lookup(L, b->name);
    if (!v || (v->kind != VK_ARRAY && v->kind != VK_SHARED))
        return NULL;
    if (n != v->ndims) {
        diag_error(L->d, e->loc, "'%s' has %d dimensions, indexed with %d", v->name, v->ndims, n);
        return NULL;
    }
    const CuTy *it = cu_ty_int(L);
    CVal flat = cu_convert(L, cu_expr(L, ix[0]), it, e->loc); /* ix[0]: the last subscript */
    if (n == 2) {
        CVal hi = cu_convert(L, cu_expr(L, ix[1]), it, e->loc);
        flat = cu_binop(L, "+", cu_binop(L, "*", hi, cu_const_int(L, it, v->dims[1], e->loc), e->loc), flat, e->loc);
    }
    *idx = flat;
    return v;
}

static CVal local_read(Lw *L, Var *v, CVal idx, Loc loc)
{
    if (idx.cst) {
        if (idx.ci < 0 || idx.ci >= v->len) {
            diag_error(L->d, loc, "index %lld is out of bounds of '%s' (%d elements)", (long long)idx.ci, v->name, v->len);
            return cu_bad(L);
        }
        Var *el = cu_lookup(L, arena_printf(L->a, "%s[%lld]", v->name, (long long)idx.ci));
        return cu_var_value(L, el, loc);
    }
    /* a run-time index: a select over the elements */
    CVal r = cu_var_value(L, cu_lookup(L, arena_printf(L->a, "%s[0]", v->name)), loc);
    for (int k = 1; k < v->len; k++) {
        CVal ek = cu_var_value(L, cu_lookup(L, arena_printf(L->a, "%s[%d]", v->name, k)), loc);
        ValId c = cu_op2(L, OP_EQ, idx.v, cu_cint(L, ir_type(L->f, idx.v).dt, k, loc), loc);
        r.v = cu_where(L, c, ek.v, r.v, loc);
        r.cst = false;
    }
    return r;
}

static void local_write(Lw *L, Var *v, CVal idx, CVal x, Loc loc)
{
    x = cu_convert(L, x, v->t, loc);
    if (idx.cst) {
        if (idx.ci < 0 || idx.ci >= v->len) {
            diag_error(L->d, loc, "index %lld is out of bounds of '%s' (%d elements)", (long long)idx.ci, v->name, v->len);
            return;
        }
        cu_set(L, cu_lookup(L, arena_printf(L->a, "%s[%lld]", v->name, (long long)idx.ci)), x, loc);
        return;
    }
    const char *name = v->name;
    int len = v->len;
    for (int k = 0; k < len; k++) {
        Var *el = cu_lookup(L, arena_printf(L->a, "%s[%d]", name, k));
        CVal old = cu_var_value(L, el, loc);
        ValId c = cu_op2(L, OP_EQ, idx.v, cu_cint(L, ir_type(L->f, idx.v).dt, k, loc), loc);
        CVal nv = {.t = el->t, .v = cu_where(L, c, x.v, old.v, loc)};
        cu_set(L, el, nv, loc);
    }
}

/* The pointer an lvalue p[i] / *p / p->f / &... stands for; false if e is not one. */
static bool lvalue_ptr(Lw *L, const CuExpr *e, CVal *out)
{
    const CuExpr *ix[8];
    int depth = 0;
    Var *acc = e->kind == CE_INDEX ? acc_chain(L, e, ix, &depth) : NULL;
    if (acc) { /* a[i][j][k]: data + i * stride0 + j * stride1 + k * stride2 */
        int64_t rank = acc->t->cub_threads;
        if (depth != rank) {
            diag_error(L->d, e->loc, "'%s' is a %lld-dimensional accessor indexed with %d subscripts: kad reads "
                                     "and writes its elements, a[i][j]... with all %lld", acc->name, (long long)rank,
                       depth, (long long)rank);
            *out = (CVal){0};
            return true;
        }
        const CuTy *it = cu_scalar_ty(L, TY_INT, acc->t->dt);
        CVal off = cu_const_int(L, it, 0, e->loc);
        for (int k = 0; k < depth; k++) {
            CVal i = cu_convert(L, cu_expr(L, ix[k]), it, e->loc);
            off = cu_binop(L, "+", off, cu_binop(L, "*", i, acc_field(L, acc, "stride", k, e->loc), e->loc), e->loc);
        }
        *out = off.v ? ptr_add(L, acc->val, off, false, e->loc) : (CVal){0};
        return true;
    }
    if (e->kind == CE_INDEX) {
        CVal idx;
        if (array_elem(L, e, &idx) || (e->l->kind == CE_IDENT && cu_lookup(L, e->l->name) &&
                                       (cu_lookup(L, e->l->name)->kind == VK_ARRAY ||
                                        cu_lookup(L, e->l->name)->kind == VK_SHARED)))
            return false;
        CVal p = cu_expr(L, e->l);
        if (!p.v || p.t->k != TY_PTR) {
            if (p.v)
                diag_error(L->d, e->loc, "indexing a %s", ty_str(L, p.t));
            *out = (CVal){0};
            return true;
        }
        *out = ptr_add(L, p, cu_expr(L, e->r), false, e->loc);
        return true;
    }
    if (e->kind == CE_UNARY && !strcmp(e->op, "*")) {
        CVal p = cu_expr(L, e->l);
        if (!p.v || p.t->k != TY_PTR) {
            diag_error(L->d, e->loc, "dereferencing a non-pointer");
            *out = (CVal){0};
            return true;
        }
        *out = p;
        return true;
    }
    if (e->kind == CE_MEMBER) {
        CVal base;
        bool ok = e->arrow ? (base = cu_expr(L, e->l), base.v && base.t->k == TY_PTR) : lvalue_ptr(L, e->l, &base);
        if (!ok || !base.v)
            return false;
        const CuTy *st = base.t->elem;
        if (st->k != TY_STRUCT) {
            diag_error(L->d, e->loc, "member '%s' of a non-struct", e->name);
            *out = (CVal){0};
            return true;
        }
        for (int i = 0; i < st->st->n; i++)
            if (!strcmp(st->st->fname[i], e->name)) {
                if (st->st->fty[i]->k == TY_STRUCT || st->st->fty[i]->dt != base.t->dt) {
                    diag_error(L->d, e->loc, "memory of struct '%s' needs members of one number type", st->st->name);
                    *out = (CVal){0};
                    return true;
                }
                CVal r = {.t = cu_ptr_ty(L, st->st->fty[i])};
                r.v = i ? cu_op2(L, OP_ADDPTR, base.v, cu_cint(L, DT_I32, i, e->loc), e->loc) : base.v;
                *out = r;
                return true;
            }
        diag_error(L->d, e->loc, "'%s' has no member '%s'", st->st->name, e->name);
        *out = (CVal){0};
        return true;
    }
    return false;
}

void cu_assign(Lw *L, const CuExpr *lhs, CVal v, Loc loc)
{
    if (lhs->kind == CE_IDENT) {
        Var *var = cu_lookup(L, lhs->name);
        if (!var || var->kind == VK_TYPE) {
            diag_error(L->d, lhs->loc, "unknown name '%s'", lhs->name);
            return;
        }
        if (var->kind == VK_STRUCT) {
            v = cu_convert(L, v, var->t, loc);
            if (!v.f)
                return;
            const char *name = var->name;
            const CuSInfo *si = var->t->st;
            for (int i = 0; i < si->n; i++)
                cu_assign(L, &(CuExpr){.kind = CE_IDENT, .loc = lhs->loc,
                                       .name = arena_printf(L->a, "%s.%s", name, si->fname[i])}, v.f[i], loc);
            return;
        }
        if (var->kind == VK_SHARED && var->ndims == 0) {
            cu_shared_write(L, var, cu_const_int(L, cu_ty_int(L), 0, loc), cu_convert(L, v, var->t, loc), loc);
            return;
        }
        if (var->kind != VK_VAL) {
            diag_error(L->d, lhs->loc, "cannot assign to the array '%s' as a whole", lhs->name);
            return;
        }
        cu_set(L, var, cu_convert(L, v, var->t, loc), loc);
        return;
    }
    if (lhs->kind == CE_MEMBER && !lhs->arrow) {
        /* v.x of a struct variable (a field variable), nested fields too */
        const CuExpr *b = lhs;
        Buf nb = {.a = L->a};
        const char *parts[8];
        int np = 0;
        while (b->kind == CE_MEMBER && !b->arrow && np < 8) {
            parts[np++] = b->name;
            b = b->l;
        }
        if (b->kind == CE_IDENT && cu_lookup(L, b->name) && cu_lookup(L, b->name)->kind == VK_STRUCT) {
            buf_puts(&nb, b->name);
            for (int i = np - 1; i >= 0; i--)
                buf_printf(&nb, ".%s", parts[i]);
            cu_assign(L, &(CuExpr){.kind = CE_IDENT, .loc = lhs->loc, .name = arena_strdup(L->a, buf_str(&nb))}, v, loc);
            return;
        }
    }
    CVal idx;
    Var *arr = lhs->kind == CE_INDEX ? array_elem(L, lhs, &idx) : NULL;
    if (arr) {
        if (arr->kind == VK_SHARED)
            cu_shared_write(L, arr, idx, v, loc);
        else
            local_write(L, arr, idx, v, loc);
        return;
    }
    CVal p;
    if (lvalue_ptr(L, lhs, &p)) {
        if (p.v)
            cu_store_ptr(L, p, v, loc);
        return;
    }
    diag_error(L->d, lhs->loc, "this expression cannot be assigned to");
}

void cu_set(Lw *L, Var *v, CVal x, Loc loc)
{
    ValId m = cu_m(L);
    bool own = v->name[0] == '$' && strncmp(v->name, "$ret", 4); /* $m, $brk, $cnt: set as computed */
    if (v->decl_m != m && m != L->tru && v->val.v && x.v && !own) {
        CVal r = {.t = v->t, .v = cu_where(L, m, x.v, v->val.v, loc)};
        v->val = r;
        return;
    }
    v->val = x;
}

/* ---- expressions ---- */

static CVal member(Lw *L, const CuExpr *e)
{
    if (!e->arrow && e->l->kind == CE_IDENT &&
        (!strcmp(e->l->name, "threadIdx") || !strcmp(e->l->name, "blockIdx") || !strcmp(e->l->name, "blockDim") ||
         !strcmp(e->l->name, "gridDim")) && !cu_lookup(L, e->l->name))
        return builtin_index(L, e->l->name, e->name, e->loc);
    if (e->arrow) {
        CVal p;
        if (lvalue_ptr(L, e, &p))
            return p.v ? cu_load_ptr(L, p, e->loc) : cu_bad(L);
        return cu_bad(L);
    }
    CVal s = cu_expr(L, e->l);
    if (!s.t || s.t->k != TY_STRUCT || !s.f) {
        if (s.t && s.t->k != TY_STRUCT)
            diag_error(L->d, e->loc, "member '%s' of a %s", e->name, ty_str(L, s.t));
        return cu_bad(L);
    }
    for (int i = 0; i < s.t->st->n; i++)
        if (!strcmp(s.t->st->fname[i], e->name))
            return s.f[i];
    diag_error(L->d, e->loc, "'%s' has no member '%s'", s.t->st->name, e->name);
    return cu_bad(L);
}

static CVal incdec(Lw *L, const CuExpr *e, bool inc, bool post)
{
    CVal old = cu_expr(L, e->l);
    if (!old.v)
        return cu_bad(L);
    CVal one = cu_const_int(L, cu_ty_int(L), 1, e->loc);
    CVal nv = cu_binop(L, inc ? "+" : "-", old, one, e->loc);
    cu_assign(L, e->l, nv, e->loc);
    return post ? old : cu_convert(L, nv, old.t, e->loc);
}

CVal cu_expr(Lw *L, const CuExpr *e)
{
    Loc loc = here(e);
    switch (e->kind) {
    case CE_INT: {
        const CuTok *t = e->tok;
        int64_t v = t->ival;
        Dtype dt;
        if (t->kind == CT_CHAR)
            dt = DT_I32;
        else if (t->is_unsigned)
            dt = t->is_long || (uint64_t)v > UINT32_MAX ? DT_U64 : DT_U32;
        else if (t->is_long || v > INT32_MAX || v < 0)
            dt = (uint64_t)v > INT64_MAX ? DT_U64 : DT_I64;
        else
            dt = DT_I32;
        return cu_const_int(L, cu_scalar_ty(L, TY_INT, dt), v, loc);
    }
    case CE_FLOAT:
        return cu_const_float(L, cu_scalar_ty(L, TY_FLOAT, e->tok->is_f32 ? DT_F32 : DT_F64), e->tok->fval, loc);
    case CE_BOOL: {
        bool b = !strcmp(e->tok->text, "true");
        return (CVal){.t = cu_ty_bool(L), .v = b ? L->tru : L->fls, .cst = true, .ci = b};
    }
    case CE_STRING:
        diag_error(L->d, loc, "strings are not values in kernels");
        return cu_bad(L);
    case CE_IDENT:
        return ident(L, e);
    case CE_MEMBER:
        return member(L, e);
    case CE_CALL:
        return call(L, e);
    case CE_INDEX: {
        CVal idx;
        Var *arr = array_elem(L, e, &idx);
        if (arr)
            return arr->kind == VK_SHARED ? cu_shared_read(L, arr, idx, loc) : local_read(L, arr, idx, loc);
        CVal p;
        if (lvalue_ptr(L, e, &p))
            return p.v ? cu_load_ptr(L, p, loc) : cu_bad(L);
        return cu_bad(L);
    }
    case CE_CAST: {
        const CuTy *t = cu_resolve_type(L, e->type);
        if (!t) {
            diag_error(L->d, loc, "cannot cast to auto");
            return cu_bad(L);
        }
        if (t->k == TY_STRUCT) { /* float4{a, b, c, d} / float2(a, b) */
            if (e->nargs != t->st->n) {
                diag_error(L->d, loc, "'%s' takes %d values", t->st->name, t->st->n);
                return cu_bad(L);
            }
            CVal x = {.t = t};
            x.f = arena_alloc(L->a, sizeof *x.f * (size_t)(e->nargs + 1));
            for (int i = 0; i < e->nargs; i++)
                x.f[i] = cu_convert(L, cu_expr(L, e->args[i]), t->st->fty[i], loc);
            return x;
        }
        if (!e->l) {
            diag_error(L->d, loc, "a conversion to %s takes one value", ty_str(L, t));
            return cu_bad(L);
        }
        CVal x = cu_expr(L, e->l);
        if (x.t && x.t->k == TY_PTR && t->k == TY_PTR && !strcmp(e->op, "static_cast") && !same_ty(x.t, t))
            diag_error(L->d, loc, "static_cast between pointer types: use reinterpret_cast");
        return cu_convert(L, x, t, loc);
    }
    case CE_SIZEOF: {
        const CuTy *t = e->type ? cu_resolve_type(L, e->type) : cu_expr(L, e->l).t;
        int64_t sz = !t ? 4 : t->k == TY_PTR ? 8 : t->k == TY_STRUCT ? (int64_t)t->st->n * dtype_bytes(t->st->fty[0]->dt)
                                                                    : dtype_bytes(t->dt);
        return cu_const_int(L, cu_scalar_ty(L, TY_INT, DT_U64), sz, loc);
    }
    case CE_INIT:
        diag_error(L->d, loc, "a braced list is only an initializer");
        return cu_bad(L);
    case CE_LAMBDA:
        diag_error(L->d, loc, "kad calls a lambda by the name it is given: `auto f = [&](float v) { ... };`, "
                              "then f(x)");
        return cu_bad(L);
    case CE_COND: {
        ValId c = cu_truth(L, cu_expr(L, e->c), loc);
        if (c == L->tru)
            return cu_expr(L, e->l);
        if (c == L->fls)
            return cu_expr(L, e->r);
        ValId m0 = cu_m(L);
        cu_set_m(L, cu_and(L, m0, c, loc));
        CVal a = cu_expr(L, e->l);
        cu_set_m(L, cu_and(L, m0, cu_not(L, c, loc), loc));
        CVal b = cu_expr(L, e->r);
        cu_set_m(L, m0);
        if (!a.t || !b.t || (!a.v && a.t->k != TY_STRUCT) || (!b.v && b.t->k != TY_STRUCT))
            return cu_bad(L);
        if (a.t->k == TY_STRUCT || b.t->k == TY_STRUCT || a.t->k == TY_PTR || b.t->k == TY_PTR) {
            if (!same_ty(a.t, b.t)) {
                diag_error(L->d, loc, "the branches of '?:' have types %s and %s", ty_str(L, a.t), ty_str(L, b.t));
                return cu_bad(L);
            }
            if (a.t->k == TY_PTR)
                return (CVal){.t = a.t, .v = cu_where(L, c, a.v, b.v, loc)};
            CVal r = {.t = a.t};
            r.f = arena_alloc(L->a, sizeof *r.f * (size_t)(a.t->st->n + 1));
            for (int i = 0; i < a.t->st->n; i++)
                r.f[i] = (CVal){.t = a.f[i].t, .v = cu_where(L, c, a.f[i].v, b.f[i].v, loc)};
            return r;
        }
        const CuTy *t = a.t->k == TY_BOOL && b.t->k == TY_BOOL ? a.t : cu_common(L, a.t, b.t);
        a = cu_convert(L, a, t, loc), b = cu_convert(L, b, t, loc);
        return (CVal){.t = t, .v = cu_where(L, c, a.v, b.v, loc)};
    }
    case CE_ASSIGN: {
        CVal v = cu_expr(L, e->r);
        if (strcmp(e->op, "=")) {
            char op[4] = {0};
            memcpy(op, e->op, strlen(e->op) - 1);
            CVal old = cu_expr(L, e->l);
            v = cu_binop(L, op, old, v, loc);
        }
        cu_assign(L, e->l, v, loc);
        return v;
    }
    case CE_UNARY: {
        const char *op = e->op;
        if (!strcmp(op, "++pre") || !strcmp(op, "--pre"))
            return incdec(L, e, op[0] == '+', false);
        if (!strcmp(op, "post++") || !strcmp(op, "post--"))
            return incdec(L, e, op[4] == '+', true);
        if (!strcmp(op, "&")) {
            CVal p;
            if (lvalue_ptr(L, e->l, &p))
                return p.v ? p : cu_bad(L);
            diag_error(L->d, loc, "'&' of a local or shared variable is not supported (only of global memory: &p[i])");
            return cu_bad(L);
        }
        if (!strcmp(op, "*")) {
            CVal p = cu_expr(L, e->l);
            if (!p.v || p.t->k != TY_PTR) {
                diag_error(L->d, loc, "dereferencing a non-pointer");
                return cu_bad(L);
            }
            return cu_load_ptr(L, p, loc);
        }
        CVal x = cu_expr(L, e->l);
        if (!x.v || !cu_is_num(x.t)) {
            if (x.v)
                diag_error(L->d, loc, "operator '%s' on a %s", op, ty_str(L, x.t));
            return cu_bad(L);
        }
        if (!strcmp(op, "!"))
            return (CVal){.t = cu_ty_bool(L), .v = cu_not(L, cu_truth(L, x, loc), loc)};
        x = cu_convert(L, x, cu_promote(L, x.t), loc);
        if (!strcmp(op, "+"))
            return x;
        if (!strcmp(op, "-")) {
            if (x.cst)
                return x.t->k == TY_FLOAT ? cu_const_float(L, x.t, -x.cf, loc)
                                          : cu_const_int(L, x.t, (int64_t)(0 - (uint64_t)x.ci), loc);
            return (CVal){.t = x.t, .v = ir_op1(L->f, L->b, OP_NEG, ir_type(L->f, x.v), x.v, loc)};
        }
        if (x.t->k != TY_INT) {
            diag_error(L->d, loc, "operator '~' needs an integer");
            return cu_bad(L);
        }
        if (x.cst)
            return cu_const_int(L, x.t, ~x.ci, loc);
        return (CVal){.t = x.t, .v = ir_op1(L->f, L->b, OP_NOT, ir_type(L->f, x.v), x.v, loc)};
    }
    case CE_BINARY: {
        const char *op = e->op;
        if (!strcmp(op, ",")) {
            (void)cu_expr(L, e->l);
            return cu_expr(L, e->r);
        }
        if (!strcmp(op, "&&") || !strcmp(op, "||")) {
            bool and_ = op[0] == '&';
            ValId l = cu_truth(L, cu_expr(L, e->l), loc);
            if (l == (and_ ? L->fls : L->tru))
                return (CVal){.t = cu_ty_bool(L), .v = l, .cst = true, .ci = !and_ ? 1 : 0};
            ValId m0 = cu_m(L);
            cu_set_m(L, cu_and(L, m0, and_ ? l : cu_not(L, l, loc), loc));
            ValId r = cu_truth(L, cu_expr(L, e->r), loc);
            cu_set_m(L, m0);
            ValId v = and_ ? cu_and(L, l, r, loc) : cu_or(L, l, r, loc);
            CVal res = {.t = cu_ty_bool(L), .v = v};
            if (v == L->tru || v == L->fls)
                res.cst = true, res.ci = v == L->tru;
            return res;
        }
        CVal x = cu_expr(L, e->l);
        CVal y = cu_expr(L, e->r);
        return cu_binop(L, op, x, y, loc);
    }
    }
    return cu_bad(L);
}

/* An integer constant expression (array sizes, template arguments, widths). */
bool cu_const_eval(Lw *L, const CuExpr *e, int64_t *out)
{
    Diags quiet, *d = L->d;
    diag_init(&quiet, L->a);
    L->d = &quiet;
    CVal v = cu_expr(L, e);
    L->d = d;
    if (quiet.nerrors || !v.cst || !v.t || (v.t->k != TY_INT && v.t->k != TY_BOOL))
        return false;
    *out = v.ci;
    return true;
}

