/* sema_builtins.c -- the builtin functions that kernels call: tl.*,
 * tl.math.*, libdevice.*, triton.cdiv and friends, Python builtins (min,
 * max, abs, int, len, ...), tensor methods (x.sum(), x.to(...)) and dtype
 * methods (dtype.is_floating()).
 *
 * The job.  sema.c resolves a name of the triton namespace with
 * lower_global and calls it with lower_call, giving already-evaluated
 * arguments.  A table per namespace maps each name to a handler (b_*), its
 * Python parameter list and an auxiliary value; bind() matches positional
 * and keyword arguments to the parameters as Python would, and the handler
 * checks them as Triton does (triton/language/core.py, semantic.py,
 * standard.py, math.py, random.py, extra/libdevice) and lowers the call.
 *
 * Invariants: handlers lower only through sema_ops.c's ops_* helpers
 * (promotion, broadcasting, materialization), so the IR keeps that file's
 * guarantees (explicit casts and broadcasts, one const per constant).  A
 * builtin kad does not support, or supports only in part, is a located
 * error naming it as the user wrote it ("tl.load", "libdevice.pow",
 * "x.to"); an argument kad would have to ignore silently is refused.
 *
 * Requires: sema_ops.c (kad_int.h, "sema_ops.c and sema_builtins.c").
 * Guarantees: every handler reports its own errors once and returns
 * SV_ERROR after one; no output and no global state; memory from L->a.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kad_int.h"

/* ------------------------------------------------------------------ */
/* Builtin calls: argument binding                                     */
/* ------------------------------------------------------------------ */

#define MAX_PARAMS 12 /* the most parameters of any builtin (tl.load has 8) */

typedef struct Builtin Builtin;

/* One call being lowered: the bound arguments by parameter slot. */
typedef struct Call {
    Lower *L;
    const Builtin *def;           /* the table entry called */
    const char *fname;            /* as the user wrote it: "tl.load", "x.to" */
    int np;                       /* parameters of def */
    const char *pname[MAX_PARAMS]; /* their names, for messages and keywords */
    SVal a[MAX_PARAMS];           /* the argument bound to each parameter */
    bool has[MAX_PARAMS];         /* whether the call gave one (else the default) */
    Loc loc;                      /* the call, where every message points */
} Call;

typedef SVal (*BuiltinFn)(Call *c);

/* One entry of a namespace's table. */
struct Builtin {
    const char *name; /* the name in its namespace: "load" */
    BuiltinFn fn;
    /* Parameters: "x,axis=,*shape": `=` marks optional ones, `*` collects
     * the remaining positional arguments into a tuple.  NULL: the handler
     * refuses the call whatever its arguments. */
    const char *params;
    int aux; /* handler-specific: an OpKind, a flag */
};

/* Binds positional (self first when given) and keyword arguments to the
 * parameters of def.  Unknown keywords are errors naming them. */
static bool bind(Lower *L, Call *c, const Builtin *def, const char *fname, const SVal *self, const SVal *args,
                 int nargs, const char *const *kwn, const SVal *kwv, int nkw, Loc loc)
{
    memset(c, 0, sizeof *c);
    c->L = L, c->def = def, c->fname = fname, c->loc = loc;
    bool vararg[MAX_PARAMS] = {0}, optional[MAX_PARAMS] = {0};
    const char *p = def->params;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        ASSERT(c->np < MAX_PARAMS);
        if (*p == '*') {
            vararg[c->np] = optional[c->np] = true;
            p++, n--;
        }
        if (n && p[n - 1] == '=') {
            optional[c->np] = true;
            n--;
        }
        c->pname[c->np++] = arena_strndup(L->a, p, n);
        p = e ? e + 1 : p + strlen(p);
    }
    int total = nargs + (self ? 1 : 0);
    for (int i = 0; i < nargs; i++)
        if (args[i].kind == SV_ERROR)
            return false;
    for (int i = 0; i < nkw; i++)
        if (kwv[i].kind == SV_ERROR)
            return false;
    int slot = 0;
    for (int i = 0; i < total; i++) {
        SVal v = self ? (i == 0 ? *self : args[i - 1]) : args[i];
        if (slot < c->np && vararg[slot]) {
            int rest = total - i;
            SVal *e = arena_alloc(L->a, sizeof *e * (size_t)(rest + 1));
            for (int k = 0; k < rest; k++)
                e[k] = self ? (i + k == 0 ? *self : args[i + k - 1]) : args[i + k];
            c->a[slot] = sval_tuple(L, e, rest);
            c->has[slot] = true;
            slot++;
            break;
        }
        if (slot >= c->np) {
            int maxpos = c->np - (self ? 1 : 0);
            diag_error(L->d, loc, "%s() takes at most %d positional argument%s but %d %s given", fname,
                       maxpos, maxpos == 1 ? "" : "s", nargs, nargs == 1 ? "was" : "were");
            return false;
        }
        c->a[slot] = v;
        c->has[slot++] = true;
    }
    for (int k = 0; k < nkw; k++) {
        int j = 0;
        while (j < c->np && strcmp(c->pname[j], kwn[k]) != 0)
            j++;
        if (j == c->np) {
            diag_error(L->d, loc, "%s() does not support the keyword argument '%s'", fname, kwn[k]);
            return false;
        }
        if (c->has[j]) {
            diag_error(L->d, loc, "%s() got multiple values for argument '%s'", fname, kwn[k]);
            return false;
        }
        c->a[j] = kwv[k];
        c->has[j] = true;
    }
    for (int j = 0; j < c->np; j++)
        if (!c->has[j] && !optional[j]) {
            diag_error(L->d, loc, "%s() missing required argument '%s'", fname, c->pname[j]);
            return false;
        }
    return true;
}

static bool absent(Call *c, int i) { return !c->has[i] || sval_is_none(c->a[i]); }

/* Reports that argument i is not what: "tl.sum: 'axis' must be a constexpr
 * int, got fp32[16]". */
static bool arg_wrong(Call *c, int i, const char *what)
{
    diag_error(c->L->d, c->loc, "%s: '%s' must be %s, got %s", c->fname, c->pname[i], what,
               ops_describe(c->L, c->a[i]));
    return false;
}

/* A constexpr int argument. */
static bool arg_int(Call *c, int i, int64_t *out)
{
    SVal x = c->a[i];
    if (!sval_is_int(x))
        return arg_wrong(c, i, "a constexpr int");
    *out = x.c.i;
    return true;
}

static bool arg_bool(Call *c, int i, bool dflt, bool *out)
{
    *out = dflt;
    if (absent(c, i))
        return true;
    SVal x = c->a[i];
    if (x.kind != SV_CONST)
        return arg_wrong(c, i, "a constexpr bool");
    *out = const_truthy(x.c);
    return true;
}

static bool arg_str(Call *c, int i, const char *dflt, const char **out)
{
    *out = dflt;
    if (absent(c, i))
        return true;
    SVal x = c->a[i];
    if (x.kind != SV_CONST || x.c.kind != CK_STR)
        return arg_wrong(c, i, "a constexpr string");
    *out = x.c.s;
    return true;
}

/* A dtype argument; pointer dtypes (pointee in *elem) only when elem is
 * given. */
static bool arg_dtype(Call *c, int i, Dtype *out, Dtype *elem)
{
    SVal x = c->a[i];
    if (x.kind != SV_CONST || x.c.kind != CK_DTYPE)
        return arg_wrong(c, i, "a dtype such as tl.float32");
    if (x.c.brank)
        return arg_wrong(c, i, "a dtype such as tl.float32 (a tile's '.type' is a block type: use '.dtype', or "
                         "'.type.scalar')");
    *out = x.c.dt;
    if (elem)
        *elem = (Dtype)x.c.i;
    if (x.c.dt == DT_PTR && !elem) {
        diag_error(c->L->d, c->loc, "%s: pointer dtypes are not supported here", c->fname);
        return false;
    }
    return true;
}

/* A tuple/list of constexpr ints (or, with allow_int, one int). */
static bool int_list(Call *c, SVal x, bool allow_int, int64_t *out, int max, int *n, const char *what)
{
    if (sval_is_int(x) && allow_int) {
        out[0] = x.c.i;
        *n = 1;
        return true;
    }
    if (x.kind == SV_TUPLE) {
        if (x.n > max) {
            diag_error(c->L->d, c->loc, "%s: %s has %d entries, at most %d are supported", c->fname, what,
                       x.n, max);
            return false;
        }
        for (int k = 0; k < x.n; k++) {
            if (!sval_is_int(x.elts[k])) {
                diag_error(c->L->d, c->loc, "%s: %s must hold constexpr ints, got %s", c->fname, what,
                           ops_describe(c->L, x.elts[k]));
                return false;
            }
            out[k] = x.elts[k].c.i;
        }
        *n = x.n;
        return true;
    }
    diag_error(c->L->d, c->loc, "%s: %s must be a tuple or list of constexpr ints, got %s", c->fname, what,
               ops_describe(c->L, x));
    return false;
}

/* Unwraps f(x, (a, b)) written as f(x, a, b): a vararg tuple holding one
 * tuple is that tuple (Triton's _unwrap_iterable). */
static SVal unwrap_iterable(SVal t)
{
    if (t.kind == SV_TUPLE && t.n == 1 && t.elts[0].kind == SV_TUPLE)
        return t.elts[0];
    return t;
}

/* Checks a tile shape the way Triton's block_type does. */
static bool check_shape(Call *c, int rank, const int64_t *dims)
{
    Diags *d = c->L->d;
    if (rank > KAD_MAX_RANK) {
        diag_error(d, c->loc, "%s: tiles of rank %d are not supported (kad allows up to %d axes)", c->fname,
                   rank, KAD_MAX_RANK);
        return false;
    }
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] <= 0 || (dims[i] & (dims[i] - 1)) != 0) {
            diag_error(d, c->loc, "%s: tile dimensions must be powers of 2, got %lld", c->fname,
                       (long long)dims[i]);
            return false;
        }
        numel *= dims[i];
        if (numel > 1048576) {
            diag_error(d, c->loc, "%s: a tile may hold at most 1048576 elements", c->fname);
            return false;
        }
    }
    return true;
}

/* A tile shape argument (validated like Triton's block shapes). */
static bool arg_shape(Call *c, SVal x, int *rank, int32_t *shape)
{
    int64_t d[KAD_MAX_RANK + 1];
    int n;
    if (!int_list(c, x, false, d, KAD_MAX_RANK, &n, "the shape"))
        return false;
    if (!check_shape(c, n, d))
        return false;
    for (int i = 0; i < n; i++)
        shape[i] = (int32_t)d[i];
    *rank = n;
    return true;
}

/* A number or value as a value of its own type (Triton's to_tensor). */
static ValId to_value(Lower *L, SVal x, const char *ctx, Loc loc)
{
    Opnd o;
    if (!ops_opnd(L, x, false, &o, ctx, loc))
        return 0;
    if (!o.is_const)
        return o.v;
    return ops_materialize(L, &o, (Dtype)o.ty.dt, 0, NULL, loc);
}

/* A runtime tile (constants are not accepted: they have no shape). */
static ValId arg_tile(Call *c, int i)
{
    if (c->a[i].kind == SV_VALUE)
        return c->a[i].v;
    arg_wrong(c, i, "a tensor");
    return 0;
}

/* Normalizes an axis (negative counts from the end). */
static bool wrap_axis(Call *c, int64_t axis, int rank, int *out)
{
    if (axis < -rank || axis >= rank) {
        diag_error(c->L->d, c->loc, "%s: axis %lld is out of range for a tile of rank %d", c->fname,
                   (long long)axis, rank);
        return false;
    }
    *out = (int)(axis < 0 ? axis + rank : axis);
    return true;
}

/* ------------------------------------------------------------------ */
/* Builtins: program structure, creation, memory                        */
/* ------------------------------------------------------------------ */

static SVal b_program_id(Call *c)
{
    int64_t axis;
    if (!arg_int(c, 0, &axis))
        return sval_error();
    if (axis < 0 || axis > 2)
        return ops_fail(c->L, c->loc, "%s axis must be 0, 1 or 2, got %lld", c->fname, (long long)axis);
    return sval_value(ops_emit_attr(c->L, (OpKind)c->def->aux, type_scalar(DT_I32), 0, axis, 0, c->loc));
}

static SVal b_arange(Call *c)
{
    Lower *L = c->L;
    if (!sval_is_int(c->a[0]) || !sval_is_int(c->a[1])) {
        const char *d[2];
        for (int i = 0; i < 2; i++)
            d[i] = c->a[i].kind == SV_VALUE ? arena_printf(L->a, "a runtime %s", ops_describe(L, c->a[i]))
                                            : ops_describe(L, c->a[i]);
        return ops_fail(L, c->loc, "tl.arange bounds must be constexpr ints, got %s and %s", d[0], d[1]);
    }
    int64_t s = c->a[0].c.i, e = c->a[1].c.i;
    if (s < INT32_MIN || s > INT32_MAX || e < INT32_MIN || e > INT32_MAX)
        return ops_fail(L, c->loc, "tl.arange bounds must fit in int32, got %lld and %lld", (long long)s,
                        (long long)e);
    if (e <= s)
        return ops_fail(L, c->loc, "tl.arange end must be greater than start, got %lld and %lld",
                        (long long)s, (long long)e);
    int64_t n = e - s;
    if ((n & (n - 1)) != 0)
        return ops_fail(L, c->loc, "tl.arange range must be a power of 2, got %lld (%lld to %lld)",
                        (long long)n, (long long)s, (long long)e);
    if (!check_shape(c, 1, &n))
        return sval_error();
    int32_t shape[1] = {(int32_t)n};
    return sval_value(ops_emit_attr(L, OP_ARANGE, type_tile(DT_I32, 1, shape), 0, s, 0, c->loc));
}

/* A tile of dtype dt and the given shape holding v (a number or a scalar). */
static SVal fill(Call *c, SVal v, Dtype dt, int rank, const int32_t *shape)
{
    Lower *L = c->L;
    if (dt == DT_PTR || dt == DT_VOID)
        return ops_fail(L, c->loc, "%s: cannot create a tile of pointers", c->fname);
    if (sval_is_num(v))
        return sval_value(ops_emit_const(L, v.c, type_tile(dt, rank, shape), c->loc));
    if (v.kind == SV_VALUE) {
        Type t = ops_type(L, v.v);
        if (type_numel(t) != 1 || t.dt == DT_PTR)
            return ops_fail(L, c->loc, "%s: the fill value must be a number or a scalar, got %s", c->fname,
                            ops_tystr(L, t));
        ValId x = ops_cast(L, v.v, dt, c->loc);
        if (ops_type(L, x).rank > 0)
            x = ops_emit1(L, OP_RESHAPE, type_tile(dt, 0, NULL), x, c->loc);
        return sval_value(ops_bcast_to(L, x, rank, shape, c->loc));
    }
    return ops_fail(L, c->loc, "%s: the fill value must be a number or a scalar, got %s", c->fname,
                    ops_describe(L, v));
}

/* tl.full(shape, value, dtype) and tl.zeros(shape, dtype) (no value). */
static SVal b_full(Call *c)
{
    bool zeros = c->np == 2;
    int rank;
    int32_t shape[KAD_MAX_RANK];
    Dtype dt;
    if (!arg_shape(c, c->a[0], &rank, shape) || !arg_dtype(c, zeros ? 1 : 2, &dt, NULL))
        return sval_error();
    return fill(c, zeros ? sval_int(0) : c->a[1], dt, rank, shape);
}

static SVal b_zeros_like(Call *c)
{
    ValId x = arg_tile(c, 0);
    if (!x)
        return sval_error();
    Type t = ops_type(c->L, x);
    return fill(c, sval_int(0), (Dtype)t.dt, t.rank, t.shape);
}

static bool check_hint(Call *c, int i, const char *const *allowed)
{
    const char *s;
    if (!arg_str(c, i, "", &s))
        return false;
    if (!*s)
        return true;
    for (int k = 0; allowed[k]; k++)
        if (strcmp(s, allowed[k]) == 0)
            return true;
    diag_error(c->L->d, c->loc, "%s: unsupported %s '%s'", c->fname, c->pname[i], s);
    return false;
}

/* A pointer operand (scalar pointer or tile of pointers). */
static ValId arg_pointer(Call *c, int i)
{
    Lower *L = c->L;
    SVal p = c->a[i];
    if (p.kind == SV_VALUE && ops_type(L, p.v).dt == DT_PTR)
        return p.v;
    diag_error(L->d, c->loc, "%s requires a pointer or a tile of pointers, got %s", c->fname,
               ops_describe(L, p));
    return 0;
}

/* A mask operand: i1 value or a bool constant. */
static bool arg_mask(Call *c, int i, Opnd *o)
{
    Lower *L = c->L;
    SVal m = c->a[i];
    if (m.kind == SV_CONST && m.c.kind == CK_BOOL) {
        memset(o, 0, sizeof *o);
        o->is_const = true;
        o->c = m.c;
        o->ty = type_scalar(DT_I1);
        return true;
    }
    if (m.kind == SV_VALUE && ops_type(L, m.v).dt == DT_I1) {
        memset(o, 0, sizeof *o);
        o->v = m.v;
        o->ty = ops_type(L, m.v);
        return true;
    }
    diag_error(L->d, c->loc, "%s: the mask must be a boolean (i1) tile or scalar, got %s", c->fname,
               ops_describe(L, m));
    return false;
}

/* tl.load's and tl.store's eviction_policy. */
static const char *const evict_policies[] = {"evict_last", "evict_first", NULL};

/* ------------------------------------------------------------------ */
/* Block pointers                                                      */
/* ------------------------------------------------------------------ */

/* A block pointer (SV_BLOCKPTR, kad_int.h) lives only in sema: tl.load and
 * tl.store lower it to the tile of pointers
 *     base + sum_d (offsets[d] + arange(0, block[d])) * strides[d]
 * (axis d of the block along axis d of the tile) and, for the dimensions in
 * boundary_check, the mask  0 <= offsets[d] + arange(0, block[d]) < shape[d],
 * so that the access analysis, the interpreter, AD and the emitter see
 * ordinary pointer arithmetic.  `order` is a layout hint and only checked.
 * Types follow Triton's semantic.make_block_ptr: shape and strides are
 * int64, offsets int32 (an int64 offset value is refused, as Triton does);
 * offsets stay constants where they are, so `(0, 0)` costs nothing. */

static SVal sval_blockptr(Lower *L, const SVal *parts)
{
    SVal s = {.kind = SV_BLOCKPTR, .n = BP_N};
    s.elts = arena_alloc(L->a, sizeof *s.elts * BP_N);
    memcpy(s.elts, parts, sizeof *s.elts * BP_N);
    return s;
}

/* Argument i as a tuple of block pointer coordinates (Triton accepts one
 * element for a 1-D block): int constants in range, or integer scalars,
 * converted to int64 (wide) or int32 (refusing int64, as Triton does). */
static bool bp_coords(Call *c, int i, bool wide, SVal *out)
{
    Lower *L = c->L;
    SVal x = c->a[i];
    const SVal *e = &x;
    int n = 1;
    if (x.kind == SV_TUPLE)
        e = x.elts, n = x.n;
    if (n > KAD_MAX_RANK)
        return arg_wrong(c, i, arena_printf(L->a, "a tuple of at most %d entries", KAD_MAX_RANK));
    SVal *r = arena_alloc(L->a, sizeof *r * (size_t)(n ? n : 1));
    for (int k = 0; k < n; k++) {
        SVal v = e[k];
        if (sval_is_int(v)) {
            int64_t lim = wide ? INT64_MAX : INT32_MAX;
            if (!wide && (v.c.i < INT32_MIN || v.c.i > lim)) {
                diag_error(L->d, c->loc, "%s: block pointers only support 32-bit '%s', got %lld", c->fname,
                           c->pname[i], (long long)v.c.i);
                return false;
            }
            r[k] = sval_int(v.c.i);
            continue;
        }
        Type t = v.kind == SV_VALUE ? ops_type(L, v.v) : type_scalar(DT_VOID);
        if (v.kind != SV_VALUE || t.rank != 0 || !dtype_is_int((Dtype)t.dt) || t.dt == DT_I1) {
            diag_error(L->d, c->loc, "%s: '%s' must hold integer scalars or constexpr ints, got %s", c->fname,
                       c->pname[i], ops_describe(L, v));
            return false;
        }
        if (!wide && t.dt == DT_I64) {
            diag_error(L->d, c->loc, "%s: block pointers only support 32-bit '%s'; add a `.to(tl.int32)` or use "
                       "a tile of pointers for 64-bit offsets", c->fname, c->pname[i]);
            return false;
        }
        r[k] = sval_value(ops_cast(L, v.v, wide ? DT_I64 : DT_I32, c->loc));
    }
    *out = sval_tuple(L, r, n);
    return true;
}

static SVal b_make_block_ptr(Call *c)
{
    Lower *L = c->L;
    SVal parts[BP_N];
    SVal base = c->a[0];
    if (base.kind != SV_VALUE || ops_type(L, base.v).dt != DT_PTR || ops_type(L, base.v).rank != 0)
        return ops_fail(L, c->loc, "%s: 'base' must be a scalar pointer, got %s", c->fname, ops_describe(L, base));
    parts[BP_BASE] = base;
    if (!bp_coords(c, 1, true, &parts[BP_SHAPE]) || !bp_coords(c, 2, true, &parts[BP_STRIDES]) ||
        !bp_coords(c, 3, false, &parts[BP_OFFSETS]))
        return sval_error();
    int64_t blk[KAD_MAX_RANK + 1], ord[KAD_MAX_RANK + 1];
    int nb, no;
    if (!int_list(c, c->a[4], true, blk, KAD_MAX_RANK, &nb, "'block_shape'") || !check_shape(c, nb, blk) ||
        !int_list(c, c->a[5], true, ord, KAD_MAX_RANK, &no, "'order'"))
        return sval_error();
    if (nb == 0)
        return ops_fail(L, c->loc, "%s: 'block_shape' must not be empty", c->fname);
    bool seen[KAD_MAX_RANK] = {0};
    for (int k = 0; k < no; k++) {
        if (ord[k] < 0 || ord[k] >= no || seen[ord[k]])
            return ops_fail(L, c->loc, "%s: 'order' must be a permutation of 0..%d", c->fname, no - 1);
        seen[ord[k]] = true;
    }
    if (parts[BP_SHAPE].n != nb || parts[BP_STRIDES].n != nb || parts[BP_OFFSETS].n != nb || no != nb)
        return ops_fail(L, c->loc, "%s: shape, strides, offsets, block_shape and order must have the same length "
                        "(got %d, %d, %d, %d and %d)", c->fname, parts[BP_SHAPE].n, parts[BP_STRIDES].n,
                        parts[BP_OFFSETS].n, nb, no);
    SVal b[KAD_MAX_RANK], o[KAD_MAX_RANK];
    for (int k = 0; k < nb; k++)
        b[k] = sval_int(blk[k]), o[k] = sval_int(ord[k]);
    parts[BP_BLOCK] = sval_tuple(L, b, nb);
    parts[BP_ORDER] = sval_tuple(L, o, nb);
    return sval_blockptr(L, parts);
}

/* tl.advance(bp, offsets) and bp.advance(offsets): the offsets added (int32). */
static SVal b_advance(Call *c)
{
    Lower *L = c->L;
    SVal bp = c->a[0];
    if (bp.kind != SV_BLOCKPTR || sval_is_tensor_desc(bp))
        return ops_fail(L, c->loc, "%s: 'base' must be a block pointer (tl.make_block_ptr), got %s", c->fname,
                        ops_describe(L, bp));
    SVal d;
    if (!bp_coords(c, 1, false, &d))
        return sval_error();
    SVal off = bp.elts[BP_OFFSETS];
    if (d.n != off.n)
        return ops_fail(L, c->loc, "%s: %d offsets given for a block pointer of %d dimensions", c->fname, d.n, off.n);
    SVal r[KAD_MAX_RANK];
    for (int k = 0; k < off.n; k++) {
        if (sval_is_int(off.elts[k]) && sval_is_int(d.elts[k])) {
            int64_t v = off.elts[k].c.i + d.elts[k].c.i; /* both in int32: no overflow in int64 */
            r[k] = v >= INT32_MIN && v <= INT32_MAX ? sval_int(v)
                                                     : sval_value(ops_emit_const(L, (ConstVal){.kind = CK_INT, .i = v},
                                                                                 type_scalar(DT_I32), c->loc));
        } else if (sval_is_int(d.elts[k]) && d.elts[k].c.i == 0) {
            r[k] = off.elts[k];
        } else {
            /* int32 + int32 (a constant fits): int32, wrapping as Triton's does */
            ValId a = sval_is_int(off.elts[k]) ? ops_emit_const(L, off.elts[k].c, type_scalar(DT_I32), c->loc)
                                                : off.elts[k].v;
            ValId b = sval_is_int(d.elts[k]) ? ops_emit_const(L, d.elts[k].c, type_scalar(DT_I32), c->loc)
                                              : d.elts[k].v;
            if (!a || !b)
                return sval_error();
            r[k] = sval_value(ops_emit2(L, OP_ADD, type_scalar(DT_I32), a, b, c->loc));
        }
    }
    SVal parts[BP_N];
    memcpy(parts, bp.elts, sizeof parts);
    parts[BP_OFFSETS] = sval_tuple(L, r, off.n);
    return sval_blockptr(L, parts);
}

/* tl.load's and tl.store's boundary_check (argument i) for a block of rank
 * dims: check[d] set for each dimension listed (an int or a tuple of ints,
 * each once, as Triton's _canonicalize_boundary_check). */
static bool bp_boundary_check(Call *c, int i, int rank, bool *check)
{
    memset(check, 0, sizeof *check * (size_t)rank);
    if (absent(c, i) || (c->a[i].kind == SV_TUPLE && c->a[i].n == 0))
        return true;
    int64_t d[KAD_MAX_RANK + 1];
    int n;
    if (!int_list(c, c->a[i], true, d, KAD_MAX_RANK, &n, "'boundary_check'"))
        return false;
    for (int k = 0; k < n; k++) {
        if (d[k] < 0 || d[k] >= rank) {
            diag_error(c->L->d, c->loc, "%s: boundary_check dimension %lld is out of range for a block of %d "
                       "dimensions", c->fname, (long long)d[k], rank);
            return false;
        }
        if (check[d[k]]) {
            diag_error(c->L->d, c->loc, "%s: duplicate dimension %lld in boundary_check", c->fname,
                       (long long)d[k]);
            return false;
        }
        check[d[k]] = true;
    }
    return true;
}

/* The tile of pointers a block pointer addresses and the mask of its
 * boundary checks (*mask = none when check selects no dimension). */
static bool bp_lower(Call *c, SVal bp, const bool *check, SVal *ptr, SVal *mask)
{
    Lower *L = c->L;
    int rank = bp.elts[BP_BLOCK].n;
    SVal p = bp.elts[BP_BASE], m = sval_none();
    for (int d = 0; d < rank; d++) {
        SVal off = bp.elts[BP_OFFSETS].elts[d], stride = bp.elts[BP_STRIDES].elts[d];
        int32_t blk[1] = {(int32_t)bp.elts[BP_BLOCK].elts[d].c.i};
        SVal idx = sval_value(ops_emit_attr(L, OP_ARANGE, type_tile(DT_I32, 1, blk), 0, 0, 0, c->loc));
        if (!(sval_is_int(off) && off.c.i == 0))
            idx = lower_binop(L, BO_ADD, off, idx, c->loc);
        if (idx.kind == SV_ERROR)
            return false;
        for (int k = 0; k < rank; k++) /* axis d of the block on axis d of the tile */
            if (k != d)
                idx = sval_value(ops_expand_dims(L, idx.v, k, c->loc));
        SVal term = idx;
        if (sval_is_int(stride)) {
            if (stride.c.i != 1) /* in int64, as Triton computes block pointer addresses */
                term = lower_binop(L, BO_MUL, sval_value(ops_cast(L, idx.v, DT_I64, c->loc)), stride, c->loc);
        } else {
            term = lower_binop(L, BO_MUL, idx, stride, c->loc); /* stride is int64 */
        }
        p = lower_binop(L, BO_ADD, p, term, c->loc);
        if (term.kind == SV_ERROR || p.kind == SV_ERROR)
            return false;
        if (!check[d])
            continue;
        SVal in = lower_compare(L, CO_LT, idx, bp.elts[BP_SHAPE].elts[d], c->loc);
        if (!(sval_is_int(off) && off.c.i >= 0)) /* a constant offset >= 0 needs no lower bound */
            in = lower_binop(L, BO_BITAND, lower_compare(L, CO_GE, idx, sval_int(0), c->loc), in, c->loc);
        m = sval_is_none(m) ? in : lower_binop(L, BO_BITAND, m, in, c->loc);
        if (m.kind == SV_ERROR)
            return false;
    }
    *ptr = p;
    *mask = m;
    return true;
}

/* boundary_check=() or None is the default; anything else asks for block
 * pointer semantics. */
static bool boundary_check_given(Call *c, int i)
{
    SVal x = c->a[i];
    return c->has[i] && !(x.kind == SV_TUPLE && x.n == 0) && !sval_is_none(x);
}

/* Refuses argument i (boundary_check, padding_option) on a tile of
 * pointers: it only means something for block pointers. */
static SVal block_ptr_only(Call *c, int i)
{
    return ops_fail(c->L, c->loc, "%s: '%s' is only valid with block pointers (tl.make_block_ptr), not with a "
                    "tile of pointers", c->fname, c->pname[i]);
}

/* tl.load/tl.store on a block pointer: rewrites the call's pointer (slot
 * 0), mask (slot mslot) and, for a load, other (slot 2) into their tile of
 * pointers form; boundary_check and padding_option are consumed. */
static bool bp_rewrite(Call *c, int mslot, int bcslot, int padslot)
{
    Lower *L = c->L;
    SVal bp = c->a[0];
    bool is_load = padslot >= 0;
    if (!absent(c, mslot) || (is_load && !absent(c, 2))) {
        diag_error(L->d, c->loc, "%s: 'mask' and 'other' cannot be given with a block pointer; use "
                   "boundary_check and padding_option", c->fname);
        return false;
    }
    int rank = bp.elts[BP_BLOCK].n;
    bool check[KAD_MAX_RANK];
    if (!bp_boundary_check(c, bcslot, rank, check))
        return false;
    Dtype elem = (Dtype)ops_type(L, bp.elts[BP_BASE].v).elem;
    const char *pad = "";
    if (is_load) {
        if (!arg_str(c, padslot, "", &pad))
            return false;
        if (*pad && strcmp(pad, "zero") != 0 && strcmp(pad, "nan") != 0) {
            diag_error(L->d, c->loc, "%s: padding option '%s' is not supported (\"zero\", \"nan\" or \"\")",
                       c->fname, pad);
            return false;
        }
        if (!strcmp(pad, "nan") && !dtype_is_float(elem)) {
            diag_error(L->d, c->loc, "%s: padding option \"nan\" is not supported for integer block pointers",
                       c->fname);
            return false;
        }
    }
    SVal p, m;
    if (!bp_lower(c, bp, check, &p, &m))
        return false;
    c->a[0] = p;
    c->has[bcslot] = false;
    if (!sval_is_none(m)) {
        c->a[mslot] = m, c->has[mslot] = true;
        /* no padding: Triton leaves the lanes undefined; kad's load gives 0 there */
        if (*pad)
            c->a[2] = !strcmp(pad, "nan") ? sval_float(NAN) : sval_int(0), c->has[2] = true;
    }
    if (is_load)
        c->has[padslot] = false;
    return true;
}

/* tl.store on a block pointer: the value must have the block's shape (or
 * be a scalar) and the pointee's dtype, as Triton's _store_block_pointer
 * asserts (a constant counts with Triton's to_tensor dtype). */
static bool bp_store_value(Call *c)
{
    Lower *L = c->L;
    SVal bp = c->a[0], v = c->a[1];
    Dtype elem = (Dtype)ops_type(L, bp.elts[BP_BASE].v).elem;
    Opnd o;
    if (!ops_opnd(L, v, false, &o, "tl.store value", c->loc))
        return false;
    SVal blk = bp.elts[BP_BLOCK];
    bool shape_ok = o.ty.rank == 0;
    if (o.ty.rank == blk.n) {
        shape_ok = true;
        for (int k = 0; k < blk.n; k++)
            shape_ok &= o.ty.shape[k] == blk.elts[k].c.i;
    }
    if (!shape_ok) {
        int32_t bs[KAD_MAX_RANK];
        for (int k = 0; k < blk.n; k++)
            bs[k] = (int32_t)blk.elts[k].c.i;
        diag_error(L->d, c->loc, "%s: the value's shape %s is not the block shape %s", c->fname,
                   ops_shapestr(L, o.ty.rank, o.ty.shape), ops_shapestr(L, blk.n, bs));
        return false;
    }
    if (o.ty.dt != elem) {
        diag_error(L->d, c->loc, "%s: the value's dtype %s is not the block pointer's element dtype %s (convert "
                   "it with .to())", c->fname, dtype_name((Dtype)o.ty.dt), dtype_name(elem));
        return false;
    }
    return bp_rewrite(c, 2, 3, -1);
}

static const Builtin desc_load_method, desc_store_method;

static SVal b_load(Call *c)
{
    static const char *const cache[] = {".ca", ".cg", ".cv", NULL};
    Lower *L = c->L;
    if (sval_is_tensor_desc(c->a[0]) && c->def != &desc_load_method)
        return ops_fail(L, c->loc, "tl.load: a tensor descriptor is loaded with desc.load(offsets)");
    if (c->a[0].kind == SV_BLOCKPTR && !bp_rewrite(c, 1, 3, 4))
        return sval_error();
    ValId p = arg_pointer(c, 0);
    if (!p)
        return sval_error();
    Type pt = ops_type(L, p);
    bool has_mask = !absent(c, 1), has_other = !absent(c, 2);
    if (has_other && !has_mask)
        return ops_fail(L, c->loc, "tl.load: 'other' cannot be given without 'mask'");
    if (boundary_check_given(c, 3))
        return block_ptr_only(c, 3);
    const char *pad;
    if (!arg_str(c, 4, "", &pad))
        return sval_error();
    if (*pad)
        return block_ptr_only(c, 4);
    bool vol;
    if (!check_hint(c, 5, cache) || !check_hint(c, 6, evict_policies) || !arg_bool(c, 7, false, &vol))
        return sval_error();
    Opnd m = {0}, o = {0}, po = {.v = p, .ty = pt};
    if (has_mask && !arg_mask(c, 1, &m))
        return sval_error();
    if (has_other && !ops_opnd(L, c->a[2], true, &o, "tl.load 'other'", c->loc))
        return sval_error();
    if (has_other && o.ty.dt == DT_PTR)
        return ops_fail(L, c->loc, "tl.load: 'other' must be a number or a tile of numbers");
    if (pt.rank == 0 && ((has_mask && m.ty.rank > 0) || (has_other && o.ty.rank > 0)))
        return ops_fail(L, c->loc, "tl.load: mask and other cannot be tiles when the pointer is a scalar");
    int rank = pt.rank;
    int32_t shape[KAD_MAX_RANK];
    memcpy(shape, pt.shape, sizeof shape);
    if (has_mask && !ops_bcast_shape(rank, shape, m.ty.rank, m.ty.shape, &rank, shape))
        return ops_fail(L, c->loc, "tl.load: cannot broadcast the mask %s to the pointer shape %s",
                        ops_tystr(L, m.ty), ops_shapestr(L, pt.rank, pt.shape));
    if (has_other && !ops_bcast_shape(rank, shape, o.ty.rank, o.ty.shape, &rank, shape))
        return ops_fail(L, c->loc, "tl.load: cannot broadcast 'other' %s to the pointer shape %s",
                        ops_tystr(L, o.ty), ops_shapestr(L, pt.rank, pt.shape));
    Dtype elem = (Dtype)pt.elem;
    ValId args[3];
    int n = 0;
    args[n++] = ops_materialize(L, &po, DT_PTR, rank, shape, c->loc);
    if (has_mask)
        args[n++] = ops_materialize(L, &m, DT_I1, rank, shape, c->loc);
    if (has_other)
        args[n++] = ops_materialize(L, &o, elem, rank, shape, c->loc);
    for (int i = 0; i < n; i++)
        if (!args[i])
            return sval_error();
    Type rt = type_tile(elem, rank, shape);
    Inst *in = ir_emit(L->f, L->b, OP_LOAD, args, n, &rt, 1, c->loc);
    in->flags = (uint16_t)((has_mask ? IF_HAS_MASK : 0) | (has_other ? IF_HAS_OTHER : 0));
    return sval_value(in->res[0]);
}

/* The common part of tl.store and tl.atomic_add (op) on pointer p: the
 * value (slot 1, a number or a tile of numbers; ptr_value is the message
 * for a pointer) and the optional mask (slot 2) are broadcast to the
 * pointer's shape, which they may not widen, as the pointee dtype and i1.
 * Returns op's result (None for a store). */
static SVal store_like(Call *c, OpKind op, ValId p, const char *ptr_value)
{
    Lower *L = c->L;
    Type pt = ops_type(L, p);
    bool has_mask = !absent(c, 2);
    Opnd v, m = {0};
    if (!ops_opnd(L, c->a[1], true, &v, arena_printf(L->a, "%s value", c->fname), c->loc))
        return sval_error();
    if (v.ty.dt == DT_PTR)
        return ops_fail(L, c->loc, "%s: %s", c->fname, ptr_value);
    if (has_mask && !arg_mask(c, 2, &m))
        return sval_error();
    const Opnd *opnd[2] = {&v, &m};
    const char *what[2] = {"value", "mask"};
    for (int i = 0; i < (has_mask ? 2 : 1); i++) {
        Type t = opnd[i]->ty;
        int rank;
        int32_t shape[KAD_MAX_RANK];
        if (!ops_bcast_shape(pt.rank, pt.shape, t.rank, t.shape, &rank, shape) ||
            !type_same_shape(pt, type_with_shape(pt, rank, shape)))
            return ops_fail(L, c->loc, "%s: the %s %s cannot be broadcast to the pointer shape %s", c->fname,
                            what[i], ops_tystr(L, t), ops_shapestr(L, pt.rank, pt.shape));
    }
    ValId args[3];
    int n = 0;
    args[n++] = p;
    args[n++] = ops_materialize(L, &v, (Dtype)pt.elem, pt.rank, pt.shape, c->loc);
    if (has_mask)
        args[n++] = ops_materialize(L, &m, DT_I1, pt.rank, pt.shape, c->loc);
    for (int i = 0; i < n; i++)
        if (!args[i])
            return sval_error();
    bool store = op == OP_STORE;
    Type rt = type_tile((Dtype)pt.elem, pt.rank, pt.shape);
    Inst *in = ir_emit(L->f, L->b, op, args, n, store ? NULL : &rt, store ? 0 : 1, c->loc);
    in->flags = (uint16_t)(has_mask ? IF_HAS_MASK : 0);
    return store ? sval_none() : sval_value(in->res[0]);
}

static SVal b_store(Call *c)
{
    static const char *const cache[] = {".wb", ".cg", ".cs", ".wt", NULL};
    if (sval_is_tensor_desc(c->a[0]) && c->def != &desc_store_method)
        return ops_fail(c->L, c->loc, "tl.store: a tensor descriptor is stored with desc.store(offsets, value)");
    if (c->a[0].kind == SV_BLOCKPTR && !bp_store_value(c))
        return sval_error();
    ValId p = arg_pointer(c, 0);
    if (!p)
        return sval_error();
    if (boundary_check_given(c, 3))
        return block_ptr_only(c, 3);
    if (!check_hint(c, 4, cache) || !check_hint(c, 5, evict_policies))
        return sval_error();
    return store_like(c, OP_STORE, p, "storing pointers is not supported");
}

/* ------------------------------------------------------------------ */
/* Tensor descriptors                                                  */
/* ------------------------------------------------------------------ */

/* tl.make_tensor_descriptor's descriptor is an SV_BLOCKPTR whose qual is
 * "tensor_descriptor" (padding "zero") or "tensor_descriptor_nan" and whose
 * offsets are zeros: desc.load(offsets) and desc.store(offsets, value) are a
 * block pointer at those offsets, every dimension boundary-checked, so that
 * out-of-bounds lanes read the padding and are not written, as TMA does.
 * Types follow Triton's semantic.make_tensor_descriptor: shape int32 (kad
 * keeps it int64, the comparisons give the same masks for shapes below
 * 2^31), strides int64 with a constant 1 last, block_shape constants with at
 * least 16 bytes in the last dimension, offsets int32. */

bool sval_is_tensor_desc(SVal x)
{
    return x.kind == SV_BLOCKPTR && x.qual && strncmp(x.qual, "tensor_descriptor", 17) == 0;
}

static SVal b_make_tensor_descriptor(Call *c)
{
    Lower *L = c->L;
    SVal parts[BP_N];
    SVal base = c->a[0];
    if (base.kind != SV_VALUE || ops_type(L, base.v).dt != DT_PTR || ops_type(L, base.v).rank != 0)
        return ops_fail(L, c->loc, "%s: 'base' must be a scalar pointer, got %s", c->fname, ops_describe(L, base));
    parts[BP_BASE] = base;
    if (!bp_coords(c, 1, true, &parts[BP_SHAPE]) || !bp_coords(c, 2, true, &parts[BP_STRIDES]))
        return sval_error();
    int64_t blk[KAD_MAX_RANK + 2];
    int nb;
    if (!int_list(c, c->a[3], true, blk, KAD_MAX_RANK + 1, &nb, "'block_shape'"))
        return sval_error();
    int nd = parts[BP_SHAPE].n;
    if (nd < 1 || nd > 5)
        return ops_fail(L, c->loc, "%s: expected 1 to 5 dimensions, got %d", c->fname, nd);
    if (parts[BP_STRIDES].n != nd || nb != nd)
        return ops_fail(L, c->loc, "%s: shape, strides and block_shape must have the same length (got %d, %d and %d)",
                        c->fname, nd, parts[BP_STRIDES].n, nb);
    if (!check_shape(c, nb, blk))
        return sval_error();
    Dtype elem = (Dtype)ops_type(L, base.v).elem;
    int bytes = dtype_bytes(elem);
    if (blk[nb - 1] * bytes < 16)
        return ops_fail(L, c->loc, "%s: the block shape must have at least 16 bytes in the last dimension, got "
                        "%lld * %d bytes", c->fname, (long long)blk[nb - 1], bytes);
    SVal last = parts[BP_STRIDES].elts[nd - 1];
    if (!sval_is_int(last) || last.c.i != 1)
        return ops_fail(L, c->loc, "%s: the last dimension's stride must be the constant 1 (got %s)", c->fname,
                        ops_describe(L, last));
    const char *pad;
    if (!arg_str(c, 4, "zero", &pad))
        return sval_error();
    if (strcmp(pad, "zero") != 0 && strcmp(pad, "nan") != 0)
        return ops_fail(L, c->loc, "%s: padding_option must be \"zero\" or \"nan\", got \"%s\"", c->fname, pad);
    if (!strcmp(pad, "nan") && !dtype_is_float(elem))
        return ops_fail(L, c->loc, "%s: padding option \"nan\" is not supported for integer descriptors", c->fname);
    SVal b[KAD_MAX_RANK], o[KAD_MAX_RANK], z[KAD_MAX_RANK];
    for (int k = 0; k < nb; k++)
        b[k] = sval_int(blk[k]), o[k] = sval_int(nb - 1 - k), z[k] = sval_int(0);
    parts[BP_OFFSETS] = sval_tuple(L, z, nb);
    parts[BP_BLOCK] = sval_tuple(L, b, nb);
    parts[BP_ORDER] = sval_tuple(L, o, nb);
    SVal d = sval_blockptr(L, parts);
    d.qual = !strcmp(pad, "nan") ? "tensor_descriptor_nan" : "tensor_descriptor";
    return d;
}

SVal sval_host_tensor_desc(Lower *L, ValId base, const ValId *shape, const ValId *strides, const int64_t *block,
                           int rank, bool nan)
{
    SVal parts[BP_N], sh[KAD_MAX_RANK], st[KAD_MAX_RANK], b[KAD_MAX_RANK], o[KAD_MAX_RANK], z[KAD_MAX_RANK];
    for (int k = 0; k < rank; k++) {
        sh[k] = sval_value(shape[k]); /* int32 as Triton's host descriptors: compared with int32 indices */
        st[k] = k + 1 < rank ? sval_value(strides[k]) : sval_int(1);
        b[k] = sval_int(block[k]), o[k] = sval_int(rank - 1 - k), z[k] = sval_int(0);
    }
    parts[BP_BASE] = sval_value(base);
    parts[BP_SHAPE] = sval_tuple(L, sh, rank);
    parts[BP_STRIDES] = sval_tuple(L, st, rank);
    parts[BP_OFFSETS] = sval_tuple(L, z, rank);
    parts[BP_BLOCK] = sval_tuple(L, b, rank);
    parts[BP_ORDER] = sval_tuple(L, o, rank);
    SVal d = sval_blockptr(L, parts);
    d.qual = nan ? "tensor_descriptor_nan" : "tensor_descriptor";
    return d;
}

/* The descriptor's block at offsets (argument 1 of c) as a block pointer. */
static bool desc_block_ptr(Call *c, SVal *bp)
{
    SVal desc = c->a[0], off;
    if (!sval_is_tensor_desc(desc)) {
        diag_error(c->L->d, c->loc, "%s: 'desc' must be a tensor descriptor (tl.make_tensor_descriptor), got %s",
                   c->fname, ops_describe(c->L, desc));
        return false;
    }
    if (!bp_coords(c, 1, false, &off))
        return false;
    int rank = desc.elts[BP_BLOCK].n;
    if (off.n != rank) {
        diag_error(c->L->d, c->loc, "%s: expected %d offsets, got %d", c->fname, rank, off.n);
        return false;
    }
    SVal parts[BP_N];
    memcpy(parts, desc.elts, sizeof parts);
    parts[BP_OFFSETS] = off;
    *bp = sval_blockptr(c->L, parts);
    return true;
}

/* A call of tl.load or tl.store (load: value NULL) on block pointer bp with every
 * dimension boundary-checked; value and padding where given. */
static SVal desc_access(Call *c, SVal bp, const SVal *value, const char *pad)
{
    Call t = {.L = c->L, .def = value ? &desc_store_method : &desc_load_method, .fname = c->fname, .loc = c->loc};
    static const char *const load_names[] = {"pointer", "mask", "other", "boundary_check", "padding_option",
                                              "cache_modifier", "eviction_policy", "volatile"};
    static const char *const store_names[] = {"pointer", "value", "mask", "boundary_check", "cache_modifier",
                                               "eviction_policy"};
    bool load = value == NULL;
    t.np = load ? 8 : 6;
    for (int i = 0; i < t.np; i++)
        t.pname[i] = load ? load_names[i] : store_names[i], t.a[i] = sval_none();
    int rank = bp.elts[BP_BLOCK].n;
    SVal dims[KAD_MAX_RANK];
    for (int k = 0; k < rank; k++)
        dims[k] = sval_int(k);
    t.a[0] = bp, t.has[0] = true;
    t.a[3] = sval_tuple(c->L, dims, rank), t.has[3] = true;
    /* the descriptor's operands (kad_int.h, ir_desc_at), made before the access they follow */
    Lower *L = c->L;
    ValId dops[3 * KAD_MAX_RANK];
    int nd = 0;
    dops[nd++] = bp.elts[BP_BASE].v;
    for (int part = BP_SHAPE; part <= BP_OFFSETS; part++) { /* shape, strides, offsets */
        for (int k = 0; k < (part == BP_STRIDES ? rank - 1 : rank); k++) {
            SVal x = bp.elts[part].elts[k];
            Dtype dt = part == BP_OFFSETS || (part == BP_SHAPE && sval_is_int(x) && x.c.i <= INT32_MAX) ? DT_I32 : DT_I64;
            dops[nd++] = sval_is_int(x) ? ops_emit_const(L, x.c, type_scalar(dt), c->loc) : x.v;
            if (!dops[nd - 1])
                return sval_error();
        }
    }
    SVal r;
    if (load) {
        t.a[4] = (SVal){.kind = SV_CONST, .c = {.kind = CK_STR, .s = pad}}, t.has[4] = true;
        r = b_load(&t);
    } else {
        t.a[1] = *value, t.has[1] = true;
        r = b_store(&t);
    }
    if (r.kind == SV_ERROR || !L->b->insts.n)
        return r;
    Inst *in = &L->b->insts.v[L->b->insts.n - 1];
    ASSERT(in->op == (load ? OP_LOAD : OP_STORE) && !(in->flags & IF_DESC));
    ValId *args = arena_alloc(L->a, sizeof *args * (size_t)(in->nargs + nd));
    memcpy(args, in->args, sizeof *args * (size_t)in->nargs);
    memcpy(args + in->nargs, dops, sizeof *args * (size_t)nd);
    in->args = args;
    in->nargs += nd;
    in->flags |= IF_DESC;
    return r;
}

/* desc.load(offsets) */
static SVal b_desc_load(Call *c)
{
    SVal bp;
    if (!desc_block_ptr(c, &bp))
        return sval_error();
    return desc_access(c, bp, NULL,
                       !strcmp(c->a[0].qual, "tensor_descriptor_nan") ? "nan" : "zero");
}

/* desc.store(offsets, value): the value has the block's shape and is
 * converted to the descriptor's dtype (Triton's descriptor_store). */
static SVal b_desc_store(Call *c)
{
    Lower *L = c->L;
    SVal bp;
    if (!desc_block_ptr(c, &bp))
        return sval_error();
    Opnd o;
    if (!ops_opnd(L, c->a[2], false, &o, "desc.store value", c->loc))
        return sval_error();
    SVal blk = bp.elts[BP_BLOCK];
    bool shape_ok = o.ty.rank == blk.n;
    for (int k = 0; shape_ok && k < blk.n; k++)
        shape_ok = o.ty.shape[k] == blk.elts[k].c.i;
    if (!shape_ok || o.is_const || o.ty.dt == DT_PTR)
        return ops_fail(L, c->loc, "%s: the value must be a tile of the descriptor's block shape, got %s", c->fname,
                        ops_describe(L, c->a[2]));
    Dtype elem = (Dtype)ops_type(L, bp.elts[BP_BASE].v).elem;
    SVal v = sval_value(o.ty.dt == elem ? o.v : ops_cast(L, o.v, elem, c->loc));
    return desc_access(c, bp, &v, NULL);
}

static const Builtin desc_load_method = {"load", b_desc_load, "self,offsets", 0};
static const Builtin desc_store_method = {"store", b_desc_store, "self,offsets,value", 0};

/* tl.atomic_add, atomic_max, atomic_min, atomic_xchg (c->def->aux: the op): the dtypes
 * Triton's semantic accepts for each (atomic_add: 16 bits or more; max and min: 32- and
 * 64-bit ints, fp32, fp16 and bf16; xchg: 16 bits or more, as add). */
static SVal b_atomic(Call *c)
{
    static const char *const sems[] = {"acquire", "release", "acq_rel", "relaxed", NULL};
    static const char *const scopes[] = {"gpu", "cta", "sys", NULL};
    OpKind op = (OpKind)c->def->aux;
    ValId p = arg_pointer(c, 0);
    if (!p)
        return sval_error();
    Dtype elem = (Dtype)ops_type(c->L, p).elem;
    bool minmax = op == OP_ATOMIC_MAX || op == OP_ATOMIC_MIN;
    if (elem == DT_I16 || elem == DT_U16 || dtype_bits(elem) < 16 || (minmax && elem == DT_F64))
        return ops_fail(c->L, c->loc, "%s does not support %s", c->fname, dtype_name(elem));
    if (!check_hint(c, 3, sems) || !check_hint(c, 4, scopes))
        return sval_error();
    return store_like(c, op, p, "the value must be a number or a tile of numbers");
}

/* ------------------------------------------------------------------ */
/* Builtins: elementwise                                               */
/* ------------------------------------------------------------------ */

static SVal b_where(Call *c)
{
    Lower *L = c->L;
    Opnd k, a, b;
    SVal cond = c->a[0];
    if (cond.kind == SV_CONST && cond.c.kind == CK_BOOL) {
        memset(&k, 0, sizeof k);
        k.is_const = true, k.c = cond.c, k.ty = type_scalar(DT_I1);
    } else if (!ops_opnd(L, cond, false, &k, "tl.where condition", c->loc)) {
        return sval_error();
    }
    if (k.ty.dt == DT_PTR)
        return ops_fail(L, c->loc, "tl.where: the condition must be boolean, got %s", ops_tystr(L, k.ty));
    if (!ops_opnd_pair(L, c->a[1], c->a[2], true, &a, &b, "tl.where", c->loc))
        return sval_error();
    Dtype dt;
    if (a.ty.dt == DT_PTR || b.ty.dt == DT_PTR) {
        if (a.ty.dt != b.ty.dt || a.ty.elem != b.ty.elem)
            return ops_fail(L, c->loc, "tl.where: cannot select between %s and %s", ops_tystr(L, a.ty),
                            ops_tystr(L, b.ty));
        dt = DT_PTR;
    } else {
        dt = ops_unify_dtype(L, &a, &b, false, "tl.where", c->loc);
    }
    if (dt == DT_VOID)
        return sval_error();
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!ops_bcast_shape(a.ty.rank, a.ty.shape, b.ty.rank, b.ty.shape, &rank, shape) ||
        !ops_bcast_shape(rank, shape, k.ty.rank, k.ty.shape, &rank, shape))
        return ops_fail(L, c->loc, "tl.where: cannot broadcast shapes %s, %s and %s",
                        ops_shapestr(L, k.ty.rank, k.ty.shape), ops_shapestr(L, a.ty.rank, a.ty.shape),
                        ops_shapestr(L, b.ty.rank, b.ty.shape));
    ValId vk = ops_materialize(L, &k, DT_I1, rank, shape, c->loc);
    ValId va = ops_materialize(L, &a, dt, rank, shape, c->loc);
    ValId vb = ops_materialize(L, &b, dt, rank, shape, c->loc);
    if (!vk || !va || !vb)
        return sval_error();
    return sval_value(ir_op3(L->f, L->b, OP_WHERE, ops_type(L, va), vk, va, vb, c->loc));
}

/* PropagateNan.NONE is what kad's maximum/minimum implement. */
static bool check_propagate_nan(Call *c, int i)
{
    if (absent(c, i))
        return true;
    SVal x = c->a[i];
    if (x.kind == SV_BUILTIN && strcmp(x.qual, "triton.language.PropagateNan.NONE") == 0)
        return true;
    if (x.kind == SV_BUILTIN && strcmp(x.qual, "triton.language.PropagateNan.ALL") == 0)
        diag_error(c->L->d, c->loc, "%s: propagate_nan=tl.PropagateNan.ALL is not supported by kad yet",
                   c->fname);
    else
        diag_error(c->L->d, c->loc, "%s: propagate_nan must be tl.PropagateNan.NONE or ALL, got %s",
                   c->fname, ops_describe(c->L, x));
    return false;
}

static SVal b_minmax2(Call *c)
{
    Lower *L = c->L;
    ValId x, y;
    if (!check_propagate_nan(c, 2) || !ops_unify2(L, c->a[0], c->a[1], true, false, c->fname, c->loc, &x, &y))
        return sval_error();
    return sval_value(ops_emit2(L, (OpKind)c->def->aux, ops_type(L, x), x, y, c->loc));
}

static SVal b_clamp(Call *c)
{
    Lower *L = c->L;
    ValId lo, hi, x, lo2, x2, hi2;
    if (!check_propagate_nan(c, 3))
        return sval_error();
    /* Triton's order: unify(min, max), then x with min, then x with max. */
    if (!ops_unify2(L, c->a[1], c->a[2], true, false, c->fname, c->loc, &lo, &hi) ||
        !ops_unify2(L, c->a[0], sval_value(lo), true, false, c->fname, c->loc, &x, &lo2) ||
        !ops_unify2(L, sval_value(x), sval_value(hi), true, false, c->fname, c->loc, &x2, &hi2) ||
        !ops_unify2(L, sval_value(x2), sval_value(lo2), true, false, c->fname, c->loc, &x2, &lo2))
        return sval_error();
    Type t = ops_type(L, x2);
    if (!dtype_is_float((Dtype)t.dt))
        return ops_fail(L, c->loc, "tl.clamp only supports floating-point tiles, got %s", ops_tystr(L, t));
    ValId r = ops_emit2(L, OP_MAXIMUM, t, x2, lo2, c->loc);
    return sval_value(ops_emit2(L, OP_MINIMUM, t, r, hi2, c->loc));
}

/* Float-only math: Triton's _check_dtype(["fp32", "fp64"]) (fp32 only for
 * the *_rn variants and libdevice's fast_* functions; int32 and int64 too
 * for libdevice.abs). */
static bool check_math_dtype(Call *c, Type t, bool fp32_only, bool int_ok)
{
    Dtype dt = (Dtype)t.dt;
    if (dt == DT_F32 || (dt == DT_F64 && !fp32_only) || (int_ok && (dt == DT_I32 || dt == DT_I64)))
        return true;
    diag_error(c->L->d, c->loc, "%s expects %s, got %s%s", c->fname,
               fp32_only ? "fp32" : int_ok ? "fp32, fp64, int32 or int64" : "fp32 or fp64",
               ops_tystr(c->L, t), dt == DT_F16 || dt == DT_BF16 ? " (cast with .to(tl.float32) first)" : "");
    return false;
}

/* x as a value whose dtype check_math_dtype accepts. */
static ValId math_operand(Call *c, SVal x, bool fp32_only)
{
    ValId v = to_value(c->L, x, c->fname, c->loc);
    return v && check_math_dtype(c, ops_type(c->L, v), fp32_only, false) ? v : 0;
}

enum { MF_FP32_ONLY = 1 << 16 };

static SVal b_math1(Call *c)
{
    ValId x = math_operand(c, c->a[0], (c->def->aux & MF_FP32_ONLY) != 0);
    if (!x)
        return sval_error();
    return sval_value(ops_emit1(c->L, (OpKind)(c->def->aux & 0xffff), ops_type(c->L, x), x, c->loc));
}

static SVal b_abs(Call *c)
{
    Lower *L = c->L;
    ValId x = to_value(L, c->a[0], c->fname, c->loc);
    if (!x)
        return sval_error();
    Type t = ops_type(L, x);
    if (t.dt == DT_PTR)
        return ops_fail(L, c->loc, "%s does not accept pointers", c->fname);
    if (ops_unsigned((Dtype)t.dt))
        return sval_value(x); /* a no-op, as in Triton */
    return sval_value(ops_emit1(L, OP_ABS, t, x, c->loc));
}

/* Unifies n operands pairwise as tensors (numbers are converted to tensors
 * first, as Triton's builtins do; then binary_op_type_legalization). */
static bool unify_n(Call *c, const SVal *in, int n, ValId *out)
{
    Lower *L = c->L;
    if (n == 1)
        return (out[0] = to_value(L, in[0], c->fname, c->loc)) != 0;
    SVal cur[3];
    for (int i = 0; i < n; i++)
        cur[i] = in[i];
    for (int round = 0; round < 2; round++)
        for (int i = 1; i < n; i++) {
            if (!ops_unify2(L, cur[0], cur[i], false, false, c->fname, c->loc, &out[0], &out[i]))
                return false;
            cur[0] = sval_value(out[0]), cur[i] = sval_value(out[i]);
        }
    return true;
}

static SVal b_fma(Call *c)
{
    ValId v[3];
    if (!unify_n(c, c->a, 3, v))
        return sval_error();
    Type t = ops_type(c->L, v[0]);
    if (!dtype_is_float((Dtype)t.dt))
        return ops_fail(c->L, c->loc, "%s expects floating-point operands, got %s", c->fname,
                        ops_tystr(c->L, t));
    return sval_value(ir_op3(c->L->f, c->L->b, OP_FMA, t, v[0], v[1], v[2], c->loc));
}

static SVal b_umulhi(Call *c)
{
    Lower *L = c->L;
    for (int i = 0; i < 2; i++)
        if (c->a[i].kind == SV_VALUE) {
            Dtype dt = (Dtype)ops_type(L, c->a[i].v).dt;
            if (dt != DT_I32 && dt != DT_I64 && dt != DT_U32 && dt != DT_U64)
                return ops_fail(L, c->loc, "tl.umulhi expects int32, int64, uint32 or uint64, got %s",
                                ops_describe(L, c->a[i]));
        }
    ValId v[2];
    if (!unify_n(c, c->a, 2, v))
        return sval_error();
    return sval_value(ops_emit2(L, OP_UMULHI, ops_type(L, v[0]), v[0], v[1], c->loc));
}

static SVal b_fdiv(Call *c)
{
    Lower *L = c->L;
    bool ieee;
    if (!arg_bool(c, 2, false, &ieee))
        return sval_error();
    ValId x = to_value(L, c->a[0], c->fname, c->loc), y = to_value(L, c->a[1], c->fname, c->loc);
    if (!x || !y)
        return sval_error();
    Type tx = ops_type(L, x), ty = ops_type(L, y);
    if (!dtype_is_float((Dtype)tx.dt) || !dtype_is_float((Dtype)ty.dt))
        return ops_fail(L, c->loc, "both operands of %s must be floating-point, got %s and %s", c->fname,
                        ops_tystr(L, tx), ops_tystr(L, ty));
    if (tx.dt != ty.dt)
        return ops_fail(L, c->loc, "%s does not promote: the operands are %s and %s", c->fname,
                        ops_tystr(L, tx), ops_tystr(L, ty));
    if (!ops_unify2(L, sval_value(x), sval_value(y), false, true, c->fname, c->loc, &x, &y))
        return sval_error();
    return sval_value(ops_emit2(L, OP_DIV, ops_type(L, x), x, y, c->loc));
}

static SVal b_div_rn(Call *c)
{
    ValId v[2];
    for (int i = 0; i < 2; i++)
        if (c->a[i].kind == SV_VALUE && ops_type(c->L, c->a[i].v).dt != DT_F32 &&
            !(c->def->aux && ops_type(c->L, c->a[i].v).dt == DT_F64))
            return ops_fail(c->L, c->loc, "%s expects %s, got %s", c->fname,
                            c->def->aux ? "fp32 or fp64" : "fp32", ops_describe(c->L, c->a[i]));
    if (!unify_n(c, c->a, 2, v))
        return sval_error();
    if (!dtype_is_float((Dtype)ops_type(c->L, v[0]).dt))
        return ops_fail(c->L, c->loc, "%s expects floating-point operands", c->fname);
    return sval_value(ops_emit2(c->L, OP_DIV, ops_type(c->L, v[0]), v[0], v[1], c->loc));
}

static SVal b_sigmoid(Call *c)
{
    ValId x = math_operand(c, c->a[0], false);
    return x ? sval_value(ops_emit1(c->L, OP_SIGMOID, ops_type(c->L, x), x, c->loc)) : sval_error();
}

static SVal b_cdiv(Call *c)
{
    Lower *L = c->L;
    SVal x = c->a[0], d = c->a[1];
    if (sval_is_int(x) && sval_is_int(d)) {
        if (d.c.i == 0)
            return ops_fail(L, c->loc, "%s: division by zero", c->fname);
    }
    /* (x + div - 1) // div, with the operators' own rules (folds constants). */
    SVal t = lower_binop(L, BO_ADD, x, d, c->loc);
    t = lower_binop(L, BO_SUB, t, sval_int(1), c->loc);
    return lower_binop(L, BO_FLOORDIV, t, d, c->loc);
}

/* ------------------------------------------------------------------ */
/* Builtins: reductions and scans                                      */
/* ------------------------------------------------------------------ */

/* Reduces x along axis (absent: all axes) with op; keep_dims as Triton. */
static ValId reduce(Call *c, OpKind op, ValId x, SVal axis_sv, bool keep_dims)
{
    Lower *L = c->L;
    Type t = ops_type(L, x);
    if (t.rank == 0) {
        diag_error(L->d, c->loc, "%s requires a tile, got the scalar %s", c->fname, ops_tystr(L, t));
        return 0;
    }
    int rank = t.rank, axis;
    bool all = sval_is_none(axis_sv) || axis_sv.kind == SV_ERROR;
    if (all) {
        if (t.rank > 1) {
            int32_t n = (int32_t)type_numel(t);
            t = type_with_shape(t, 1, &n);
            x = ops_emit1(L, OP_RESHAPE, t, x, c->loc);
        }
        axis = 0;
    } else {
        if (!sval_is_int(axis_sv)) {
            diag_error(L->d, c->loc, "%s: 'axis' must be a constexpr int or None, got %s", c->fname,
                       ops_describe(L, axis_sv));
            return 0;
        }
        if (!wrap_axis(c, axis_sv.c.i, t.rank, &axis))
            return 0;
    }
    int32_t shape[KAD_MAX_RANK];
    int n = 0;
    for (int i = 0; i < t.rank; i++)
        if (i != axis)
            shape[n++] = t.shape[i];
        else if (keep_dims)
            shape[n++] = 1;
    Dtype rdt = (op == OP_ARGMAX || op == OP_ARGMIN) ? DT_I32 : (Dtype)t.dt;
    ValId r = ops_emit_attr(L, op, type_tile(rdt, n, shape), x, axis, keep_dims ? IF_KEEP_DIMS : 0, c->loc);
    if (all && keep_dims && rank > 1) {
        int32_t ones[KAD_MAX_RANK] = {1, 1, 1, 1};
        r = ops_emit1(L, OP_RESHAPE, type_tile(rdt, rank, ones), r, c->loc);
    }
    return r;
}

static ValId reduce_operand(Call *c)
{
    ValId x = arg_tile(c, 0);
    if (x && ops_type(c->L, x).dt == DT_PTR) {
        diag_error(c->L->d, c->loc, "%s does not accept pointers", c->fname);
        return 0;
    }
    return x;
}

/* Triton's _pick_sum_dtype: ints narrower than 32 bits sum in (u)int32. */
static Dtype sum_dtype(Dtype dt)
{
    if (dtype_is_int(dt) && dtype_bits(dt) < 32)
        return ops_unsigned(dt) ? DT_U32 : DT_I32;
    return dt;
}

static SVal b_sum(Call *c)
{
    ValId x = reduce_operand(c);
    bool keep;
    if (!x || !arg_bool(c, 2, false, &keep))
        return sval_error();
    Dtype dt = sum_dtype((Dtype)ops_type(c->L, x).dt);
    if (!absent(c, 3) && !arg_dtype(c, 3, &dt, NULL))
        return sval_error();
    if (dtype_is_fp8(dt))
        return ops_fail(c->L, c->loc, "%s: a sum of %s values is computed in fp8 by Triton, which kad does not "
                        "model; pass dtype=tl.float32 or convert first", c->fname, dtype_name(dt));
    x = ops_cast(c->L, x, dt, c->loc);
    ValId r = reduce(c, OP_SUM, x, c->has[1] ? c->a[1] : sval_none(), keep);
    return r ? sval_value(r) : sval_error();
}

/* The dtype tl.max / tl.min reduce in (Triton's core.max): bf16 in fp32;
 * without return_indices, types narrower than 32 bits in fp32 / int32. */
static Dtype max_dtype(Dtype dt, bool ret_idx)
{
    if (dt == DT_BF16)
        dt = DT_F32;
    if (!ret_idx && dtype_bits(dt) < 32)
        dt = dtype_is_float(dt) ? DT_F32 : DT_I32;
    return dt;
}

/* tl.max / tl.min (aux: OP_MAX or OP_MIN), with return_indices. */
static SVal b_maxmin(Call *c)
{
    Lower *L = c->L;
    ValId x = reduce_operand(c);
    bool ret_idx, tie_left, keep;
    if (!x || !arg_bool(c, 2, false, &ret_idx) || !arg_bool(c, 3, true, &tie_left) ||
        !arg_bool(c, 4, false, &keep))
        return sval_error();
    x = ops_cast(L, x, max_dtype((Dtype)ops_type(L, x).dt, ret_idx), c->loc);
    SVal axis = c->has[1] ? c->a[1] : sval_none();
    ValId r = reduce(c, (OpKind)c->def->aux, x, axis, keep);
    if (!r)
        return sval_error();
    if (!ret_idx)
        return sval_value(r);
    ValId i = reduce(c, c->def->aux == OP_MAX ? OP_ARGMAX : OP_ARGMIN, x, axis, keep);
    if (!i)
        return sval_error();
    SVal two[2] = {sval_value(r), sval_value(i)};
    return sval_tuple(L, two, 2);
}

static SVal b_argmaxmin(Call *c)
{
    ValId x = reduce_operand(c);
    bool tie_left, keep;
    if (!x || !arg_bool(c, 2, true, &tie_left) || !arg_bool(c, 3, false, &keep))
        return sval_error();
    if (ops_type(c->L, x).dt == DT_BF16)
        x = ops_cast(c->L, x, DT_F32, c->loc);
    ValId r = reduce(c, (OpKind)c->def->aux, x, c->a[1], keep);
    return r ? sval_value(r) : sval_error();
}

static SVal b_scan(Call *c)
{
    Lower *L = c->L;
    ValId x = reduce_operand(c);
    bool rev;
    if (!x || !arg_bool(c, 2, false, &rev))
        return sval_error();
    Type t = ops_type(L, x);
    if (t.rank == 0)
        return ops_fail(L, c->loc, "%s requires a tile, got the scalar %s", c->fname, ops_tystr(L, t));
    Dtype dt = (Dtype)t.dt;
    if (dt == DT_BF16)
        dt = DT_F32;
    if (c->def->aux == OP_CUMSUM) {
        dt = sum_dtype(dt);
        if (!absent(c, 3) && !arg_dtype(c, 3, &dt, NULL))
            return sval_error();
    }
    if (dtype_is_fp8(dt))
        return ops_fail(L, c->loc, "%s of %s values is computed in fp8 by Triton, which kad does not model; "
                        "convert with .to(tl.float32) first", c->fname, dtype_name(dt));
    int64_t a = 0;
    int axis;
    if (!absent(c, 1) && !arg_int(c, 1, &a))
        return sval_error();
    if (!wrap_axis(c, a, t.rank, &axis))
        return sval_error();
    x = ops_cast(L, x, dt, c->loc);
    return sval_value(ops_emit_attr(L, (OpKind)c->def->aux, ops_type(L, x), x, axis, rev ? IF_REVERSE : 0,
                                    c->loc));
}

static SVal b_assoc_scan(Call *c)
{
    return ops_fail(c->L, c->loc, "%s: combine_fn must be a @triton.jit function", c->fname);
}

static SVal b_softmax(Call *c)
{
    Lower *L = c->L;
    ValId x = reduce_operand(c);
    bool keep, ieee;
    if (!x || !arg_bool(c, 2, false, &keep) || !arg_bool(c, 3, false, &ieee))
        return sval_error();
    SVal dim = absent(c, 1) ? sval_int(0) : c->a[1];
    /* Triton's definition: z = x - max(x, dim); num = exp(z); num / sum(num, dim) */
    Dtype mdt = max_dtype((Dtype)ops_type(L, x).dt, false);
    ValId m = reduce(c, OP_MAX, ops_cast(L, x, mdt, c->loc), dim, keep);
    if (!m)
        return sval_error();
    SVal z = lower_binop(L, BO_SUB, sval_value(x), sval_value(m), c->loc);
    if (z.kind == SV_ERROR)
        return z;
    ValId e = math_operand(c, z, false);
    if (!e)
        return sval_error();
    ValId num = ops_emit1(L, OP_EXP, ops_type(L, e), e, c->loc);
    ValId den = reduce(c, OP_SUM, ops_cast(L, num, sum_dtype((Dtype)ops_type(L, num).dt), c->loc), dim, keep);
    ValId q, r;
    if (!den || !ops_unify2(L, sval_value(num), sval_value(den), false, true, c->fname, c->loc, &q, &r))
        return sval_error();
    return sval_value(ops_emit2(L, OP_DIV, ops_type(L, q), q, r, c->loc));
}

/* ------------------------------------------------------------------ */
/* Builtins: dot                                                       */
/* ------------------------------------------------------------------ */

static SVal b_dot(Call *c)
{
    Lower *L = c->L;
    ValId a = arg_tile(c, 0), b = a ? arg_tile(c, 1) : 0;
    if (!a || !b)
        return sval_error();
    Type ta = ops_type(L, a), tb = ops_type(L, b);
    if (ta.rank != tb.rank || (ta.rank != 2 && ta.rank != 3))
        return ops_fail(L, c->loc, "tl.dot requires 2-D or 3-D tiles, got %s and %s", ops_tystr(L, ta),
                        ops_tystr(L, tb));
    Dtype dt = (Dtype)ta.dt;
    if (dt != DT_I8 && dt != DT_U8 && dt != DT_F16 && dt != DT_BF16 && dt != DT_F32 && dt != DT_F64)
        return ops_fail(L, c->loc, "tl.dot does not support %s operands", ops_tystr(L, ta));
    if (ta.dt != tb.dt)
        return ops_fail(L, c->loc, "tl.dot operands must have the same dtype, got %s and %s",
                        ops_tystr(L, ta), ops_tystr(L, tb));
    int r = ta.rank;
    if (ta.shape[r - 1] != tb.shape[r - 2])
        return ops_fail(L, c->loc, "tl.dot: the inner dimensions of %s and %s do not match", ops_tystr(L, ta),
                        ops_tystr(L, tb));
    if (r == 3 && ta.shape[0] != tb.shape[0])
        return ops_fail(L, c->loc, "tl.dot: the batch dimensions of %s and %s do not match", ops_tystr(L, ta),
                        ops_tystr(L, tb));
    /* precision */
    int prec = DP_DEFAULT;
    if (!absent(c, 3)) {
        const char *s;
        if (!arg_str(c, 3, "", &s))
            return sval_error();
        if (strcmp(s, "tf32") == 0)
            prec = DP_TF32;
        else if (strcmp(s, "tf32x3") == 0)
            prec = DP_TF32X3;
        else if (strcmp(s, "ieee") == 0)
            prec = DP_IEEE;
        else
            return ops_fail(L, c->loc, "tl.dot: input_precision must be 'tf32', 'tf32x3' or 'ieee', got '%s'",
                            s);
    }
    if (!absent(c, 4)) {
        bool tf32;
        if (!absent(c, 3))
            return ops_fail(L, c->loc, "tl.dot: only one of input_precision and allow_tf32 may be given");
        if (!arg_bool(c, 4, true, &tf32))
            return sval_error();
        prec = tf32 ? DP_TF32 : DP_IEEE;
    }
    if (dt != DT_F32)
        prec = DP_DEFAULT; /* the precision only concerns fp32 inputs */
    if (!absent(c, 5)) {
        int64_t k;
        if (!arg_int(c, 5, &k))
            return sval_error();
    }
    Dtype out = DT_F32;
    if (!absent(c, 6) && !arg_dtype(c, 6, &out, NULL))
        return sval_error();
    Dtype rdt;
    if (dtype_is_int(dt)) {
        if (dt != DT_I8)
            return ops_fail(L, c->loc, "tl.dot: only int8 integer operands are supported");
        rdt = DT_I32;
    } else if (out == DT_BF16) {
        return ops_fail(L, c->loc, "tl.dot: out_dtype=tl.bfloat16 is not supported; use tl.float32 and cast");
    } else if (dt == DT_F32 || dt == DT_BF16) {
        rdt = DT_F32;
    } else if (dt == DT_F64) {
        rdt = DT_F64;
    } else {
        if (out != DT_F16 && out != DT_F32)
            return ops_fail(L, c->loc,
                            "tl.dot: out_dtype must be tl.float32 or tl.float16 for fp16 operands");
        rdt = out;
    }
    int32_t shape[3];
    if (r == 3)
        shape[0] = ta.shape[0];
    shape[r - 2] = ta.shape[r - 2];
    shape[r - 1] = tb.shape[r - 1];
    Type rt = type_tile(rdt, r, shape);
    ValId acc;
    if (absent(c, 2)) {
        acc = ops_emit_zero(L, rt, c->loc);
    } else {
        acc = arg_tile(c, 2);
        if (!acc)
            return sval_error();
        if (!type_eq(ops_type(L, acc), rt))
            return ops_fail(L, c->loc, "tl.dot: the accumulator must be %s, got %s", ops_tystr(L, rt),
                            ops_tystr(L, ops_type(L, acc)));
        /* Triton asserts acc's dtype == out_dtype (default float32), also for fp64 and int8. */
        if (rt.dt != out)
            return ops_fail(L, c->loc,
                            "tl.dot: an accumulator of dtype %s needs out_dtype=tl.%s (Triton requires "
                            "acc's dtype to equal out_dtype, which defaults to tl.float32)",
                            dtype_name(rdt), dtype_triton_name(rdt));
    }
    ValId args[3] = {a, b, acc};
    Inst *in = ir_emit(L->f, L->b, OP_DOT, args, 3, &rt, 1, c->loc);
    in->ival = prec;
    return sval_value(in->res[0]);
}

/* ------------------------------------------------------------------ */
/* Builtins: shapes                                                    */
/* ------------------------------------------------------------------ */

/* tl.permute(x, dims) and tl.trans(x, dims=()) (aux 1: no dims swaps the
 * two axes). */
static SVal b_permute(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_tile(c, 0);
    if (!x)
        return sval_error();
    SVal dims = unwrap_iterable(c->has[1] ? c->a[1] : sval_tuple(L, NULL, 0));
    if (c->def->aux && dims.kind == SV_TUPLE && dims.n == 0) { /* trans(): swap the two axes */
        SVal d[2] = {sval_int(1), sval_int(0)};
        dims = sval_tuple(L, d, 2);
    }
    Type t = ops_type(L, x);
    int64_t d[KAD_MAX_RANK + 1];
    int n;
    if (!int_list(c, dims, false, d, KAD_MAX_RANK, &n, "the dims"))
        return sval_error();
    if (n != t.rank)
        return ops_fail(L, c->loc, "%s: %d dims given for a tile of rank %d (%s)", c->fname, n, t.rank,
                        ops_tystr(L, t));
    bool seen[KAD_MAX_RANK] = {0};
    int32_t perm[KAD_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (d[i] < 0 || d[i] >= n || seen[d[i]])
            return ops_fail(L, c->loc, "%s: dims must be a permutation of 0..%d", c->fname, n - 1);
        seen[d[i]] = true;
        perm[i] = (int32_t)d[i];
    }
    return sval_value(ops_permute(L, x, perm, c->loc));
}

static SVal reshape(Call *c, ValId x, SVal shp)
{
    Lower *L = c->L;
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!arg_shape(c, unwrap_iterable(shp), &rank, shape))
        return sval_error();
    Type t = ops_type(L, x);
    if (rank == 0)
        return ops_fail(L, c->loc, "%s: the shape must not be empty", c->fname);
    Type rt = type_with_shape(t, rank, shape);
    if (type_numel(rt) != type_numel(t))
        return ops_fail(L, c->loc, "%s cannot change the number of elements: %s to %s", c->fname,
                        ops_tystr(L, t), ops_shapestr(L, rank, shape));
    if (type_same_shape(t, rt))
        return sval_value(x);
    return sval_value(ops_emit1(L, OP_RESHAPE, rt, x, c->loc));
}

static SVal b_reshape(Call *c)
{
    ValId x = arg_tile(c, 0);
    bool reorder;
    if (!x || !arg_bool(c, 2, false, &reorder))
        return sval_error();
    if (!c->has[1])
        return ops_fail(c->L, c->loc, "%s() missing required argument 'shape'", c->fname);
    return reshape(c, x, c->a[1]);
}

static SVal b_ravel(Call *c)
{
    ValId x = arg_tile(c, 0);
    bool reorder;
    if (!x || !arg_bool(c, 1, false, &reorder))
        return sval_error();
    SVal n = sval_int(type_numel(ops_type(c->L, x)));
    return reshape(c, x, sval_tuple(c->L, &n, 1));
}

static SVal b_broadcast_to(Call *c)
{
    Lower *L = c->L;
    ValId x = to_value(L, c->a[0], c->fname, c->loc);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!x || !c->has[1] || !arg_shape(c, unwrap_iterable(c->a[1]), &rank, shape))
        return x && !c->has[1] ? ops_fail(L, c->loc, "%s() missing required argument 'shape'", c->fname)
                               : sval_error();
    Type t = ops_type(L, x);
    if (t.rank > 0) {
        if (t.rank != rank)
            return ops_fail(L, c->loc,
                            "%s: cannot broadcast %s to %s: the ranks differ (tl.broadcast_to does "
                            "not add axes)", c->fname, ops_tystr(L, t), ops_shapestr(L, rank, shape));
        for (int i = 0; i < rank; i++)
            if (t.shape[i] != shape[i] && t.shape[i] != 1)
                return ops_fail(L, c->loc, "%s: cannot broadcast %s to %s", c->fname, ops_tystr(L, t),
                                ops_shapestr(L, rank, shape));
    }
    return sval_value(ops_bcast_to(L, x, rank, shape, c->loc));
}

static SVal b_broadcast(Call *c)
{
    Lower *L = c->L;
    ValId x = to_value(L, c->a[0], c->fname, c->loc);
    ValId y = x ? to_value(L, c->a[1], c->fname, c->loc) : 0;
    if (!x || !y)
        return sval_error();
    Type tx = ops_type(L, x), ty = ops_type(L, y);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!ops_bcast_shape(tx.rank, tx.shape, ty.rank, ty.shape, &rank, shape))
        return ops_fail(L, c->loc, "cannot broadcast shapes %s and %s in %s",
                        ops_shapestr(L, tx.rank, tx.shape), ops_shapestr(L, ty.rank, ty.shape), c->fname);
    SVal two[2] = {sval_value(ops_bcast_to(L, x, rank, shape, c->loc)),
                   sval_value(ops_bcast_to(L, y, rank, shape, c->loc))};
    return sval_tuple(L, two, 2);
}

static SVal b_expand_dims(Call *c)
{
    Lower *L = c->L;
    ValId x = to_value(L, c->a[0], c->fname, c->loc);
    if (!x)
        return sval_error();
    int64_t ax[KAD_MAX_RANK + 1];
    int n;
    if (!int_list(c, c->a[1], true, ax, KAD_MAX_RANK, &n, "the axis"))
        return sval_error();
    Type t = ops_type(L, x);
    int nd = t.rank + n;
    if (nd > KAD_MAX_RANK)
        return ops_fail(L, c->loc, "%s: the result would have rank %d (kad allows up to %d axes)", c->fname,
                        nd, KAD_MAX_RANK);
    int axes[KAD_MAX_RANK];
    for (int i = 0; i < n; i++) {
        if (!wrap_axis(c, ax[i], nd, &axes[i]))
            return sval_error();
        for (int j = 0; j < i; j++)
            if (axes[j] == axes[i])
                return ops_fail(L, c->loc, "%s: duplicate axis %d", c->fname, axes[i]);
    }
    for (int i = 0; i < n; i++) /* insert in increasing order */
        for (int j = i + 1; j < n; j++)
            if (axes[j] < axes[i]) {
                int s = axes[i];
                axes[i] = axes[j], axes[j] = s;
            }
    for (int i = 0; i < n; i++)
        x = ops_expand_dims(L, x, axes[i], c->loc);
    return sval_value(x);
}

/* ------------------------------------------------------------------ */
/* Builtins: conversions and hints                                     */
/* ------------------------------------------------------------------ */

/* The value conversions to or from an fp8 type that Triton's NVIDIA
 * backend implements (FpToFpOp's table; convert_custom_float8 for
 * float8e4b15): fp32, fp16 and bf16 to and from fp8e5 and fp8e4nv, fp32 and
 * fp16 to and from fp8e4b15.  A Python number (is_const) converts to any. */
static bool fp8_cast_ok(Dtype src, Dtype dt, bool is_const)
{
    Dtype other = dtype_is_fp8(src) ? dt : src, f8 = dtype_is_fp8(src) ? src : dt;
    if (is_const && !dtype_is_fp8(src))
        return true;
    if (other == DT_F32 || other == DT_F16)
        return true;
    return other == DT_BF16 && f8 != DT_F8E4B15;
}

static SVal cast_to(Call *c, SVal xs, Dtype dt, Dtype elem, bool bitcast, const char *rounding)
{
    Lower *L = c->L;
    Opnd o;
    if (!ops_opnd(L, xs, false, &o, c->fname, c->loc))
        return sval_error();
    Dtype src = (Dtype)o.ty.dt;
    if (src == DT_PTR || dt == DT_PTR) {
        if (src == DT_PTR && dt == DT_PTR && o.ty.elem == elem)
            return sval_value(o.v);
        return ops_fail(L, c->loc, "%s: casts involving pointers are not supported by kad yet (%s to %s)",
                        c->fname, ops_tystr(L, o.ty), dt == DT_PTR ? "a pointer" : dtype_name(dt));
    }
    if (rounding) {
        bool down = dtype_is_float(src) && dtype_is_float(dt) && dtype_bits(dt) < dtype_bits(src);
        if (strcmp(rounding, "rtne") != 0 && strcmp(rounding, "rtz") != 0)
            return ops_fail(L, c->loc, "%s: fp_downcast_rounding must be 'rtne' or 'rtz', got '%s'", c->fname,
                            rounding);
        if (!down)
            return ops_fail(L, c->loc,
                            "%s: fp_downcast_rounding is only valid for float downcasts, not %s to %s",
                            c->fname, dtype_name(src), dtype_name(dt));
        if (strcmp(rounding, "rtz") == 0)
            return ops_fail(L, c->loc, "%s: fp_downcast_rounding='rtz' is not supported by kad yet",
                            c->fname);
    }
    if (bitcast) {
        if (src == dt)
            return sval_value(o.is_const ? ops_materialize(L, &o, src, 0, NULL, c->loc) : o.v);
        if (dtype_bits(src) != dtype_bits(dt))
            return ops_fail(L, c->loc, "%s: cannot bitcast %s to %s: sizes differ (%d and %d bits)", c->fname,
                            dtype_name(src), dtype_name(dt), dtype_bits(src), dtype_bits(dt));
        ValId v = o.is_const ? ops_materialize(L, &o, src, 0, NULL, c->loc) : o.v;
        if (!v)
            return sval_error();
        return sval_value(ops_emit1(L, OP_BITCAST, type_with_dtype(ops_type(L, v), dt), v, c->loc));
    }
    if (src != dt && (dtype_is_fp8(src) || dtype_is_fp8(dt)) && !fp8_cast_ok(src, dt, o.is_const))
        return ops_fail(L, c->loc,
                        "%s: Triton has no conversion from %s to %s on NVIDIA GPUs (fp8 types convert "
                        "to and from fp32, fp16 and bf16; float8e4b15 to and from fp32 and fp16); "
                        "convert through tl.float32",
                        c->fname, dtype_name(src), dtype_name(dt));
    ValId v = ops_materialize(L, &o, dt, o.ty.rank, o.ty.shape, c->loc);
    return v ? sval_value(v) : sval_error();
}

/* tl.cast(x, dtype, fp_downcast_rounding=None, bitcast=False) and x.to(...) */
static SVal b_cast(Call *c)
{
    Dtype dt, elem = DT_VOID;
    bool bitcast;
    const char *rounding = NULL;
    /* Triton's cast takes a block_type's scalar (x.to(y.type)), not a block
     * pointer's type */
    if (c->a[1].kind == SV_CONST && c->a[1].c.kind == CK_DTYPE && c->a[1].c.brank && !c->a[1].c.of_block) {
        c->a[1].c.brank = 0;
        memset(c->a[1].c.bshape, 0, sizeof c->a[1].c.bshape);
    }
    if (!arg_dtype(c, 1, &dt, &elem) || !arg_bool(c, 3, false, &bitcast))
        return sval_error();
    if (!absent(c, 2) && !arg_str(c, 2, NULL, &rounding))
        return sval_error();
    return cast_to(c, c->a[0], dt, elem, bitcast, rounding);
}

/* multiple_of / max_contiguous (aux: the op) and max_constancy (aux 0). */
static SVal b_hint(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_tile(c, 0);
    int64_t v[KAD_MAX_RANK + 1];
    int n;
    if (!x || !int_list(c, c->a[1], true, v, KAD_MAX_RANK, &n, "the values"))
        return sval_error();
    Type t = ops_type(L, x);
    int want = c->def->aux == OP_MULTIPLE_OF && t.rank == 0 ? 1 : t.rank;
    if (n != want)
        return ops_fail(L, c->loc, "%s: %d values given for %s (expected %d)", c->fname, n, ops_tystr(L, t),
                        want);
    for (int i = 0; i < n; i++)
        if (v[i] <= 0 || v[i] > INT32_MAX)
            return ops_fail(L, c->loc, "%s: values must be positive int32 constants, got %lld", c->fname,
                            (long long)v[i]);
    if (!c->def->aux)
        return sval_value(x); /* max_constancy: accepted and ignored */
    Inst *in = ir_emit(L->f, L->b, (OpKind)c->def->aux, &x, 1, &t, 1, c->loc);
    for (int i = 0; i < n; i++)
        in->ints[i] = (int32_t)v[i];
    in->nints = n;
    return sval_value(in->res[0]);
}

/* ------------------------------------------------------------------ */
/* Builtins: assertions, random numbers, constexpr helpers              */
/* ------------------------------------------------------------------ */

static SVal b_static_assert(Call *c)
{
    const char *msg;
    if (!arg_str(c, 1, "", &msg))
        return sval_error();
    SVal x = c->a[0];
    if (x.kind == SV_VALUE)
        return ops_fail(c->L, c->loc, "tl.static_assert needs a constexpr condition, got %s",
                        ops_describe(c->L, x));
    if (!sval_truthy(x))
        return ops_fail(c->L, c->loc, "static_assert failed%s%s", *msg ? ": " : "", msg);
    return sval_none();
}

static SVal b_nothing(Call *c) { (void)c; return sval_none(); }

static SVal b_device_assert(Call *c)
{
    Lower *L = c->L;
    const char *msg;
    if (!arg_str(c, 1, "", &msg))
        return sval_error();
    SVal x = c->a[0];
    ValId v;
    if (x.kind == SV_CONST && x.c.kind != CK_STR && x.c.kind != CK_DTYPE) {
        if (const_truthy(x.c) && absent(c, 2))
            return sval_none();
        v = ir_const_int(L->f, L->b, type_scalar(DT_I1), const_truthy(x.c), c->loc);
    } else if (x.kind == SV_VALUE && ops_type(L, x.v).dt != DT_PTR) {
        v = ops_cast(L, x.v, DT_I1, c->loc);
    } else {
        return ops_fail(L, c->loc, "tl.device_assert: the condition must be a tensor or a number, got %s",
                        ops_describe(L, x));
    }
    if (!absent(c, 2)) { /* cond | ~mask */
        Opnd m;
        if (!arg_mask(c, 2, &m))
            return sval_error();
        ValId mv = m.is_const ? ops_emit_const(L, m.c, type_scalar(DT_I1), c->loc) : m.v;
        ValId nm = ops_emit1(L, OP_NOT, ops_type(L, mv), mv, c->loc), a, b;
        if (!ops_unify2(L, sval_value(v), sval_value(nm), false, false, c->fname, c->loc, &a, &b))
            return sval_error();
        v = ops_emit2(L, OP_OR, ops_type(L, a), a, b, c->loc);
    }
    Inst *in = ir_emit(L->f, L->b, OP_ASSERT, &v, 1, NULL, 0, c->loc);
    in->sattr = arena_strdup(L->a, msg);
    return sval_none();
}

static SVal b_rand(Call *c)
{
    Lower *L = c->L;
    if (!absent(c, 2)) {
        int64_t r;
        if (!arg_int(c, 2, &r))
            return sval_error();
        if (r != 10)
            return ops_fail(L, c->loc, "%s: only the default n_rounds=10 is supported by kad", c->fname);
    }
    ValId seed = to_value(L, c->a[0], c->fname, c->loc);
    ValId off = seed ? to_value(L, c->a[1], c->fname, c->loc) : 0;
    if (!seed || !off)
        return sval_error();
    Type ts = ops_type(L, seed), to = ops_type(L, off);
    if (ts.rank != 0 || !dtype_is_int((Dtype)ts.dt) || ts.dt == DT_I1)
        return ops_fail(L, c->loc, "%s: the seed must be an integer scalar, got %s", c->fname,
                        ops_tystr(L, ts));
    if (to.dt != DT_I32 && to.dt != DT_U32)
        return ops_fail(L, c->loc,
                        "%s: offsets must be int32 or uint32 (64-bit offsets are not supported by kad "
                        "yet), got %s", c->fname, ops_tystr(L, to));
    Dtype rdt = c->def->aux == OP_RANDINT ? DT_U32 : DT_F32;
    return sval_value(ops_emit2(L, (OpKind)c->def->aux, type_with_dtype(to, rdt), seed, off, c->loc));
}

static SVal b_constexpr(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_CONST || x.kind == SV_NONE || x.kind == SV_TUPLE)
        return x;
    return ops_fail(c->L, c->loc, "tl.constexpr() needs a compile-time constant, got %s",
                    ops_describe(c->L, x));
}

static SVal b_loop_only(Call *c)
{
    return ops_fail(c->L, c->loc, "%s can only be used as the iterable of a for loop", c->fname);
}

static SVal b_next_pow2(Call *c)
{
    int64_t n;
    if (!arg_int(c, 0, &n))
        return sval_error();
    if (n > ((int64_t)1 << 62))
        return ops_overflow(c->L, "next_power_of_2", c->loc);
    int64_t p = 1;
    while (p < n)
        p <<= 1;
    return sval_int(p);
}

/* ------------------------------------------------------------------ */
/* libdevice                                                           */
/* ------------------------------------------------------------------ */

enum {
    LD_ISFIN = OP_COUNT + 1, /* isfinited / finitef: not (isnan or isinf) */
    LD_I32_RESULT = 1 << 17, /* libdevice returns int32 (isnan, isinf) */
    LD_INT_OK = 1 << 18,     /* also accepts int32/int64 (abs) */
    LD_ROUND_SHIFT = 20,     /* the *_round ops: the rounding (RND_*) at this bit */
};
#define LD_RZ (RND_RZ << LD_ROUND_SHIFT)
#define LD_RD (RND_RD << LD_ROUND_SHIFT)
#define LD_RU (RND_RU << LD_ROUND_SHIFT)

/* libdevice functions of a float and an int32 (ldexp, scalbn, pow with an
 * int32 exponent; jn and yn take the int first): the float is fp32 or
 * fp64, the int int32 (Triton's dispatch tables), both broadcast to one
 * shape.  pow with a float exponent is b_libdevice's. */
static SVal b_libdevice_int(Call *c)
{
    Lower *L = c->L;
    int op = c->def->aux & 0xffff, ni = libm_int_operand(op);
    ValId v[2];
    for (int k = 0; k < 2; k++)
        if (!(v[k] = to_value(L, c->a[k], c->fname, c->loc)))
            return sval_error();
    Type ti = ops_type(L, v[ni]), tf = ops_type(L, v[1 - ni]);
    if (op == OP_POWI && ti.dt != DT_I32 && !dtype_is_float((Dtype)ti.dt))
        return ops_fail(L, c->loc, "%s expects an fp32/fp64 or int32 exponent, got %s", c->fname, ops_tystr(L, ti));
    if (op == OP_POWI && ti.dt != DT_I32) { /* a float exponent: __nv_pow */
        if (!unify_n(c, c->a, 2, v))
            return sval_error();
        Type t = ops_type(L, v[0]);
        if (!check_math_dtype(c, t, false, false))
            return sval_error();
        return sval_value(ops_emit2(L, OP_POW, t, v[0], v[1], c->loc));
    }
    if (!check_math_dtype(c, tf, false, false))
        return sval_error();
    if (ti.dt != DT_I32)
        return ops_fail(L, c->loc, "%s expects an int32 %s, got %s", c->fname, ni ? "second argument" : "first argument",
                        ops_tystr(L, ti));
    Type big = tf.rank >= ti.rank ? tf : ti;
    for (int k = 0; k < 2; k++) {
        Type tk = ops_type(L, v[k]);
        if (!type_same_shape(tk, big))
            v[k] = ops_bcast_to(L, v[k], big.rank, big.shape, c->loc);
        if (!v[k])
            return sval_error();
    }
    return sval_value(ops_emit2(L, (OpKind)op, type_with_shape(tf, big.rank, big.shape), v[0], v[1], c->loc));
}

/* libdevice functions: arguments are converted to tensors; one dtype tuple
 * of fp32 or fp64 (a mismatch is promoted, as extern_elementwise does). */
static SVal b_libdevice(Call *c)
{
    Lower *L = c->L;
    int n = c->np, aux = c->def->aux;
    int op = aux & 0xffff;
    ValId v[3];
    if (!unify_n(c, c->a, n, v))
        return sval_error();
    Type t = ops_type(L, v[0]);
    if (!check_math_dtype(c, t, (aux & MF_FP32_ONLY) != 0, (aux & LD_INT_OK) != 0))
        return sval_error();
    ValId r;
    if (op == OP_ILOGB) {
        r = ops_emit1(L, OP_ILOGB, type_with_dtype(t, DT_I32), v[0], c->loc);
    } else if (op_is_libm(op)) { /* one op, its rounding mode (the *_round ops) in ival */
        Inst *in = ir_emit(L->f, L->b, (OpKind)op, v, n, &t, 1, c->loc);
        in->ival = (aux >> LD_ROUND_SHIFT) & 3;
        r = in->res[0];
    } else if (op == LD_ISFIN) {
        Type bt = type_with_dtype(t, DT_I1);
        ValId a = ops_emit1(L, OP_ISNAN, bt, v[0], c->loc), b = ops_emit1(L, OP_ISINF, bt, v[0], c->loc);
        r = ops_emit1(L, OP_NOT, bt, ops_emit2(L, OP_OR, bt, a, b, c->loc), c->loc);
    } else if (n == 1) {
        Type rt = (op == OP_ISNAN || op == OP_ISINF) ? type_with_dtype(t, DT_I1) : t;
        r = ops_emit1(L, (OpKind)op, rt, v[0], c->loc);
    } else if (n == 2) {
        r = ops_emit2(L, (OpKind)op, t, v[0], v[1], c->loc);
    } else {
        r = ir_op3(L->f, L->b, (OpKind)op, t, v[0], v[1], v[2], c->loc);
    }
    if (aux & LD_I32_RESULT)
        r = ops_cast(L, r, DT_I32, c->loc);
    return sval_value(r);
}

static SVal b_refuse(Call *c)
{
    static const struct { const char *name, *why; } why[] = {
        {"round", "rounds half away from zero, which kad's IR cannot express yet (libdevice.rint rounds "
                  "half to even)"},
        {"signbit", "is not supported by kad yet"},
        {"norm4d", "takes four operands; kad's elementwise ops take at most three (use libdevice.norm3d, or "
                   "tl.sqrt of the sum of squares)"},
        {"rnorm4d", "takes four operands; kad's elementwise ops take at most three (use libdevice.rnorm3d, or "
                    "tl.rsqrt of the sum of squares)"},
        {"nextafter", "is not supported by kad yet: a step to the neighbouring float, piecewise constant in "
                      "its second operand, with no useful derivative"},
        {"tanh", "does not exist in triton.language; use libdevice.tanh"},
        {"fabs", "does not exist in Triton's libdevice; use libdevice.abs or tl.abs"},
        {"fmax", "does not exist in Triton's libdevice; use tl.maximum"},
        {"fmin", "does not exist in Triton's libdevice; use tl.minimum"},
    };
    for (size_t i = 0; i < sizeof why / sizeof why[0]; i++)
        if (strcmp(c->def->name, why[i].name) == 0)
            return ops_fail(c->L, c->loc, "'%s' %s", c->fname, why[i].why);
    return ops_fail(c->L, c->loc, "'%s' is not supported by kad yet", c->fname);
}

/* ------------------------------------------------------------------ */
/* Python builtins                                                     */
/* ------------------------------------------------------------------ */

static SVal b_py_minmax(Call *c)
{
    Lower *L = c->L;
    bool is_max = c->def->aux == OP_MAXIMUM;
    SVal args = c->has[0] ? c->a[0] : sval_tuple(L, NULL, 0);
    if (args.n == 1 && args.elts[0].kind == SV_TUPLE)
        args = args.elts[0];
    if (args.n == 0)
        return ops_fail(L, c->loc, "%s() needs at least one argument", c->fname);
    bool all_const = true;
    for (int i = 0; i < args.n; i++)
        all_const = all_const && sval_is_num(args.elts[i]);
    if (all_const) {
        SVal best = args.elts[0];
        for (int i = 1; i < args.n; i++) {
            SVal gt = ops_fold_compare(L, is_max ? CO_GT : CO_LT, args.elts[i], best, c->loc);
            if (gt.kind == SV_ERROR)
                return gt;
            if (gt.c.i)
                best = args.elts[i];
        }
        return best;
    }
    if (args.n != 2)
        return ops_fail(L, c->loc, "%s() of tensors takes exactly two arguments (it is tl.%s)", c->fname,
                        is_max ? "maximum" : "minimum");
    ValId x, y;
    if (!ops_unify2(L, args.elts[0], args.elts[1], true, false, c->fname, c->loc, &x, &y))
        return sval_error();
    return sval_value(ops_emit2(L, (OpKind)c->def->aux, ops_type(L, x), x, y, c->loc));
}

static SVal b_py_abs(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_CONST && x.c.kind == CK_FLOAT)
        return sval_float(fabs(x.c.f));
    if (sval_is_int(x)) {
        if (x.c.i == INT64_MIN)
            return ops_overflow(c->L, "abs", c->loc);
        return sval_int(x.c.i < 0 ? -x.c.i : x.c.i);
    }
    return b_abs(c);
}

/* int(), float(), bool() of constants (aux: the ConstKind). */
static SVal b_py_conv(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_CONST && x.c.kind == CK_STR && c->def->aux != CK_BOOL) {
        /* float("inf"), float("-inf"), float("nan"), int("16"): Python's parsing */
        const char *s = x.c.s;
        char *end;
        while (*s == ' ' || *s == '\t')
            s++;
        if (c->def->aux == CK_FLOAT) {
            double f = strtod(s, &end);
            bool hex = strchr(s, 'x') || strchr(s, 'X');
            while (*end == ' ' || *end == '\t')
                end++;
            if (end != s && !*end && !hex)
                return sval_float(f);
        } else {
            long long i = strtoll(s, &end, 10);
            while (*end == ' ' || *end == '\t')
                end++;
            if (end != s && !*end)
                return sval_int(i);
        }
        return ops_fail(c->L, c->loc, "%s() cannot convert %s", c->fname, const_repr(c->L->a, x.c));
    }
    if (x.kind == SV_CONST && x.c.kind == CK_STR)
        return sval_bool(const_truthy(x.c));
    if (!sval_is_num(x))
        return ops_fail(c->L, c->loc, "%s() of %s is not supported; use x.to(dtype) on tensors", c->fname,
                        ops_describe(c->L, x));
    switch (c->def->aux) {
    case CK_INT:
        if (x.c.kind == CK_FLOAT) {
            if (!isfinite(x.c.f) || fabs(x.c.f) >= 9.2e18)
                return ops_fail(c->L, c->loc, "int() of %s does not fit in 64 bits",
                                const_repr(c->L->a, x.c));
            return sval_int((int64_t)trunc(x.c.f));
        }
        return sval_int(x.c.i);
    case CK_FLOAT: return sval_float(const_as_double(x.c));
    default: return sval_bool(const_truthy(x.c));
    }
}

static SVal b_py_len(Call *c)
{
    SVal x = c->a[0];
    if (x.kind == SV_TUPLE)
        return sval_int(x.n);
    if (x.kind == SV_CONST && x.c.kind == CK_STR)
        return sval_int((int64_t)strlen(x.c.s));
    return ops_fail(c->L, c->loc, "len() of %s is not supported", ops_describe(c->L, x));
}

/* ------------------------------------------------------------------ */
/* Builtins: join, split, interleave, flip, gather, sort, topk,         */
/* histogram (Triton 3.6's core.py and standard.py)                     */
/* ------------------------------------------------------------------ */

/* Operand i as a runtime value that is not a pointer (kad's AD does not
 * follow pointers through these ops). */
static ValId arg_data(Call *c, int i)
{
    ValId x = arg_tile(c, i);
    if (x && ops_type(c->L, x).dt == DT_PTR) {
        diag_error(c->L->d, c->loc, "%s of pointers is not supported by kad", c->fname);
        return 0;
    }
    return x;
}

/* join(a, b): a and b broadcast to one shape, joined in a new last axis. */
static ValId join2(Call *c, ValId a, ValId b)
{
    Lower *L = c->L;
    Type ta = ops_type(L, a), tb = ops_type(L, b);
    if (ta.dt != tb.dt) {
        diag_error(L->d, c->loc, "%s: the operands must have one dtype, got %s and %s", c->fname,
                   ops_tystr(L, ta), ops_tystr(L, tb));
        return 0;
    }
    int rank;
    int32_t shape[KAD_MAX_RANK + 1];
    if (!ops_bcast_shape(ta.rank, ta.shape, tb.rank, tb.shape, &rank, shape)) {
        diag_error(L->d, c->loc, "%s: cannot broadcast %s and %s", c->fname, ops_tystr(L, ta), ops_tystr(L, tb));
        return 0;
    }
    if (rank == KAD_MAX_RANK) {
        diag_error(L->d, c->loc, "%s: the result would have rank %d; kad's tiles have at most %d axes", c->fname,
                   rank + 1, KAD_MAX_RANK);
        return 0;
    }
    a = ops_bcast_to(L, a, rank, shape, c->loc);
    b = ops_bcast_to(L, b, rank, shape, c->loc);
    shape[rank] = 2;
    return ops_emit2(L, OP_JOIN, type_with_shape(ta, rank + 1, shape), a, b, c->loc);
}

static SVal b_join(Call *c)
{
    ValId a = arg_data(c, 0), b = a ? arg_data(c, 1) : 0;
    ValId r = a && b ? join2(c, a, b) : 0;
    return r ? sval_value(r) : sval_error();
}

/* tl.interleave(a, b): join, then the last two axes merged (Triton's
 * standard.py); two scalars give the joined [2]. */
static SVal b_interleave(Call *c)
{
    ValId a = arg_data(c, 0), b = a ? arg_data(c, 1) : 0;
    ValId j = a && b ? join2(c, a, b) : 0;
    if (!j)
        return sval_error();
    Type t = ops_type(c->L, j);
    if (t.rank == 1)
        return sval_value(j);
    int32_t sh[KAD_MAX_RANK];
    memcpy(sh, t.shape, sizeof sh);
    sh[t.rank - 2] *= 2;
    return sval_value(ops_emit1(c->L, OP_RESHAPE, type_with_shape(t, t.rank - 1, sh), j, c->loc));
}

/* tl.split(a): the two halves of a last axis of size 2 (scalars from a [2]). */
static SVal b_split(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_data(c, 0);
    if (!x)
        return sval_error();
    Type t = ops_type(L, x);
    if (t.rank == 0 || t.shape[t.rank - 1] != 2)
        return ops_fail(L, c->loc, "%s needs a tile whose last axis has size 2, got %s", c->fname,
                        ops_tystr(L, t));
    Type rt = type_with_shape(t, t.rank - 1, t.shape);
    SVal two[2];
    for (int h = 0; h < 2; h++)
        two[h] = sval_value(ops_emit_attr(L, OP_SPLIT, rt, x, h, 0, c->loc));
    return sval_tuple(L, two, 2);
}

/* tl.flip(x, dim): Triton 3.6 needs dim (its static_assert compares it
 * with ints, which fails on None) and a power-of-two axis. */
static SVal b_flip(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_data(c, 0);
    if (!x)
        return sval_error();
    Type t = ops_type(L, x);
    if (absent(c, 1))
        return ops_fail(L, c->loc, "%s: 'dim' must be given (Triton 3.6's tl.flip fails without it)", c->fname);
    int64_t d;
    int axis;
    if (!arg_int(c, 1, &d))
        return sval_error();
    if (t.rank == 0)
        return ops_fail(L, c->loc, "%s requires a tile, got the scalar %s", c->fname, ops_tystr(L, t));
    if (!wrap_axis(c, d, t.rank, &axis))
        return sval_error();
    if (t.dt == DT_I1)
        return ops_fail(L, c->loc, "%s of int1 is not supported (Triton 3.6 bitcasts to an integer of the "
                        "element's width)", c->fname);
    return sval_value(ops_emit_attr(L, OP_FLIP, t, x, axis, 0, c->loc));
}

/* tl.gather(src, index, axis): the index an integer tile of src's rank,
 * equal to it on every other axis; the result has the index's shape. */
static SVal b_gather(Call *c)
{
    Lower *L = c->L;
    ValId src = arg_data(c, 0), idx = src ? arg_data(c, 1) : 0;
    int64_t a;
    if (!idx || !arg_int(c, 2, &a))
        return sval_error();
    Type st = ops_type(L, src), it = ops_type(L, idx);
    if (!dtype_is_int((Dtype)it.dt))
        return ops_fail(L, c->loc, "%s: index must be an integer tensor, got %s", c->fname, ops_tystr(L, it));
    if (it.rank != st.rank)
        return ops_fail(L, c->loc, "%s: source and index tensors must have the same rank, got %s and %s",
                        c->fname, ops_tystr(L, st), ops_tystr(L, it));
    int axis;
    if (st.rank == 0)
        return ops_fail(L, c->loc, "%s requires tiles, got the scalar %s", c->fname, ops_tystr(L, st));
    if (!wrap_axis(c, a, st.rank, &axis))
        return sval_error();
    for (int d = 0; d < st.rank; d++)
        if (d != axis && st.shape[d] != it.shape[d])
            return ops_fail(L, c->loc, "%s: index axis %d must match the source's (%s and %s)", c->fname, d,
                            ops_tystr(L, st), ops_tystr(L, it));
    Inst *in = ir_emit(L->f, L->b, OP_GATHER, (ValId[]){src, idx}, 2,
                       (Type[]){type_with_shape(st, it.rank, it.shape)}, 1, c->loc);
    in->ival = axis;
    return sval_value(in->res[0]);
}

/* tl.sort(x, dim=None, descending=False) and tl.topk(x, k, dim=None)
 * (aux 1): along the last axis only (Triton 3.6 asserts it; dim=-1 fails
 * its check too); topk keeps the 2**floor(log2(k)) largest, descending. */
static SVal b_sort(Call *c)
{
    Lower *L = c->L;
    bool topk = c->def->aux == 1;
    ValId x = arg_data(c, 0);
    if (!x)
        return sval_error();
    Type t = ops_type(L, x);
    if (t.rank == 0)
        return ops_fail(L, c->loc, "%s requires a tile, got the scalar %s", c->fname, ops_tystr(L, t));
    int di = topk ? 2 : 1;
    int64_t dim = t.rank - 1, k = t.shape[t.rank - 1];
    if (!absent(c, di) && !arg_int(c, di, &dim))
        return sval_error();
    if (dim != t.rank - 1)
        return ops_fail(L, c->loc, "%s: only minor dimension is currently supported (dim must be None or %d, "
                        "got %lld)", c->fname, t.rank - 1, (long long)dim);
    bool desc = topk;
    if (!topk && !arg_bool(c, 2, false, &desc))
        return sval_error();
    if (topk) {
        int64_t kk;
        if (!arg_int(c, 1, &kk))
            return sval_error();
        if (kk < 1 || kk > k)
            return ops_fail(L, c->loc, "%s: k must be between 1 and the last axis (%lld), got %lld", c->fname,
                            (long long)k, (long long)kk);
        for (k = 1; k * 2 <= kk; k *= 2) /* Triton's _log2 rounds down */
            ;
    }
    if (t.dt == DT_I1)
        return ops_fail(L, c->loc, "%s of int1 is not supported", c->fname);
    int32_t sh[KAD_MAX_RANK];
    memcpy(sh, t.shape, sizeof sh);
    sh[t.rank - 1] = (int32_t)k;
    return sval_value(ops_emit_attr(L, OP_SORT, type_with_shape(t, t.rank, sh), x, k, desc ? IF_REVERSE : 0,
                                    c->loc));
}

/* tl.histogram(input, num_bins, mask=None): i32[num_bins] counts of a
 * rank-1 integer tile's values. */
static SVal b_histogram(Call *c)
{
    Lower *L = c->L;
    ValId x = arg_data(c, 0);
    int64_t nb;
    if (!x || !arg_int(c, 1, &nb))
        return sval_error();
    Type t = ops_type(L, x);
    if (t.rank != 1)
        return ops_fail(L, c->loc, "%s only supports 1D input, got %s", c->fname, ops_tystr(L, t));
    if (!dtype_is_int((Dtype)t.dt))
        return ops_fail(L, c->loc, "%s only supports integer input, got %s", c->fname, ops_tystr(L, t));
    if (nb < 1 || nb > 1048576 || (nb & (nb - 1)))
        return ops_fail(L, c->loc, "%s: num_bins must be a power of two between 1 and 1048576, got %lld", c->fname,
                        (long long)nb);
    ValId args[2] = {x, 0};
    int n = 1;
    if (!absent(c, 2)) {
        ValId m = to_value(L, c->a[2], c->fname, c->loc);
        if (!m)
            return sval_error();
        Type mt = ops_type(L, m);
        if (mt.dt != DT_I1)
            return ops_fail(L, c->loc, "%s: Mask must have boolean scalar type, got %s", c->fname,
                            ops_tystr(L, mt));
        if (mt.rank > 1 || (mt.rank == 1 && mt.shape[0] != 1 && mt.shape[0] != t.shape[0]))
            return ops_fail(L, c->loc, "%s: cannot broadcast the mask %s to %s", c->fname, ops_tystr(L, mt),
                            ops_tystr(L, t));
        args[n++] = ops_bcast_to(L, m, 1, t.shape, c->loc);
    }
    int32_t nb32 = (int32_t)nb;
    Inst *in = ir_emit(L->f, L->b, OP_HISTOGRAM, args, n, (Type[]){type_tile(DT_I32, 1, &nb32)}, 1, c->loc);
    in->ival = nb;
    return sval_value(in->res[0]);
}

/* ------------------------------------------------------------------ */
/* Builtin tables                                                      */
/* ------------------------------------------------------------------ */

static const Builtin tl_builtins[] = {
    {"program_id", b_program_id, "axis", OP_PROGRAM_ID},
    {"num_programs", b_program_id, "axis", OP_NUM_PROGRAMS},
    {"arange", b_arange, "start,end", 0},
    {"zeros", b_full, "shape,dtype", 0},
    {"zeros_like", b_zeros_like, "input", 0},
    {"full", b_full, "shape,value,dtype", 0},
    {"load", b_load, "pointer,mask=,other=,boundary_check=,padding_option=,cache_modifier=,eviction_policy=,volatile=", 0},
    {"store", b_store, "pointer,value,mask=,boundary_check=,cache_modifier=,eviction_policy=", 0},
    {"atomic_add", b_atomic, "pointer,val,mask=,sem=,scope=", OP_ATOMIC_ADD},
    {"atomic_max", b_atomic, "pointer,val,mask=,sem=,scope=", OP_ATOMIC_MAX},
    {"atomic_min", b_atomic, "pointer,val,mask=,sem=,scope=", OP_ATOMIC_MIN},
    {"atomic_xchg", b_atomic, "pointer,val,mask=,sem=,scope=", OP_ATOMIC_XCHG},
    {"where", b_where, "condition,x,y", 0},
    {"maximum", b_minmax2, "x,y,propagate_nan=", OP_MAXIMUM},
    {"minimum", b_minmax2, "x,y,propagate_nan=", OP_MINIMUM},
    {"clamp", b_clamp, "x,min,max,propagate_nan=", 0},
    {"exp", b_math1, "x", OP_EXP},
    {"exp2", b_math1, "x", OP_EXP2},
    {"log", b_math1, "x", OP_LOG},
    {"log2", b_math1, "x", OP_LOG2},
    {"sqrt", b_math1, "x", OP_SQRT},
    {"sqrt_rn", b_math1, "x", OP_SQRT | MF_FP32_ONLY},
    {"rsqrt", b_math1, "x", OP_RSQRT},
    {"sin", b_math1, "x", OP_SIN},
    {"cos", b_math1, "x", OP_COS},
    {"erf", b_math1, "x", OP_ERF},
    {"floor", b_math1, "x", OP_FLOOR},
    {"ceil", b_math1, "x", OP_CEIL},
    {"abs", b_abs, "x", 0},
    {"sigmoid", b_sigmoid, "x", 0},
    {"fma", b_fma, "x,y,z", 0},
    {"cdiv", b_cdiv, "x,div", 0},
    {"umulhi", b_umulhi, "x,y", 0},
    {"fdiv", b_fdiv, "x,y,ieee_rounding=", 0},
    {"div_rn", b_div_rn, "x,y", 0},
    {"sum", b_sum, "input,axis=,keep_dims=,dtype=", 0},
    {"max", b_maxmin, "input,axis=,return_indices=,return_indices_tie_break_left=,keep_dims=", OP_MAX},
    {"min", b_maxmin, "input,axis=,return_indices=,return_indices_tie_break_left=,keep_dims=", OP_MIN},
    {"argmax", b_argmaxmin, "input,axis,tie_break_left=,keep_dims=", OP_ARGMAX},
    {"argmin", b_argmaxmin, "input,axis,tie_break_left=,keep_dims=", OP_ARGMIN},
    {"cumsum", b_scan, "input,axis=,reverse=,dtype=", OP_CUMSUM},
    {"cumprod", b_scan, "input,axis=,reverse=", OP_CUMPROD},
    /* the call is lowered by sema.c (assoc_scan: it inlines combine_fn); reached only as a value */
    {"associative_scan", b_assoc_scan, "input,axis,combine_fn,reverse=", 0},
    {"reduce", b_assoc_scan, "input,axis,combine_fn,keep_dims=", 0},
    {"softmax", b_softmax, "x,dim=,keep_dims=,ieee_rounding=", 0},
    {"dot", b_dot, "input,other,acc=,input_precision=,allow_tf32=,max_num_imprecise_acc=,out_dtype=", 0},
    {"trans", b_permute, "input,*dims", 1},
    {"permute", b_permute, "input,*dims", 0},
    {"reshape", b_reshape, "input,*shape,can_reorder=", 0},
    {"view", b_reshape, "input,*shape", 0},
    {"ravel", b_ravel, "x,can_reorder=", 0},
    {"broadcast_to", b_broadcast_to, "input,*shape", 0},
    {"broadcast", b_broadcast, "input,other", 0},
    {"expand_dims", b_expand_dims, "input,axis", 0},
    {"cast", b_cast, "input,dtype,fp_downcast_rounding=,bitcast=", 0},
    {"multiple_of", b_hint, "input,values", OP_MULTIPLE_OF},
    {"max_contiguous", b_hint, "input,values", OP_MAX_CONTIGUOUS},
    {"max_constancy", b_hint, "input,values", 0},
    {"static_assert", b_static_assert, "cond,msg=", 0},
    {"static_print", b_nothing, "*values", 0},
    {"device_print", b_nothing, "prefix,*args,hex=", 0}, /* dropped: kad prints nothing from kernels */
    {"device_assert", b_device_assert, "cond,msg=,mask=", 0},
    {"debug_barrier", b_nothing, "", 0},
    {"rand", b_rand, "seed,offset,n_rounds=", OP_RAND},
    {"randn", b_rand, "seed,offset,n_rounds=", OP_RANDN},
    {"randint", b_rand, "seed,offset,n_rounds=", OP_RANDINT},
    {"constexpr", b_constexpr, "value", 0},
    {"static_range", b_loop_only, NULL, 0},
    {"range", b_loop_only, NULL, 0},
    {"make_block_ptr", b_make_block_ptr, "base,shape,strides,offsets,block_shape,order", 0},
    {"advance", b_advance, "base,offsets", 0},
    {"make_tensor_descriptor", b_make_tensor_descriptor, "base,shape,strides,block_shape,padding_option=", 0},
    {"load_tensor_descriptor", b_desc_load, "desc,offsets", 0},
    {"store_tensor_descriptor", b_desc_store, "desc,offsets,value", 0},
    {"join", b_join, "a,b", 0},
    {"split", b_split, "a", 0},
    {"interleave", b_interleave, "a,b", 0},
    {"flip", b_flip, "x,dim=", 0},
    {"gather", b_gather, "src,index,axis", 0},
    {"sort", b_sort, "x,dim=,descending=", 0},
    {"topk", b_sort, "x,k,dim=", 1},
    {"histogram", b_histogram, "input,num_bins,mask=", 0},
    {"tanh", b_refuse, NULL, 0},
    {NULL, NULL, NULL, 0},
};

static const Builtin libdevice_builtins[] = {
    {"exp", b_libdevice, "arg0", OP_EXP},
    {"exp2", b_libdevice, "arg0", OP_EXP2},
    {"expm1", b_libdevice, "arg0", OP_EXPM1},
    {"log", b_libdevice, "arg0", OP_LOG},
    {"log2", b_libdevice, "arg0", OP_LOG2},
    {"log1p", b_libdevice, "arg0", OP_LOG1P},
    {"log10", b_libdevice, "arg0", OP_LOG10},
    {"sqrt", b_libdevice, "arg0", OP_SQRT},
    {"sqrt_rn", b_libdevice, "arg0", OP_SQRT_ROUND},
    {"sqrt_rz", b_libdevice, "arg0", OP_SQRT_ROUND | LD_RZ},
    {"sqrt_rd", b_libdevice, "arg0", OP_SQRT_ROUND | LD_RD},
    {"sqrt_ru", b_libdevice, "arg0", OP_SQRT_ROUND | LD_RU},
    {"rcp_rn", b_libdevice, "arg0", OP_RCP_ROUND},
    {"rcp_rz", b_libdevice, "arg0", OP_RCP_ROUND | LD_RZ},
    {"rcp_rd", b_libdevice, "arg0", OP_RCP_ROUND | LD_RD},
    {"rcp_ru", b_libdevice, "arg0", OP_RCP_ROUND | LD_RU},
    {"rsqrt_rn", b_libdevice, "arg0", OP_RSQRT_RN | MF_FP32_ONLY},
    {"rsqrt", b_libdevice, "arg0", OP_RSQRT},
    {"tanh", b_libdevice, "arg0", OP_TANH},
    {"sinh", b_libdevice, "arg0", OP_SINH},
    {"cosh", b_libdevice, "arg0", OP_COSH},
    {"tan", b_libdevice, "arg0", OP_TAN},
    {"sin", b_libdevice, "arg0", OP_SIN},
    {"cos", b_libdevice, "arg0", OP_COS},
    {"asin", b_libdevice, "arg0", OP_ASIN},
    {"acos", b_libdevice, "arg0", OP_ACOS},
    {"atan", b_libdevice, "arg0", OP_ATAN},
    {"erf", b_libdevice, "arg0", OP_ERF},
    {"floor", b_libdevice, "arg0", OP_FLOOR},
    {"ceil", b_libdevice, "arg0", OP_CEIL},
    {"trunc", b_libdevice, "arg0", OP_TRUNC},
    {"rint", b_libdevice, "arg0", OP_RINT},
    {"nearbyint", b_libdevice, "arg0", OP_RINT},
    {"fabs", b_refuse, NULL, 0},
    {"abs", b_libdevice, "arg0", OP_ABS | LD_INT_OK},
    {"isnan", b_libdevice, "arg0", OP_ISNAN | LD_I32_RESULT},
    {"isinf", b_libdevice, "arg0", OP_ISINF | LD_I32_RESULT},
    {"isfinited", b_libdevice, "arg0", LD_ISFIN | LD_I32_RESULT},
    {"finitef", b_libdevice, "arg0", LD_ISFIN | LD_I32_RESULT | MF_FP32_ONLY},
    {"fast_expf", b_libdevice, "arg0", OP_EXP | MF_FP32_ONLY},
    {"fast_logf", b_libdevice, "arg0", OP_LOG | MF_FP32_ONLY},
    {"pow", b_libdevice_int, "arg0,arg1", OP_POWI},
    {"ldexp", b_libdevice_int, "arg0,arg1", OP_LDEXP},
    {"scalbn", b_libdevice_int, "arg0,arg1", OP_LDEXP},
    {"jn", b_libdevice_int, "arg0,arg1", OP_JN},
    {"yn", b_libdevice_int, "arg0,arg1", OP_YN},
    {"atan2", b_libdevice, "arg0,arg1", OP_ATAN2},
    {"fmax", b_refuse, NULL, 0},
    {"fmin", b_refuse, NULL, 0},
    {"add_rn", b_libdevice, "arg0,arg1", OP_ADD_ROUND},
    {"add_rz", b_libdevice, "arg0,arg1", OP_ADD_ROUND | LD_RZ},
    {"add_rd", b_libdevice, "arg0,arg1", OP_ADD_ROUND | LD_RD},
    {"add_ru", b_libdevice, "arg0,arg1", OP_ADD_ROUND | LD_RU},
    {"sub_rn", b_libdevice, "arg0,arg1", OP_SUB_ROUND},
    {"sub_rz", b_libdevice, "arg0,arg1", OP_SUB_ROUND | LD_RZ},
    {"sub_rd", b_libdevice, "arg0,arg1", OP_SUB_ROUND | LD_RD},
    {"sub_ru", b_libdevice, "arg0,arg1", OP_SUB_ROUND | LD_RU},
    {"mul_rn", b_libdevice, "arg0,arg1", OP_MUL_ROUND},
    {"mul_rz", b_libdevice, "arg0,arg1", OP_MUL_ROUND | LD_RZ},
    {"mul_rd", b_libdevice, "arg0,arg1", OP_MUL_ROUND | LD_RD},
    {"mul_ru", b_libdevice, "arg0,arg1", OP_MUL_ROUND | LD_RU},
    {"div_rn", b_libdevice, "arg0,arg1", OP_DIV_ROUND},
    {"div_rz", b_libdevice, "arg0,arg1", OP_DIV_ROUND | LD_RZ},
    {"div_rd", b_libdevice, "arg0,arg1", OP_DIV_ROUND | LD_RD},
    {"div_ru", b_libdevice, "arg0,arg1", OP_DIV_ROUND | LD_RU},
    {"fma_rn", b_libdevice, "arg0,arg1,arg2", OP_FMA_ROUND},
    {"fma_rz", b_libdevice, "arg0,arg1,arg2", OP_FMA_ROUND | LD_RZ},
    {"fma_rd", b_libdevice, "arg0,arg1,arg2", OP_FMA_ROUND | LD_RD},
    {"fma_ru", b_libdevice, "arg0,arg1,arg2", OP_FMA_ROUND | LD_RU},
    {"asinh", b_libdevice, "arg0", OP_ASINH},
    {"acosh", b_libdevice, "arg0", OP_ACOSH},
    {"atanh", b_libdevice, "arg0", OP_ATANH},
    {"cbrt", b_libdevice, "arg0", OP_CBRT},
    {"rcbrt", b_libdevice, "arg0", OP_RCBRT},
    {"exp10", b_libdevice, "arg0", OP_EXP10},
    {"sinpi", b_libdevice, "arg0", OP_SINPI},
    {"cospi", b_libdevice, "arg0", OP_COSPI},
    {"erfc", b_libdevice, "arg0", OP_ERFC},
    {"erfcx", b_libdevice, "arg0", OP_ERFCX},
    {"erfinv", b_libdevice, "arg0", OP_ERFINV},
    {"erfcinv", b_libdevice, "arg0", OP_ERFCINV},
    {"normcdf", b_libdevice, "arg0", OP_NORMCDF},
    {"normcdfinv", b_libdevice, "arg0", OP_NORMCDFINV},
    {"lgamma", b_libdevice, "arg0", OP_LGAMMA},
    {"tgamma", b_libdevice, "arg0", OP_TGAMMA},
    {"j0", b_libdevice, "arg0", OP_J0},
    {"j1", b_libdevice, "arg0", OP_J1},
    {"y0", b_libdevice, "arg0", OP_Y0},
    {"y1", b_libdevice, "arg0", OP_Y1},
    {"logb", b_libdevice, "arg0", OP_LOGB},
    {"ilogb", b_libdevice, "arg0", OP_ILOGB},
    {"cyl_bessel_i0", b_libdevice, "arg0", OP_I0},
    {"cyl_bessel_i1", b_libdevice, "arg0", OP_I1},
    {"saturatef", b_libdevice, "arg0", OP_SATURATE | MF_FP32_ONLY},
    {"fast_sinf", b_libdevice, "arg0", OP_FAST_SIN | MF_FP32_ONLY},
    {"fast_cosf", b_libdevice, "arg0", OP_FAST_COS | MF_FP32_ONLY},
    {"fast_tanf", b_libdevice, "arg0", OP_FAST_TAN | MF_FP32_ONLY},
    {"fast_log2f", b_libdevice, "arg0", OP_FAST_LOG2 | MF_FP32_ONLY},
    {"fast_log10f", b_libdevice, "arg0", OP_FAST_LOG10 | MF_FP32_ONLY},
    {"fast_exp10f", b_libdevice, "arg0", OP_FAST_EXP10 | MF_FP32_ONLY},
    {"fast_powf", b_libdevice, "arg0,arg1", OP_FAST_POW | MF_FP32_ONLY},
    {"fast_dividef", b_libdevice, "arg0,arg1", OP_FAST_DIV | MF_FP32_ONLY},
    {"hypot", b_libdevice, "arg0,arg1", OP_HYPOT},
    {"rhypot", b_libdevice, "arg0,arg1", OP_RHYPOT},
    {"fdim", b_libdevice, "arg0,arg1", OP_FDIM},
    {"copysign", b_libdevice, "arg0,arg1", OP_COPYSIGN},
    {"remainder", b_libdevice, "arg0,arg1", OP_REMAINDER},
    {"fmod", b_libdevice, "arg0,arg1", OP_REM},
    {"norm3d", b_libdevice, "arg0,arg1,arg2", OP_NORM3D},
    {"rnorm3d", b_libdevice, "arg0,arg1,arg2", OP_RNORM3D},
    {"fma", b_libdevice, "arg0,arg1,arg2", OP_FMA},
    {"norm4d", b_refuse, NULL, 0},
    {"rnorm4d", b_refuse, NULL, 0},
    {"nextafter", b_refuse, NULL, 0},
    {"round", b_refuse, NULL, 0},
    {"signbit", b_refuse, NULL, 0},
    {NULL, NULL, NULL, 0},
};

static const Builtin triton_builtins[] = {
    {"cdiv", b_cdiv, "x,div", 0},
    {"next_power_of_2", b_next_pow2, "n", 0},
    {NULL, NULL, NULL, 0},
};

static const Builtin py_builtins[] = {
    {"min", b_py_minmax, "*args", OP_MINIMUM},
    {"max", b_py_minmax, "*args", OP_MAXIMUM},
    {"abs", b_py_abs, "x", 0},
    {"int", b_py_conv, "x", CK_INT},
    {"float", b_py_conv, "x", CK_FLOAT},
    {"bool", b_py_conv, "x", CK_BOOL},
    {"len", b_py_len, "x", 0},
    {"print", b_nothing, "*args", 0},
    {"range", b_loop_only, NULL, 0},
    {NULL, NULL, NULL, 0},
};

/* Tensor methods: x.NAME(...) is tl.NAME(x, ...); x.to(...) is tl.cast. */
static const char *const tensor_methods[] = {
    "reshape", "view", "broadcast_to", "expand_dims", "trans", "permute", "sum", "max", "min",
    "argmax", "argmin", "cumsum", "cumprod", "softmax", "sigmoid", "exp", "exp2", "log", "log2",
    "cos", "sin", "sqrt", "sqrt_rn", "rsqrt", "abs", "erf", "floor", "ceil", "cdiv", "ravel",
    "cast", "split", "flip", "gather", "histogram", "reduce", "associative_scan", NULL,
};

static const Builtin to_method = {"to", b_cast, "input,dtype,fp_downcast_rounding=,bitcast=", 0};

/* Namespaces kad knows: the table of each (first match wins), and how
 * messages show a name in it (the user's usual import alias). */
static const struct {
    const char *prefix; /* with the trailing dot */
    const Builtin *tab;
    const char *shown;
} namespaces[] = {
    {"triton.language.extra.cuda.libdevice.", libdevice_builtins, "libdevice."},
    {"triton.language.extra.libdevice.", libdevice_builtins, "libdevice."},
    {"triton.language.", tl_builtins, "tl."},
    {"triton.", triton_builtins, "triton."},
    {"builtins.", py_builtins, ""},
};

/* Triton's other modules, and the names each exports that are the very
 * objects triton.language exports under the same name (Triton 3.6:
 * `core.cast is tl.cast`, `standard.sum is tl.sum`, `math.exp is tl.exp`,
 * `random.rand is tl.rand`).  A name of such a module is that name of tl;
 * any other name is refused, as Triton's AttributeError refuses it or as
 * kad refuses Triton's private helpers. */
static const char *const core_names[] = {
    "PropagateNan", "TRITON_MAX_TENSOR_NUMEL", "add", "advance", "arange", "associative_scan", "assume",
    "atomic_add", "atomic_and", "atomic_cas", "atomic_max", "atomic_min", "atomic_or", "atomic_xchg",
    "atomic_xor", "bfloat16", "block_type", "broadcast", "broadcast_to", "cast", "cat", "clamp", "condition",
    "const", "constexpr", "constexpr_type", "debug_barrier", "device_assert", "device_print", "dot",
    "dot_scaled", "dtype", "expand_dims", "float16", "float32", "float64", "float8e4b15", "float8e4b8",
    "float8e4nv", "float8e5", "float8e5b16", "full", "gather", "histogram", "inline_asm_elementwise", "int1",
    "int16", "int32", "int64", "int8", "join", "load", "load_tensor_descriptor", "make_block_ptr",
    "make_tensor_descriptor", "map_elementwise", "max_constancy", "max_contiguous", "maximum", "minimum",
    "mul", "multiple_of", "num_programs", "permute", "pi32_t", "pointer_type", "program_id", "range",
    "reduce", "reshape", "slice", "split", "static_assert", "static_print", "static_range", "store",
    "store_tensor_descriptor", "sub", "tensor", "tensor_descriptor", "tensor_descriptor_type", "trans",
    "tuple", "tuple_type", "uint16", "uint32", "uint64", "uint8", "view", "void", "where", NULL,
};
static const char *const standard_names[] = {
    "argmax", "argmin", "bitonic_merge", "cdiv", "cumprod", "cumsum", "flip", "interleave", "max", "min",
    "ravel", "reduce_or", "sigmoid", "softmax", "sort", "sum", "swizzle2d", "topk", "xor_sum", "zeros",
    "zeros_like", NULL,
};
static const char *const math_names[] = {
    "abs", "ceil", "cos", "div_rn", "erf", "exp", "exp2", "fdiv", "floor", "fma", "log", "log2", "rsqrt",
    "sin", "sqrt", "sqrt_rn", "umulhi", NULL,
};
static const char *const random_names[] = {
    "pair_uniform_to_normal", "philox", "philox_impl", "rand", "rand4x", "randint", "randint4x", "randn",
    "randn4x", "uint_to_uniform_float", NULL,
};
static const struct {
    const char *mod; /* with the trailing dot */
    const char *const *names;
} reexports[] = {
    {"triton.language.core.", core_names},
    {"triton.language.standard.", standard_names},
    {"triton.language.math.", math_names},
    {"triton.language.random.", random_names},
};

/* The modules Triton's modules import under a name of their own. */
static const struct { const char *from, *to; } module_aliases[] = {
    {"triton.language.standard.core", "triton.language.core"},
    {"triton.language.standard.math", "triton.language.math"},
    {"triton.language.math.core", "triton.language.core"},
    {"triton.language.random.math", "triton.language.math"},
    {"triton.language.random.tl", "triton.language.core"},
    {"triton.language.extra.cuda.libdevice.core", "triton.language.core"},
};

static const char *const module_names[] = {
    "triton", "triton.language", "triton.language.math", "triton.language.core", "triton.language.standard",
    "triton.language.random", "triton.language.extra",
    "triton.language.extra.cuda", "triton.language.extra.libdevice",
    "triton.language.extra.cuda.libdevice", "triton.language.PropagateNan", NULL,
};

static bool name_in(const char *const *names, const char *name)
{
    for (; names && *names; names++)
        if (strcmp(*names, name) == 0)
            return true;
    return false;
}

static const Builtin *find_in(const Builtin *tab, const char *name)
{
    for (; tab->name; tab++)
        if (strcmp(tab->name, name) == 0)
            return tab;
    return NULL;
}

/* The builtin a qualified name denotes, or NULL. */
static const Builtin *find_builtin(const char *qual)
{
    for (size_t i = 0; i < sizeof namespaces / sizeof namespaces[0]; i++) {
        size_t n = strlen(namespaces[i].prefix);
        if (strncmp(qual, namespaces[i].prefix, n) == 0) {
            const char *rest = qual + n;
            if (strchr(rest, '.'))
                return NULL;
            return find_in(namespaces[i].tab, rest);
        }
    }
    return NULL;
}

static SVal sval_builtin(Lower *L, const char *qual)
{
    return (SVal){.kind = SV_BUILTIN, .qual = arena_strdup(L->a, qual)};
}

static Dtype dtype_by_triton_name(const char *s)
{
    for (int t = DT_I1; t < DT_PTR; t++)
        if (strcmp(dtype_triton_name((Dtype)t), s) == 0)
            return (Dtype)t;
    return DT_VOID;
}

/* Methods of dtype constants: is_floating(), is_int(), ... */
static SVal dtype_method(Lower *L, SVal self, const char *name, int nargs, int nkw, Loc loc)
{
    Dtype d = self.c.dt;
    if (nargs || nkw)
        return ops_fail(L, loc, "dtype.%s() takes no arguments", name);
    if (strcmp(name, "is_block") == 0)
        return sval_bool(self.c.brank && !self.c.of_block);
    if (self.c.of_block && strcmp(name, "is_ptr") == 0)
        return sval_bool(true);
    if (self.c.brank)
        return ops_fail(L, loc, "dtype.%s() of a block type is not supported by kad yet", name);
    static const struct { const char *name; int what; } m[] = {
        {"is_floating", 0}, {"is_int", 1}, {"is_int_signed", 2}, {"is_int_unsigned", 3}, {"is_ptr", 4},
        {"is_bool", 5}, {"is_standard_floating", 6}, {"is_fp8", 7}, {"is_fp8e5", 10 + DT_F8E5},
        {"is_fp8e4nv", 10 + DT_F8E4NV}, {"is_fp8e4b15", 10 + DT_F8E4B15}, {"is_fp8e4b8", 8}, {"is_fp8e5b16", 8},
        {"is_fp16", 10 + DT_F16}, {"is_bf16", 10 + DT_BF16},
        {"is_fp32", 10 + DT_F32}, {"is_fp64", 10 + DT_F64}, {"is_int1", 10 + DT_I1}, {"is_int8", 10 + DT_I8},
        {"is_int16", 10 + DT_I16}, {"is_int32", 10 + DT_I32}, {"is_int64", 10 + DT_I64},
        {"is_uint8", 10 + DT_U8}, {"is_uint16", 10 + DT_U16}, {"is_uint32", 10 + DT_U32},
        {"is_uint64", 10 + DT_U64},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        if (strcmp(m[i].name, name) != 0)
            continue;
        switch (m[i].what) {
        case 0: return sval_bool(dtype_is_float(d));
        case 1: return sval_bool(dtype_is_int(d));
        case 2: return sval_bool(dtype_is_int(d) && !ops_unsigned(d));
        case 3: return sval_bool(dtype_is_int(d) && ops_unsigned(d));
        case 4: return sval_bool(d == DT_PTR);
        case 5: return sval_bool(d == DT_I1);
        case 6: return sval_bool(dtype_is_float(d) && !dtype_is_fp8(d));
        case 7: return sval_bool(dtype_is_fp8(d));
        case 8: return sval_bool(false); /* the AMD-only fp8 types, which kad refuses */
        default: return sval_bool((int)d == m[i].what - 10);
        }
    }
    return ops_fail(L, loc, "dtype.%s() is not supported by kad yet", name);
}

/* ------------------------------------------------------------------ */
/* The interface (kad_int.h)                                           */
/* ------------------------------------------------------------------ */

const char *builtin_user_name(Arena *a, const char *qual)
{
    if (strcmp(qual, "triton.language") == 0)
        return "tl";
    for (size_t i = 0; i < sizeof namespaces / sizeof namespaces[0]; i++) {
        size_t n = strlen(namespaces[i].prefix);
        if (strncmp(qual, namespaces[i].prefix, n) == 0)
            return arena_printf(a, "%s%s", namespaces[i].shown, qual + n);
    }
    return qual;
}

bool builtin_is_method(const char *name)
{
    return strcmp(name, "to") == 0 || name_in(tensor_methods, name);
}

/* The one spelling of qualified name qual (see reexports and
 * module_aliases): "triton.language.core.cast", "triton.language.standard.
 * sum" become "triton.language.cast", "triton.language.sum".  NULL for a
 * name Triton's module does not export as tl's: *mod is the module (NULL
 * for core's `math`, Python's module), *name the name. */
const char *builtin_canonical(Arena *a, const char *qual, const char **mod, const char **name)
{
    *mod = *name = NULL;
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < sizeof module_aliases / sizeof module_aliases[0]; i++) {
            size_t n = strlen(module_aliases[i].from);
            if (strncmp(qual, module_aliases[i].from, n) == 0 && (qual[n] == '.' || !qual[n])) {
                qual = arena_printf(a, "%s%s", module_aliases[i].to, qual + n);
                changed = 1;
            }
        }
        if (strcmp(qual, "triton.language.core.math") == 0 || strncmp(qual, "triton.language.core.math.", 26) == 0)
            return NULL;
        for (size_t i = 0; i < sizeof reexports / sizeof reexports[0]; i++) {
            size_t n = strlen(reexports[i].mod);
            if (strncmp(qual, reexports[i].mod, n) != 0)
                continue;
            const char *rest = qual + n, *dot = strchr(rest, '.');
            const char *nm = dot ? arena_strndup(a, rest, (size_t)(dot - rest)) : rest;
            if (!name_in(reexports[i].names, nm)) {
                *mod = arena_strndup(a, qual, n - 1);
                *name = nm;
                return NULL;
            }
            qual = arena_printf(a, "triton.language.%s", rest);
            changed = 1;
            break;
        }
    }
    return qual;
}

SVal lower_global(Lower *L, const char *qual, Loc loc)
{
    const char *mod, *bad;
    const char *canon = builtin_canonical(L->a, qual, &mod, &bad);
    if (!canon && !mod)
        return ops_fail(L, loc, "'math' of triton.language.core is Python's math module, which kernels cannot "
                        "call (use tl.math)");
    if (!canon) {
        const char *hint = !strcmp(qual, "triton.language.math.max")   ? ": use tl.maximum"
                           : !strcmp(qual, "triton.language.math.min") ? ": use tl.minimum"
                                                                       : "";
        return ops_fail(L, loc,
                        "'%s' exports no '%s' that kad supports (kad accepts the names Triton 3.6's module "
                        "shares with triton.language)%s",
                        mod, bad, hint);
    }
    qual = canon;
    for (int i = 0; module_names[i]; i++)
        if (strcmp(qual, module_names[i]) == 0)
            return (SVal){.kind = SV_MODULE, .qual = arena_strdup(L->a, qual)};
    if (strcmp(qual, "triton.language.PropagateNan.NONE") == 0 ||
        strcmp(qual, "triton.language.PropagateNan.ALL") == 0 || strcmp(qual, "triton.jit") == 0)
        return sval_builtin(L, qual);
    const char *tl = "triton.language.";
    if (strncmp(qual, tl, strlen(tl)) == 0 && !strchr(qual + strlen(tl), '.')) {
        const char *name = qual + strlen(tl);
        Dtype dt = dtype_by_triton_name(name);
        if (dt != DT_VOID)
            return sval_dtype(dt);
        if (strcmp(name, "float8e4b8") == 0 || strcmp(name, "float8e5b16") == 0)
            return ops_fail(L, loc,
                            "'tl.%s' (an AMD-only fp8 format; NVIDIA GPUs support float8e5, "
                            "float8e4nv and float8e4b15) is not supported by kad",
                            name);
        if (strcmp(name, "void") == 0)
            return ops_fail(L, loc, "'tl.%s' is not supported by kad yet", name);
        if (strcmp(name, "pointer_type") == 0)
            return ops_fail(L, loc, "'tl.pointer_type' is not supported by kad yet");
    }
    if (find_builtin(qual))
        return sval_builtin(L, qual);
    return ops_fail(L, loc, "'%s' is not supported by kad yet", builtin_user_name(L->a, qual));
}

SVal lower_call(Lower *L, SVal fn, const SVal *args, int nargs, const char *const *kwnames,
                const SVal *kwvals, int nkw, Loc loc)
{
    if (fn.kind == SV_ERROR)
        return fn;
    const Builtin *def = NULL;
    const SVal *self = NULL;
    const char *fname;
    if (fn.kind == SV_BUILTIN) {
        def = find_builtin(fn.qual);
        fname = builtin_user_name(L->a, fn.qual);
        if (!def)
            return ops_fail(L, loc, "'%s' is not callable here", fname);
    } else if (fn.kind == SV_METHOD) {
        SVal s = fn.elts[0];
        if (s.kind == SV_CONST && s.c.kind == CK_DTYPE)
            return dtype_method(L, s, fn.qual, nargs, nkw, loc);
        self = &fn.elts[0];
        fname = arena_printf(L->a, "x.%s", fn.qual);
        def = strcmp(fn.qual, "to") == 0 ? &to_method : find_in(tl_builtins, fn.qual);
        if (sval_is_tensor_desc(s)) {
            fname = arena_printf(L->a, "desc.%s", fn.qual);
            def = strcmp(fn.qual, "load") == 0 ? &desc_load_method : &desc_store_method;
        }
        ASSERT(def);
        if (!def)
            return ops_fail(L, loc, "'%s' is not supported by kad yet", fname);
    } else {
        return ops_fail(L, loc, "%s is not callable", ops_describe(L, fn));
    }
    Call c;
    if (!def->params) {
        c = (Call){.L = L, .def = def, .fname = fname, .loc = loc};
        return def->fn(&c);
    }
    if (!bind(L, &c, def, fname, self, args, nargs, kwnames, kwvals, nkw, loc))
        return sval_error();
    for (int i = 0; i < c.np; i++)
        if (c.has[i] && c.a[i].kind == SV_ERROR)
            return sval_error();
    return def->fn(&c);
}


/* ------------------------------------------------------------------ */
/* The surface                                                         */
/* ------------------------------------------------------------------ */

void builtin_surface(Buf *b)
{
    for (const Builtin *t = tl_builtins; t->name; t++) {
        char ad = '-';
        if (t->fn == b_math1 || t->fn == b_minmax2 || t->fn == b_maxmin || t->fn == b_argmaxmin ||
            t->fn == b_scan || t->fn == b_rand || t->fn == b_program_id)
            ad = op_info[t->aux & 0xffff].diff;
        buf_printf(b, "%s %s %c\n", t->name, t->fn == b_refuse ? "refused" : "supported", ad);
    }
    for (int t = DT_I1; t < DT_PTR; t++)
        buf_printf(b, "%s supported -\n", dtype_triton_name((Dtype)t));
    /* lower_global's own names */
    static const char *const others[] = {"PropagateNan supported", "math supported", "extra supported", "core supported",
                                         "standard supported", "random supported",
                                         "float8e4b8 refused", "float8e5b16 refused", "void refused",
                                         "pointer_type refused", NULL};
    for (int i = 0; others[i]; i++)
        buf_printf(b, "%s -\n", others[i]);
}
