/* emit_cuda.c -- an IR Func as a CUDA C (or HIP) `__global__` kernel.
 *
 * The model (docs/EMIT.md, "CUDA C"): a block's threads are the lanes of
 * the kernel's 1-D tiles.  Every 1-D tile of the kernel has one size L, the
 * block size; thread i holds lane i of every tile in one C variable; a
 * scalar (rank 0) is a C variable that every thread computes alike, so the
 * IR's control flow, whose conditions are scalars, is uniform across the
 * block and every thread reaches every __syncthreads().  program_id(a) is
 * blockIdx, num_programs(a) gridDim, `arange s` threadIdx.x + s.
 *
 * Reductions, scans, gathers and flips along the lanes go through shared
 * memory in a fixed order (the helpers of the prelude), so their results
 * are the same bits on every run.  Memory ops with a mask become a
 * condition around the access; a scalar store or atomic (one per program in
 * the IR) is done by thread 0.
 *
 * Requires a verified Func.  Refuses, with a located error naming the value,
 * every op or shape it has no exact spelling for (tiles of rank 2 and more,
 * dot, sort, random numbers, fp8, ...).  It reads the IR alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit/emit_cuda.h"

/* The state of one kernel's emission. */
typedef struct Cu {
    Arena *a;
    Diags *d;
    const Func *f;
    const EmitCudaOpts *o;
    Buf *out;
    const char **irname; /* ir_names: for messages */
    const char **var;    /* by ValId: the C variable (or inlined expression) holding the value */
    int *uses;           /* by ValId: operand uses, regions included */
    const Block **ublock; /* by ValId: the block of its (last) user */
    bool *noinline;      /* by ValId: read by a yield, a loop header or an alias: keeps its variable */
    const Inst **def;    /* by ValId: the defining instruction (ir_index_defs) */
    bool *inl;           /* by ValId: var is the inlined expression, not a variable */
    uint8_t *prec;       /* by ValId: an inlined expression's top operator, C precedence: 2 (a cast),
                            3 (* / %),
                            4 (+ -), 11 (&&), 12 (||); 0 unknown (its parentheses stay) */
    Vec(const char *) taken; /* C names in use */
    int L;               /* the lane count (block size) */
    unsigned helpers;    /* CU_H_* used */
    unsigned smem;       /* bit per Dtype: a shared buffer kad_smem_<dt>[L] is needed */
    int smem_more[DT_COUNT]; /* further buffers kad_smem_<dt>_<k>[L], k = 1.. (several operands) */
    bool smem_idx;       /* kad_smem_idx[L] (argmax/argmin) */
    int ntmp;            /* tmpN counter */
    int ncomb;           /* combine functors printed */
    Buf pre;             /* functors of reduce/scan regions, printed before the kernel */
    int depth;           /* indentation, 4 spaces a level */
    bool jidx;           /* val() reads per-thread arrays at kad_j (printing an array op's element) */
    bool *splat;         /* by ValId: an array whose every element is var (a broadcast, a constant) */
    bool ok;
} Cu;

static const char *const keywords[] = {
    "auto", "bool", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
    "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void", "volatile",
    "while", "class", "delete", "new", "this", "template", "typename", "namespace", "operator", "private",
    "public", "protected", "virtual", "friend", "true", "false", "nullptr", "try", "catch", "throw", "using",
    "asm", "explicit", "export", "mutable", "and", "or", "not", "xor", "bitand", "bitor", "compl", "and_eq",
    "or_eq", "xor_eq", "not_eq", "wchar_t", "constexpr", "decltype", "noexcept", "static_assert",
    "thread_local", "alignas", "alignof", "char16_t", "char32_t", "threadIdx", "blockIdx", "blockDim",
    "gridDim", "warpSize", "dim3", "stream", "grid", "min", "max", "abs", "exp", "log", "sqrt", "pow",
    "floor", "ceil", "isnan", "isinf", "signbit", "assert", "printf", "main", "NAN", "INFINITY",
    "grid_x", "grid_y", "grid_z", "err", "nan", "inf", "fmaf", "fmaxf", "fminf", "expf", "logf", NULL,
};

const char *cuda_ident(Arena *a, const char *name)
{
    const char *n = name && *name ? name : "v";
    size_t len = strlen(n);
    char *s = arena_alloc(a, len + 3), *q = s;
    if (*n >= '0' && *n <= '9')
        *q++ = 'v';
    for (; *n; n++) {
        unsigned char c = (unsigned char)*n;
        bool ok = c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        *q++ = ok ? (char)c : '_';
    }
    bool reserved = !strncmp(s, "kad_", 4) || !strncmp(s, "__", 2) || !strncmp(s, "cuda", 4) ||
                    !strncmp(s, "hip", 3);
    for (int i = 0; keywords[i] && !reserved; i++)
        reserved = !strcmp(s, keywords[i]);
    if (reserved)
        *q++ = '_';
    return s;
}

const char *cuda_dtype(Dtype dt, bool hip)
{
    switch (dt) {
    case DT_I1: return "bool";
    case DT_I8: return "int8_t";
    case DT_U8: return "uint8_t";
    case DT_I16: return "int16_t";
    case DT_U16: return "uint16_t";
    case DT_I32: return "int32_t";
    case DT_U32: return "uint32_t";
    case DT_I64: return "int64_t";
    case DT_U64: return "uint64_t";
    case DT_F16: return "__half";
    case DT_BF16: return hip ? "__hip_bfloat16" : "__nv_bfloat16";
    case DT_F32: return "float";
    case DT_F64: return "double";
    default: return NULL;
    }
}

/* ---- names, types, diagnostics ---- */

static void refuse(Cu *c, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = arena_vprintf(c->a, fmt, ap);
    va_end(ap);
    diag_error(c->d, loc, "CUDA C emitter: %s", m);
    c->ok = false;
}

static const char *shape_str(Cu *c, Type t)
{
    Buf b = {.a = c->a};
    type_print(&b, t);
    return buf_str(&b);
}

/* A fresh C name for base (taken: suffixed _1, _2, ...). */
static const char *fresh(Cu *c, const char *base)
{
    const char *s = base;
    for (int k = 1;; k++) {
        bool used = false;
        for (int i = 0; i < c->taken.n && !used; i++)
            used = !strcmp(c->taken.v[i], s);
        if (!used)
            break;
        s = arena_printf(c->a, "%s_%d", base, k);
    }
    vec_push(c->a, c->taken, s);
    return s;
}

/* The C variable for value v: its source name, or tmpN. */
static const char *name_for(Cu *c, ValId v)
{
    const char *hint = c->f->vals.v[v].name;
    if (hint && *hint)
        return fresh(c, cuda_ident(c->a, c->irname[v] ? c->irname[v] : hint));
    return fresh(c, arena_printf(c->a, "tmp%d", c->ntmp++));
}

static Type vty(Cu *c, ValId v) { return c->f->vals.v[v].ty; }
static Dtype vdt(Cu *c, ValId v) { return (Dtype)vty(c, v).dt; }
static bool is16(Dtype dt) { return dt == DT_F16 || dt == DT_BF16; }

/* The C type of value v (pointers: the pointee's type and '*'). */
static const char *ctype(Cu *c, ValId v, Loc loc)
{
    Type t = vty(c, v);
    Dtype dt = t.dt == DT_PTR ? (Dtype)t.elem : (Dtype)t.dt;
    const char *s = cuda_dtype(dt, c->o->hip);
    if (!s) {
        refuse(c, loc, "%%%s has type %s, which has no CUDA C spelling here", c->irname[v], shape_str(c, t));
        return "void";
    }
    return t.dt == DT_PTR ? arena_printf(c->a, "%s *", s) : s;
}

static int width(Cu *c, ValId v);

/* The C expression of v: its variable, or its inlined expression; an array's element kad_j while
 * an array op is printed. */
static const char *val(Cu *c, ValId v)
{
    if (!c->var[v])
        return "?";
    return c->jidx && width(c, v) && !c->splat[v] ? arena_printf(c->a, "%s[kad_j]", c->var[v]) : c->var[v];
}

/* Element idx of array v (a splat's every element is its var). */
static const char *elem_at(Cu *c, ValId v, const char *idx)
{
    return c->splat[v] ? c->var[v] : arena_printf(c->a, "%s[%s]", c->var[v], idx);
}

/* val(v) without the parentheses around an inlined expression, where it stands alone (a call's
 * argument, the right-hand side of an assignment). */
static const char *bare(Cu *c, ValId v)
{
    const char *e = val(c, v);
    size_t n = strlen(e);
    if (n < 2 || e[0] != '(' || e[n - 1] != ')')
        return e;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        depth += e[i] == '(' ? 1 : e[i] == ')' ? -1 : 0;
        if (!depth && i + 1 < n)
            return e; /* the first parenthesis closes before the end: (a) * (b) */
    }
    return arena_strndup(c->a, e + 1, n - 2);
}

/* v as a float (fp32) expression when it is fp16/bf16, else as it is. */
static const char *up(Cu *c, ValId v)
{
    Dtype dt = vdt(c, v);
    if (dt == DT_F16)
        return arena_printf(c->a, "__half2float(%s)", val(c, v));
    if (dt == DT_BF16)
        return arena_printf(c->a, "__bfloat162float(%s)", val(c, v));
    return val(c, v);
}

/* A float expression e rounded to 16-bit dtype dt (round to nearest even); e itself otherwise. */
static const char *down(Cu *c, Dtype dt, const char *e)
{
    if (dt == DT_F16)
        return arena_printf(c->a, "__float2half_rn(%s)", e);
    if (dt == DT_BF16) /* HIP's __float2bfloat16 rounds to nearest even; it has no _rn name */
        return arena_printf(c->a, c->o->hip ? "__float2bfloat16(%s)" : "__float2bfloat16_rn(%s)", e);
    return e;
}

/* A float literal of dtype dt holding x rounded to dt. */
static const char *flit(Cu *c, Dtype dt, double x)
{
    bool dbl = dt == DT_F64;
    double r = dbl ? x : dtype_round(is16(dt) ? dt : DT_F32, x);
    const char *s;
    if (isnan(r))
        s = dbl ? "(double)NAN" : "NAN";
    else if (isinf(r))
        s = r > 0 ? (dbl ? "(double)INFINITY" : "INFINITY") : (dbl ? "-(double)INFINITY" : "-INFINITY");
    else {
        char tmp[64];
        snprintf(tmp, sizeof tmp, dbl ? "%.17g" : "%.9g", r);
        if (!dbl) { /* the fewest digits that read back to the same float */
            for (int p = 1; p <= 9; p++) {
                char t2[64];
                snprintf(t2, sizeof t2, "%.*g", p, r);
                if ((float)strtod(t2, NULL) == (float)r) {
                    memcpy(tmp, t2, sizeof t2);
                    break;
                }
            }
        } else {
            for (int p = 1; p <= 17; p++) {
                char t2[64];
                snprintf(t2, sizeof t2, "%.*g", p, r);
                if (strtod(t2, NULL) == r) {
                    memcpy(tmp, t2, sizeof t2);
                    break;
                }
            }
        }
        bool has = strchr(tmp, '.') || strchr(tmp, 'e') || strchr(tmp, 'n');
        s = arena_printf(c->a, "%s%s%s", tmp, has ? "" : ".0", dbl ? "" : "f");
        if (r == 0 && signbit(r) && tmp[0] != '-')
            s = arena_printf(c->a, "-%s", s);
    }
    return is16(dt) ? down(c, dt, s) : s;
}

static const char *ilit(Cu *c, Dtype dt, int64_t v)
{
    switch (dt) {
    case DT_I1: return v ? "true" : "false";
    case DT_I32: return v == INT32_MIN ? "(-2147483647 - 1)" : arena_printf(c->a, "%lld", (long long)v);
    case DT_U32: return arena_printf(c->a, "%lluu", (unsigned long long)(uint32_t)v);
    case DT_I64: return v == INT64_MIN ? "(-9223372036854775807LL - 1)" : arena_printf(c->a, "%lldLL", (long long)v);
    case DT_U64: return arena_printf(c->a, "%lluull", (unsigned long long)v);
    default: return arena_printf(c->a, "(%s)%lld", cuda_dtype(dt, c->o->hip), (long long)v);
    }
}

/* The zero of dtype dt (a masked load's lanes without `other`). */
static const char *zero(Cu *c, Dtype dt)
{
    return dtype_is_float(dt) ? flit(c, dt, 0.0) : ilit(c, dt, 0);
}

/* ---- shapes: the lane count ---- */

/* The longest per-thread array of a tile [L, k]. */
enum { CU_MAX_ROW = 64 };

/* A shape the model prints: a scalar, [L], [L, k] with k <= CU_MAX_ROW (per-thread arrays), and
 * uniform rows [k] and [1, k] of k <= CU_MAX_ROW (the same array in every thread). */
static bool shape_ok(Cu *c, Type t)
{
    if (t.rank == 0 || (t.rank == 1 && (t.shape[0] == c->L || t.shape[0] <= CU_MAX_ROW)))
        return true;
    return t.rank == 2 && (t.shape[0] == c->L || t.shape[0] == 1) && t.shape[1] <= CU_MAX_ROW;
}

/* Checks every value of b (and its regions) for a shape the model prints: rank 0, or [L]; the
 * first one that is not is refused (one message: the others follow from it). */
static void check_shapes(Cu *c, const Block *b)
{
    for (int i = 0; i < b->nparams && c->ok; i++) {
        Type t = vty(c, b->params[i]);
        if (!shape_ok(c, t))
            refuse(c, c->f->vals.v[b->params[i]].loc, "%%%s has shape %s: the kernel's tiles are [%d] or [%d, k]",
                   c->irname[b->params[i]], shape_str(c, t), c->L, c->L);
    }
    for (int i = 0; i < b->insts.n && c->ok; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nres && c->ok; r++) {
            Type t = vty(c, in->res[r]);
            if (t.rank > 2 || (t.rank == 2 && !shape_ok(c, t)))
                refuse(c, in->loc, "%%%s has shape %s: only scalars, 1-D tiles (the block's %d threads, or a row "
                       "of at most %d that every thread holds), tiles [%d, k] and [1, k] of k <= %d (per-thread "
                       "arrays) are printed as CUDA C yet", c->irname[in->res[r]], shape_str(c, t), c->L, CU_MAX_ROW,
                       c->L, CU_MAX_ROW);
            else if (!shape_ok(c, t))
                refuse(c, in->loc, "%%%s has shape %s, but the kernel's tiles are [%d]: a CUDA C kernel's 1-D tiles "
                       "are its %d threads, or rows of at most %d elements that every thread holds",
                       c->irname[in->res[r]], shape_str(c, t), c->L, c->L, CU_MAX_ROW);
        }
        if (in->op == OP_SCAN || in->op == OP_REDUCE)
            continue; /* a combine region's values are scalars */
        for (int r = 0; r < in->nregions && c->ok; r++)
            check_shapes(c, in->regions[r]);
    }
}

/* The lane count of b's values (and its regions'): the first axis of the largest tile [M, N] with
 * M > 1 (its rows become per-thread arrays), else the largest 1-D tile (the others become rows
 * that every thread holds); *two: the largest first axis of rank-2 tiles, *one: of 1-D tiles. */
static void find_lanes(const Func *f, const Block *b, int *two, int *one)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nres; r++) {
            Type t = f->vals.v[in->res[r]].ty;
            int *m = t.rank == 2 ? two : t.rank == 1 ? one : NULL;
            if (m && t.shape[0] > *m && (t.rank == 1 || t.shape[0] > 1))
                *m = t.shape[0];
        }
        if (in->op == OP_SCAN || in->op == OP_REDUCE)
            continue;
        for (int r = 0; r < in->nregions; r++)
            find_lanes(f, in->regions[r], two, one);
    }
}

static void count_uses(Cu *c, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++) {
            const Inst *d = c->def[in->args[k]];
            if (in->op == OP_FOR && k == 2 && d && d->op == OP_CONST && d->ival == 1)
                continue; /* a step of 1 prints as i++ */
            c->uses[in->args[k]]++;
            c->ublock[in->args[k]] = b;
            if (in->op == OP_YIELD || in->op == OP_CONDITION || in->op == OP_FOR || in->op == OP_WHILE ||
                in->op == OP_BROADCAST || in->op == OP_MULTIPLE_OF || in->op == OP_MAX_CONTIGUOUS ||
                in->op == OP_STOP_GRADIENT || in->op == OP_CUSTOM_VJP || in->op == OP_CUSTOM_JVP ||
                in->op == OP_RESHAPE || in->op == OP_EXPAND_DIMS || in->op == OP_PERMUTE)
                c->noinline[in->args[k]] = true;
        }
        for (int r = 0; r < in->nregions; r++)
            count_uses(c, in->regions[r]);
    }
}

/* ---- printing ---- */

static void line(Cu *c, const char *fmt, ...)
{
    for (int i = 0; i < c->depth + 1; i++)
        buf_puts(c->out, "    ");
    va_list ap;
    va_start(ap, fmt);
    buf_puts(c->out, arena_vprintf(c->a, fmt, ap));
    va_end(ap);
    buf_putc(c->out, '\n');
}

/* Whether e is one call f(...): its first '(' closes at its end. */
static bool is_call(const char *e)
{
    const char *p = e;
    while (*p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
        p++;
    if (p == e || *p != '(')
        return false;
    int depth = 0;
    for (; *p; p++) {
        depth += *p == '(' ? 1 : *p == ')' ? -1 : 0;
        if (!depth)
            return p[1] == 0;
    }
    return false;
}

/* Binds result v to the expression e: inlined into its one user when v has no source name, is
 * used once in block b (not by a yield) and e is short; else a `const T v = e;` line. */
static void bind(Cu *c, const Block *b, ValId v, const char *e, bool pure, Loc loc)
{
    const char *ty = ctype(c, v, loc);
    if (pure && !c->f->vals.v[v].name && c->uses[v] == 1 && c->ublock[v] == b && !c->noinline[v] &&
        strlen(e) <= 60) {
        bool simple = true;
        for (const char *p = e; *p && simple; p++)
            simple = *p == '_' || *p == '.' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
                     (*p >= 'A' && *p <= 'Z');
        c->var[v] = simple || is_call(e) ? e : arena_printf(c->a, "(%s)", e);
        c->inl[v] = true;
        return;
    }
    if (c->uses[v] == 0 && pure)
        return; /* dead: nothing reads it */
    c->var[v] = name_for(c, v);
    if (ty[strlen(ty) - 1] == '*') /* the pointer is constant, not what it points to */
        line(c, "%sconst %s = %s;", ty, c->var[v], e);
    else
        line(c, "const %s %s = %s;", ty, c->var[v], e);
}

/* Declares a mutable variable for a loop's carried value or an if's result. */
static const char *declare(Cu *c, ValId v, ValId initv, Loc loc)
{
    const char *ty = ctype(c, v, loc), *n = name_for(c, v), *init = initv ? val(c, initv) : NULL;
    const char *sp = ty[strlen(ty) - 1] == '*' ? "" : " ";
    if (width(c, v)) { /* a per-thread array: copied element by element */
        line(c, "%s%s%s[%d];", ty, sp, n, width(c, v));
        if (initv) {
            line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", width(c, v));
            line(c, "    %s[kad_j] = %s;", n, elem_at(c, initv, "kad_j"));
        }
        return n;
    }
    if (init)
        line(c, "%s%s%s = %s;", ty, sp, n, init);
    else
        line(c, "%s%s%s;", ty, sp, n);
    return n;
}

static bool is_lane(Cu *c, ValId v) { return vty(c, v).rank == 1; }

/* ---- expressions ---- */

static const char *math_name(int op)
{
    switch (op) {
    case OP_EXP: return "exp";
    case OP_EXP2: return "exp2";
    case OP_EXPM1: return "expm1";
    case OP_LOG: return "log";
    case OP_LOG2: return "log2";
    case OP_LOG1P: return "log1p";
    case OP_SQRT: return "sqrt";
    case OP_RSQRT: return "rsqrt";
    case OP_SIN: return "sin";
    case OP_COS: return "cos";
    case OP_TAN: return "tan";
    case OP_ASIN: return "asin";
    case OP_ACOS: return "acos";
    case OP_ATAN: return "atan";
    case OP_SINH: return "sinh";
    case OP_COSH: return "cosh";
    case OP_TANH: return "tanh";
    case OP_ERF: return "erf";
    case OP_FLOOR: return "floor";
    case OP_CEIL: return "ceil";
    case OP_TRUNC: return "trunc";
    case OP_RINT: return "rint";
    case OP_ABS: return "fabs";
    case OP_POW: return "pow";
    case OP_ATAN2: return "atan2";
    case OP_REM: return "fmod";
    case OP_MAXIMUM: return "fmax";
    case OP_MINIMUM: return "fmin";
    case OP_FMA: return "fma";
    case OP_ASINH: return "asinh";
    case OP_ACOSH: return "acosh";
    case OP_ATANH: return "atanh";
    case OP_CBRT: return "cbrt";
    case OP_RCBRT: return "rcbrt";
    case OP_EXP10: return "exp10";
    case OP_LOG10: return "log10";
    case OP_SINPI: return "sinpi";
    case OP_COSPI: return "cospi";
    case OP_ERFC: return "erfc";
    case OP_ERFCX: return "erfcx";
    case OP_ERFINV: return "erfinv";
    case OP_ERFCINV: return "erfcinv";
    case OP_NORMCDF: return "normcdf";
    case OP_NORMCDFINV: return "normcdfinv";
    case OP_LGAMMA: return "lgamma";
    case OP_TGAMMA: return "tgamma";
    case OP_J0: return "j0";
    case OP_J1: return "j1";
    case OP_Y0: return "y0";
    case OP_Y1: return "y1";
    case OP_I0: return "cyl_bessel_i0";
    case OP_I1: return "cyl_bessel_i1";
    case OP_LOGB: return "logb";
    case OP_ILOGB: return "ilogb";
    case OP_HYPOT: return "hypot";
    case OP_RHYPOT: return "rhypot";
    case OP_NORM3D: return "norm3d";
    case OP_RNORM3D: return "rnorm3d";
    case OP_FDIM: return "fdim";
    case OP_COPYSIGN: return "copysign";
    case OP_REMAINDER: return "remainder";
    case OP_LDEXP: return "ldexp";
    case OP_JN: return "jn";
    case OP_YN: return "yn";
    default: return NULL;
    }
}

/* fp32-only intrinsics (libdevice fast_* and saturate). */
static const char *fast_name(int op)
{
    switch (op) {
    case OP_FAST_SIN: return "__sinf";
    case OP_FAST_COS: return "__cosf";
    case OP_FAST_TAN: return "__tanf";
    case OP_FAST_LOG2: return "__log2f";
    case OP_FAST_LOG10: return "__log10f";
    case OP_FAST_EXP10: return "__exp10f";
    case OP_FAST_POW: return "__powf";
    case OP_FAST_DIV: return "__fdividef";
    case OP_SATURATE: return "__saturatef";
    case OP_RSQRT_RN: return "__frsqrt_rn";
    default: return NULL;
    }
}

/* The correctly rounded intrinsics of the *_round ops. */
static const char *round_name(Cu *c, int op, Dtype dt, int rnd)
{
    static const char *const r[4] = {"rn", "rz", "rd", "ru"};
    const char *m = r[rnd & 3];
    if (c->o->hip && rnd != RND_RN)
        return NULL; /* HIP has the round-to-nearest intrinsics only */
    bool d = dt == DT_F64;
    switch (op) {
    case OP_ADD_ROUND: return arena_printf(c->a, "__%sadd_%s", d ? "d" : "f", m);
    case OP_SUB_ROUND: return arena_printf(c->a, "__%ssub_%s", d ? "d" : "f", m);
    case OP_MUL_ROUND: return arena_printf(c->a, "__%smul_%s", d ? "d" : "f", m);
    case OP_DIV_ROUND: return arena_printf(c->a, "__%sdiv_%s", d ? "d" : "f", m);
    case OP_SQRT_ROUND: return arena_printf(c->a, "__%ssqrt_%s", d ? "d" : "f", m);
    case OP_RCP_ROUND: return arena_printf(c->a, "__%srcp_%s", d ? "d" : "f", m);
    case OP_FMA_ROUND: return arena_printf(c->a, d ? "__fma_%s" : "__fmaf_%s", m);
    default: return NULL;
    }
}

static const char *binop_sym(int op)
{
    switch (op) {
    case OP_ADD: return "+";
    case OP_SUB: return "-";
    case OP_MUL: return "*";
    case OP_DIV: return "/";
    case OP_REM: return "%";
    case OP_AND: return "&";
    case OP_OR: return "|";
    case OP_XOR: return "^";
    case OP_SHL: return "<<";
    case OP_SHR: return ">>";
    case OP_LT: return "<";
    case OP_LE: return "<=";
    case OP_GT: return ">";
    case OP_GE: return ">=";
    case OP_EQ: return "==";
    case OP_NE: return "!=";
    default: return NULL;
    }
}

/* Whether e is a cast of a name, "(float)n": a unary expression. */
static bool is_name_cast(const char *e)
{
    const char *p = e;
    if (*p++ != '(')
        return false;
    while (*p == '_' || *p == ' ' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z'))
        p++;
    if (*p++ != ')' || !*p)
        return false;
    for (; *p; p++)
        if (!(*p == '_' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
            return false;
    return true;
}

/* The C precedence of in's printed top operator, as Cu.prec (0: none of those). */
static int top_prec(Cu *c, const Inst *in)
{
    Dtype dt = vdt(c, in->res[0]);
    if (is16(dt) || (dtype_is_int(dt) && dt != DT_I1 && dtype_bits(dt) < 32))
        return 0; /* a call or a cast around it */
    switch (in->op) {
    case OP_PROGRAM_ID: case OP_NUM_PROGRAMS: return 2; /* (int32_t)blockIdx.x */
    case OP_ARANGE: return in->ival ? 4 : 2;
    case OP_MUL: case OP_DIV: return 3;
    case OP_REM: return dtype_is_float(dt) ? 0 : 3;
    case OP_ADD: case OP_SUB: return 4;
    case OP_AND: return dt == DT_I1 ? 11 : 0;
    case OP_OR: return dt == DT_I1 ? 12 : 0;
    default: return 0;
    }
}

/* Operand v of a binary operator of precedence p (left or right): an inlined expression loses
 * its parentheses where C's precedence and left-to-right grouping give the same tree (a + b * c,
 * a * b / c for (a * b) / c, a && b && c); other operator mixes keep them. */
static const char *opnd(Cu *c, ValId v, int p, bool right)
{
    int q = c->inl[v] ? c->prec[v] : 0;
    bool arith = q && q <= 4 && p <= 4;
    if ((arith && (right ? q < p : q <= p)) || (q && q == p && p >= 11 && !right))
        return bare(c, v);
    return val(c, v);
}

/* An int expression e of dtype dt narrower than int: C computes it in int, so cast it back. */
static const char *narrow(Cu *c, Dtype dt, const char *e)
{
    if (dtype_bits(dt) < 32 && dt != DT_I1)
        return arena_printf(c->a, "(%s)(%s)", cuda_dtype(dt, c->o->hip), e);
    return e;
}

/* A value conversion of v to dt (the IR's cast: round to nearest for floats, truncation toward
 * zero for float to int, != 0 for i1).  NULL when there is no exact spelling. */
static const char *convert(Cu *c, ValId v, Dtype to)
{
    Dtype from = vdt(c, v);
    const char *x = val(c, v), *tn = cuda_dtype(to, c->o->hip);
    if (from == to)
        return x;
    if (from == DT_PTR || to == DT_PTR) {
        if (from == DT_PTR && (to == DT_I64 || to == DT_U64))
            return arena_printf(c->a, "(%s)(uintptr_t)%s", tn, x);
        return NULL; /* int to pointer: the caller spells it with the pointee type */
    }
    if (!tn || !cuda_dtype(from, c->o->hip))
        return NULL;
    if (to == DT_I1)
        return arena_printf(c->a, "(%s != %s)", dtype_is_float(from) ? up(c, v) : x,
                            dtype_is_float(from) ? "0.0f" : "0");
    if (is16(to)) {
        if (is16(from) || from == DT_F32)
            return down(c, to, up(c, v));
        if (c->o->hip && to == DT_BF16 && dtype_bits(from) > 16)
            return NULL; /* HIP's __double2bfloat16 rounds through float: twice */
        if (from == DT_F64)
            return arena_printf(c->a, to == DT_F16 ? "__double2half(%s)" : "__double2bfloat16(%s)", x);
        if (dtype_bits(from) <= 16) /* exact in float */
            return down(c, to, arena_printf(c->a, "(float)%s", x));
        if (from == DT_I32 || from == DT_U32) /* exact in double, then one rounding */
            return arena_printf(c->a, to == DT_F16 ? "__double2half((double)%s)" : "__double2bfloat16((double)%s)", x);
        if (from == DT_I64)
            return arena_printf(c->a, to == DT_F16 ? "__ll2half_rn(%s)" : "__ll2bfloat16_rn(%s)", x);
        if (from == DT_U64)
            return arena_printf(c->a, to == DT_F16 ? "__ull2half_rn(%s)" : "__ull2bfloat16_rn(%s)", x);
        return NULL;
    }
    if (is16(from)) /* exact in float: then as from fp32 */
        return to == DT_F32 ? up(c, v) : arena_printf(c->a, "(%s)%s", tn, up(c, v));
    return arena_printf(c->a, "(%s)%s", tn, x);
}

/* A bitcast of v to the result type of in. */
static const char *bitcast(Cu *c, const Inst *in)
{
    ValId v = in->args[0];
    Type t = vty(c, in->res[0]), s = vty(c, v);
    const char *x = val(c, v);
    if (t.dt == DT_PTR && s.dt == DT_PTR)
        return arena_printf(c->a, "(%s)%s", ctype(c, in->res[0], in->loc), x);
    Dtype from = (Dtype)s.dt, to = (Dtype)t.dt;
    if (from == to)
        return x;
    if (dtype_is_int(from) && dtype_is_int(to) && dtype_bits(from) == dtype_bits(to) && from != DT_I1)
        return arena_printf(c->a, "(%s)%s", cuda_dtype(to, c->o->hip), x);
    struct { Dtype a, b; const char *fn; } tab[] = {
        {DT_F32, DT_I32, "__float_as_int"},   {DT_F32, DT_U32, "__float_as_uint"},
        {DT_I32, DT_F32, "__int_as_float"},   {DT_U32, DT_F32, "__uint_as_float"},
        {DT_F64, DT_I64, "__double_as_longlong"}, {DT_I64, DT_F64, "__longlong_as_double"},
        {DT_F16, DT_I16, "__half_as_short"},  {DT_F16, DT_U16, "__half_as_ushort"},
        {DT_I16, DT_F16, "__short_as_half"},  {DT_U16, DT_F16, "__ushort_as_half"},
        {DT_BF16, DT_I16, "__bfloat16_as_short"}, {DT_BF16, DT_U16, "__bfloat16_as_ushort"},
        {DT_I16, DT_BF16, "__short_as_bfloat16"}, {DT_U16, DT_BF16, "__ushort_as_bfloat16"},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (tab[i].a == from && tab[i].b == to)
            return arena_printf(c->a, "%s(%s)", tab[i].fn, x);
    if (from == DT_F64 && to == DT_U64)
        return arena_printf(c->a, "(uint64_t)__double_as_longlong(%s)", x);
    if (from == DT_U64 && to == DT_F64)
        return arena_printf(c->a, "__longlong_as_double((long long)%s)", x);
    return NULL;
}

/* The expression of a pure elementwise (or index) instruction, or NULL after a refusal. */
static const char *expr(Cu *c, const Inst *in)
{
    int op = in->op;
    ValId r = in->res[0];
    Dtype dt = vdt(c, r), adt = in->nargs ? vdt(c, in->args[0]) : DT_VOID;
    const char *a0 = in->nargs > 0 ? val(c, in->args[0]) : NULL;
    const char *a1 = in->nargs > 1 ? val(c, in->args[1]) : NULL;
    bool fl = dtype_is_float(adt);
    const char *sfx = adt == DT_F64 ? "" : "f"; /* fp32 and 16-bit (computed in fp32): the f suffix */
    switch (op) {
    case OP_CONST:
        return dtype_is_float(dt) ? flit(c, dt, in->fval) : ilit(c, dt, in->ival);
    case OP_PROGRAM_ID:
        return arena_printf(c->a, "(int32_t)blockIdx.%c", "xyz"[in->ival]);
    case OP_NUM_PROGRAMS:
        return arena_printf(c->a, "(int32_t)gridDim.%c", "xyz"[in->ival]);
    case OP_ARANGE:
        return in->ival ? arena_printf(c->a, "(int32_t)threadIdx.x + %lld", (long long)in->ival)
                        : "(int32_t)threadIdx.x";
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM:
        if (fl) {
            if (op == OP_REM)
                return down(c, dt, arena_printf(c->a, "fmod%s(%s, %s)", sfx, up(c, in->args[0]), up(c, in->args[1])));
            if (is16(dt))
                return down(c, dt, arena_printf(c->a, "%s %s %s", up(c, in->args[0]), binop_sym(op), up(c, in->args[1])));
            int p = top_prec(c, in);
            return arena_printf(c->a, "%s %s %s", opnd(c, in->args[0], p, false), binop_sym(op),
                                opnd(c, in->args[1], p, true));
        }
        if (top_prec(c, in))
            return arena_printf(c->a, "%s %s %s", opnd(c, in->args[0], top_prec(c, in), false), binop_sym(op),
                                opnd(c, in->args[1], top_prec(c, in), true));
        return narrow(c, dt, arena_printf(c->a, "%s %s %s", a0, binop_sym(op), a1));
    case OP_AND: case OP_OR: case OP_XOR: case OP_SHL: case OP_SHR:
        if (dt == DT_I1 && op != OP_XOR)
            return arena_printf(c->a, "%s %s %s", opnd(c, in->args[0], top_prec(c, in), false),
                                op == OP_AND ? "&&" : "||", opnd(c, in->args[1], top_prec(c, in), true));
        if (dt == DT_I1)
            return arena_printf(c->a, "%s != %s", a0, a1);
        return narrow(c, dt, arena_printf(c->a, "%s %s %s", a0, binop_sym(op), a1));
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
        if (fl)
            return arena_printf(c->a, "%s %s %s", up(c, in->args[0]), binop_sym(op), up(c, in->args[1]));
        return arena_printf(c->a, "%s %s %s", a0, binop_sym(op), a1);
    case OP_NOT:
        return dt == DT_I1 ? arena_printf(c->a, "!%s", a0) : narrow(c, dt, arena_printf(c->a, "~%s", a0));
    case OP_NEG:
        if (fl)
            return down(c, dt, arena_printf(c->a, "-%s", up(c, in->args[0])));
        return narrow(c, dt, arena_printf(c->a, "-%s", a0));
    case OP_UMULHI: {
        bool u = !dtype_is_signed(dt);
        if (dtype_bits(dt) == 32)
            return arena_printf(c->a, "%s(%s, %s)", u ? "__umulhi" : "__mulhi", a0, a1);
        if (dtype_bits(dt) == 64)
            return arena_printf(c->a, "%s(%s, %s)", u ? "__umul64hi" : "__mul64hi", a0, a1);
        return NULL;
    }
    case OP_MAXIMUM: case OP_MINIMUM:
        if (fl)
            return down(c, dt, arena_printf(c->a, "%s%s(%s, %s)", math_name(op), sfx, up(c, in->args[0]),
                                            up(c, in->args[1])));
        return arena_printf(c->a, "%s %s %s ? %s : %s", a0, op == OP_MAXIMUM ? ">" : "<", a1, a0, a1);
    case OP_ABS:
        if (fl)
            return down(c, dt, arena_printf(c->a, "fabs%s(%s)", sfx, up(c, in->args[0])));
        if (!dtype_is_signed(dt))
            return a0;
        return narrow(c, dt, arena_printf(c->a, "%s < 0 ? -%s : %s", a0, a0, a0));
    case OP_ISNAN: case OP_ISINF:
        return arena_printf(c->a, "%s(%s)", op == OP_ISNAN ? "isnan" : "isinf", up(c, in->args[0]));
    case OP_SIGMOID:
        if (adt == DT_F64)
            return arena_printf(c->a, "1.0 / (1.0 + exp(-%s))", a0);
        return down(c, dt, arena_printf(c->a, "1.0f / (1.0f + expf(-%s))", up(c, in->args[0])));
    case OP_WHERE:
        return arena_printf(c->a, "%s ? %s : %s", a0, a1, val(c, in->args[2]));
    case OP_CAST: {
        if (dt == DT_PTR) {
            if (adt == DT_I64 || adt == DT_U64)
                return arena_printf(c->a, "(%s)(uintptr_t)%s", ctype(c, r, in->loc), a0);
            return NULL;
        }
        return convert(c, in->args[0], dt);
    }
    case OP_BITCAST:
        return bitcast(c, in);
    case OP_ADDPTR:
        return arena_printf(c->a, "%s + %s", a0, a1);
    case OP_ADD_ROUND: case OP_SUB_ROUND: case OP_MUL_ROUND: case OP_DIV_ROUND:
        if (adt != DT_F32 && adt != DT_F64)
            return NULL;
        if (!round_name(c, op, adt, (int)in->ival))
            return NULL;
        return arena_printf(c->a, "%s(%s, %s)", round_name(c, op, adt, (int)in->ival), a0, a1);
    case OP_SQRT_ROUND: case OP_RCP_ROUND:
        if ((adt != DT_F32 && adt != DT_F64) || !round_name(c, op, adt, (int)in->ival))
            return NULL;
        return arena_printf(c->a, "%s(%s)", round_name(c, op, adt, (int)in->ival), a0);
    case OP_FMA_ROUND:
        if ((adt != DT_F32 && adt != DT_F64) || !round_name(c, op, adt, (int)in->ival))
            return NULL;
        return arena_printf(c->a, "%s(%s, %s, %s)", round_name(c, op, adt, (int)in->ival), a0, a1,
                            val(c, in->args[2]));
    default:
        break;
    }
    if (op == OP_RAND || op == OP_RANDN || op == OP_RANDINT) {
        Dtype ot = vdt(c, in->args[1]);
        if (dtype_bits(ot) != 32 || !dtype_is_int(vdt(c, in->args[0])))
            return NULL; /* 64-bit offsets: Philox 4x64 is not printed yet */
        c->helpers |= CU_H_RAND;
        return arena_printf(c->a, "kad_%s(%s, %s)", op == OP_RAND ? "rand" : op == OP_RANDN ? "randn" : "randint",
                            a0, a1);
    }
    if (fast_name(op)) {
        if (adt != DT_F32 || (op == OP_RSQRT_RN && c->o->hip))
            return NULL;
        return in->nargs == 2 ? arena_printf(c->a, "%s(%s, %s)", fast_name(op), a0, a1)
                              : arena_printf(c->a, "%s(%s)", fast_name(op), a0);
    }
    const char *m = math_name(op);
    if (m && op_info[op].elementwise && op != OP_POWI) {
        /* float math: fp32 (and 16-bit values, computed in fp32) with the f suffix */
        if (op == OP_JN || op == OP_YN) /* n (i32), x */
            return down(c, dt, arena_printf(c->a, "%s%s(%s, %s)", m, vdt(c, in->args[1]) == DT_F64 ? "" : "f", a0,
                                            up(c, in->args[1])));
        if (op == OP_LDEXP)
            return down(c, dt, arena_printf(c->a, "%s%s(%s, %s)", m, sfx, up(c, in->args[0]), a1));
        Buf b = {.a = c->a};
        buf_printf(&b, "%s%s(", m, sfx);
        for (int k = 0; k < in->nargs; k++)
            buf_printf(&b, "%s%s", k ? ", " : "", is16(vdt(c, in->args[k])) ? up(c, in->args[k]) : bare(c, in->args[k]));
        buf_puts(&b, ")");
        return op == OP_ILOGB ? buf_str(&b) : down(c, dt, buf_str(&b));
    }
    return NULL;
}

/* ---- reductions, scans, gathers (through shared memory) ---- */

/* The shared buffer of dtype dt (declared at the kernel's top). */
static const char *smem(Cu *c, Dtype dt)
{
    c->smem |= 1u << dt;
    return arena_printf(c->a, "kad_smem_%s", dtype_name(dt));
}

static void print_block(Cu *c, const Block *b, const char *const *yield_to);

/* Shared buffer number k (0: smem's) of dtype dt: operands of one reduce or scan need their own. */
static const char *smem_k(Cu *c, Dtype dt, int k)
{
    if (!k)
        return smem(c, dt);
    if (c->smem_more[dt] < k)
        c->smem_more[dt] = k;
    return arena_printf(c->a, "kad_smem_%s_%d", dtype_name(dt), k);
}

/* A reduce or scan of several operands: its combine region as a functor taking the running
 * values, the next ones and the results by reference, and a helper of its own that runs the
 * fixed tree (reduce) or the Hillis-Steele scan over shared buffers, one per operand; the
 * results are variables that the helper updates in place. */
static void multi_lane_op(Cu *c, const Inst *in)
{
    const Block *rg = in->regions[0];
    int n = in->nargs, read = 0;
    for (int k = 0; k < in->nres; k++)
        read += c->uses[in->res[k]];
    if (!read)
        return;
    int id = c->ncomb++;
    bool red = in->op == OP_REDUCE;
    for (int k = 0; k < n; k++)
        if (!is_lane(c, in->args[k]) || in->ival != 0) {
            refuse(c, in->loc, "'%s' of %%%s %s: only along the lanes of 1-D tiles", op_info[in->op].name,
                   c->irname[in->args[k]], shape_str(c, vty(c, in->args[k])));
            return;
        }
    const char *fn = arena_printf(c->a, "kad_combine_%d", id);
    Buf *save = c->out;
    int sd = c->depth;
    Buf body = {.a = c->a}, sig = {.a = c->a};
    c->out = &body;
    c->depth = 1;
    const char **tys = arena_alloc(c->a, sizeof *tys * (size_t)n);
    for (int k = 0; k < 2 * n; k++) {
        const char *ty = ctype(c, rg->params[k], in->loc);
        if (k < n)
            tys[k] = ty;
        c->var[rg->params[k]] = name_for(c, rg->params[k]);
        buf_printf(&sig, "%s%s %s", k ? ", " : "", ty, c->var[rg->params[k]]);
    }
    const char **outs = arena_alloc(c->a, sizeof *outs * (size_t)n);
    for (int k = 0; k < n; k++) {
        outs[k] = fresh(c, arena_printf(c->a, "kad_r%d", k));
        buf_printf(&sig, ", %s &%s", tys[k], outs[k]);
    }
    print_block(c, rg, outs);
    c->out = save;
    c->depth = sd;
    if (!c->ok)
        return;
    Buf rs = {.a = c->a};
    for (int k = 0; k < n; k++)
        buf_printf(&rs, "%s%%%s", k ? ", " : "", c->irname[in->res[k]]);
    Buf *P = &c->pre;
    buf_printf(P, "// the combine function of %s (line %d)\nstruct %s {\n", buf_str(&rs), in->loc.line, fn);
    buf_printf(P, "    __device__ void operator()(%s) const\n    {\n%s    }\n};\n", buf_str(&sig), buf_str(&body));
    const char *hname = arena_printf(c->a, "kad_%s_%d", red ? "reduce" : "scan", id);
    buf_printf(P, "__device__ void %s(", hname);
    for (int k = 0; k < n; k++)
        buf_printf(P, "%s%s &v%d, %s *buf%d", k ? ", " : "", tys[k], k, tys[k], k);
    if (red)
        buf_printf(P, ")\n{ // kad_block_reduce's fixed tree over %d operands\n    const int j = threadIdx.x;\n", n);
    else
        buf_printf(P, ", bool reverse)\n{ // kad_block_scan over %d operands\n"
                      "    const int j = reverse ? %d - (int)threadIdx.x : (int)threadIdx.x;\n", n, c->L - 1);
    for (int k = 0; k < n; k++)
        buf_printf(P, "    buf%d[j] = v%d;\n", k, k);
    buf_puts(P, "    __syncthreads();\n");
    if (red) {
        buf_printf(P, "    for (int n = %d; n > 1; n = (n + 1) / 2) {\n        const int h = (n + 1) / 2;\n"
                      "        if (j < n - h) {\n", c->L);
        for (int k = 0; k < n; k++)
            buf_printf(P, "            %s r%d;\n", tys[k], k);
        buf_printf(P, "            %s()(", fn);
        for (int k = 0; k < n; k++)
            buf_printf(P, "%sbuf%d[j]", k ? ", " : "", k);
        for (int k = 0; k < n; k++)
            buf_printf(P, ", buf%d[j + h]", k);
        for (int k = 0; k < n; k++)
            buf_printf(P, ", r%d", k);
        buf_puts(P, ");\n");
        for (int k = 0; k < n; k++)
            buf_printf(P, "            buf%d[j] = r%d;\n", k, k);
        buf_puts(P, "        }\n        __syncthreads();\n    }\n");
        for (int k = 0; k < n; k++)
            buf_printf(P, "    v%d = buf%d[0];\n", k, k);
        buf_puts(P, "    __syncthreads();\n}\n\n");
    } else {
        buf_printf(P, "    for (int s = 1; s < %d; s *= 2) {\n", c->L);
        for (int k = 0; k < n; k++)
            buf_printf(P, "        const %s p%d = j >= s ? buf%d[j - s] : v%d;\n", tys[k], k, k, k);
        buf_puts(P, "        __syncthreads();\n        if (j >= s) {\n");
        for (int k = 0; k < n; k++)
            buf_printf(P, "            %s r%d;\n", tys[k], k);
        buf_printf(P, "            %s()(", fn);
        for (int k = 0; k < n; k++)
            buf_printf(P, "%sp%d", k ? ", " : "", k);
        for (int k = 0; k < n; k++)
            buf_printf(P, ", v%d", k);
        for (int k = 0; k < n; k++)
            buf_printf(P, ", r%d", k);
        buf_puts(P, ");\n");
        for (int k = 0; k < n; k++)
            buf_printf(P, "            v%d = r%d;\n", k, k);
        buf_puts(P, "        }\n");
        for (int k = 0; k < n; k++)
            buf_printf(P, "        buf%d[j] = v%d;\n", k, k);
        buf_puts(P, "        __syncthreads();\n    }\n}\n\n");
    }
    /* the call: the results start as the operands */
    Buf call = {.a = c->a};
    int used[DT_COUNT] = {0};
    for (int k = 0; k < n; k++) {
        ValId r = in->res[k];
        c->var[r] = declare(c, r, in->args[k], in->loc);
        Dtype dt = vdt(c, in->args[k]);
        buf_printf(&call, "%s%s, %s", k ? ", " : "", c->var[r], smem_k(c, dt, used[dt]++));
    }
    if (red)
        line(c, "%s(%s);", hname, buf_str(&call));
    else
        line(c, "%s(%s, %s);", hname, buf_str(&call), in->flags & IF_REVERSE ? "true" : "false");
}

/* A combine region (closed, scalars only) as a device functor kad_combine_N (one operand, one
 * result): its name, or NULL after a refusal. */
static const char *combine_functor(Cu *c, const Inst *in)
{
    const Block *rg = in->regions[0];
    if (in->nargs != 1 || rg->nparams != 2) {
        refuse(c, in->loc, "'%s' of %d operands: the CUDA C emitter prints a combine region of one operand",
               op_info[in->op].name, in->nargs);
        return NULL;
    }
    const char *fn = arena_printf(c->a, "kad_combine_%d", c->ncomb++);
    Buf *save = c->out;
    int sd = c->depth;
    Buf body = {.a = c->a};
    c->out = &body;
    c->depth = 1;
    const char *ty = ctype(c, rg->params[0], in->loc);
    const char *pa = c->var[rg->params[0]] = name_for(c, rg->params[0]);
    const char *pb = c->var[rg->params[1]] = name_for(c, rg->params[1]);
    const char *ret = fresh(c, "kad_r");
    line(c, "%s %s;", ty, ret);
    const char *targets[1] = {ret};
    print_block(c, rg, targets);
    line(c, "return %s;", ret);
    c->out = save;
    c->depth = sd;
    buf_printf(&c->pre, "// the combine function of %%%s (line %d)\nstruct %s {\n"
                        "    __device__ %s operator()(%s %s, %s %s) const\n    {\n%s    }\n};\n\n",
               c->irname[in->res[0]], in->loc.line, fn, ty, ty, pa, ty, pb, buf_str(&body));
    return fn;
}

static void reduction(Cu *c, const Block *b, const Inst *in)
{
    ValId x = in->args[0], r = in->res[0];
    if (!c->uses[r])
        return; /* unread: every thread skips it alike, barriers included */
    Dtype dt = vdt(c, x);
    if (!is_lane(c, x) || in->ival != 0 || (in->flags & IF_KEEP_DIMS)) {
        refuse(c, in->loc, "'%s' of %%%s %s: the CUDA C emitter reduces a 1-D tile along its lanes into a scalar",
               op_info[in->op].name, c->irname[x], shape_str(c, vty(c, x)));
        return;
    }
    if (!cuda_dtype(dt, c->o->hip)) {
        refuse(c, in->loc, "'%s' of %s", op_info[in->op].name, dtype_name(dt));
        return;
    }
    const char *e;
    if (in->op == OP_ARGMAX || in->op == OP_ARGMIN) {
        c->helpers |= CU_H_ARG;
        c->smem_idx = true;
        e = arena_printf(c->a, "kad_block_%s<%d>(%s, %s, kad_smem_idx)", in->op == OP_ARGMAX ? "argmax" : "argmin",
                         c->L, bare(c, x), smem(c, dt));
    } else if (in->op == OP_REDUCE) {
        const char *fn = combine_functor(c, in);
        if (!fn)
            return;
        c->helpers |= CU_H_REDUCE;
        e = arena_printf(c->a, "kad_block_reduce<%d>(%s, %s, %s())", c->L, bare(c, x), smem(c, dt), fn);
    } else {
        c->helpers |= CU_H_REDUCE;
        const char *fn = in->op == OP_SUM ? "kad_add" : in->op == OP_MAX ? "kad_max" : "kad_min";
        e = arena_printf(c->a, "kad_block_reduce<%d>(%s, %s, %s())", c->L, bare(c, x), smem(c, dt), fn);
    }
    bind(c, b, r, e, false, in->loc);
}

static void scan(Cu *c, const Block *b, const Inst *in)
{
    ValId x = in->args[0], r = in->res[0];
    if (!c->uses[r])
        return;
    if (!is_lane(c, x) || in->ival != 0) {
        refuse(c, in->loc, "'%s' of %%%s %s: the CUDA C emitter scans a 1-D tile along its lanes",
               op_info[in->op].name, c->irname[x], shape_str(c, vty(c, x)));
        return;
    }
    const char *fn = in->op == OP_CUMSUM ? "kad_add()" : in->op == OP_CUMPROD ? "kad_mul()" : NULL;
    if (!fn) {
        const char *f2 = combine_functor(c, in);
        if (!f2)
            return;
        fn = arena_printf(c->a, "%s()", f2);
    }
    c->helpers |= CU_H_SCAN | CU_H_REDUCE;
    bind(c, b, r, arena_printf(c->a, "kad_block_scan<%d>(%s, %s, %s, %s)", c->L, bare(c, x), smem(c, vdt(c, x)),
                               in->flags & IF_REVERSE ? "true" : "false", fn), false, in->loc);
}

/* gather along the lanes and flip: lane i reads lane idx of src through shared memory. */
static void permute_lanes(Cu *c, const Block *b, const Inst *in)
{
    ValId x = in->args[0], r = in->res[0];
    if (!is_lane(c, x) || in->ival != 0) {
        refuse(c, in->loc, "'%s' of %%%s %s: only along the lanes of a 1-D tile", op_info[in->op].name,
               c->irname[x], shape_str(c, vty(c, x)));
        return;
    }
    const char *idx = in->op == OP_FLIP ? arena_printf(c->a, "%d - (int32_t)threadIdx.x", c->L - 1)
                                        : arena_printf(c->a, "(int)%s", val(c, in->args[1]));
    c->helpers |= CU_H_GATHER;
    bind(c, b, r, arena_printf(c->a, "kad_block_gather<%d>(%s, %s, %s)", c->L, bare(c, x), smem(c, vdt(c, x)), idx),
         false, in->loc);
}

/* ---- memory ---- */

static void memory(Cu *c, const Block *b, const Inst *in)
{
    ValId p = in->args[0];
    bool lane = vty(c, p).rank >= 1; /* [L] or [L, 1]: thread i's element */
    Dtype el = (Dtype)vty(c, p).elem;
    if (!cuda_dtype(el, c->o->hip)) {
        refuse(c, in->loc, "'%s' of %s elements", op_info[in->op].name, dtype_name(el));
        return;
    }
    int at = in->op == OP_LOAD ? 1 : 2;
    const char *mask = in->flags & IF_HAS_MASK ? val(c, in->args[at]) : NULL;
    const char *ptr = val(c, p);
    /* *(base + off) reads better as base[off] when the address was inlined */
    const Inst *pd = c->def[p];
    const char *elem = pd && pd->op == OP_ADDPTR && c->inl[p]
                           ? arena_printf(c->a, "%s[%s]", val(c, pd->args[0]), val(c, pd->args[1]))
                           : arena_printf(c->a, "*%s", ptr);
    if (in->op == OP_LOAD) {
        const char *other = in->flags & IF_HAS_OTHER ? val(c, in->args[at + 1]) : zero(c, el);
        const char *e = mask ? arena_printf(c->a, "%s ? %s : %s", mask, elem, other) : elem;
        bind(c, b, in->res[0], e, false, in->loc);
        return;
    }
    const char *v = bare(c, in->args[1]);
    /* a scalar access is one per program: thread 0 makes it */
    const char *cond = !lane ? (mask ? arena_printf(c->a, "threadIdx.x == 0 && %s", mask) : "threadIdx.x == 0") : mask;
    if (in->op == OP_STORE) {
        if (cond)
            line(c, "if (%s)", cond), c->depth++;
        line(c, "%s = %s;", elem, v);
        if (cond)
            c->depth--;
        return;
    }
    const char *fn = in->op == OP_ATOMIC_ADD ? "atomicAdd" : in->op == OP_ATOMIC_MAX ? "atomicMax"
                     : in->op == OP_ATOMIC_MIN ? "atomicMin" : "atomicExch";
    bool okdt = el == DT_I32 || el == DT_U32 || el == DT_U64 ||
                (in->op == OP_ATOMIC_ADD && (el == DT_F32 || el == DT_F64 || (is16(el) && !c->o->hip))) ||
                (in->op == OP_ATOMIC_XCHG && el == DT_F32) ||
                ((in->op == OP_ATOMIC_MAX || in->op == OP_ATOMIC_MIN) && el == DT_I64);
    if (!okdt) {
        refuse(c, in->loc, "'%s' on %s elements has no CUDA atomic", op_info[in->op].name, dtype_name(el));
        return;
    }
    ValId r = in->res[0];
    bool used = c->uses[r] > 0;
    if (used && !lane) {
        refuse(c, in->loc, "the old value of a scalar '%s' (%%%s) is read: the CUDA C emitter makes a scalar atomic "
               "in thread 0 alone", op_info[in->op].name, c->irname[r]);
        return;
    }
    const char *call;
    if (el == DT_U64)
        call = arena_printf(c->a, "%s((unsigned long long *)%s, (unsigned long long)%s)", fn, ptr, v);
    else if (el == DT_I64)
        call = arena_printf(c->a, "%s((long long *)%s, (long long)%s)", fn, ptr, v);
    else
        call = arena_printf(c->a, "%s(%s, %s)", fn, ptr, v);
    if (!used) {
        if (cond)
            line(c, "if (%s)", cond), c->depth++;
        line(c, "%s;", call);
        if (cond)
            c->depth--;
        return;
    }
    const char *e = mask ? arena_printf(c->a, "%s ? (%s)%s : %s", mask, cuda_dtype(el, c->o->hip), call, zero(c, el))
                         : call;
    bind(c, b, r, e, false, in->loc);
}

/* ---- per-thread arrays: tiles [L, k] ---- */

/* Whether type t is held per lane: its first axis is the block's threads (t is [L] or [L, k]). */
static bool lanes_of(Cu *c, Type t) { return t.rank >= 1 && t.shape[0] == c->L && c->L > 1; }

/* The per-thread array length of v: k for a tile [L, k] with k > 1 (thread i holds row i,
 * `T v[k]`) and for a uniform row [k] or [1, k] (a tile whose first axis is not the threads:
 * every thread holds all of it, alike); 0 for a scalar, a lane value [L] and [L, 1]. */
static int width(Cu *c, ValId v)
{
    Type t = vty(c, v);
    if (lanes_of(c, t))
        return t.rank == 2 && t.shape[1] > 1 ? t.shape[1] : 0;
    return t.rank ? (int)type_numel(t) : 0;
}

/* Whether v is a uniform row (every thread holds the same k elements). */
static bool is_row(Cu *c, ValId v) { return vty(c, v).rank >= 1 && !lanes_of(c, vty(c, v)); }

/* Prints `T r[k];` and a loop over kad_j assigning e (built with c->jidx: arrays read at kad_j). */
static void array_assign(Cu *c, ValId r, const char *e, Loc loc)
{
    const char *ty = ctype(c, r, loc);
    int k = width(c, r);
    c->var[r] = name_for(c, r);
    line(c, "%s%s%s[%d];", ty, ty[strlen(ty) - 1] == '*' ? "" : " ", c->var[r], k);
    line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", k);
    line(c, "    %s[kad_j] = %s;", c->var[r], e);
}

static const char *expr(Cu *c, const Inst *in);

/* An instruction on tiles [L, k] (its result, or a store's pointer): element by element in each
 * thread, or a reduction or scan along axis 1 in a fixed order (kad_j = 0, 1, ...).  False when
 * in has no such tile (the caller prints it). */
static bool array_inst(Cu *c, const Inst *in)
{
    ValId r = in->nres ? in->res[0] : 0, x = in->nargs ? in->args[0] : 0;
    int op = in->op, kr = r ? width(c, r) : 0, kx = x ? width(c, x) : 0;
    if (!kr && !kx)
        return false;
    if (op == OP_FOR || op == OP_IF || op == OP_WHILE || op == OP_YIELD || op == OP_CONDITION)
        return false;
    if (!c->uses[r] && r && op_info[op].pure && op != OP_SUM && op != OP_MAX && op != OP_MIN)
        return true; /* unread */
    if (op == OP_SPLIT && kx == 2 && !kr) { /* x[..., h]: one element of the row */
        c->var[r] = elem_at(c, x, in->ival ? "1" : "0");
        return true;
    }
    if (op == OP_JOIN && kr == 2) {
        const char *ty = ctype(c, r, in->loc);
        c->var[r] = name_for(c, r);
        line(c, "const %s %s[2] = {%s, %s};", ty, c->var[r], bare(c, in->args[0]), bare(c, in->args[1]));
        return true;
    }
    int last = x ? vty(c, x).rank - 1 : 0; /* a row's axis: the array's */
    if ((op == OP_SUM || op == OP_MAX || op == OP_MIN || op == OP_ARGMAX || op == OP_ARGMIN) && kx && !kr &&
        in->ival == last) {
        bool fl = dtype_is_float(vdt(c, x)), f64 = vdt(c, x) == DT_F64, arg = op == OP_ARGMAX || op == OP_ARGMIN;
        const char *ty = ctype(c, x, in->loc), *v = val(c, x);
        c->var[r] = name_for(c, r);
        const char *acc = arg ? fresh(c, arena_printf(c->a, "%s_best", c->var[r])) : c->var[r];
        const char *v0 = elem_at(c, x, "0");
        v = elem_at(c, x, "kad_j");
        line(c, "%s %s = %s;", ty, acc, v0);
        if (arg)
            line(c, "int32_t %s = 0;", c->var[r]);
        line(c, "for (int kad_j = 1; kad_j < %d; kad_j++)%s", kx, arg ? " {" : "");
        if (op == OP_SUM)
            line(c, "    %s = %s + %s;", acc, acc, v);
        else if (op == OP_MAX || op == OP_MIN)
            line(c, fl ? "    %s = %s(%s, %s);" : "    %s = kad_%s()(%s, %s);", acc,
                 fl ? (op == OP_MAX ? (f64 ? "fmax" : "fmaxf") : (f64 ? "fmin" : "fminf")) : (op == OP_MAX ? "max" : "min"),
                 acc, v);
        else {
            line(c, "    if (%s %s %s) {", v, op == OP_ARGMAX ? ">" : "<", acc);
            line(c, "        %s = %s;", acc, v);
            line(c, "        %s = kad_j;", c->var[r]);
            line(c, "    }");
            line(c, "}");
        }
        if (!fl && (op == OP_MAX || op == OP_MIN))
            c->helpers |= CU_H_REDUCE;
        return true;
    }
    if ((op == OP_CUMSUM || op == OP_CUMPROD) && kx && kr == kx && in->ival == last) {
        const char *ty = ctype(c, r, in->loc);
        bool rev = in->flags & IF_REVERSE;
        c->var[r] = name_for(c, r);
        line(c, "%s %s[%d];", ty, c->var[r], kr);
        line(c, "%s[%d] = %s;", c->var[r], rev ? kr - 1 : 0, elem_at(c, x, rev ? arena_printf(c->a, "%d", kr - 1) : "0"));
        if (rev)
            line(c, "for (int kad_j = %d; kad_j >= 0; kad_j--)", kr - 2);
        else
            line(c, "for (int kad_j = 1; kad_j < %d; kad_j++)", kr);
        line(c, "    %s[kad_j] = %s[kad_j %s 1] %s %s;", c->var[r], c->var[r], rev ? "+" : "-",
             op == OP_CUMSUM ? "+" : "*", elem_at(c, x, "kad_j"));
        return true;
    }
    if (op == OP_STORE || op_is_atomic(op) || op == OP_LOAD) {
        int at = op == OP_LOAD ? 1 : 2;
        c->jidx = true;
        const char *p = val(c, x), *mask = in->flags & IF_HAS_MASK ? val(c, in->args[at]) : NULL;
        Dtype el = (Dtype)vty(c, x).elem;
        if (op == OP_LOAD) {
            const char *other = in->flags & IF_HAS_OTHER ? val(c, in->args[at + 1]) : zero(c, el);
            c->jidx = false;
            array_assign(c, r, mask ? arena_printf(c->a, "%s ? *%s : %s", mask, p, other) : arena_printf(c->a, "*%s", p),
                         in->loc);
            return true;
        }
        const char *v = val(c, in->args[1]);
        c->jidx = false;
        if (op_is_atomic(op) && c->uses[r]) {
            refuse(c, in->loc, "the old values of '%s' on a tile [L, k] (%%%s) are read: not printed yet",
                   op_info[op].name, c->irname[r]);
            return true;
        }
        if (op_is_atomic(op) && op != OP_ATOMIC_ADD) {
            refuse(c, in->loc, "'%s' on a tile [L, k]: not printed yet", op_info[op].name);
            return true;
        }
        if (op_is_atomic(op) && !(el == DT_F32 || el == DT_F64 || el == DT_I32 || el == DT_U32 ||
                                  (is16(el) && !c->o->hip))) {
            refuse(c, in->loc, "'%s' on %s elements has no CUDA atomic", op_info[op].name, dtype_name(el));
            return true;
        }
        bool row = is_row(c, x); /* the same elements in every thread: thread 0 writes them */
        if (row)
            line(c, "if (threadIdx.x == 0)"), c->depth++;
        line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", kx);
        if (mask)
            line(c, "    if (%s)", mask);
        line(c, mask ? "        %s%s%s%s;" : "    %s%s%s%s;", op == OP_STORE ? "*" : "atomicAdd(", p,
             op == OP_STORE ? " = " : ", ", op == OP_STORE ? v : arena_printf(c->a, "%s)", v));
        if (row)
            c->depth--;
        return true;
    }
    if (op == OP_ARANGE && kr) { /* a row: start, start + 1, ... in every thread */
        array_assign(c, r, in->ival ? arena_printf(c->a, "kad_j + %lld", (long long)in->ival) : "kad_j", in->loc);
        return true;
    }
    if ((op == OP_EXPAND_DIMS || op == OP_RESHAPE) && kx == kr && is_row(c, x) == is_row(c, r) &&
        (is_row(c, x) || type_same_shape(vty(c, x), vty(c, r)))) {
        c->var[r] = c->var[x]; /* [k] and [1, k]: one row */
        c->splat[r] = c->splat[x];
        return true;
    }
    if (op == OP_BROADCAST && kx == 1 && kr != 1) { /* one element to many: each is x[0] */
        c->var[r] = elem_at(c, x, "0");
        c->splat[r] = kr > 0;
        return true;
    }
    if (op == OP_BROADCAST && kx && kx != kr) {
        refuse(c, in->loc, "'broadcast' of %%%s %s to %s: not printed yet", c->irname[x], shape_str(c, vty(c, x)),
               shape_str(c, vty(c, r)));
        return true;
    }
    bool ew = op_info[op].elementwise || op == OP_BROADCAST || op == OP_CONST;
    if (x && vty(c, x).rank && r && vty(c, r).rank && is_row(c, x) != is_row(c, r) && !op_info[op].elementwise &&
        op != OP_BROADCAST) {
        refuse(c, in->loc, "'%s' of %%%s %s into %s: between the block's threads and a row that every thread "
               "holds (it would gather every lane); not printed yet", op_info[op].name, c->irname[x],
               shape_str(c, vty(c, x)), shape_str(c, vty(c, r)));
        return true;
    }
    if (!kr || !ew || op == OP_SPLIT || op == OP_JOIN || op == OP_GATHER || op == OP_FLIP ||
        op == OP_EXPAND_DIMS || op == OP_RESHAPE || op == OP_PERMUTE) {
        Buf sh = {.a = c->a};
        type_print(&sh, vty(c, kr ? r : x));
        refuse(c, in->loc, "'%s' on a tile %s (a per-thread array): not printed yet", op_info[op].name, buf_str(&sh));
        return true;
    }
    if (op == OP_BROADCAST || op == OP_MULTIPLE_OF || op == OP_MAX_CONTIGUOUS || op == OP_STOP_GRADIENT) {
        c->var[r] = c->var[x]; /* [1, k] to [L, k]: the same array; a value to all elements: a splat */
        c->splat[r] = kx ? c->splat[x] : true;
        return true;
    }
    for (int k = 0; k < in->nargs; k++) {
        Dtype adt = vdt(c, in->args[k]);
        if (adt != DT_PTR && !cuda_dtype(adt, c->o->hip)) {
            refuse(c, in->loc, "'%s' of %s values", op_info[op].name, dtype_name(adt));
            return true;
        }
    }
    if (op == OP_CONST) { /* every element alike */
        c->var[r] = expr(c, in);
        c->splat[r] = true;
        return true;
    }
    c->jidx = true;
    const char *e = expr(c, in);
    c->jidx = false;
    if (!e) {
        refuse(c, in->loc, "'%s' (%%%s) has no CUDA C spelling in kad yet", op_info[op].name, c->irname[r]);
        return true;
    }
    array_assign(c, r, e, in->loc);
    return true;
}

/* ---- control flow ---- */

/* to = from (a variable holding a value of y's type); arrays element by element. */
static void copy_to(Cu *c, const char *to, ValId y, const char *from)
{
    if (!strcmp(to, from))
        return;
    if (width(c, y)) {
        line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", width(c, y));
        line(c, "    %s[kad_j] = %s;", to,
             from == c->var[y] ? elem_at(c, y, "kad_j") : arena_printf(c->a, "%s[kad_j]", from));
    } else {
        line(c, "%s = %s;", to, from);
    }
}

/* A temporary array n holding a copy of y's array. */
static void declare_copy(Cu *c, const char *n, ValId y)
{
    const char *ty = ctype(c, y, (Loc){0});
    line(c, "%s%s%s[%d];", ty, ty[strlen(ty) - 1] == '*' ? "" : " ", n, width(c, y));
    line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", width(c, y));
    line(c, "    %s[kad_j] = %s;", n, elem_at(c, y, "kad_j"));
}

/* Assigns the yielded values ys to the variables to (n of them), in parallel: through
 * temporaries when one of ys is a variable assigned before it is read. */
static void assign(Cu *c, const char *const *to, const ValId *ys, int n)
{
    bool clash = false;
    for (int k = 0; k < n && !clash; k++)
        for (int j = 0; j < k && !clash; j++)
            clash = c->var[ys[k]] == to[j] || !strcmp(val(c, ys[k]), to[j]);
    if (!clash) {
        for (int k = 0; k < n; k++)
            copy_to(c, to[k], ys[k], val(c, ys[k]));
        return;
    }
    const char **tmp = arena_alloc(c->a, sizeof *tmp * (size_t)(n + 1));
    for (int k = 0; k < n; k++) {
        tmp[k] = fresh(c, arena_printf(c->a, "%s_next", to[k]));
        if (width(c, ys[k])) {
            declare_copy(c, tmp[k], ys[k]);
            continue;
        }
        const char *ty = ctype(c, ys[k], (Loc){0});
        line(c, "%s%s%s = %s;", ty, ty[strlen(ty) - 1] == '*' ? "" : " ", tmp[k], val(c, ys[k]));
    }
    for (int k = 0; k < n; k++)
        copy_to(c, to[k], ys[k], tmp[k]);
}

static void print_for(Cu *c, const Inst *in)
{
    const Block *body = in->regions[0];
    int nc = in->nargs - 3;
    const char **vars = arena_alloc(c->a, sizeof *vars * (size_t)(nc + 1));
    for (int k = 0; k < nc; k++) {
        ValId prm = body->params[k + 1], res = in->res[k];
        ValId nm = c->f->vals.v[prm].name || !c->f->vals.v[res].name ? prm : res;
        vars[k] = declare(c, nm, in->args[3 + k], in->loc);
        c->var[prm] = c->var[res] = vars[k];
    }
    ValId iv = body->params[0];
    c->var[iv] = name_for(c, iv);
    /* the step's sign decides the test; a constant step prints the plain one */
    const char *st = val(c, in->args[2]);
    const Inst *sd = c->def[in->args[2]];
    bool known = sd && sd->op == OP_CONST && sd->ival != 0;
    long long stc = known ? (long long)sd->ival : 0;
    const char *test;
    if (known)
        test = arena_printf(c->a, "%s %s %s", c->var[iv], stc > 0 ? "<" : ">", val(c, in->args[1]));
    else
        test = arena_printf(c->a, "%s > 0 ? %s < %s : %s > %s", st, c->var[iv], val(c, in->args[1]), c->var[iv],
                            val(c, in->args[1]));
    const char *step = known && stc == 1 ? arena_printf(c->a, "%s++", c->var[iv])
                                         : arena_printf(c->a, "%s += %s", c->var[iv], st);
    line(c, "for (%s %s = %s; %s; %s) {", ctype(c, iv, in->loc), c->var[iv], val(c, in->args[0]), test, step);
    c->depth++;
    print_block(c, body, vars);
    c->depth--;
    line(c, "}");
}

static void print_if(Cu *c, const Inst *in)
{
    const char **vars = arena_alloc(c->a, sizeof *vars * (size_t)(in->nres + 1));
    for (int k = 0; k < in->nres; k++)
        vars[k] = c->var[in->res[k]] = declare(c, in->res[k], 0, in->loc);
    line(c, "if (%s) {", val(c, in->args[0]));
    c->depth++;
    print_block(c, in->regions[0], vars);
    c->depth--;
    const Block *e = in->regions[1];
    if (e->insts.n > 1 || in->nres) {
        line(c, "} else {");
        c->depth++;
        print_block(c, e, vars);
        c->depth--;
    }
    line(c, "}");
}

static void print_while(Cu *c, const Inst *in)
{
    const Block *cb = in->regions[0], *bb = in->regions[1];
    int n = in->nargs;
    const char **vars = arena_alloc(c->a, sizeof *vars * (size_t)(n + 1));
    for (int k = 0; k < n; k++) {
        vars[k] = declare(c, cb->params[k], in->args[k], in->loc);
        c->var[cb->params[k]] = c->var[bb->params[k]] = c->var[in->res[k]] = vars[k];
    }
    line(c, "while (true) {");
    c->depth++;
    print_block(c, cb, NULL);
    print_block(c, bb, vars);
    c->depth--;
    line(c, "}");
}

/* The instructions of b; its terminator assigns its values to yield_to (a condition breaks). */
static void print_block(Cu *c, const Block *b, const char *const *yield_to)
{
    for (int i = 0; i < b->insts.n && c->ok; i++) {
        const Inst *in = &b->insts.v[i];
        int op = in->op;
        if (array_inst(c, in))
            continue;
        switch (op) {
        case OP_YIELD:
            if (in->nargs)
                assign(c, yield_to, in->args, in->nargs);
            continue;
        case OP_CONDITION:
            line(c, c->inl[in->args[0]] ? "if (!%s)" : "if (!%s)", val(c, in->args[0]));
            line(c, "    break;");
            continue;
        case OP_FOR: print_for(c, in); continue;
        case OP_IF: print_if(c, in); continue;
        case OP_WHILE: print_while(c, in); continue;
        case OP_BROADCAST: case OP_MULTIPLE_OF: case OP_MAX_CONTIGUOUS: case OP_STOP_GRADIENT:
        case OP_CUSTOM_VJP: case OP_CUSTOM_JVP:
            /* a scalar is every thread's already; hints and identities: the value itself */
            c->var[in->res[0]] = c->var[in->args[0]];
            continue;
        case OP_RESHAPE: case OP_EXPAND_DIMS: case OP_PERMUTE:
            if (type_numel(vty(c, in->res[0])) == type_numel(vty(c, in->args[0])) && !width(c, in->res[0]) &&
                !width(c, in->args[0]) && (vty(c, in->res[0]).rank == 0) == (vty(c, in->args[0]).rank == 0)) {
                c->var[in->res[0]] = c->var[in->args[0]];
                continue;
            }
            break;
        case OP_LOAD: case OP_STORE: case OP_ATOMIC_ADD: case OP_ATOMIC_MAX: case OP_ATOMIC_MIN:
        case OP_ATOMIC_XCHG:
            memory(c, b, in);
            continue;
        case OP_SUM: case OP_MAX: case OP_MIN: case OP_ARGMAX: case OP_ARGMIN: case OP_REDUCE:
            if (op == OP_REDUCE && in->nargs > 1)
                multi_lane_op(c, in);
            else
                reduction(c, b, in);
            continue;
        case OP_CUMSUM: case OP_CUMPROD: case OP_SCAN:
            if (op == OP_SCAN && in->nargs > 1)
                multi_lane_op(c, in);
            else
                scan(c, b, in);
            continue;
        case OP_GATHER: case OP_FLIP:
            permute_lanes(c, b, in);
            continue;
        case OP_BARRIER:
            line(c, "__syncthreads();");
            continue;
        case OP_ASSERT: {
            const char *msg = in->sattr ? in->sattr : "";
            Buf m = {.a = c->a};
            for (const char *p = msg; *p; p++) {
                if (*p == '"' || *p == '\\')
                    buf_putc(&m, '\\');
                if ((unsigned char)*p >= ' ' && *p != 127)
                    buf_putc(&m, *p);
            }
            line(c, "assert((%s) && \"%s\");", val(c, in->args[0]), buf_str(&m));
            continue;
        }
        default:
            break;
        }
        const char *e = NULL;
        if (op_info[op].nres == 1 && op_info[op].nregions == 0 && op != OP_DOT && op != OP_JOIN && op != OP_SPLIT &&
            op != OP_SORT && op != OP_HISTOGRAM && op != OP_RESHAPE && op != OP_EXPAND_DIMS && op != OP_PERMUTE) {
            for (int k = 0; k < in->nargs; k++) {
                Dtype adt = vdt(c, in->args[k]);
                if (adt != DT_PTR && !cuda_dtype(adt, c->o->hip)) {
                    refuse(c, in->loc, "'%s' of %s values", op_info[op].name, dtype_name(adt));
                    return;
                }
            }
            e = expr(c, in);
        }
        if (!e) {
            Buf sh = {.a = c->a};
            for (int k = 0; k < in->nargs && k < 3; k++)
                buf_printf(&sh, "%s%%%s: %s", k ? ", " : "", c->irname[in->args[k]], shape_str(c, vty(c, in->args[k])));
            refuse(c, in->loc, "'%s' (%s%s%s) has no %s spelling in kad yet", op_info[op].name,
                   in->nres ? "%" : "", in->nres ? c->irname[in->res[0]] : "",
                   sh.len ? arena_printf(c->a, " of %s", buf_str(&sh)) : "", c->o->hip ? "HIP" : "CUDA C");
            return;
        }
        c->prec[in->res[0]] = (uint8_t)(op == OP_CAST && is_name_cast(e) ? 2 : top_prec(c, in));
        bind(c, b, in->res[0], e, true, in->loc);
    }
}

bool emit_cuda_kernel(Buf *out, Arena *a, Diags *d, const Func *f, const EmitCudaOpts *o, int *lanes,
                      unsigned *helpers)
{
    static const EmitCudaOpts none = {0};
    Cu c = {.a = a, .d = d, .f = f, .o = o ? o : &none, .ok = true, .pre = {.a = a}};
    int nv = f->vals.n;
    c.irname = ir_names(a, f);
    c.var = arena_alloc(a, sizeof *c.var * (size_t)nv);
    c.uses = arena_alloc(a, sizeof *c.uses * (size_t)nv);
    c.ublock = arena_alloc(a, sizeof *c.ublock * (size_t)nv);
    c.noinline = arena_alloc(a, sizeof *c.noinline * (size_t)nv);
    c.def = arena_alloc(a, sizeof *c.def * (size_t)nv);
    c.inl = arena_alloc(a, sizeof *c.inl * (size_t)nv);
    c.prec = arena_alloc(a, sizeof *c.prec * (size_t)nv);
    c.splat = arena_alloc(a, sizeof *c.splat * (size_t)nv);
    ir_index_defs(f->body, c.def);
    for (int i = 0; i < nv; i++)
        if (!c.irname[i])
            c.irname[i] = "?";
    int two = 0, one = 0;
    find_lanes(f, f->body, &two, &one);
    c.L = two ? two : one ? one : 1;
    check_shapes(&c, f->body);
    if (c.ok && c.L > 1024)
        refuse(&c, f->loc, "the kernel's tiles have %d lanes: a CUDA block has at most 1024 threads", c.L);
    if (!c.ok)
        return false;
    count_uses(&c, f->body);
    Buf body = {.a = a};
    c.out = &body;
    /* the parameters keep their names */
    Buf params = {.a = a};
    for (int i = 0; i < f->nparams; i++) {
        ValId p = f->params[i];
        c.var[p] = fresh(&c, cuda_ident(a, c.irname[p]));
        const char *ty = ctype(&c, p, f->vals.v[p].loc);
        buf_printf(&params, "%s%s%s%s", i ? ", " : "", ty, ty[strlen(ty) - 1] == '*' ? "" : " ", c.var[p]);
    }
    print_block(&c, f->body, NULL);
    if (!c.ok)
        return false;
    buf_puts(out, buf_str(&c.pre));
    const char *name = c.o->name ? c.o->name : f->name;
    buf_printf(out, "extern \"C\" __global__ void __launch_bounds__(%d) %s(%s)\n{\n", c.L, cuda_ident(a, name),
               buf_str(&params));
    for (int dt = 0; dt < DT_COUNT; dt++)
        if (c.smem & (1u << dt))
            buf_printf(out, "    __shared__ %s kad_smem_%s[%d];\n", cuda_dtype((Dtype)dt, c.o->hip),
                       dtype_name((Dtype)dt), c.L);
    for (int dt = 0; dt < DT_COUNT; dt++)
        for (int k = 1; k <= c.smem_more[dt]; k++)
            buf_printf(out, "    __shared__ %s kad_smem_%s_%d[%d];\n", cuda_dtype((Dtype)dt, c.o->hip),
                       dtype_name((Dtype)dt), k, c.L);
    if (c.smem_idx)
        buf_printf(out, "    __shared__ int32_t kad_smem_idx[%d];\n", c.L);
    buf_puts(out, buf_str(&body));
    buf_puts(out, "}\n");
    if (lanes)
        *lanes = c.L;
    if (helpers)
        *helpers |= c.helpers;
    return true;
}

/* ---- the prelude ---- */

static const char prelude_reduce[] =
    "// Block reductions in a fixed order: each step combines lane i with lane i + h, h the upper\n"
    "// half of the n lanes still live, until lane 0 holds the result, which every thread reads.\n"
    "// The same order on every run: the same bits.\n"
    "struct kad_add {\n"
    "    template <typename T> __device__ T operator()(T a, T b) const { return a + b; }\n"
    "};\n"
    "struct kad_mul {\n"
    "    template <typename T> __device__ T operator()(T a, T b) const { return a * b; }\n"
    "};\n"
    "struct kad_max { // maxnum: a NaN gives the other operand (tl.max)\n"
    "    __device__ float operator()(float a, float b) const { return fmaxf(a, b); }\n"
    "    __device__ double operator()(double a, double b) const { return fmax(a, b); }\n"
    "    template <typename T> __device__ T operator()(T a, T b) const { return a > b ? a : b; }\n"
    "};\n"
    "struct kad_min {\n"
    "    __device__ float operator()(float a, float b) const { return fminf(a, b); }\n"
    "    __device__ double operator()(double a, double b) const { return fmin(a, b); }\n"
    "    template <typename T> __device__ T operator()(T a, T b) const { return a < b ? a : b; }\n"
    "};\n"
    "\n"
    "template <int L, typename T, typename F>\n"
    "__device__ T kad_block_reduce(T v, T *buf, F combine)\n"
    "{\n"
    "    const int i = threadIdx.x;\n"
    "    buf[i] = v;\n"
    "    __syncthreads();\n"
    "    for (int n = L; n > 1; n = (n + 1) / 2) {\n"
    "        const int h = (n + 1) / 2;\n"
    "        if (i < n - h)\n"
    "            buf[i] = combine(buf[i], buf[i + h]);\n"
    "        __syncthreads();\n"
    "    }\n"
    "    const T r = buf[0];\n"
    "    __syncthreads(); // buf is free again for the next reduction\n"
    "    return r;\n"
    "}\n\n";

static const char prelude_arg[] =
    "// argmax / argmin in the same fixed order: the first index of the largest (smallest) value.\n"
    "template <bool MAX, int L, typename T>\n"
    "__device__ int32_t kad_block_argbest(T v, T *buf, int32_t *idx)\n"
    "{\n"
    "    const int i = threadIdx.x;\n"
    "    buf[i] = v;\n"
    "    idx[i] = i;\n"
    "    __syncthreads();\n"
    "    for (int n = L; n > 1; n = (n + 1) / 2) {\n"
    "        const int h = (n + 1) / 2;\n"
    "        if (i < n - h) {\n"
    "            const T a = buf[i], b = buf[i + h];\n"
    "            const int32_t ia = idx[i], ib = idx[i + h];\n"
    "            const bool take_b = (MAX ? b > a : b < a) || (b == a && ib < ia);\n"
    "            if (take_b) {\n"
    "                buf[i] = b;\n"
    "                idx[i] = ib;\n"
    "            }\n"
    "        }\n"
    "        __syncthreads();\n"
    "    }\n"
    "    const int32_t r = idx[0];\n"
    "    __syncthreads();\n"
    "    return r;\n"
    "}\n"
    "template <int L, typename T> __device__ int32_t kad_block_argmax(T v, T *buf, int32_t *idx)\n"
    "{\n"
    "    return kad_block_argbest<true, L>(v, buf, idx);\n"
    "}\n"
    "template <int L, typename T> __device__ int32_t kad_block_argmin(T v, T *buf, int32_t *idx)\n"
    "{\n"
    "    return kad_block_argbest<false, L>(v, buf, idx);\n"
    "}\n\n";

static const char prelude_scan[] =
    "// Inclusive scans along the lanes (Hillis-Steele, in a fixed order): step s combines the\n"
    "// running value of position j - s with that of j; reverse scans from the last lane.\n"
    "template <int L, typename T, typename F>\n"
    "__device__ T kad_block_scan(T v, T *buf, bool reverse, F combine)\n"
    "{\n"
    "    const int j = reverse ? L - 1 - (int)threadIdx.x : (int)threadIdx.x;\n"
    "    buf[j] = v;\n"
    "    __syncthreads();\n"
    "    for (int s = 1; s < L; s *= 2) {\n"
    "        const T before = j >= s ? buf[j - s] : v;\n"
    "        __syncthreads();\n"
    "        if (j >= s)\n"
    "            v = combine(before, v);\n"
    "        buf[j] = v;\n"
    "        __syncthreads();\n"
    "    }\n"
    "    return v;\n"
    "}\n\n";

static const char prelude_gather[] =
    "// Lane i reads lane k of v (a gather or a flip along the lanes) through shared memory.\n"
    "template <int L, typename T>\n"
    "__device__ T kad_block_gather(T v, T *buf, int k)\n"
    "{\n"
    "    buf[threadIdx.x] = v;\n"
    "    __syncthreads();\n"
    "    const T r = buf[k];\n"
    "    __syncthreads();\n"
    "    return r;\n"
    "}\n\n";

static const char prelude_rand[] =
    "// Philox 4x32-10 as triton.language.random: counter (offset, 0, 0, 0), key the seed as uint64\n"
    "// (low half, high half); tl.rand, tl.randn (Box-Muller) and tl.randint of the first draws.\n"
    "__device__ inline void kad_philox(uint32_t c[4], uint64_t seed)\n"
    "{\n"
    "    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);\n"
    "    for (int r = 0; r < 10; r++) {\n"
    "        const uint64_t pb = (uint64_t)0xCD9E8D57u * c[2], pa = (uint64_t)0xD2511F53u * c[0];\n"
    "        c[0] = (uint32_t)(pb >> 32) ^ c[1] ^ k0;\n"
    "        c[2] = (uint32_t)(pa >> 32) ^ c[3] ^ k1;\n"
    "        c[1] = (uint32_t)pb;\n"
    "        c[3] = (uint32_t)pa;\n"
    "        k0 += 0x9E3779B9u;\n"
    "        k1 += 0xBB67AE85u;\n"
    "    }\n"
    "}\n"
    "__device__ inline float kad_uniform(uint32_t x)\n"
    "{ // uint_to_uniform_float: negatives folded onto the non-negatives, times 2^-31 (rounded down)\n"
    "    const int32_t s = (int32_t)x < 0 ? (int32_t)~x : (int32_t)x;\n"
    "    return (float)s * 4.6566127342e-10f;\n"
    "}\n"
    "__device__ inline uint32_t kad_randint(uint64_t seed, uint32_t offset)\n"
    "{\n"
    "    uint32_t c[4] = {offset, 0, 0, 0};\n"
    "    kad_philox(c, seed);\n"
    "    return c[0];\n"
    "}\n"
    "__device__ inline float kad_rand(uint64_t seed, uint32_t offset) { return kad_uniform(kad_randint(seed, offset)); }\n"
    "__device__ inline float kad_randn(uint64_t seed, uint32_t offset)\n"
    "{\n"
    "    uint32_t c[4] = {offset, 0, 0, 0};\n"
    "    kad_philox(c, seed);\n"
    "    const float u1 = fmaxf(1.0e-7f, kad_uniform(c[0])), u2 = kad_uniform(c[1]);\n"
    "    return sqrtf(-2.0f * logf(u1)) * cosf(6.283185307179586f * u2);\n"
    "}\n\n";

void emit_cuda_prelude(Buf *out, const EmitCudaOpts *o, unsigned helpers)
{
    if (o && o->hip)
        buf_puts(out, "#include <hip/hip_runtime.h>\n#include <hip/hip_fp16.h>\n#include <hip/hip_bf16.h>\n");
    else
        buf_puts(out, "#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n");
    buf_puts(out, "#include <assert.h>\n#include <math.h>\n#include <stdint.h>\n\n");
    if (helpers & (CU_H_REDUCE | CU_H_SCAN))
        buf_puts(out, prelude_reduce);
    if (helpers & CU_H_ARG)
        buf_puts(out, prelude_arg);
    if (helpers & CU_H_SCAN)
        buf_puts(out, prelude_scan);
    if (helpers & CU_H_GATHER)
        buf_puts(out, prelude_gather);
    if (helpers & CU_H_RAND)
        buf_puts(out, prelude_rand);
}
