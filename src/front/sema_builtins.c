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
 * The files: this one holds the binding, the argument helpers, the tables
 * and the dispatch (lower_global, lower_call); the handlers live in
 * sema_memory.c, sema_math.c, sema_shapes.c and sema_convert.c, which
 * share Call, Builtin and the helpers through front.h.
 *
 * Requires: sema_ops.c (front.h, "sema_ops.c and sema_builtins.c").
 * Guarantees: every handler reports its own errors once and returns
 * SV_ERROR after one; no output and no global state; memory from L->a.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "front/front.h"

/* ------------------------------------------------------------------ */
/* Builtin calls: argument binding                                     */
/* ------------------------------------------------------------------ */

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

bool sema_absent(Call *c, int i) { return !c->has[i] || sval_is_none(c->a[i]); }

/* Reports that argument i is not what: "tl.sum: 'axis' must be a constexpr
 * int, got fp32[16]". */
bool arg_wrong(Call *c, int i, const char *what)
{
    diag_error(c->L->d, c->loc, "%s: '%s' must be %s, got %s", c->fname, c->pname[i], what,
               ops_describe(c->L, c->a[i]));
    return false;
}

/* A constexpr int argument. */
bool arg_int(Call *c, int i, int64_t *out)
{
    SVal x = c->a[i];
    if (!sval_is_int(x))
        return arg_wrong(c, i, "a constexpr int");
    *out = x.c.i;
    return true;
}

bool arg_bool(Call *c, int i, bool dflt, bool *out)
{
    *out = dflt;
    if (sema_absent(c, i))
        return true;
    SVal x = c->a[i];
    if (x.kind != SV_CONST)
        return arg_wrong(c, i, "a constexpr bool");
    *out = const_truthy(x.c);
    return true;
}

bool arg_str(Call *c, int i, const char *dflt, const char **out)
{
    *out = dflt;
    if (sema_absent(c, i))
        return true;
    SVal x = c->a[i];
    if (x.kind != SV_CONST || x.c.kind != CK_STR)
        return arg_wrong(c, i, "a constexpr string");
    *out = x.c.s;
    return true;
}

/* A dtype argument; pointer dtypes (pointee in *elem) only when elem is
 * given. */
bool arg_dtype(Call *c, int i, Dtype *out, Dtype *elem)
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
bool sema_int_list(Call *c, SVal x, bool allow_int, int64_t *out, int max, int *n, const char *what)
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
SVal sema_unwrap_iterable(SVal t)
{
    if (t.kind == SV_TUPLE && t.n == 1 && t.elts[0].kind == SV_TUPLE)
        return t.elts[0];
    return t;
}

/* Checks a tile shape the way Triton's block_type does. */
bool sema_check_shape(Call *c, int rank, const int64_t *dims)
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
bool arg_shape(Call *c, SVal x, int *rank, int32_t *shape)
{
    int64_t d[KAD_MAX_RANK + 1];
    int n;
    if (!sema_int_list(c, x, false, d, KAD_MAX_RANK, &n, "the shape"))
        return false;
    if (!sema_check_shape(c, n, d))
        return false;
    for (int i = 0; i < n; i++)
        shape[i] = (int32_t)d[i];
    *rank = n;
    return true;
}

/* A number or value as a value of its own type (Triton's to_tensor). */
ValId sema_to_value(Lower *L, SVal x, const char *ctx, Loc loc)
{
    Opnd o;
    if (!ops_opnd(L, x, false, &o, ctx, loc))
        return 0;
    if (!o.is_const)
        return o.v;
    return ops_materialize(L, &o, (Dtype)o.ty.dt, 0, NULL, loc);
}

/* A runtime tile (constants are not accepted: they have no shape). */
ValId arg_tile(Call *c, int i)
{
    if (c->a[i].kind == SV_VALUE)
        return c->a[i].v;
    arg_wrong(c, i, "a tensor");
    return 0;
}

/* Normalizes an axis (negative counts from the end). */
bool sema_wrap_axis(Call *c, int64_t axis, int rank, int *out)
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
/* The interface (front.h)                                              */
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
            def = strcmp(fn.qual, "load") == 0 ? &sema_desc_load_method : &sema_desc_store_method;
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
