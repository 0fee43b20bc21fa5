/* emit_cuda.c -- an IR Func as a CUDA C (or HIP) `__global__` kernel.
 *
 * The model (docs/EMIT.md, "CUDA C"): a block's threads are the lanes of
 * the kernel's tiles.  L, the block size, is the first axis of its tiles
 * [L, k] (per-thread arrays) or the size of its largest 1-D tile; thread i
 * holds lane i of every tile [L] in one C variable; a scalar (rank 0) is a C
 * variable that every thread computes alike, and so is a row (a 1-D tile of
 * another size, a tile [1, k]), so the IR's control flow, whose conditions
 * are scalars, is uniform across the block and every thread reaches every
 * __syncthreads().  program_id(a) is blockIdx, num_programs(a) gridDim,
 * `arange s` threadIdx.x + s.
 *
 * This file: names, types, constants, expressions, memory ops (a mask is a
 * condition around the access; a scalar store or atomic, one per program in
 * the IR, is thread 0's), control flow and the kernel.  emit_cuda_lanes.c:
 * reductions, scans and gathers along the lanes (shared memory, a fixed
 * order: the same bits on every run), per-thread arrays, the prelude.
 *
 * Requires a verified Func.  Refuses, with a located error naming the value,
 * every op or shape it has no exact spelling for (tiles of rank 3, dot, sort,
 * random numbers of 64-bit offsets, fp8, ...).  It reads the IR alone.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "emit/emit_cuda.h"
#include "emit/emit_cuda_int.h"

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

void ecu_refuse(Cu *c, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *m = arena_vprintf(c->a, fmt, ap);
    va_end(ap);
    diag_error(c->d, loc, "CUDA C emitter: %s", m);
    c->ok = false;
}

const char *ecu_shape_str(Cu *c, Type t)
{
    Buf b = {.a = c->a};
    type_print(&b, t);
    return buf_str(&b);
}

/* A fresh C name for base (taken: suffixed _1, _2, ...). */
const char *ecu_fresh(Cu *c, const char *base)
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
const char *ecu_name_for(Cu *c, ValId v)
{
    const char *hint = c->f->vals.v[v].name;
    if (hint && *hint)
        return ecu_fresh(c, cuda_ident(c->a, c->irname[v] ? c->irname[v] : hint));
    return ecu_fresh(c, arena_printf(c->a, "tmp%d", c->ntmp++));
}


/* The C type of value v (pointers: the pointee's type and '*'). */
const char *ecu_ctype(Cu *c, ValId v, Loc loc)
{
    Type t = cu_vty(c, v);
    Dtype dt = t.dt == DT_PTR ? (Dtype)t.elem : (Dtype)t.dt;
    const char *s = cuda_dtype(dt, c->o->hip);
    if (!s) {
        ecu_refuse(c, loc, "%%%s has type %s, which has no CUDA C spelling here", c->irname[v], ecu_shape_str(c, t));
        return "void";
    }
    return t.dt == DT_PTR ? arena_printf(c->a, "%s *", s) : s;
}

/* Whether type t is held per lane: its first axis is the block's threads (t is [L] or [L, k]). */
bool ecu_lanes_of(Cu *c, Type t) { return t.rank >= 1 && t.shape[0] == c->L && c->L > 1; }

/* The per-thread array length of v: k for a tile [L, k] with k > 1 (thread i holds row i,
 * `T v[k]`) and for a uniform row [k] or [1, k] (a tile whose first axis is not the threads:
 * every thread holds all of it, alike); 0 for a scalar, a lane value [L] and [L, 1]. */
int ecu_width(Cu *c, ValId v)
{
    Type t = cu_vty(c, v);
    if (ecu_lanes_of(c, t))
        return t.rank == 2 && t.shape[1] > 1 ? t.shape[1] : 0;
    return t.rank ? (int)type_numel(t) : 0;
}

/* Whether v is a uniform row (every thread holds the same k elements). */
bool ecu_is_row(Cu *c, ValId v) { return cu_vty(c, v).rank >= 1 && !ecu_lanes_of(c, cu_vty(c, v)); }

/* The C expression of v: its variable, or its inlined expression; an array's element kad_j while
 * an array op is printed. */
const char *ecu_val(Cu *c, ValId v)
{
    if (!c->var[v])
        return "?";
    return c->jidx && ecu_width(c, v) && !c->splat[v] ? arena_printf(c->a, "%s[kad_j]", c->var[v]) : c->var[v];
}

/* Element idx of array v (a splat's every element is its var). */
const char *ecu_elem_at(Cu *c, ValId v, const char *idx)
{
    return c->splat[v] ? c->var[v] : arena_printf(c->a, "%s[%s]", c->var[v], idx);
}

/* ecu_val(v) without the parentheses around an inlined expression, where it stands alone (a call's
 * argument, the right-hand side of an assignment). */
const char *ecu_bare(Cu *c, ValId v)
{
    const char *e = ecu_val(c, v);
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
    Dtype dt = cu_vdt(c, v);
    if (dt == DT_F16)
        return arena_printf(c->a, "__half2float(%s)", ecu_val(c, v));
    if (dt == DT_BF16)
        return arena_printf(c->a, "__bfloat162float(%s)", ecu_val(c, v));
    return ecu_val(c, v);
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
    double r = dbl ? x : dtype_round(cu_is16(dt) ? dt : DT_F32, x);
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
    return cu_is16(dt) ? down(c, dt, s) : s;
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
const char *ecu_zero(Cu *c, Dtype dt)
{
    return dtype_is_float(dt) ? flit(c, dt, 0.0) : ilit(c, dt, 0);
}

/* ---- shapes: the lane count ---- */


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
        Type t = cu_vty(c, b->params[i]);
        if (!shape_ok(c, t))
            ecu_refuse(c, c->f->vals.v[b->params[i]].loc, "%%%s has shape %s: the kernel's tiles are [%d] or [%d, k]",
                   c->irname[b->params[i]], ecu_shape_str(c, t), c->L, c->L);
    }
    for (int i = 0; i < b->insts.n && c->ok; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nres && c->ok; r++) {
            Type t = cu_vty(c, in->res[r]);
            if (c->absorbed[in->res[r]])
                continue; /* not printed: a scatter-add reads it */
            if (t.rank > 2 || (t.rank == 2 && !shape_ok(c, t)))
                ecu_refuse(c, in->loc, "%%%s has shape %s: only scalars, 1-D tiles (the block's %d threads, or a row "
                       "of at most %d that every thread holds), tiles [%d, k] and [1, k] of k <= %d (per-thread "
                       "arrays) are printed as CUDA C yet", c->irname[in->res[r]], ecu_shape_str(c, t), c->L, CU_MAX_ROW,
                       c->L, CU_MAX_ROW);
            else if (!shape_ok(c, t))
                ecu_refuse(c, in->loc, "%%%s has shape %s, but the kernel's tiles are [%d]: a CUDA C kernel's 1-D tiles "
                       "are its %d threads, or rows of at most %d elements that every thread holds",
                       c->irname[in->res[r]], ecu_shape_str(c, t), c->L, c->L, CU_MAX_ROW);
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

void ecu_line(Cu *c, const char *fmt, ...)
{
    for (int i = 0; i < c->depth + 1; i++)
        buf_puts(c->out, "    ");
    va_list ap;
    va_start(ap, fmt);
    buf_puts(c->out, arena_vprintf(c->a, fmt, ap));
    va_end(ap);
    buf_putc(c->out, '\n');
}

/* assert(x && "message"): the message as a C string (quotes and backslashes escaped, control
 * characters dropped); x is element kad_j of an array while c->jidx is set. */
void ecu_print_assert(Cu *c, const Inst *in)
{
    const char *msg = in->sattr ? in->sattr : "";
    Buf m = {.a = c->a};
    for (const char *p = msg; *p; p++) {
        if (*p == '"' || *p == '\\')
            buf_putc(&m, '\\');
        if ((unsigned char)*p >= ' ' && *p != 127)
            buf_putc(&m, *p);
    }
    ecu_line(c, "assert((%s) && \"%s\");", ecu_val(c, in->args[0]), buf_str(&m));
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
void ecu_bind(Cu *c, const Block *b, ValId v, const char *e, bool pure, Loc loc)
{
    const char *ty = ecu_ctype(c, v, loc);
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
    c->var[v] = ecu_name_for(c, v);
    if (ty[strlen(ty) - 1] == '*') /* the pointer is constant, not what it points to */
        ecu_line(c, "%sconst %s = %s;", ty, c->var[v], e);
    else
        ecu_line(c, "const %s %s = %s;", ty, c->var[v], e);
}

/* Declares a mutable variable for a loop's carried value or an if's result. */
const char *ecu_declare(Cu *c, ValId v, ValId initv, Loc loc)
{
    const char *ty = ecu_ctype(c, v, loc), *n = ecu_name_for(c, v), *init = initv ? ecu_val(c, initv) : NULL;
    const char *sp = ty[strlen(ty) - 1] == '*' ? "" : " ";
    if (ecu_width(c, v)) { /* a per-thread array: copied element by element */
        ecu_line(c, "%s%s%s[%d];", ty, sp, n, ecu_width(c, v));
        if (initv) {
            ecu_line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", ecu_width(c, v));
            ecu_line(c, "    %s[kad_j] = %s;", n, ecu_elem_at(c, initv, "kad_j"));
        }
        return n;
    }
    if (init)
        ecu_line(c, "%s%s%s = %s;", ty, sp, n, init);
    else
        ecu_line(c, "%s%s%s;", ty, sp, n);
    return n;
}


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
    Dtype dt = cu_vdt(c, in->res[0]);
    if (cu_is16(dt) || (dtype_is_int(dt) && dt != DT_I1 && dtype_bits(dt) < 32))
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
        return ecu_bare(c, v);
    return ecu_val(c, v);
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
    Dtype from = cu_vdt(c, v);
    const char *x = ecu_val(c, v), *tn = cuda_dtype(to, c->o->hip);
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
    if (cu_is16(to)) {
        if (cu_is16(from) || from == DT_F32)
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
    if (cu_is16(from)) /* exact in float: then as from fp32 */
        return to == DT_F32 ? up(c, v) : arena_printf(c->a, "(%s)%s", tn, up(c, v));
    return arena_printf(c->a, "(%s)%s", tn, x);
}

/* A bitcast of v to the result type of in. */
static const char *bitcast(Cu *c, const Inst *in)
{
    ValId v = in->args[0];
    Type t = cu_vty(c, in->res[0]), s = cu_vty(c, v);
    const char *x = ecu_val(c, v);
    if (t.dt == DT_PTR && s.dt == DT_PTR)
        return arena_printf(c->a, "(%s)%s", ecu_ctype(c, in->res[0], in->loc), x);
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
const char *ecu_expr(Cu *c, const Inst *in)
{
    int op = in->op;
    ValId r = in->res[0];
    Dtype dt = cu_vdt(c, r), adt = in->nargs ? cu_vdt(c, in->args[0]) : DT_VOID;
    const char *a0 = in->nargs > 0 ? ecu_val(c, in->args[0]) : NULL;
    const char *a1 = in->nargs > 1 ? ecu_val(c, in->args[1]) : NULL;
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
            if (cu_is16(dt))
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
        return arena_printf(c->a, "%s ? %s : %s", a0, a1, ecu_val(c, in->args[2]));
    case OP_CAST: {
        if (dt == DT_PTR) {
            if (adt == DT_I64 || adt == DT_U64)
                return arena_printf(c->a, "(%s)(uintptr_t)%s", ecu_ctype(c, r, in->loc), a0);
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
                            ecu_val(c, in->args[2]));
    default:
        break;
    }
    if (op == OP_RAND || op == OP_RANDN || op == OP_RANDINT) {
        Dtype ot = cu_vdt(c, in->args[1]);
        if (dtype_bits(ot) != 32 || !dtype_is_int(cu_vdt(c, in->args[0])))
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
            return down(c, dt, arena_printf(c->a, "%s%s(%s, %s)", m, cu_vdt(c, in->args[1]) == DT_F64 ? "" : "f", a0,
                                            up(c, in->args[1])));
        if (op == OP_LDEXP)
            return down(c, dt, arena_printf(c->a, "%s%s(%s, %s)", m, sfx, up(c, in->args[0]), a1));
        Buf b = {.a = c->a};
        buf_printf(&b, "%s%s(", m, sfx);
        for (int k = 0; k < in->nargs; k++)
            buf_printf(&b, "%s%s", k ? ", " : "", cu_is16(cu_vdt(c, in->args[k])) ? up(c, in->args[k]) : ecu_bare(c, in->args[k]));
        buf_puts(&b, ")");
        return op == OP_ILOGB ? buf_str(&b) : down(c, dt, buf_str(&b));
    }
    return NULL;
}

/* ---- memory ---- */

static void memory(Cu *c, const Block *b, const Inst *in)
{
    ValId p = in->args[0];
    bool lane = cu_vty(c, p).rank >= 1; /* [L] or [L, 1]: thread i's element */
    Dtype el = (Dtype)cu_vty(c, p).elem;
    if (!cuda_dtype(el, c->o->hip)) {
        ecu_refuse(c, in->loc, "'%s' of %s elements", op_info[in->op].name, dtype_name(el));
        return;
    }
    int at = in->op == OP_LOAD ? 1 : 2;
    const char *mask = in->flags & IF_HAS_MASK ? ecu_val(c, in->args[at]) : NULL;
    const char *ptr = ecu_val(c, p);
    /* *(base + off) reads better as base[off] when the address was inlined */
    const Inst *pd = c->def[p];
    const char *elem = pd && pd->op == OP_ADDPTR && c->inl[p]
                           ? arena_printf(c->a, "%s[%s]", ecu_val(c, pd->args[0]), ecu_val(c, pd->args[1]))
                           : arena_printf(c->a, "*%s", ptr);
    if (in->op == OP_LOAD) {
        const char *other = in->flags & IF_HAS_OTHER ? ecu_val(c, in->args[at + 1]) : ecu_zero(c, el);
        const char *e = mask ? arena_printf(c->a, "%s ? %s : %s", mask, elem, other) : elem;
        ecu_bind(c, b, in->res[0], e, false, in->loc);
        return;
    }
    const char *v = ecu_bare(c, in->args[1]);
    /* a scalar access is one per program: thread 0 makes it */
    const char *cond = !lane ? (mask ? arena_printf(c->a, "threadIdx.x == 0 && %s", mask) : "threadIdx.x == 0") : mask;
    if (in->op == OP_STORE) {
        if (cond)
            ecu_line(c, "if (%s)", cond), c->depth++;
        ecu_line(c, "%s = %s;", elem, v);
        if (cond)
            c->depth--;
        return;
    }
    const char *fn = in->op == OP_ATOMIC_ADD ? "atomicAdd" : in->op == OP_ATOMIC_MAX ? "atomicMax"
                     : in->op == OP_ATOMIC_MIN ? "atomicMin" : "atomicExch";
    bool okdt = el == DT_I32 || el == DT_U32 || el == DT_U64 ||
                (in->op == OP_ATOMIC_ADD && (el == DT_F32 || el == DT_F64 || (cu_is16(el) && !c->o->hip))) ||
                (in->op == OP_ATOMIC_XCHG && el == DT_F32) ||
                ((in->op == OP_ATOMIC_MAX || in->op == OP_ATOMIC_MIN) && el == DT_I64);
    if (!okdt) {
        ecu_refuse(c, in->loc, "'%s' on %s elements has no CUDA atomic", op_info[in->op].name, dtype_name(el));
        return;
    }
    ValId r = in->res[0];
    bool used = c->uses[r] > 0;
    if (used && !lane) {
        ecu_refuse(c, in->loc, "the old value of a scalar '%s' (%%%s) is read: the CUDA C emitter makes a scalar atomic "
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
            ecu_line(c, "if (%s)", cond), c->depth++;
        ecu_line(c, "%s;", call);
        if (cond)
            c->depth--;
        return;
    }
    const char *e = mask ? arena_printf(c->a, "%s ? (%s)%s : %s", mask, cuda_dtype(el, c->o->hip), call, ecu_zero(c, el))
                         : call;
    ecu_bind(c, b, r, e, false, in->loc);
}

/* ---- control flow ---- */

/* to = from (a variable holding a value of y's type); arrays element by element. */
static void copy_to(Cu *c, const char *to, ValId y, const char *from)
{
    if (!strcmp(to, from))
        return;
    if (ecu_width(c, y)) {
        ecu_line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", ecu_width(c, y));
        ecu_line(c, "    %s[kad_j] = %s;", to,
             from == c->var[y] ? ecu_elem_at(c, y, "kad_j") : arena_printf(c->a, "%s[kad_j]", from));
    } else {
        ecu_line(c, "%s = %s;", to, from);
    }
}

/* A temporary array n holding a copy of y's array. */
static void declare_copy(Cu *c, const char *n, ValId y)
{
    const char *ty = ecu_ctype(c, y, (Loc){0});
    ecu_line(c, "%s%s%s[%d];", ty, ty[strlen(ty) - 1] == '*' ? "" : " ", n, ecu_width(c, y));
    ecu_line(c, "for (int kad_j = 0; kad_j < %d; kad_j++)", ecu_width(c, y));
    ecu_line(c, "    %s[kad_j] = %s;", n, ecu_elem_at(c, y, "kad_j"));
}

/* Assigns the yielded values ys to the variables to (n of them), in parallel: through
 * temporaries when one of ys is a variable assigned before it is read. */
static void assign(Cu *c, const char *const *to, const ValId *ys, int n)
{
    bool clash = false;
    for (int k = 0; k < n && !clash; k++)
        for (int j = 0; j < k && !clash; j++)
            clash = c->var[ys[k]] == to[j] || !strcmp(ecu_val(c, ys[k]), to[j]);
    if (!clash) {
        for (int k = 0; k < n; k++)
            copy_to(c, to[k], ys[k], ecu_val(c, ys[k]));
        return;
    }
    const char **tmp = arena_alloc(c->a, sizeof *tmp * (size_t)(n + 1));
    for (int k = 0; k < n; k++) {
        tmp[k] = ecu_fresh(c, arena_printf(c->a, "%s_next", to[k]));
        if (ecu_width(c, ys[k])) {
            declare_copy(c, tmp[k], ys[k]);
            continue;
        }
        const char *ty = ecu_ctype(c, ys[k], (Loc){0});
        ecu_line(c, "%s%s%s = %s;", ty, ty[strlen(ty) - 1] == '*' ? "" : " ", tmp[k], ecu_val(c, ys[k]));
    }
    for (int k = 0; k < n; k++)
        copy_to(c, to[k], ys[k], tmp[k]);
}

/* A loop-carried scalar that only accumulates a block reduction each iteration, acc' = acc +
 * sum(x) with x a lane tile (a reverse sweep's adjoint of a value every thread shares): each
 * thread adds its lane of x into a variable of its own, and one block reduction after the loop
 * adds them up, instead of a reduction (and its barriers) per iteration.  The additions are
 * reassociated (each thread's in iteration order, then the fixed tree): other bits than the IR's
 * order, the same on every run.  Declares the accumulators; the number found. */
static int hoist_sums(Cu *c, const Inst *in, const char *const *vars)
{
    const Block *body = in->regions[0];
    const Inst *yl = body->insts.n ? &body->insts.v[body->insts.n - 1] : NULL;
    int nc = in->nargs - 3, found = 0;
    if (!yl || yl->op != OP_YIELD || yl->nargs != nc)
        return 0;
    for (int k = 0; k < nc; k++) {
        ValId prm = body->params[k + 1], y = yl->args[k];
        const Inst *ad = c->def[y];
        Dtype dt = cu_vdt(c, y);
        if (!ad || ad->op != OP_ADD || cu_vty(c, y).rank || (dt != DT_F32 && dt != DT_F64) || c->uses[prm] != 1 ||
            c->uses[y] != 1)
            continue;
        ValId t = ad->args[0] == prm ? ad->args[1] : ad->args[1] == prm ? ad->args[0] : 0;
        const Inst *sm = t ? c->def[t] : NULL;
        if (!sm || sm->op != OP_SUM || sm->ival != 0 || c->uses[t] != 1 || !cu_is_lane(c, sm->args[0]) ||
            ecu_is_row(c, sm->args[0]) || cu_vdt(c, sm->args[0]) != dt || (sm->flags & IF_KEEP_DIMS))
            continue;
        c->lane_acc[y] = ecu_fresh(c, arena_printf(c->a, "%s_lanes", vars[k]));
        c->hoisted[t] = true;
        c->var[y] = vars[k];
        c->helpers |= CU_H_REDUCE;
        ecu_line(c, "%s %s = %s; // this thread's part of %s's sums over the block, reduced after the loop",
                 ecu_ctype(c, y, in->loc), c->lane_acc[y], ecu_zero(c, dt), vars[k]);
        found++;
    }
    return found;
}

static void print_for(Cu *c, const Inst *in)
{
    const Block *body = in->regions[0];
    int nc = in->nargs - 3;
    const char **vars = arena_alloc(c->a, sizeof *vars * (size_t)(nc + 1));
    for (int k = 0; k < nc; k++) {
        ValId prm = body->params[k + 1], res = in->res[k];
        ValId nm = c->f->vals.v[prm].name || !c->f->vals.v[res].name ? prm : res;
        vars[k] = ecu_declare(c, nm, in->args[3 + k], in->loc);
        c->var[prm] = c->var[res] = vars[k];
    }
    ValId iv = body->params[0];
    c->var[iv] = ecu_name_for(c, iv);
    /* the step's sign decides the test; a constant step prints the plain one */
    const char *st = ecu_val(c, in->args[2]);
    const Inst *sd = c->def[in->args[2]];
    bool known = sd && sd->op == OP_CONST && sd->ival != 0;
    long long stc = known ? (long long)sd->ival : 0;
    const char *test;
    if (known)
        test = arena_printf(c->a, "%s %s %s", c->var[iv], stc > 0 ? "<" : ">", ecu_val(c, in->args[1]));
    else
        test = arena_printf(c->a, "%s > 0 ? %s < %s : %s > %s", st, c->var[iv], ecu_val(c, in->args[1]), c->var[iv],
                            ecu_val(c, in->args[1]));
    const char *step = known && stc == 1 ? arena_printf(c->a, "%s++", c->var[iv])
                                         : arena_printf(c->a, "%s += %s", c->var[iv], st);
    /* a loop over memory with a trip count known only at run time (a grid-stride loop): not
     * unrolled. nvcc's 4x unrolling keeps four iterations' values live (Swish's backward launcher
     * on an H200: 48 registers instead of 28, 109 us instead of 87 with its memset;
     * docs/BENCHMARKS.md) where the other warps already hide the loads' latency */
    int nh = hoist_sums(c, in, vars);
    const Inst *lo = c->def[in->args[0]], *hi = c->def[in->args[1]];
    if ((!lo || lo->op != OP_CONST || !hi || hi->op != OP_CONST) && ir_block_has_op(body, OP_LOAD))
        ecu_line(c, "#pragma unroll 1");
    ecu_line(c, "for (%s %s = %s; %s; %s) {", ecu_ctype(c, iv, in->loc), c->var[iv], ecu_val(c, in->args[0]), test, step);
    c->depth++;
    ecu_print_block(c, body, vars);
    c->depth--;
    ecu_line(c, "}");
    for (int k = 0; k < nc && nh; k++) {
        ValId y = body->insts.v[body->insts.n - 1].args[k];
        if (c->lane_acc[y])
            ecu_line(c, "%s = %s + kad_block_reduce<%d>(%s, %s, kad_add());", vars[k], vars[k], c->L, c->lane_acc[y],
                     ecu_smem(c, cu_vdt(c, y)));
    }
}

static void print_if(Cu *c, const Inst *in)
{
    const char **vars = arena_alloc(c->a, sizeof *vars * (size_t)(in->nres + 1));
    for (int k = 0; k < in->nres; k++)
        vars[k] = c->var[in->res[k]] = ecu_declare(c, in->res[k], 0, in->loc);
    const Block *e = in->regions[1];
    if (!in->nres && in->regions[0]->insts.n <= 1 && e->insts.n > 1) { /* `if c: pass else: ...` (a gather's flag) */
        ecu_line(c, "if (!%s) {", ecu_val(c, in->args[0]));
        c->depth++;
        ecu_print_block(c, e, vars);
        c->depth--;
        ecu_line(c, "}");
        return;
    }
    ecu_line(c, "if (%s) {", ecu_val(c, in->args[0]));
    c->depth++;
    ecu_print_block(c, in->regions[0], vars);
    c->depth--;
    if (e->insts.n > 1 || in->nres) {
        ecu_line(c, "} else {");
        c->depth++;
        ecu_print_block(c, e, vars);
        c->depth--;
    }
    ecu_line(c, "}");
}

static void print_while(Cu *c, const Inst *in)
{
    const Block *cb = in->regions[0], *bb = in->regions[1];
    int n = in->nargs;
    const char **vars = arena_alloc(c->a, sizeof *vars * (size_t)(n + 1));
    for (int k = 0; k < n; k++) {
        vars[k] = ecu_declare(c, cb->params[k], in->args[k], in->loc);
        c->var[cb->params[k]] = c->var[bb->params[k]] = c->var[in->res[k]] = vars[k];
    }
    ecu_line(c, "while (true) {");
    c->depth++;
    ecu_print_block(c, cb, NULL);
    ecu_print_block(c, bb, vars);
    c->depth--;
    ecu_line(c, "}");
}

/* The instructions of b; its terminator assigns its values to yield_to (a condition breaks). */
void ecu_print_block(Cu *c, const Block *b, const char *const *yield_to)
{
    for (int i = 0; i < b->insts.n && c->ok; i++) {
        const Inst *in = &b->insts.v[i];
        int op = in->op;
        if (in->nres && c->absorbed[in->res[0]])
            continue; /* read only by scatter-adds, which print without it */
        if (in->nres && c->scat_idx[in->res[0]]) {
            ecu_scatter_add(c, b, in);
            continue;
        }
        if (in->nres && c->hoisted[in->res[0]])
            continue; /* its lanes go into an accumulator (hoist_sums) */
        if (in->nres && c->lane_acc[in->res[0]]) {
            const Inst *sm = c->def[c->hoisted[in->args[0]] ? in->args[0] : in->args[1]];
            const char *acc = c->lane_acc[in->res[0]];
            ecu_line(c, "%s = %s + %s;", acc, acc, ecu_val(c, sm->args[0]));
            continue;
        }
        if (ecu_array_inst(c, in))
            continue;
        switch (op) {
        case OP_YIELD:
            if (in->nargs)
                assign(c, yield_to, in->args, in->nargs);
            continue;
        case OP_CONDITION:
            ecu_line(c, c->inl[in->args[0]] ? "if (!%s)" : "if (!%s)", ecu_val(c, in->args[0]));
            ecu_line(c, "    break;");
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
            if (type_numel(cu_vty(c, in->res[0])) == type_numel(cu_vty(c, in->args[0])) && !ecu_width(c, in->res[0]) &&
                !ecu_width(c, in->args[0]) && (cu_vty(c, in->res[0]).rank == 0) == (cu_vty(c, in->args[0]).rank == 0)) {
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
                ecu_multi_lane_op(c, in);
            else
                ecu_reduction(c, b, in);
            continue;
        case OP_CUMSUM: case OP_CUMPROD: case OP_SCAN:
            if (op == OP_SCAN && in->nargs > 1)
                ecu_multi_lane_op(c, in);
            else
                ecu_scan(c, b, in);
            continue;
        case OP_GATHER: case OP_FLIP:
            ecu_permute_lanes(c, b, in);
            continue;
        case OP_BARRIER:
            /* {lanes = L} with L the block's threads: it orders read-modify-writes of elements each
             * of which one lane, here one thread, touches; a thread's own accesses are in program
             * order already */
            if (in->ival != c->L)
                ecu_line(c, "__syncthreads();");
            continue;
        case OP_ASSERT:
            ecu_print_assert(c, in);
            continue;
        default:
            break;
        }
        const char *e = NULL;
        if (op_info[op].nres == 1 && op_info[op].nregions == 0 && op != OP_DOT && op != OP_JOIN && op != OP_SPLIT &&
            op != OP_SORT && op != OP_HISTOGRAM && op != OP_RESHAPE && op != OP_EXPAND_DIMS && op != OP_PERMUTE) {
            for (int k = 0; k < in->nargs; k++) {
                Dtype adt = cu_vdt(c, in->args[k]);
                if (adt != DT_PTR && !cuda_dtype(adt, c->o->hip)) {
                    ecu_refuse(c, in->loc, "'%s' of %s values", op_info[op].name, dtype_name(adt));
                    return;
                }
            }
            e = ecu_expr(c, in);
        }
        if (!e) {
            Buf sh = {.a = c->a};
            for (int k = 0; k < in->nargs && k < 3; k++)
                buf_printf(&sh, "%s%%%s: %s", k ? ", " : "", c->irname[in->args[k]], ecu_shape_str(c, cu_vty(c, in->args[k])));
            ecu_refuse(c, in->loc, "'%s' (%s%s%s) has no %s spelling in kad yet", op_info[op].name,
                   in->nres ? "%" : "", in->nres ? c->irname[in->res[0]] : "",
                   sh.len ? arena_printf(c->a, " of %s", buf_str(&sh)) : "", c->o->hip ? "HIP" : "CUDA C");
            return;
        }
        c->prec[in->res[0]] = (uint8_t)(op == OP_CAST && is_name_cast(e) ? 2 : top_prec(c, in));
        ecu_bind(c, b, in->res[0], e, true, in->loc);
    }
}

int emit_cuda_lane_count(const Func *f)
{
    int two = 0, one = 0;
    find_lanes(f, f->body, &two, &one);
    return two ? two : one ? one : 1;
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
    c.scat_idx = arena_alloc(a, sizeof *c.scat_idx * (size_t)nv);
    c.scat_d = arena_alloc(a, sizeof *c.scat_d * (size_t)nv);
    c.absorbed = arena_alloc(a, sizeof *c.absorbed * (size_t)nv);
    c.lane_acc = arena_alloc(a, sizeof *c.lane_acc * (size_t)nv);
    c.hoisted = arena_alloc(a, sizeof *c.hoisted * (size_t)nv);
    ir_index_defs(f->body, c.def);
    for (int i = 0; i < nv; i++)
        if (!c.irname[i])
            c.irname[i] = "?";
    c.L = emit_cuda_lane_count(f);
    count_uses(&c, f->body);
    ecu_find_scatters(&c, f->body);
    check_shapes(&c, f->body);
    if (c.ok && c.L > 1024)
        ecu_refuse(&c, f->loc, "the kernel's tiles have %d lanes: a CUDA block has at most 1024 threads", c.L);
    if (!c.ok)
        return false;
    Buf body = {.a = a};
    c.out = &body;
    /* the parameters keep their names */
    Buf params = {.a = a};
    for (int i = 0; i < f->nparams; i++) {
        ValId p = f->params[i];
        c.var[p] = ecu_fresh(&c, cuda_ident(a, c.irname[p]));
        const char *ty = ecu_ctype(&c, p, f->vals.v[p].loc);
        buf_printf(&params, "%s%s%s%s", i ? ", " : "", ty, ty[strlen(ty) - 1] == '*' ? "" : " ", c.var[p]);
    }
    ecu_print_block(&c, f->body, NULL);
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
    for (int dt = 0; dt < DT_COUNT; dt++)
        if (c.smem_cols & (1u << dt))
            buf_printf(out, "    __shared__ %s kad_cols_%s[%d];\n", cuda_dtype((Dtype)dt, c.o->hip),
                       dtype_name((Dtype)dt), CU_COLS);
    buf_puts(out, buf_str(&body));
    buf_puts(out, "}\n");
    if (lanes)
        *lanes = c.L;
    for (int v = 1; v < f->vals.n; v++) /* half types: cuda_fp16.h / cuda_bf16.h in the prelude */
        for (int e = 0; e < 2; e++) {
            Dtype t = (Dtype)(e ? f->vals.v[v].ty.elem : f->vals.v[v].ty.dt);
            if (t == DT_F16 || t == DT_BF16)
                c.helpers |= CU_H_HALF;
        }
    if (helpers)
        *helpers |= c.helpers;
    return true;
}
