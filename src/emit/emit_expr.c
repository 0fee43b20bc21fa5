/* emit_expr.c -- the Triton emitter's expressions: one IR instruction as a
 * Python expression (see emit_triton.c for the passes around it).
 *
 * Job: spell an instruction's result in Triton with exactly the IR's value
 * and type: Python operators with their precedence and no more parentheses
 * than needed, tl.* and libdevice calls, constants as Python literals where
 * Triton's typing of a literal (weak scalar of a binary operator,
 * to_tensor, conversion to a pointee) provably yields the IR's value and
 * type and as typed tensors (tl.full, tl.zeros) elsewhere, and
 * `.to(tl.<dtype>)` where Triton's result type differs from the IR's
 * (fp16/bf16 division, math functions and reductions that widen);
 * scalars convert with tl.cast(x, tl.<dtype>) instead, which also takes a
 * constexpr (a runtime int parameter Triton specialized to 1).
 *
 * Requires: an Emitter after the scan (InstInfo.eff, ValInfo.cnst, and
 * ValInfo.inl for operands printed inside their user).  While measuring
 * (emit_decide_inlining) variables print as placeholders; afterwards as their
 * classes' names, and em_var_name records the classes an expression reads
 * (Emitter.reads, for parallel moves).  Guarantees: an expression computes
 * what the IR computes, or the construct is a located error (em_error);
 * nothing is written to the module here, results are arena strings.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "emit/emit_triton.h"
#include "emit/emit.h"

/* Python operator precedence, loosest to tightest (the language reference,
 * "Operator precedence").  Comparisons chain, so a comparison operand of a
 * comparison is always parenthesized. */
enum {
    PR_CMP = 1, PR_BOR, PR_BXOR, PR_BAND, PR_SHIFT, PR_ADD, PR_MUL, PR_UNARY, PR_POW, PR_ATOM
};

static const char *dtn(Dtype dt) { return dtype_triton_name(dt); }

/* ------------------------------------------------------------------ */
/* Constants                                                           */
/* ------------------------------------------------------------------ */

const Inst *em_const_inst(const Emitter *E, ValId v)
{
    if (v <= 0 || !E->vi[v].cnst)
        return NULL;
    const Inst *in = E->vi[v].defi->in;
    while (in->op == OP_BROADCAST)
        in = E->vi[in->args[0]].defi->in;
    return in;
}

/* Whether x is exactly representable in a binary format with p significand
 * bits and normal exponents emin..emax (subnormals below). */
static bool exact_in(double x, int p, int emin, int emax)
{
    if (x == 0 || isinf(x) || isnan(x))
        return true;
    int e;
    double m = frexp(fabs(x), &e); /* x = m * 2^e, m in [0.5, 1) */
    int E1 = e - 1;                 /* x = 1.f * 2^E1 */
    if (E1 > emax)
        return false;
    int bits = E1 >= emin ? p : p - (emin - E1);
    if (bits <= 0)
        return false;
    double s = ldexp(m, bits);
    return s == floor(s);
}

static bool float_exact(double x, Dtype dt)
{
    switch (dt) {
    case DT_F16: return exact_in(x, 11, -14, 15);
    case DT_BF16: return exact_in(x, 8, -126, 127);
    case DT_F32: return exact_in(x, 24, -126, 127);
    case DT_F8E5: case DT_F8E4NV: case DT_F8E4B15: return dtype_round(dt, x) == x || isnan(x);
    default: return true;
    }
}

/* The dtype Triton's to_tensor gives a Python float literal (semantic.py):
 * fp32 for zero, inf, nan and the normal fp32 range, else fp64. */
static Dtype float_literal_dtype(double x)
{
    x = fabs(x);
    if (isinf(x) || isnan(x) || x == 0 || (x >= ldexp(1, -126) && x <= ldexp(2 - ldexp(1, -23), 127)))
        return DT_F32;
    return DT_F64;
}

/* The integer value of c in dtype dt: wrapped to dt's width, signed or
 * unsigned, so that the literal fits dt. */
static void int_value(const Inst *c, Dtype dt, int64_t *sv, uint64_t *uv, bool *neg)
{
    int bits = dtype_bits(dt);
    uint64_t u = (uint64_t)c->ival;
    if (bits < 64)
        u &= (UINT64_C(1) << bits) - 1;
    if (dtype_is_signed(dt) && bits < 64 && (u >> (bits - 1)) & 1)
        u |= ~((UINT64_C(1) << bits) - 1);
    *uv = u;
    *sv = (int64_t)u;
    *neg = dtype_is_signed(dt) && *sv < 0;
}

static Dtype int_literal_dtype(const Inst *c, Dtype dt)
{
    int64_t s;
    uint64_t u;
    bool neg;
    int_value(c, dt, &s, &u, &neg);
    if (neg)
        return s >= INT32_MIN ? DT_I32 : DT_I64;
    if (u <= INT32_MAX)
        return DT_I32;
    if (u <= UINT32_MAX)
        return DT_U32;
    return u <= INT64_MAX ? DT_I64 : DT_U64;
}

/* Whether the constant c, of IR dtype dt, may print as a Python literal in
 * an operand position of kind ctx of op (Triton's rules, semantic.py:
 * binary_op_type_checking_impl, to_tensor, cast). */
static bool const_literal_ok(const Inst *c, Type t, Ctx ctx, OpKind op)
{
    Dtype dt = (Dtype)t.dt;
    if (t.rank > 0 && (ctx == CTX_ANY || ctx == CTX_SLOT || ctx == CTX_RANGE))
        return false; /* a literal is a scalar: only broadcasting positions take it for a tile */
    bool fl = dtype_is_float(dt);
    Dtype lt = fl ? float_literal_dtype(c->fval) : dt == DT_I1 ? DT_I1 : int_literal_dtype(c, dt);
    switch (ctx) {
    case CTX_ANY:
        return false;
    case CTX_BIN:
        /* converted straight to dt, except that fp16/bf16 `/` and `%` run in fp32 */
        if (fl && (op == OP_DIV || op == OP_REM) && (dt == DT_F16 || dt == DT_BF16))
            return float_exact(c->fval, dt);
        return true;
    case CTX_TT:
        if (lt == dt)
            return true;
        if (dt == DT_F64 && lt == DT_F32)
            return float_exact(c->fval, DT_F32);
        return dt == DT_I64 && lt == DT_I32;
    case CTX_CONVERT:
        if (fl && lt == DT_F32 && dt != DT_F32)
            return float_exact(c->fval, DT_F32);
        return true;
    case CTX_SLOT:
        return lt == dt;
    case CTX_RANGE:
        return dt == DT_I32;
    }
    return false;
}

static Ex ex(const char *s, int prec) { return (Ex){s, prec}; }

static Ex literal(Emitter *E, const Inst *c, Dtype dt)
{
    if (dt == DT_I1)
        return ex((c->ival & 1) ? "True" : "False", PR_ATOM);
    if (dtype_is_float(dt)) {
        double x = c->fval;
        if (isnan(x))
            return ex("float(\"nan\")", PR_ATOM);
        if (isinf(x))
            return ex(x < 0 ? "float(\"-inf\")" : "float(\"inf\")", PR_ATOM);
        if (dt == DT_F32 && (double)(float)x == x) {
            /* the shortest decimal that rounds to the same fp32 value: Triton
             * converts the literal to fp32 directly (0.1, not 0.10000000149011612) */
            char tmp[40];
            for (int prec = 1; prec <= 9; prec++) {
                snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
                if ((float)strtod(tmp, NULL) == (float)x) {
                    x = strtod(tmp, NULL);
                    break;
                }
            }
        }
        Buf b = {.a = E->a};
        ir_format_float(&b, x);
        return ex(buf_str(&b), signbit(x) ? PR_UNARY : PR_ATOM);
    }
    int64_t s;
    uint64_t u;
    bool neg;
    int_value(c, dt, &s, &u, &neg);
    if (neg)
        return ex(arena_printf(E->a, "%lld", (long long)s), PR_UNARY);
    return ex(arena_printf(E->a, "%llu", (unsigned long long)u), PR_ATOM);
}

static const char *shape_list(Emitter *E, Type t)
{
    Buf b = {.a = E->a};
    buf_putc(&b, '[');
    for (int i = 0; i < t.rank; i++)
        buf_printf(&b, i ? ", %d" : "%d", (int)t.shape[i]);
    buf_putc(&b, ']');
    return buf_str(&b);
}

/* A constant as a Triton tensor of exactly its IR type. */
static Ex typed_const(Emitter *E, const Inst *c, Type t)
{
    Dtype dt = (Dtype)t.dt;
    bool zero = dtype_is_float(dt) ? (c->fval == 0 && !signbit(c->fval)) : c->ival == 0;
    if (t.rank > 0 && zero)
        return ex(arena_printf(E->a, "tl.zeros(%s, dtype=tl.%s)", shape_list(E, t), dtn(dt)), PR_ATOM);
    return ex(arena_printf(E->a, "tl.full(%s, %s, tl.%s)", shape_list(E, t), literal(E, c, dt).s, dtn(dt)),
              PR_ATOM);
}

/* ------------------------------------------------------------------ */
/* Expressions                                                         */
/* ------------------------------------------------------------------ */

static const char *paren(Emitter *E, Ex x, bool need)
{
    return need ? arena_printf(E->a, "(%s)", x.s) : x.s;
}

/* x as the receiver of a method call or subscript. */
static const char *atom(Emitter *E, Ex x) { return paren(E, x, x.prec < PR_ATOM); }

static Ex bin(Emitter *E, Ex l, const char *op, Ex r, int prec)
{
    bool cmp = prec == PR_CMP;
    const char *ls = paren(E, l, cmp ? l.prec <= prec : l.prec < prec);
    const char *rs = paren(E, r, r.prec <= prec);
    return ex(arena_printf(E->a, "%s %s %s", ls, op, rs), prec);
}

static Ex unary(Emitter *E, const char *op, Ex x)
{
    return ex(arena_printf(E->a, "%s%s", op, paren(E, x, x.prec <= PR_UNARY)), PR_UNARY);
}

static Ex call(Emitter *E, const char *fn, const char *args)
{
    return ex(arena_printf(E->a, "%s(%s)", fn, args), PR_ATOM);
}

/* x converted to to (a Triton dtype expression).  A scalar is converted
 * with tl.cast, not .to(): Triton's JIT turns a runtime int parameter equal
 * to 1 into a constexpr, and so every scalar computed from parameters may be
 * a constexpr at some launch, which has no .to() method; tl.cast takes
 * both (to_tensor first). */
static Ex convert(Emitter *E, Ex x, const char *to, bool scalar, bool bitcast)
{
    if (scalar)
        return ex(arena_printf(E->a, "tl.cast(%s, %s%s)", x.s, to, bitcast ? ", bitcast=True" : ""), PR_ATOM);
    return ex(arena_printf(E->a, "%s.to(%s%s)", atom(E, x), to, bitcast ? ", bitcast=True" : ""), PR_ATOM);
}

static Ex cast_to(Emitter *E, Ex x, Dtype dt, bool scalar)
{
    return convert(E, x, arena_printf(E->a, "tl.%s", dtn(dt)), scalar, false);
}

/* The printed name of a variable value. */
const char *em_var_name(Emitter *E, ValId v)
{
    if (E->measuring) {
        const char *h = em_py_ident(E->a, E->f->vals.v[v].name);
        return h ? h : "tmp00";
    }
    int r = em_find(E, v);
    vec_push(E->a, E->reads, r);
    return E->vi[r].name ? E->vi[r].name : "?";
}

/* Operand i of info as printed in a position of kind ctx.  lit says
 * whether a constant there may be a literal (see operand_lits). */
static Ex operand(Emitter *E, InstInfo *info, int i, bool lit)
{
    ValId v = info->eff[i];
    if (v <= 0 || v >= E->nvals)
        return ex("?", PR_ATOM);
    const ValInfo *x = &E->vi[v];
    if (x->cnst) {
        const Inst *c = em_const_inst(E, v);
        Type t = em_vtype(E, v);
        return lit ? literal(E, c, (Dtype)t.dt) : typed_const(E, c, t);
    }
    if (x->inl)
        return em_gen_inst(E, x->defi);
    return ex(em_var_name(E, v), PR_ATOM);
}

/* Whether operand i, if a constant, may print as a literal in context
 * ctx.  For CTX_BIN and CTX_TT a literal needs a non-literal peer among
 * the operands [g0, g1) (all-constant groups print their first member as
 * a typed tensor). */
static bool lit_ok(Emitter *E, InstInfo *info, int i, Ctx ctx, int g0, int g1)
{
    ValId v = info->eff[i];
    const Inst *c = em_const_inst(E, v);
    if (!c)
        return false;
    if (!const_literal_ok(c, em_vtype(E, v), ctx, (OpKind)info->in->op))
        return false;
    if (ctx != CTX_BIN && ctx != CTX_TT)
        return true;
    int first_const = -1;
    for (int j = g0; j < g1; j++) {
        if (j != i && !E->vi[info->eff[j]].cnst)
            return true;
        if (first_const < 0 && E->vi[info->eff[j]].cnst)
            first_const = j;
    }
    return i != first_const;
}

Ex em_opnd(Emitter *E, InstInfo *info, int i, Ctx ctx)
{
    int n = info->in->nargs;
    int g0 = 0, g1 = n;
    if (info->in->op == OP_WHERE)
        g0 = 1;
    return operand(E, info, i, lit_ok(E, info, i, ctx, g0, g1));
}

typedef struct MathFn {
    OpKind op;
    const char *name;
    bool libdevice;
} MathFn;

/* Float functions: tl.* where Triton has them, else libdevice.  All of them
 * accept only fp32/fp64 (math.py _check_dtype, libdevice's tables). */
static const MathFn math_fns[] = {
    {OP_EXP, "exp", false},     {OP_EXP2, "exp2", false},   {OP_LOG, "log", false},
    {OP_LOG2, "log2", false},   {OP_SQRT, "sqrt", false},   {OP_RSQRT, "rsqrt", false},
    {OP_SIN, "sin", false},     {OP_COS, "cos", false},     {OP_ERF, "erf", false},
    {OP_FLOOR, "floor", false}, {OP_CEIL, "ceil", false},   {OP_SIGMOID, "sigmoid", false},
    {OP_EXPM1, "expm1", true},  {OP_LOG1P, "log1p", true},  {OP_TAN, "tan", true},
    {OP_ASIN, "asin", true},    {OP_ACOS, "acos", true},    {OP_ATAN, "atan", true},
    {OP_SINH, "sinh", true},    {OP_COSH, "cosh", true},    {OP_TANH, "tanh", true},
    {OP_TRUNC, "trunc", true},  {OP_RINT, "rint", true},    {OP_ATAN2, "atan2", true},
    {OP_POW, "pow", true},
};

static const MathFn *math_fn(OpKind op)
{
    for (size_t i = 0; i < sizeof math_fns / sizeof *math_fns; i++)
        if (math_fns[i].op == op)
            return &math_fns[i];
    return NULL;
}

static const char *binop_token(OpKind op, Dtype dt, int *prec)
{
    bool fl = dtype_is_float(dt);
    switch (op) {
    case OP_ADD: case OP_ADDPTR: *prec = PR_ADD; return "+";
    case OP_SUB: *prec = PR_ADD; return "-";
    case OP_MUL: *prec = PR_MUL; return "*";
    case OP_DIV: *prec = PR_MUL; return fl ? "/" : "//"; /* Triton's // on ints is C division */
    case OP_REM: *prec = PR_MUL; return "%";              /* srem/urem/frem: C fmod semantics */
    case OP_AND: *prec = PR_BAND; return "&";
    case OP_OR: *prec = PR_BOR; return "|";
    case OP_XOR: *prec = PR_BXOR; return "^";
    case OP_SHL: *prec = PR_SHIFT; return "<<";
    case OP_SHR: *prec = PR_SHIFT; return ">>";
    case OP_LT: *prec = PR_CMP; return "<";
    case OP_LE: *prec = PR_CMP; return "<=";
    case OP_GT: *prec = PR_CMP; return ">";
    case OP_GE: *prec = PR_CMP; return ">=";
    case OP_EQ: *prec = PR_CMP; return "==";
    case OP_NE: *prec = PR_CMP; return "!=";
    default: return NULL;
    }
}

static const char *reduce_name(OpKind op)
{
    switch (op) {
    case OP_SUM: return "sum";
    case OP_MAX: return "max";
    case OP_MIN: return "min";
    case OP_ARGMAX: return "argmax";
    case OP_ARGMIN: return "argmin";
    case OP_CUMSUM: return "cumsum";
    case OP_CUMPROD: return "cumprod";
    default: return NULL;
    }
}

/* The dtype Triton gives the result of op as printed, when it differs
 * from the IR's (standard.py, core.py); DT_VOID when it is the same. */
static Dtype triton_widens(OpKind op, Dtype in, Dtype out)
{
    bool small_int = dtype_is_int(in) && dtype_bits(in) < 32;
    Dtype wide_int = dtype_is_signed(in) || in == DT_I1 ? DT_I32 : DT_U32;
    Dtype t = out;
    switch (op) {
    case OP_DIV: case OP_REM:
        if (in == DT_F16 || in == DT_BF16)
            t = DT_F32;
        break;
    case OP_MAXIMUM: case OP_MINIMUM: case OP_CUMPROD:
        if (in == DT_BF16)
            t = DT_F32;
        break;
    case OP_MAX: case OP_MIN:
        if (in == DT_F16 || in == DT_BF16)
            t = DT_F32;
        else if (small_int)
            t = DT_I32;
        break;
    case OP_SUM:
        if (small_int)
            t = wide_int;
        break;
    case OP_CUMSUM:
        if (in == DT_BF16)
            t = DT_F32;
        else if (small_int)
            t = wide_int;
        break;
    default:
        break;
    }
    return t == out ? DT_VOID : t;
}

static const char *int_list(Emitter *E, const int32_t *v, int n, bool scalar_if_one)
{
    if (n == 1 && scalar_if_one)
        return arena_printf(E->a, "%d", (int)v[0]);
    Buf b = {.a = E->a};
    buf_putc(&b, '[');
    for (int i = 0; i < n; i++)
        buf_printf(&b, i ? ", %d" : "%d", (int)v[i]);
    buf_putc(&b, ']');
    return buf_str(&b);
}

/* The Python string literal of s. */
const char *em_py_string(Emitter *E, const char *s)
{
    Buf b = {.a = E->a};
    buf_putc(&b, '"');
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        if (*q == '"' || *q == '\\')
            buf_printf(&b, "\\%c", *q);
        else if (*q == '\n')
            buf_puts(&b, "\\n");
        else if (*q == '\t')
            buf_puts(&b, "\\t");
        else if (*q < 0x20 || *q == 0x7f)
            buf_printf(&b, "\\x%02x", *q);
        else
            buf_putc(&b, (char)*q);
    }
    buf_putc(&b, '"');
    return buf_str(&b);
}

/* load/store/atomic_add: "ptr[, value][, mask=m][, other=o]". */
const char *em_mem_args(Emitter *E, InstInfo *info)
{
    const Inst *in = info->in;
    int nfixed = in->op == OP_LOAD ? 1 : 2;
    Buf b = {.a = E->a};
    buf_puts(&b, em_opnd(E, info, 0, CTX_ANY).s);
    if (nfixed == 2 && in->nargs > 1)
        buf_printf(&b, ", %s", em_opnd(E, info, 1, CTX_CONVERT).s);
    int i = nfixed;
    if ((in->flags & IF_HAS_MASK) && i < in->nargs)
        buf_printf(&b, ", mask=%s", em_opnd(E, info, i++, CTX_SLOT).s);
    if ((in->flags & IF_HAS_OTHER) && i < in->nargs)
        buf_printf(&b, ", other=%s", em_opnd(E, info, i++, CTX_CONVERT).s);
    return buf_str(&b);
}

/* The expression computing the (single) result of info. */
Ex em_gen_inst(Emitter *E, InstInfo *info)
{
    const Inst *in = info->in;
    OpKind op = (OpKind)in->op;
    Type rt = in->nres ? em_vtype(E, in->res[0]) : type_scalar(DT_VOID);
    Dtype rd = (Dtype)rt.dt;
    Dtype ad = in->nargs ? (Dtype)em_vtype(E, in->args[0]).dt : DT_VOID;
    int prec;
    const char *tok = binop_token(op, ad, &prec);
    const MathFn *mf = math_fn(op);
    Ex r;

    if (op_is_libm(op)) { /* libdevice.NAME(args): the ops Triton has no tl.* function for */
        Buf b = {.a = E->a};
        for (int i = 0; i < in->nargs; i++)
            buf_printf(&b, "%s%s", i ? ", " : "", em_opnd(E, info, i, CTX_ANY).s);
        E->libdevice = true;
        return call(E, arena_printf(E->a, "libdevice.%s", libm_name(E->a, op, in->ival)), buf_str(&b));
    }
    if (tok) {
        Ctx ctx = op == OP_ADDPTR ? CTX_CONVERT : CTX_BIN;
        Ex l = em_opnd(E, info, 0, op == OP_ADDPTR ? CTX_ANY : ctx), rr = em_opnd(E, info, 1, ctx);
        r = bin(E, l, tok, rr, prec);
    } else if (mf) {
        /* fp16/bf16 go through fp32: Triton has these functions for fp32/fp64 only */
        bool up = ad == DT_F16 || ad == DT_BF16;
        Buf b = {.a = E->a};
        for (int i = 0; i < in->nargs; i++) {
            Ex x = em_opnd(E, info, i, CTX_ANY);
            buf_printf(&b, "%s%s", i ? ", " : "", up ? cast_to(E, x, DT_F32, em_vtype(E, in->args[i]).rank == 0).s : x.s);
        }
        if (mf->libdevice)
            E->libdevice = true;
        r = call(E, arena_printf(E->a, "%s.%s", mf->libdevice ? "libdevice" : "tl", mf->name), buf_str(&b));
        if (up)
            r = cast_to(E, r, rd, rt.rank == 0);
        return r;
    } else {
        switch (op) {
        case OP_CONST:
            return typed_const(E, in, rt);
        case OP_PROGRAM_ID:
            return call(E, "tl.program_id", arena_printf(E->a, "%lld", (long long)in->ival));
        case OP_NUM_PROGRAMS:
            return call(E, "tl.num_programs", arena_printf(E->a, "%lld", (long long)in->ival));
        case OP_ARANGE:
            return call(E, "tl.arange", arena_printf(E->a, "%lld, %lld", (long long)in->ival,
                                                     (long long)in->ival + (rt.rank ? rt.shape[0] : 1)));
        case OP_MAXIMUM: case OP_MINIMUM: case OP_UMULHI: {
            const char *fn = op == OP_MAXIMUM ? "tl.maximum" : op == OP_MINIMUM ? "tl.minimum" : "tl.umulhi";
            if (op == OP_UMULHI && ad != DT_I32 && ad != DT_I64 && ad != DT_U32 && ad != DT_U64)
                em_error(E, in->loc, "Triton emitter: umulhi on %s has no Triton spelling (tl.umulhi "
                         "takes 32- and 64-bit integers)", dtype_name(ad));
            r = call(E, fn, arena_printf(E->a, "%s, %s", em_opnd(E, info, 0, CTX_TT).s, em_opnd(E, info, 1, CTX_TT).s));
            break;
        }
        case OP_NEG:
            r = unary(E, "-", em_opnd(E, info, 0, CTX_ANY));
            break;
        case OP_NOT:
            r = unary(E, "~", em_opnd(E, info, 0, CTX_ANY));
            break;
        case OP_ABS:
            r = call(E, "tl.abs", em_opnd(E, info, 0, CTX_ANY).s);
            break;
        case OP_ISNAN: {
            /* NaN is the one value unequal to itself (the operand is a variable) */
            Ex x = em_opnd(E, info, 0, CTX_ANY);
            r = bin(E, x, "!=", x, PR_CMP);
            break;
        }
        case OP_ISINF:
            r = bin(E, call(E, "tl.abs", em_opnd(E, info, 0, CTX_ANY).s), "==", ex("float(\"inf\")", PR_ATOM), PR_CMP);
            break;
        case OP_FMA:
            r = call(E, "tl.fma", arena_printf(E->a, "%s, %s, %s", em_opnd(E, info, 0, CTX_ANY).s,
                                               em_opnd(E, info, 1, CTX_ANY).s, em_opnd(E, info, 2, CTX_ANY).s));
            break;
        case OP_WHERE:
            r = call(E, "tl.where", arena_printf(E->a, "%s, %s, %s", em_opnd(E, info, 0, CTX_SLOT).s,
                                                 em_opnd(E, info, 1, CTX_BIN).s, em_opnd(E, info, 2, CTX_BIN).s));
            break;
        case OP_CAST: case OP_BITCAST: {
            Ex x = em_opnd(E, info, 0, CTX_ANY);
            const char *to = rd == DT_PTR
                                 ? arena_printf(E->a, "tl.pointer_type(tl.%s)", dtn((Dtype)rt.elem))
                                 : arena_printf(E->a, "tl.%s", dtn(rd));
            return convert(E, x, to, rt.rank == 0, op == OP_BITCAST);
        }
        case OP_STOP_GRADIENT: case OP_CUSTOM_VJP: case OP_CUSTOM_JVP: /* identities; the rule is AD's */
            return em_opnd(E, info, 0, CTX_ANY);
        case OP_MULTIPLE_OF: case OP_MAX_CONTIGUOUS:
            return call(E, op == OP_MULTIPLE_OF ? "tl.multiple_of" : "tl.max_contiguous",
                        arena_printf(E->a, "%s, %s", em_opnd(E, info, 0, CTX_ANY).s,
                                     int_list(E, in->ints, in->nints, true)));
        case OP_BROADCAST:
            return call(E, "tl.broadcast_to",
                        arena_printf(E->a, "%s, %s", em_opnd(E, info, 0, CTX_ANY).s, shape_list(E, rt)));
        case OP_EXPAND_DIMS: {
            Ex x = em_opnd(E, info, 0, CTX_ANY);
            Type xt = em_vtype(E, in->args[0]);
            if (xt.rank == 0)
                return call(E, "tl.expand_dims", arena_printf(E->a, "%s, %lld", x.s, (long long)in->ival));
            Buf b = {.a = E->a};
            buf_printf(&b, "%s[", atom(E, x));
            for (int k = 0; k < rt.rank; k++)
                buf_printf(&b, "%s%s", k ? ", " : "", k == in->ival ? "None" : ":");
            buf_putc(&b, ']');
            return ex(buf_str(&b), PR_ATOM);
        }
        case OP_RESHAPE: {
            Ex x = em_opnd(E, info, 0, CTX_ANY);
            if (rt.rank == 0) {
                em_error(E, in->loc, "Triton emitter: reshape to a scalar has no Triton spelling");
                return ex("?", PR_ATOM);
            }
            const char *fn = em_vtype(E, in->args[0]).rank == 0 ? "tl.broadcast_to" : "tl.reshape";
            return call(E, fn, arena_printf(E->a, "%s, %s", x.s, shape_list(E, rt)));
        }
        case OP_PERMUTE: {
            Ex x = em_opnd(E, info, 0, CTX_ANY);
            if (in->nints == 2 && in->ints[0] == 1 && in->ints[1] == 0)
                return call(E, "tl.trans", x.s);
            Buf b = {.a = E->a};
            buf_printf(&b, "%s, (", x.s);
            for (int k = 0; k < in->nints; k++)
                buf_printf(&b, k ? ", %d" : "%d", (int)in->ints[k]);
            buf_putc(&b, ')');
            return call(E, "tl.permute", buf_str(&b));
        }
        case OP_SUM: case OP_MAX: case OP_MIN: case OP_ARGMAX: case OP_ARGMIN:
        case OP_CUMSUM: case OP_CUMPROD: {
            const char *flag = "";
            if ((op == OP_CUMSUM || op == OP_CUMPROD) && (in->flags & IF_REVERSE))
                flag = ", reverse=True";
            else if (op != OP_CUMSUM && op != OP_CUMPROD && (in->flags & IF_KEEP_DIMS))
                flag = ", keep_dims=True";
            r = call(E, arena_printf(E->a, "tl.%s", reduce_name(op)),
                     arena_printf(E->a, "%s, axis=%lld%s", em_opnd(E, info, 0, CTX_ANY).s, (long long)in->ival, flag));
            break;
        }
        case OP_JOIN:
            return call(E, "tl.join", arena_printf(E->a, "%s, %s", em_opnd(E, info, 0, CTX_ANY).s,
                                                   em_opnd(E, info, 1, CTX_ANY).s));
        case OP_SPLIT: /* Triton's split returns the pair; one half is taken */
            return ex(arena_printf(E->a, "%s[%lld]", call(E, "tl.split", em_opnd(E, info, 0, CTX_ANY).s).s,
                                   (long long)in->ival), PR_ATOM);
        case OP_FLIP:
            return call(E, "tl.flip", arena_printf(E->a, "%s, %lld", em_opnd(E, info, 0, CTX_ANY).s,
                                                   (long long)in->ival));
        case OP_GATHER:
            return call(E, "tl.gather", arena_printf(E->a, "%s, %s, %lld", em_opnd(E, info, 0, CTX_ANY).s,
                                                     em_opnd(E, info, 1, CTX_ANY).s, (long long)in->ival));
        case OP_SORT: {
            Type xt = em_vtype(E, in->args[0]);
            Ex x = em_opnd(E, info, 0, CTX_ANY);
            bool desc = in->flags & IF_REVERSE;
            if (in->ival == xt.shape[xt.rank - 1])
                return call(E, "tl.sort", desc ? arena_printf(E->a, "%s, descending=True", x.s) : x.s);
            if (!desc)
                em_error(E, in->loc, "Triton emitter: Triton has no ascending top-k (tl.topk is descending)");
            return call(E, "tl.topk", arena_printf(E->a, "%s, %lld", x.s, (long long)in->ival));
        }
        case OP_HISTOGRAM: {
            Buf b = {.a = E->a};
            buf_printf(&b, "%s, %lld", em_opnd(E, info, 0, CTX_ANY).s, (long long)in->ival);
            if (in->nargs > 1)
                buf_printf(&b, ", mask=%s", em_opnd(E, info, 1, CTX_ANY).s);
            return call(E, "tl.histogram", buf_str(&b));
        }
        case OP_DOT: {
            Ex a = em_opnd(E, info, 0, CTX_ANY), b = em_opnd(E, info, 1, CTX_ANY);
            const Inst *acc0 = em_const_inst(E, info->eff[2]);
            bool zero = acc0 && (dtype_is_float(rd) ? acc0->fval == 0 && !signbit(acc0->fval) : acc0->ival == 0);
            Buf args = {.a = E->a};
            buf_printf(&args, "%s, %s", a.s, b.s);
            if (!zero)
                buf_printf(&args, ", %s", em_opnd(E, info, 2, CTX_ANY).s);
            if (in->ival != DP_DEFAULT)
                buf_printf(&args, ", input_precision=\"%s\"", ir_dot_prec_name((int)in->ival));
            /* Triton checks that the accumulator's dtype is out_dtype (default fp32) */
            if (rd == DT_BF16)
                em_error(E, in->loc, "Triton emitter: tl.dot has no bf16 accumulator (out_dtype=bfloat16 "
                         "is unsupported by Triton)");
            if (rd == DT_F16 || (!zero && rd != DT_F32))
                buf_printf(&args, ", out_dtype=tl.%s", dtn(rd));
            return call(E, "tl.dot", buf_str(&args));
        }
        case OP_RAND: case OP_RANDN: case OP_RANDINT: {
            const char *fn = op == OP_RAND ? "tl.rand" : op == OP_RANDN ? "tl.randn" : "tl.randint";
            r = call(E, fn, arena_printf(E->a, "%s, %s", em_opnd(E, info, 0, CTX_ANY).s, em_opnd(E, info, 1, CTX_ANY).s));
            Dtype td = op == OP_RANDINT ? DT_U32 : DT_F32;
            if (td != rd)
                r = convert(E, r, arena_printf(E->a, "tl.%s", dtn(rd)), rt.rank == 0, true);
            return r;
        }
        case OP_LOAD:
            if (info->desc && E->descs.v[info->desc - 1].flag) /* a gradient's: TMA when aligned */
                return ex(arena_printf(E->a, "(%s if %s else tl.load(%s))", em_desc_access(E, info),
                                       emit_tma_flag(E->a, E->f, E->descs.v[info->desc - 1].flag),
                                       em_mem_args(E, info)), PR_ATOM);
            if (info->desc)
                return ex(em_desc_access(E, info), PR_ATOM);
            return call(E, "tl.load", em_mem_args(E, info));
        case OP_ATOMIC_ADD:
            return call(E, "tl.atomic_add", em_mem_args(E, info));
        case OP_ATOMIC_MAX:
            return call(E, "tl.atomic_max", em_mem_args(E, info));
        case OP_ATOMIC_MIN:
            return call(E, "tl.atomic_min", em_mem_args(E, info));
        case OP_ATOMIC_XCHG:
            return call(E, "tl.atomic_xchg", em_mem_args(E, info));
        default:
            em_error(E, in->loc, "Triton emitter: '%s' is not an expression", op_info[op].name);
            return ex("?", PR_ATOM);
        }
    }
    /* where Triton's result type differs from the IR's, convert back */
    Dtype w = triton_widens(op, ad, rd);
    if (w != DT_VOID)
        r = cast_to(E, r, rd, rt.rank == 0);
    return r;
}

