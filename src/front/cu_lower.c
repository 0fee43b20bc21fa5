/* cu_lower.c -- types, values and expressions of CUDA C / HIP kernels,
 * lowered to kad's tile IR; the kernel entry point (cu_lower).
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
 * circuit would.  Device functions are inlined.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "front/cu.h"

/* ---- types ---- */

const CuTy *cu_scalar_ty(Lw *L, int k, Dtype dt)
{
    CuTy *t = arena_alloc(L->a, sizeof *t);
    t->k = k;
    t->dt = dt;
    return t;
}

static const CuTy *ptr_to(Lw *L, const CuTy *elem)
{
    CuTy *t = arena_alloc(L->a, sizeof *t);
    t->k = TY_PTR;
    t->elem = elem;
    t->dt = elem->k == TY_STRUCT ? (elem->st->n ? elem->st->fty[0]->dt : DT_F32) : elem->dt;
    return t;
}

static const CuTy *ty_int(Lw *L) { return cu_scalar_ty(L, TY_INT, DT_I32); }
static const CuTy *ty_bool(Lw *L) { return cu_scalar_ty(L, TY_BOOL, DT_I1); }

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
static const CuTy *vec_type(Lw *L, const char *name)
{
    static const struct { const char *p; Dtype dt; } bases[] = {
        {"float", DT_F32}, {"double", DT_F64}, {"int", DT_I32}, {"uint", DT_U32}, {"long", DT_I64},
    };
    for (size_t k = 0; k < sizeof bases / sizeof *bases; k++) {
        size_t n = strlen(bases[k].p);
        if (strncmp(name, bases[k].p, n) || !name[n] || name[n] < '2' || name[n] > '4' || name[n + 1])
            continue;
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

static const CuTy *base_type(Lw *L, const char *n, Loc loc)
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
    const CuTy *v = vec_type(L, n);
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

const CuTy *cu_resolve_type(Lw *L, const CuTypeSpec *ts)
{
    if (!strcmp(ts->name, "auto"))
        return NULL;
    const CuTy *t = base_type(L, ts->name, ts->loc);
    if (!t)
        return cu_scalar_ty(L, TY_INT, DT_I32);
    if (ts->nptr > 1) {
        diag_error(L->d, ts->loc, "pointers to pointers are not supported");
        return ptr_to(L, t);
    }
    return ts->nptr ? ptr_to(L, t) : t;
}

/* ---- names ---- */

Var *cu_lookup(Lw *L, const char *name)
{
    for (int i = L->env.n - 1; i >= 0; i--) {
        if (i < L->frame && name[0] != '$')
            break;
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

ValId cu_cint(Lw *L, Dtype dt, int64_t v, Loc loc) { return ir_const_int(L->f, L->b, type_scalar(dt), v, loc); }

ValId cu_bcast(Lw *L, ValId v, Loc loc)
{
    Type t = ir_type(L->f, v);
    if (t.rank)
        return v;
    int32_t s = L->lp;
    return ir_op1(L->f, L->b, OP_BROADCAST, type_with_shape(t, 1, &s), v, loc);
}

static bool is_tile(Lw *L, ValId v) { return ir_type(L->f, v).rank > 0; }

ValId cu_where(Lw *L, ValId c, ValId a, ValId b, Loc loc)
{
    if (c == L->tru)
        return a;
    if (c == L->fls)
        return b;
    if (a == b)
        return a;
    bool t = is_tile(L, c) || is_tile(L, a) || is_tile(L, b);
    if (t)
        c = cu_bcast(L, c, loc), a = cu_bcast(L, a, loc), b = cu_bcast(L, b, loc);
    return ir_op3(L->f, L->b, OP_WHERE, ir_type(L->f, a), c, a, b, loc);
}

/* A binary IR op on x and y, broadcast to a common shape; the result has
 * x's dtype (i1 for comparisons). */
static ValId op2(Lw *L, OpKind op, ValId x, ValId y, Loc loc)
{
    if (is_tile(L, x) || is_tile(L, y))
        x = cu_bcast(L, x, loc), y = cu_bcast(L, y, loc);
    Type t = ir_type(L->f, x);
    if (op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE || op == OP_EQ || op == OP_NE)
        t = type_with_dtype(t, DT_I1);
    return ir_op2(L->f, L->b, op, t, x, y, loc);
}

ValId cu_and(Lw *L, ValId a, ValId b, Loc loc)
{
    if (a == L->tru || a == b)
        return b;
    if (b == L->tru)
        return a;
    if (a == L->fls || b == L->fls)
        return L->fls;
    return op2(L, OP_AND, a, b, loc);
}

ValId cu_or(Lw *L, ValId a, ValId b, Loc loc)
{
    if (a == L->fls || a == b)
        return b;
    if (b == L->fls)
        return a;
    if (a == L->tru || b == L->tru)
        return L->tru;
    return op2(L, OP_OR, a, b, loc);
}

ValId cu_not(Lw *L, ValId a, Loc loc)
{
    if (a == L->tru)
        return L->fls;
    if (a == L->fls)
        return L->tru;
    return ir_op1(L->f, L->b, OP_NOT, ir_type(L->f, a), a, loc);
}

ValId cu_any(Lw *L, ValId m, Loc loc)
{
    if (!is_tile(L, m))
        return m;
    if (m == L->active)
        return L->tru;
    int32_t s = L->lp;
    ValId i = ir_op1(L->f, L->b, OP_CAST, type_tile(DT_I32, 1, &s), m, loc);
    Inst *in = ir_emit(L->f, L->b, OP_MAX, &i, 1, (Type[]){type_scalar(DT_I32)}, 1, loc);
    in->ival = 0;
    ValId mx = in->res[0];
    return op2(L, OP_NE, mx, cu_cint(L, DT_I32, 0, loc), loc);
}

ValId cu_m(Lw *L) { return cu_lookup(L, "$m")->val.v; }
void cu_set_m(Lw *L, ValId m) { cu_lookup(L, "$m")->val.v = m; }

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

static CVal const_float(Lw *L, const CuTy *t, double v, Loc loc)
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
    return t->k == TY_FLOAT ? const_float(L, t, 0.0, loc) : cu_const_int(L, t, 0, loc);
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
    return op2(L, OP_NE, x.v, z, loc);
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
            r = const_float(L, to, v, loc);
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
    return r;
}

/* The integer promotions. */
static const CuTy *promote(Lw *L, const CuTy *t)
{
    if (t->k == TY_BOOL || (t->k == TY_INT && dtype_bits(t->dt) < 32))
        return ty_int(L);
    return t;
}

static int int_rank(Dtype dt) { return dtype_bits(dt); }

/* The usual arithmetic conversions. */
static const CuTy *common(Lw *L, const CuTy *a, const CuTy *b)
{
    a = promote(L, a), b = promote(L, b);
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

static bool is_num(const CuTy *t) { return t->k == TY_INT || t->k == TY_FLOAT || t->k == TY_BOOL; }

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
    const CuTy *it = promote(L, i.t);
    if (it->k != TY_INT) {
        diag_error(L->d, loc, "a pointer offset must be an integer, got %s", ty_str(L, i.t));
        return p;
    }
    i = cu_convert(L, i, it, loc);
    ValId o = i.v;
    if (p.t->elem->k == TY_STRUCT && p.t->elem->st->n != 1)
        o = op2(L, OP_MUL, o, cu_cint(L, it->dt, p.t->elem->st->n, loc), loc);
    if (neg)
        o = ir_op1(L->f, L->b, OP_NEG, ir_type(L->f, o), o, loc);
    ValId pv = p.v;
    if (is_tile(L, o) || is_tile(L, pv))
        pv = cu_bcast(L, pv, loc), o = cu_bcast(L, o, loc);
    CVal r = {.t = p.t};
    r.v = ir_op2(L->f, L->b, OP_ADDPTR, ir_type(L->f, pv), pv, o, loc);
    return r;
}

CVal cu_binop(Lw *L, const char *op, CVal x, CVal y, Loc loc)
{
    if (!x.t || !y.t || (!x.v && x.t->k != TY_STRUCT) || (!y.v && y.t->k != TY_STRUCT))
        return (CVal){.t = ty_int(L)};
    bool add = !strcmp(op, "+"), sub = !strcmp(op, "-");
    if (x.t->k == TY_PTR && (add || sub))
        return ptr_add(L, x, y, sub, loc);
    if (y.t->k == TY_PTR && add)
        return ptr_add(L, y, x, false, loc);
    if (!is_num(x.t) || !is_num(y.t)) {
        diag_error(L->d, loc, "operator '%s' on %s and %s is not supported", op, ty_str(L, x.t), ty_str(L, y.t));
        return (CVal){.t = ty_int(L)};
    }
    bool cmp = !strcmp(op, "<") || !strcmp(op, "<=") || !strcmp(op, ">") || !strcmp(op, ">=") ||
               !strcmp(op, "==") || !strcmp(op, "!=");
    bool shift = !strcmp(op, "<<") || !strcmp(op, ">>");
    const CuTy *t = shift ? promote(L, x.t) : common(L, x.t, y.t);
    bool intop = shift || !strcmp(op, "&") || !strcmp(op, "|") || !strcmp(op, "^") || !strcmp(op, "%");
    if (intop && (t->k != TY_INT || promote(L, y.t)->k != TY_INT)) {
        diag_error(L->d, loc, "operator '%s' needs integers, got %s and %s (use fmodf for a float remainder)", op,
                   ty_str(L, x.t), ty_str(L, y.t));
        return (CVal){.t = t};
    }
    x = cu_convert(L, x, t, loc);
    y = cu_convert(L, y, shift ? promote(L, y.t) : t, loc);
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
            return (CVal){.t = ty_bool(L), .v = r ? L->tru : L->fls, .cst = true, .ci = r};
        }
        if (t->k == TY_INT) {
            int64_t r;
            if (fold_int(op, t->dt, x.ci, y.ci, &r))
                return cu_const_int(L, t, r, loc);
        } else if (t->k == TY_FLOAT && (add || sub || !strcmp(op, "*") || !strcmp(op, "/"))) {
            double r = add ? x.cf + y.cf : sub ? x.cf - y.cf : op[0] == '*' ? x.cf * y.cf : x.cf / y.cf;
            return const_float(L, t, r, loc);
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
        if (m != L->tru && (is_tile(L, yv) || is_tile(L, m)) && !y.cst)
            yv = cu_where(L, m, yv, cu_cint(L, t->dt, 1, loc), loc);
    }
    CVal r = {.t = cmp ? ty_bool(L) : t};
    r.v = op2(L, k, x.v, yv, loc);
    return r;
}

/* ---- expressions ---- */

static CVal bad(Lw *L) { return (CVal){.t = ty_int(L)}; }

static CVal builtin_index(Lw *L, const char *base, const char *fld, Loc loc)
{
    int axis = !strcmp(fld, "x") ? 0 : !strcmp(fld, "y") ? 1 : !strcmp(fld, "z") ? 2 : -1;
    if (axis < 0) {
        diag_error(L->d, loc, "'%s' has members x, y and z", base);
        return bad(L);
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
        t = op2(L, OP_REM, t, cu_cint(L, DT_I32, bx, loc), loc);
    if (axis == 1) {
        if (bx > 1)
            t = op2(L, OP_DIV, t, cu_cint(L, DT_I32, bx, loc), loc);
        if (bz > 1)
            t = op2(L, OP_REM, t, cu_cint(L, DT_I32, by, loc), loc);
    }
    if (axis == 2 && bx * by > 1)
        t = op2(L, OP_DIV, t, cu_cint(L, DT_I32, bx * by, loc), loc);
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

static CVal var_value(Lw *L, Var *v, Loc loc);

/* The value of a struct variable from its field variables. */
static CVal struct_value(Lw *L, Var *v, Loc loc)
{
    CVal x = {.t = v->t};
    x.f = arena_alloc(L->a, sizeof *x.f * (size_t)(v->t->st->n + 1));
    for (int i = 0; i < v->t->st->n; i++) {
        Var *fv = cu_lookup(L, arena_printf(L->a, "%s.%s", v->name, v->t->st->fname[i]));
        x.f[i] = fv ? var_value(L, fv, loc) : cu_zero(L, v->t->st->fty[i], loc);
    }
    return x;
}

static CVal var_value(Lw *L, Var *v, Loc loc)
{
    if (v->kind == VK_STRUCT)
        return struct_value(L, v, loc);
    if (v->kind != VK_VAL) {
        diag_error(L->d, loc, "'%s' is an array: index it", v->name);
        return bad(L);
    }
    if (!v->val.v && v->t->k != TY_STRUCT) {
        v->val = cu_zero(L, v->t, loc);
    }
    return v->val;
}

static CVal ident(Lw *L, const CuExpr *e)
{
    const char *n = e->name;
    Var *v = cu_lookup(L, n);
    if (v && v->kind != VK_TYPE)
        return var_value(L, v, e->loc);
    CVal r;
    if (hip_index(L, n, &r, e->loc))
        return r;
    if (!strcmp(n, "warpSize"))
        return cu_const_int(L, ty_int(L), L->warp, e->loc);
    const CuTy *f32 = cu_scalar_ty(L, TY_FLOAT, DT_F32), *f64 = cu_scalar_ty(L, TY_FLOAT, DT_F64);
    if (!strcmp(n, "INFINITY") || !strcmp(n, "HUGE_VALF") || !strcmp(n, "CUDART_INF_F"))
        return const_float(L, f32, INFINITY, e->loc);
    if (!strcmp(n, "CUDART_INF") || !strcmp(n, "HUGE_VAL"))
        return const_float(L, f64, INFINITY, e->loc);
    if (!strcmp(n, "NAN") || !strcmp(n, "CUDART_NAN_F"))
        return const_float(L, f32, NAN, e->loc);
    if (!strcmp(n, "FLT_MAX"))
        return const_float(L, f32, 3.4028234663852886e38, e->loc);
    if (!strcmp(n, "FLT_MIN"))
        return const_float(L, f32, 1.1754943508222875e-38, e->loc);
    if (!strcmp(n, "FLT_EPSILON"))
        return const_float(L, f32, 1.1920928955078125e-07, e->loc);
    if (!strcmp(n, "DBL_MAX"))
        return const_float(L, f64, 1.7976931348623157e308, e->loc);
    if (!strcmp(n, "M_PI") || !strcmp(n, "CUDART_PI"))
        return const_float(L, f64, 3.14159265358979323846, e->loc);
    if (!strcmp(n, "CUDART_PI_F"))
        return const_float(L, f32, 3.14159265358979323846, e->loc);
    if (!strcmp(n, "INT_MAX"))
        return cu_const_int(L, ty_int(L), INT32_MAX, e->loc);
    if (!strcmp(n, "INT_MIN"))
        return cu_const_int(L, ty_int(L), INT32_MIN, e->loc);
    if (!strcmp(n, "nullptr") || !strcmp(n, "NULL")) {
        diag_error(L->d, e->loc, "null pointers are not supported in kernels");
        return bad(L);
    }
    if (!strcmp(n, "threadIdx") || !strcmp(n, "blockIdx") || !strcmp(n, "blockDim") || !strcmp(n, "gridDim")) {
        diag_error(L->d, e->loc, "'%s' is used by its members .x, .y, .z", n);
        return bad(L);
    }
    diag_error(L->d, e->loc, "unknown name '%s'", n);
    return bad(L);
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
    bool pt = is_tile(L, p), vt = is_tile(L, v);
    if (!pt && vt) {
        if (!is_tile(L, m) || m == L->active) {
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
static CVal load_ptr(Lw *L, CVal p, Loc loc)
{
    const CuTy *et = p.t->elem;
    if (et->k == TY_STRUCT) {
        CVal x = {.t = et};
        x.f = arena_alloc(L->a, sizeof *x.f * (size_t)(et->st->n + 1));
        for (int i = 0; i < et->st->n; i++) {
            if (et->st->fty[i]->k == TY_STRUCT || et->st->fty[i]->dt != p.t->dt) {
                diag_error(L->d, loc, "loads of struct '%s' need members of one number type", et->st->name);
                return bad(L);
            }
            ValId q = i ? op2(L, OP_ADDPTR, p.v, cu_cint(L, DT_I32, i, loc), loc) : p.v;
            x.f[i] = (CVal){.t = et->st->fty[i], .v = load_at(L, q, loc)};
        }
        return x;
    }
    if (et->k == TY_VOID) {
        diag_error(L->d, loc, "cannot load through a void pointer");
        return bad(L);
    }
    return (CVal){.t = et, .v = load_at(L, p.v, loc)};
}

static void store_ptr(Lw *L, CVal p, CVal v, Loc loc)
{
    const CuTy *et = p.t->elem;
    v = cu_convert(L, v, et, loc);
    if (et->k == TY_STRUCT) {
        for (int i = 0; i < et->st->n; i++) {
            ValId q = i ? op2(L, OP_ADDPTR, p.v, cu_cint(L, DT_I32, i, loc), loc) : p.v;
            if (v.f)
                store_at(L, q, v.f[i].v, loc);
        }
        return;
    }
    if (v.v)
        store_at(L, p.v, v.v, loc);
}

/* ---- calls ---- */

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
            t = common(L, t, a[i].t);
        if (t->k != TY_FLOAT)
            t = cu_scalar_ty(L, TY_FLOAT, DT_F64); /* sqrt(int) calls the double overload */
        if (t->dt == DT_F16 || t->dt == DT_BF16)
            t = cu_scalar_ty(L, TY_FLOAT, DT_F32);
    }
    bool tile = false;
    for (int i = 0; i < m->nargs; i++) {
        if (!is_num(a[i].t) || !a[i].v) {
            diag_error(L->d, loc, "'%s' takes numbers", m->name);
            return bad(L);
        }
        a[i] = cu_convert(L, a[i], t, loc);
        tile |= is_tile(L, a[i].v);
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
    if (is_tile(L, m) && m != L->active) {
        diag_error(L->d, loc,
                   "'%s' inside divergent control flow: a shuffle needs its whole warp converged (move it out of "
                   "the branch that depends on threadIdx)", name);
        return 0;
    }
    if (L->nl % L->warp && L->nl > L->warp) {
        diag_error(L->d, loc, "'%s' with %d threads per block: warp shuffles need whole warps of %d threads", name,
                   L->nl, L->warp);
        return 0;
    }
    if (width > L->lp)
        width = L->lp;
    const CuTy *it = ty_int(L);
    arg = cu_convert(L, arg, it, loc);
    ValId t = L->tid, w1 = cu_cint(L, DT_I32, width - 1, loc);
    ValId lane = op2(L, OP_AND, t, w1, loc);
    ValId base = op2(L, OP_SUB, t, lane, loc);
    ValId src;
    if (strstr(name, "xor")) {
        src = op2(L, OP_OR, base, op2(L, OP_AND, op2(L, OP_XOR, lane, arg.v, loc), w1, loc), loc);
    } else if (strstr(name, "down")) {
        ValId l2 = op2(L, OP_ADD, lane, arg.v, loc);
        ValId in = op2(L, OP_LT, l2, cu_cint(L, DT_I32, width, loc), loc);
        ValId from = op2(L, OP_ADD, t, arg.v, loc);
        src = cu_where(L, in, from, t, loc);
    } else if (strstr(name, "up")) {
        ValId in = op2(L, OP_GE, lane, arg.v, loc);
        ValId from = op2(L, OP_SUB, t, arg.v, loc);
        src = cu_where(L, in, from, t, loc);
    } else {
        src = op2(L, OP_OR, base, op2(L, OP_AND, arg.v, w1, loc), loc);
    }
    (void)v;
    return src;
}

static CVal call_builtin(Lw *L, const CuExpr *e, bool *handled)
{
    const char *n = e->name;
    Loc loc = e->loc;
    int na = e->nargs;
    *handled = true;
    for (size_t k = 0; k < sizeof math_fns / sizeof *math_fns; k++)
        if (!strcmp(math_fns[k].name, n)) {
            if (na != math_fns[k].nargs) {
                diag_error(L->d, loc, "'%s' takes %d arguments, %d given", n, math_fns[k].nargs, na);
                return bad(L);
            }
            CVal a[3];
            for (int i = 0; i < na; i++)
                a[i] = cu_expr(L, e->args[i]);
            return call_math(L, &math_fns[k], a, loc);
        }
    if (!strcmp(n, "__syncthreads") || !strcmp(n, "__syncwarp") || !strcmp(n, "__threadfence") ||
        !strcmp(n, "__threadfence_block") || !strcmp(n, "printf")) {
        if (!strcmp(n, "__syncthreads"))
            cu_syncthreads(L, loc);
        else if (!strcmp(n, "__syncwarp") && is_tile(L, cu_m(L)) && cu_m(L) != L->active)
            diag_error(L->d, loc, "'__syncwarp' inside divergent control flow is not supported");
        return (CVal){.t = cu_scalar_ty(L, TY_VOID, DT_VOID)};
    }
    if (!strcmp(n, "min") || !strcmp(n, "max") || !strcmp(n, "umin") || !strcmp(n, "umax") || !strcmp(n, "abs") ||
        !strcmp(n, "llabs") || !strcmp(n, "labs")) {
        bool un = !strcmp(n, "abs") || !strcmp(n, "llabs") || !strcmp(n, "labs");
        if (na != (un ? 1 : 2)) {
            diag_error(L->d, loc, "'%s' takes %d arguments", n, un ? 1 : 2);
            return bad(L);
        }
        CVal a = cu_expr(L, e->args[0]);
        if (!a.v || !is_num(a.t))
            return bad(L);
        if (un) {
            a = cu_convert(L, a, promote(L, a.t), loc);
            return (CVal){.t = a.t, .v = ir_op1(L->f, L->b, OP_ABS, ir_type(L->f, a.v), a.v, loc)};
        }
        CVal b = cu_expr(L, e->args[1]);
        if (!b.v || !is_num(b.t))
            return bad(L);
        const CuTy *t = common(L, a.t, b.t);
        a = cu_convert(L, a, t, loc), b = cu_convert(L, b, t, loc);
        return (CVal){.t = t, .v = op2(L, strstr(n, "min") ? OP_MINIMUM : OP_MAXIMUM, a.v, b.v, loc)};
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
                return bad(L);
            }
            CVal a = cu_expr(L, e->args[0]);
            if (!a.v || !is_num(a.t))
                return bad(L);
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
        return a.v ? (CVal){.t = a.t, .v = ir_op1(L->f, L->b, OP_NEG, ir_type(L->f, a.v), a.v, loc)} : bad(L);
    }
    if (!strcmp(n, "__ldg") && na == 1) {
        CVal p = cu_expr(L, e->args[0]);
        if (!p.v || p.t->k != TY_PTR) {
            diag_error(L->d, loc, "'__ldg' takes a pointer");
            return bad(L);
        }
        return load_ptr(L, p, loc);
    }
    if ((!strcmp(n, "atomicAdd") || !strcmp(n, "atomicAdd_block") || !strcmp(n, "unsafeAtomicAdd")) && na == 2) {
        CVal p = cu_expr(L, e->args[0]);
        CVal v = cu_expr(L, e->args[1]);
        if (!p.v || p.t->k != TY_PTR || p.t->elem->k == TY_STRUCT || !v.v) {
            if (p.t && p.t->k != TY_PTR)
                diag_error(L->d, e->args[0]->loc, "atomicAdd takes a pointer into global memory");
            return bad(L);
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
            return bad(L);
        }
        CVal v = cu_expr(L, e->args[first]);
        CVal arg = cu_expr(L, e->args[first + 1]);
        int width = L->warp;
        if (na == first + 3) {
            int64_t w;
            if (!cu_const_eval(L, e->args[first + 2], &w) || w < 1 || w > L->warp || (w & (w - 1))) {
                diag_error(L->d, e->args[first + 2]->loc, "a shuffle's width must be a constant power of two <= %d",
                           L->warp);
                return bad(L);
            }
            width = (int)w;
        }
        if (!v.v || !is_num(v.t) || !arg.v)
            return bad(L);
        if (!is_tile(L, v.v))
            return v; /* every lane holds the same value */
        ValId src = shuffle(L, n, v, arg, width, loc);
        if (!src)
            return bad(L);
        Type rt = ir_type(L->f, v.v);
        Inst *in = ir_emit(L->f, L->b, OP_GATHER, (ValId[]){v.v, src}, 2, &rt, 1, loc);
        in->ival = 0;
        return (CVal){.t = v.t, .v = in->res[0]};
    }
    if (!strncmp(n, "make_", 5)) {
        const CuTy *t = vec_type(L, n + 5);
        if (!t || na != t->st->n) {
            diag_error(L->d, loc, "'%s' is not a vector constructor kad knows (or has the wrong arguments)", n);
            return bad(L);
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
            return (CVal){.t = ty_bool(L), .v = L->fls};
        if (!strcmp(n, "isfinite")) {
            ValId i1 = ir_op1(L->f, L->b, OP_ISINF, type_with_dtype(ir_type(L->f, a.v), DT_I1), a.v, loc);
            ValId i2 = ir_op1(L->f, L->b, OP_ISNAN, type_with_dtype(ir_type(L->f, a.v), DT_I1), a.v, loc);
            return (CVal){.t = ty_bool(L), .v = cu_not(L, cu_or(L, i1, i2, loc), loc)};
        }
        OpKind k = strstr(n, "nan") ? OP_ISNAN : OP_ISINF;
        return (CVal){.t = ty_bool(L), .v = ir_op1(L->f, L->b, k, type_with_dtype(ir_type(L->f, a.v), DT_I1), a.v, loc)};
    }
    if ((!strcmp(n, "__float_as_int") || !strcmp(n, "__int_as_float") || !strcmp(n, "__float_as_uint") ||
         !strcmp(n, "__uint_as_float")) && na == 1) {
        CVal a = cu_expr(L, e->args[0]);
        Dtype to = !strcmp(n, "__float_as_int") ? DT_I32 : !strcmp(n, "__float_as_uint") ? DT_U32 : DT_F32;
        Dtype from = to == DT_F32 ? (strstr(n, "uint") ? DT_U32 : DT_I32) : DT_F32;
        a = cu_convert(L, a, cu_scalar_ty(L, from == DT_F32 ? TY_FLOAT : TY_INT, from), loc);
        if (!a.v)
            return bad(L);
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
    return bad(L);
}

static const CuFunc *find_func(Lw *L, const char *name)
{
    for (int u = 0; u < L->nunits; u++)
        for (int i = 0; i < L->units[u]->funcs.n; i++)
            if (!strcmp(L->units[u]->funcs.v[i]->name, name))
                return L->units[u]->funcs.v[i];
    return NULL;
}

static CVal call(Lw *L, const CuExpr *e)
{
    bool handled;
    const CuFunc *fn = find_func(L, e->name);
    if (!fn) {
        CVal r = call_builtin(L, e, &handled);
        if (handled)
            return r;
        diag_error(L->d, e->loc, "unknown function '%s' (kad knows the CUDA math library, shuffles, atomicAdd, "
                                 "__ldg and the __device__ functions of the file)", e->name);
        return bad(L);
    }
    if (fn->is_global) {
        diag_error(L->d, e->loc, "a kernel cannot call the __global__ function '%s'", fn->name);
        return bad(L);
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
    const CuTy *it = ty_int(L);
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
            return bad(L);
        }
        Var *el = cu_lookup(L, arena_printf(L->a, "%s[%lld]", v->name, (long long)idx.ci));
        return var_value(L, el, loc);
    }
    /* a run-time index: a select over the elements */
    CVal r = var_value(L, cu_lookup(L, arena_printf(L->a, "%s[0]", v->name)), loc);
    for (int k = 1; k < v->len; k++) {
        CVal ek = var_value(L, cu_lookup(L, arena_printf(L->a, "%s[%d]", v->name, k)), loc);
        ValId c = op2(L, OP_EQ, idx.v, cu_cint(L, ir_type(L->f, idx.v).dt, k, loc), loc);
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
        CVal old = var_value(L, el, loc);
        ValId c = op2(L, OP_EQ, idx.v, cu_cint(L, ir_type(L->f, idx.v).dt, k, loc), loc);
        CVal nv = {.t = el->t, .v = cu_where(L, c, x.v, old.v, loc)};
        cu_set(L, el, nv, loc);
    }
}

/* The pointer an lvalue p[i] / *p / p->f / &... stands for; false if e is not one. */
static bool lvalue_ptr(Lw *L, const CuExpr *e, CVal *out)
{
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
                CVal r = {.t = ptr_to(L, st->st->fty[i])};
                r.v = i ? op2(L, OP_ADDPTR, base.v, cu_cint(L, DT_I32, i, e->loc), e->loc) : base.v;
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
            store_ptr(L, p, v, loc);
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
            return p.v ? load_ptr(L, p, e->loc) : bad(L);
        return bad(L);
    }
    CVal s = cu_expr(L, e->l);
    if (!s.t || s.t->k != TY_STRUCT || !s.f) {
        if (s.t && s.t->k != TY_STRUCT)
            diag_error(L->d, e->loc, "member '%s' of a %s", e->name, ty_str(L, s.t));
        return bad(L);
    }
    for (int i = 0; i < s.t->st->n; i++)
        if (!strcmp(s.t->st->fname[i], e->name))
            return s.f[i];
    diag_error(L->d, e->loc, "'%s' has no member '%s'", s.t->st->name, e->name);
    return bad(L);
}

static CVal incdec(Lw *L, const CuExpr *e, bool inc, bool post)
{
    CVal old = cu_expr(L, e->l);
    if (!old.v)
        return bad(L);
    CVal one = cu_const_int(L, ty_int(L), 1, e->loc);
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
        return const_float(L, cu_scalar_ty(L, TY_FLOAT, e->tok->is_f32 ? DT_F32 : DT_F64), e->tok->fval, loc);
    case CE_BOOL: {
        bool b = !strcmp(e->tok->text, "true");
        return (CVal){.t = ty_bool(L), .v = b ? L->tru : L->fls, .cst = true, .ci = b};
    }
    case CE_STRING:
        diag_error(L->d, loc, "strings are not values in kernels");
        return bad(L);
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
            return p.v ? load_ptr(L, p, loc) : bad(L);
        return bad(L);
    }
    case CE_CAST: {
        const CuTy *t = cu_resolve_type(L, e->type);
        if (!t) {
            diag_error(L->d, loc, "cannot cast to auto");
            return bad(L);
        }
        if (t->k == TY_STRUCT) { /* float4{a, b, c, d} / float2(a, b) */
            if (e->nargs != t->st->n) {
                diag_error(L->d, loc, "'%s' takes %d values", t->st->name, t->st->n);
                return bad(L);
            }
            CVal x = {.t = t};
            x.f = arena_alloc(L->a, sizeof *x.f * (size_t)(e->nargs + 1));
            for (int i = 0; i < e->nargs; i++)
                x.f[i] = cu_convert(L, cu_expr(L, e->args[i]), t->st->fty[i], loc);
            return x;
        }
        if (!e->l) {
            diag_error(L->d, loc, "a conversion to %s takes one value", ty_str(L, t));
            return bad(L);
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
        return bad(L);
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
            return bad(L);
        if (a.t->k == TY_STRUCT || b.t->k == TY_STRUCT || a.t->k == TY_PTR || b.t->k == TY_PTR) {
            if (!same_ty(a.t, b.t)) {
                diag_error(L->d, loc, "the branches of '?:' have types %s and %s", ty_str(L, a.t), ty_str(L, b.t));
                return bad(L);
            }
            if (a.t->k == TY_PTR)
                return (CVal){.t = a.t, .v = cu_where(L, c, a.v, b.v, loc)};
            CVal r = {.t = a.t};
            r.f = arena_alloc(L->a, sizeof *r.f * (size_t)(a.t->st->n + 1));
            for (int i = 0; i < a.t->st->n; i++)
                r.f[i] = (CVal){.t = a.f[i].t, .v = cu_where(L, c, a.f[i].v, b.f[i].v, loc)};
            return r;
        }
        const CuTy *t = a.t->k == TY_BOOL && b.t->k == TY_BOOL ? a.t : common(L, a.t, b.t);
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
                return p.v ? p : bad(L);
            diag_error(L->d, loc, "'&' of a local or shared variable is not supported (only of global memory: &p[i])");
            return bad(L);
        }
        if (!strcmp(op, "*")) {
            CVal p = cu_expr(L, e->l);
            if (!p.v || p.t->k != TY_PTR) {
                diag_error(L->d, loc, "dereferencing a non-pointer");
                return bad(L);
            }
            return load_ptr(L, p, loc);
        }
        CVal x = cu_expr(L, e->l);
        if (!x.v || !is_num(x.t)) {
            if (x.v)
                diag_error(L->d, loc, "operator '%s' on a %s", op, ty_str(L, x.t));
            return bad(L);
        }
        if (!strcmp(op, "!"))
            return (CVal){.t = ty_bool(L), .v = cu_not(L, cu_truth(L, x, loc), loc)};
        x = cu_convert(L, x, promote(L, x.t), loc);
        if (!strcmp(op, "+"))
            return x;
        if (!strcmp(op, "-")) {
            if (x.cst)
                return x.t->k == TY_FLOAT ? const_float(L, x.t, -x.cf, loc)
                                          : cu_const_int(L, x.t, (int64_t)(0 - (uint64_t)x.ci), loc);
            return (CVal){.t = x.t, .v = ir_op1(L->f, L->b, OP_NEG, ir_type(L->f, x.v), x.v, loc)};
        }
        if (x.t->k != TY_INT) {
            diag_error(L->d, loc, "operator '~' needs an integer");
            return bad(L);
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
                return (CVal){.t = ty_bool(L), .v = l, .cst = true, .ci = !and_ ? 1 : 0};
            ValId m0 = cu_m(L);
            cu_set_m(L, cu_and(L, m0, and_ ? l : cu_not(L, l, loc), loc));
            ValId r = cu_truth(L, cu_expr(L, e->r), loc);
            cu_set_m(L, m0);
            ValId v = and_ ? cu_and(L, l, r, loc) : cu_or(L, l, r, loc);
            CVal res = {.t = ty_bool(L), .v = v};
            if (v == L->tru || v == L->fls)
                res.cst = true, res.ci = v == L->tru;
            return res;
        }
        CVal x = cu_expr(L, e->l);
        CVal y = cu_expr(L, e->r);
        return cu_binop(L, op, x, y, loc);
    }
    }
    return bad(L);
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

/* ---- device functions ---- */

CVal cu_call_device(Lw *L, const CuFunc *fn, const CuExpr *call_e)
{
    Loc loc = call_e->loc;
    if (L->depth > 32) {
        diag_error(L->d, loc, "'%s': device functions nested too deep (recursion is not supported)", fn->name);
        return bad(L);
    }
    if (call_e->nargs != fn->nparams) {
        diag_error(L->d, loc, "'%s' takes %d arguments, %d given", fn->name, fn->nparams, call_e->nargs);
        return bad(L);
    }
    /* arguments in the caller's scope */
    CVal *args = arena_alloc(L->a, sizeof *args * (size_t)(fn->nparams + 1));
    for (int i = 0; i < fn->nparams; i++)
        args[i] = fn->params[i].type->ref ? (CVal){0} : cu_expr(L, call_e->args[i]);
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].type->ref && call_e->args[i]->kind != CE_IDENT) {
            diag_error(L->d, call_e->args[i]->loc, "a reference parameter takes a variable");
            return bad(L);
        } else if (fn->params[i].type->ref)
            args[i] = cu_expr(L, call_e->args[i]);
    int env0 = L->env.n, frame0 = L->frame;
    const CuFunc *fn0 = L->fn;
    const CuTy *ret0 = L->ret_ty;
    ValId m0 = cu_m(L);
    /* template arguments: explicit, then deduced from the arguments */
    Vec(Var) tb = {0};
    for (int i = 0; i < fn->ntparams; i++) {
        const CuTParam *tp = &fn->tparams[i];
        Var v = {.name = tp->name, .loc = tp->loc};
        if (i < call_e->ntargs) {
            const CuTArg *ta = &call_e->targs[i];
            if (tp->is_type && ta->type) {
                v.kind = VK_TYPE;
                v.t = cu_resolve_type(L, ta->type);
            } else if (!tp->is_type && ta->expr) {
                v.kind = VK_VAL;
                CVal c = cu_expr(L, ta->expr);
                v.t = cu_resolve_type(L, tp->type);
                v.val = cu_convert(L, c, v.t, loc);
                if (!v.val.cst)
                    diag_error(L->d, ta->expr->loc, "template argument '%s' must be a constant", tp->name);
            } else {
                diag_error(L->d, loc, "template argument %d of '%s' is of the wrong kind", i + 1, fn->name);
            }
        } else if (tp->is_type) {
            for (int j = 0; j < fn->nparams && !v.t; j++)
                if (!strcmp(fn->params[j].type->name, tp->name) && args[j].t) {
                    const CuTy *at = args[j].t;
                    int np = fn->params[j].type->nptr;
                    if (np == 1 && at->k == TY_PTR)
                        v.t = at->elem;
                    else if (np == 0 && at->k != TY_PTR)
                        v.t = at;
                }
            v.kind = VK_TYPE;
            if (!v.t) {
                diag_error(L->d, loc, "cannot deduce template parameter '%s' of '%s': give it, as %s<float>(...)",
                           tp->name, fn->name, fn->name);
                return bad(L);
            }
        } else {
            diag_error(L->d, loc, "template parameter '%s' of '%s' needs an explicit argument", tp->name, fn->name);
            return bad(L);
        }
        vec_push(L->a, tb, v);
    }
    L->frame = L->env.n;
    for (int i = 0; i < tb.n; i++) {
        Var *v = cu_declare(L, tb.v[i].name, tb.v[i].kind, tb.v[i].t, tb.v[i].loc);
        v->val = tb.v[i].val;
    }
    L->fn = fn;
    L->ret_ty = cu_resolve_type(L, fn->ret);
    if (!L->ret_ty)
        L->ret_ty = cu_scalar_ty(L, TY_VOID, DT_VOID);
    L->depth++;
    for (int i = 0; i < fn->nparams; i++) {
        const CuParam *pr = &fn->params[i];
        const CuTy *pt = cu_resolve_type(L, pr->type);
        if (!pt || !args[i].t)
            continue;
        CVal a = cu_convert(L, args[i], pt, loc);
        const char *pn = pr->name ? pr->name : arena_printf(L->a, "$arg%d", i);
        if (pt->k == TY_STRUCT) {
            cu_declare(L, pn, VK_STRUCT, pt, pr->loc);
            for (int k = 0; k < pt->st->n; k++) {
                Var *fv = cu_declare(L, arena_printf(L->a, "%s.%s", pn, pt->st->fname[k]), VK_VAL, pt->st->fty[k],
                                     pr->loc);
                fv->val = a.f ? a.f[k] : cu_zero(L, pt->st->fty[k], loc);
            }
        } else {
            Var *v = cu_declare(L, pn, VK_VAL, pt, pr->loc);
            v->val = a;
        }
    }
    int retpos = -1;
    if (L->ret_ty->k != TY_VOID) {
        retpos = L->env.n;
        if (L->ret_ty->k == TY_STRUCT) {
            cu_declare(L, "$ret", VK_STRUCT, L->ret_ty, fn->loc);
            for (int k = 0; k < L->ret_ty->st->n; k++) {
                Var *fv = cu_declare(L, arena_printf(L->a, "$ret.%s", L->ret_ty->st->fname[k]), VK_VAL,
                                     L->ret_ty->st->fty[k], fn->loc);
                fv->val = cu_zero(L, L->ret_ty->st->fty[k], loc);
            }
        } else {
            Var *rv = cu_declare(L, "$ret", VK_VAL, L->ret_ty, fn->loc);
            rv->val = cu_zero(L, L->ret_ty, loc);
        }
    }
    cu_stmt(L, fn->body);
    CVal r = {.t = L->ret_ty};
    if (retpos >= 0) {
        Var *rvv = &L->env.v[retpos];
        r = rvv->kind == VK_STRUCT ? struct_value(L, rvv, loc) : rvv->val;
    }
    /* reference parameters: copy back */
    CVal *outs = arena_alloc(L->a, sizeof *outs * (size_t)(fn->nparams + 1));
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].type->ref && fn->params[i].name) {
            Var *v = cu_lookup(L, fn->params[i].name);
            outs[i] = v ? var_value(L, v, loc) : (CVal){0};
        }
    L->env.n = env0;
    L->frame = frame0;
    L->fn = fn0;
    L->ret_ty = ret0;
    L->depth--;
    cu_set_m(L, m0);
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].type->ref && outs[i].t)
            cu_assign(L, call_e->args[i], outs[i], loc);
    return r;
}

/* ---- the kernel ---- */

/* The value of "NAME=VALUE" in a template-argument string, or NULL. */
static const char *targ_of(Lw *L, const char *name)
{
    const char *s = L->targs;
    size_t n = strlen(name);
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > n && !strncmp(s, name, n) && s[n] == '=')
            return arena_strndup(L->a, s + n + 1, len - n - 1);
        s = e ? e + 1 : NULL;
    }
    return NULL;
}

static const CuTy *sig_type(Lw *L, const char *s)
{
    static const struct { const char *n; int k; Dtype dt; } m[] = {
        {"fp32", TY_FLOAT, DT_F32}, {"float", TY_FLOAT, DT_F32}, {"fp64", TY_FLOAT, DT_F64},
        {"double", TY_FLOAT, DT_F64}, {"fp16", TY_FLOAT, DT_F16}, {"half", TY_FLOAT, DT_F16},
        {"bf16", TY_FLOAT, DT_BF16}, {"i32", TY_INT, DT_I32}, {"int", TY_INT, DT_I32}, {"i64", TY_INT, DT_I64},
        {"u32", TY_INT, DT_U32}, {"u64", TY_INT, DT_U64},
    };
    for (size_t k = 0; k < sizeof m / sizeof *m; k++)
        if (!strcmp(s, m[k].n))
            return cu_scalar_ty(L, m[k].k, m[k].dt);
    return base_type(L, s, (Loc){"<sig>", 1, 1});
}

Func *cu_lower(Arena *a, Diags *d, CuUnit **units, int nunits, const char *name, const CuSpec *spec)
{
    Lw Lv = {.a = a, .d = d, .units = units, .nunits = nunits, .targs = spec->targs};
    Lw *L = &Lv;
    const CuFunc *fn = find_func(L, name);
    Loc nl = {"<kernel>", 1, 1};
    if (!fn || !fn->is_global) {
        Buf b = {.a = a};
        for (int u = 0; u < nunits; u++)
            for (int i = 0; i < units[u]->funcs.n; i++)
                if (units[u]->funcs.v[i]->is_global)
                    buf_printf(&b, "%s%s", b.len ? ", " : "", units[u]->funcs.v[i]->name);
        diag_error(d, fn ? fn->loc : nl, "no __global__ function '%s' in the file (its kernels: %s)", name,
                   b.len ? buf_str(&b) : "none");
        return NULL;
    }
    for (int k = 0; k < 3; k++)
        L->bdim[k] = spec->block[k] > 0 ? spec->block[k] : 1;
    L->nl = L->bdim[0] * L->bdim[1] * L->bdim[2];
    if (L->nl > 4096) {
        diag_error(d, fn->loc, "a block of %d threads: kad lowers blocks of at most 4096 threads", L->nl);
        return NULL;
    }
    L->lp = 1;
    while (L->lp < L->nl)
        L->lp *= 2;
    L->warp = 32;
    const char *w = strrchr(fn->loc.file, '.');
    if (w && !strcmp(w, ".hip"))
        L->warp = 64;
    Func *f = ir_func_new(a, fn->name, fn->loc);
    L->f = f;
    L->b = L->top = f->body;
    L->fn = fn;
    L->ret_ty = cu_scalar_ty(L, TY_VOID, DT_VOID);
    L->tru = ir_const_int(f, f->body, type_scalar(DT_I1), 1, fn->loc);
    L->fls = ir_const_int(f, f->body, type_scalar(DT_I1), 0, fn->loc);
    /* template parameters: --sig NAME=VALUE, else the one explicit instantiation */
    const CuInst *inst = NULL;
    int ninst = 0;
    for (int u = 0; u < nunits; u++)
        for (int i = 0; i < units[u]->insts.n; i++)
            if (!strcmp(units[u]->insts.v[i].name, name))
                inst = &units[u]->insts.v[i], ninst++;
    int before = d->nerrors;
    for (int i = 0; i < fn->ntparams; i++) {
        const CuTParam *tp = &fn->tparams[i];
        const char *given = tp->name ? targ_of(L, tp->name) : NULL;
        Var v = {.name = tp->name, .loc = tp->loc};
        if (given) {
            if (tp->is_type) {
                v.kind = VK_TYPE;
                v.t = sig_type(L, given);
            } else {
                v.kind = VK_VAL;
                v.t = cu_resolve_type(L, tp->type);
                char *end;
                long long x = strtoll(given, &end, 0);
                if (*end || end == given) {
                    if (!strcmp(given, "true") || !strcmp(given, "false"))
                        x = given[0] == 't';
                    else
                        diag_error(d, tp->loc, "template parameter '%s' takes an integer, --sig gives '%s'", tp->name,
                                   given);
                }
                v.val = cu_const_int(L, v.t, x, tp->loc);
            }
        } else if (inst && ninst == 1 && i < inst->ntargs) {
            const CuTArg *ta = &inst->targs[i];
            if (tp->is_type && ta->type) {
                v.kind = VK_TYPE;
                v.t = cu_resolve_type(L, ta->type);
            } else if (!tp->is_type && ta->expr) {
                v.kind = VK_VAL;
                v.t = cu_resolve_type(L, tp->type);
                int64_t x = 0;
                if (!cu_const_eval(L, ta->expr, &x))
                    diag_error(d, ta->expr->loc, "template argument '%s' must be an integer constant", tp->name);
                v.val = cu_const_int(L, v.t, x, tp->loc);
            } else
                diag_error(d, inst->loc, "template argument %d is of the wrong kind", i + 1);
        } else {
            diag_error(d, tp->loc,
                       ninst > 1 ? "template parameter '%s': the file instantiates '%s' several times; choose one "
                                   "with --sig %s=..."
                                 : "template parameter '%s' of '%s' has no value: give it with --sig %s=...",
                       tp->name, name, tp->name);
            continue;
        }
        if (!tp->is_type && v.t) {
            ConstParam cp = {.name = tp->name, .value = arena_printf(a, "%lld", (long long)v.val.ci), .pos = 0};
            vec_push(a, f->consts, cp);
        }
        Var *dv = cu_declare(L, v.name, v.kind, v.t, v.loc);
        dv->val = v.val;
    }
    if (d->nerrors != before)
        return NULL;
    /* lanes: tid = arange(0, Lp); lanes >= nl are off */
    int32_t s = L->lp;
    Inst *ar = ir_emit(f, f->body, OP_ARANGE, NULL, 0, (Type[]){type_tile(DT_I32, 1, &s)}, 1, fn->loc);
    ar->ival = 0;
    L->tid = ar->res[0];
    f->vals.v[L->tid].name = "tid";
    if (L->nl < L->lp)
        L->active = op2(L, OP_LT, L->tid, cu_cint(L, DT_I32, L->nl, fn->loc), fn->loc);
    else
        L->active = L->tru;
    Var *mv = cu_declare(L, "$m", VK_VAL, ty_bool(L), fn->loc);
    mv->val = (CVal){.t = ty_bool(L), .v = L->active};
    mv->decl_m = L->active;
    /* parameters: pointers and numbers; structs by value become one parameter per member */
    for (int i = 0; i < fn->nparams; i++) {
        const CuParam *pr = &fn->params[i];
        const CuTy *t = cu_resolve_type(L, pr->type);
        if (!t || !pr->name)
            continue;
        if (pr->type->ref) {
            diag_error(d, pr->loc, "a kernel's parameter cannot be a reference");
            continue;
        }
        if (t->k == TY_STRUCT) {
            cu_declare(L, pr->name, VK_STRUCT, t, pr->loc);
            for (int k = 0; k < t->st->n; k++) {
                const CuTy *ft = t->st->fty[k];
                if (ft->k == TY_STRUCT) {
                    diag_error(d, pr->loc, "a kernel's struct parameter with nested structs is not supported");
                    continue;
                }
                const char *pn = arena_printf(a, "%s_%s", pr->name, t->st->fname[k]);
                ValId pv = ir_param_add(f, type_scalar(ft->dt), pn, pr->loc);
                Var *fv = cu_declare(L, arena_printf(a, "%s.%s", pr->name, t->st->fname[k]), VK_VAL, ft, pr->loc);
                fv->val = (CVal){.t = ft, .v = pv};
            }
            continue;
        }
        if (t->k == TY_VOID) {
            diag_error(d, pr->loc, "a void parameter");
            continue;
        }
        if (t->k == TY_PTR && t->elem->k == TY_STRUCT) {
            for (int k = 0; k < t->elem->st->n; k++)
                if (t->elem->st->fty[k]->k == TY_STRUCT || t->elem->st->fty[k]->dt != t->dt)
                    diag_error(d, pr->loc, "a pointer to struct '%s' needs members of one number type",
                               t->elem->st->name);
        }
        ValId pv = ir_param_add(f, cu_ir_type(L, t, false), pr->name, pr->loc);
        Var *v = cu_declare(L, pr->name, VK_VAL, t, pr->loc);
        v->val = (CVal){.t = t, .v = pv};
    }
    if (d->nerrors != before)
        return NULL;
    L->frame = 0;
    cu_stmt(L, fn->body);
    if (d->nerrors != before)
        return NULL;
    return f;
}
