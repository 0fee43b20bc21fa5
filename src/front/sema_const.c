/* sema_const.c -- constexpr values with Python's semantics: truthiness,
 * folding of the binary operators on constants (ints are 64-bit: an
 * overflow is a located error, not a wrap), comparisons of constants, and
 * the text of constants: repr() (the shortest float that reads back),
 * str() and format() for f-string fields.
 *
 * The job: what CPython would compute at the kernel's trace time is
 * computed here exactly, so a constexpr branch or loop bound kad takes is
 * the one Triton takes.  Runtime operands never come here (sema_ops.c and
 * sema_operators.c type and lower them).
 *
 * Requires: sema_ops.c's SVal construction and messages.  Guarantees: one
 * located error, then SV_ERROR; no output and no global state.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "front/front.h"

/* ------------------------------------------------------------------ */
/* Constant folding with Python semantics                              */
/* ------------------------------------------------------------------ */

bool const_truthy(ConstVal c)
{
    switch (c.kind) {
    case CK_NONE: return false;
    case CK_INT:
    case CK_BOOL: return c.i != 0;
    case CK_FLOAT: return c.f != 0.0;
    case CK_STR: return c.s && c.s[0];
    case CK_DTYPE: return true;
    }
    return true;
}

bool sval_truthy(SVal x)
{
    if (x.kind == SV_TUPLE)
        return x.n > 0;
    if (x.kind == SV_CONST)
        return const_truthy(x.c);
    return x.kind != SV_NONE;
}

const char *const sema_binop_sym[] = {"+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^", "@"};
const char *const sema_cmp_sym[] = {"<", "<=", ">", ">=", "==", "!=", "is", "is not", "in", "not in"};

SVal ops_overflow(Lower *L, const char *op, Loc loc)
{
    return ops_fail(L, loc, "integer overflow in constexpr '%s' (kad's constexpr ints are 64-bit)", op);
}

/* Python's float floor division and modulo (CPython's float_divmod). */
static void py_fdivmod(double a, double b, double *fdiv, double *fmod_)
{
    double mod = fmod(a, b), div = (a - mod) / b;
    if (mod != 0.0) {
        if ((b < 0) != (mod < 0)) {
            mod += b;
            div -= 1.0;
        }
    } else {
        mod = copysign(0.0, b);
    }
    double fl;
    if (div != 0.0) {
        fl = floor(div);
        if (div - fl > 0.5)
            fl += 1.0;
    } else {
        fl = copysign(0.0, a / b);
    }
    *fdiv = fl;
    *fmod_ = mod;
}

static SVal fold_int(Lower *L, BinOp op, int64_t a, int64_t b, bool both_bool, Loc loc)
{
    const char *sym = sema_binop_sym[op];
    int64_t r;
    switch (op) {
    case BO_ADD: if (__builtin_add_overflow(a, b, &r)) return ops_overflow(L, sym, loc); return sval_int(r);
    case BO_SUB: if (__builtin_sub_overflow(a, b, &r)) return ops_overflow(L, sym, loc); return sval_int(r);
    case BO_MUL: if (__builtin_mul_overflow(a, b, &r)) return ops_overflow(L, sym, loc); return sval_int(r);
    case BO_DIV:
        if (b == 0)
            return ops_fail(L, loc, "division by zero in constexpr '/'");
        return sval_float((double)a / (double)b);
    case BO_FLOORDIV:
    case BO_MOD: {
        if (b == 0)
            return ops_fail(L, loc, "integer division or modulo by zero in constexpr '%s'", sym);
        if (a == INT64_MIN && b == -1)
            return op == BO_MOD ? sval_int(0) : ops_overflow(L, sym, loc);
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
            q -= 1;
            m += b;
        }
        return sval_int(op == BO_MOD ? m : q);
    }
    case BO_POW: {
        if (b < 0) {
            if (a == 0)
                return ops_fail(L, loc, "0 cannot be raised to a negative power");
            return sval_float(pow((double)a, (double)b));
        }
        int64_t acc = 1, base = a;
        while (b) {
            if (b & 1)
                if (__builtin_mul_overflow(acc, base, &acc))
                    return ops_overflow(L, sym, loc);
            b >>= 1;
            if (b && __builtin_mul_overflow(base, base, &base))
                return ops_overflow(L, sym, loc);
        }
        return sval_int(acc);
    }
    case BO_LSHIFT:
        if (b < 0)
            return ops_fail(L, loc, "negative shift count in constexpr '<<'");
        if (a == 0)
            return sval_int(0);
        if (b >= 63 || ((a << b) >> b) != a)
            return ops_overflow(L, sym, loc);
        return sval_int(a << b);
    case BO_RSHIFT:
        if (b < 0)
            return ops_fail(L, loc, "negative shift count in constexpr '>>'");
        if (b >= 63)
            return sval_int(a < 0 ? -1 : 0);
        return sval_int(a >= 0 ? a >> b : ~(~a >> b)); /* floor, as Python */
    case BO_BITAND: return both_bool ? sval_bool(a & b) : sval_int(a & b);
    case BO_BITOR: return both_bool ? sval_bool(a | b) : sval_int(a | b);
    case BO_BITXOR: return both_bool ? sval_bool(a ^ b) : sval_int(a ^ b);
    case BO_MATMUL: break;
    }
    return ops_fail(L, loc, "unsupported operand types for '%s': int and int", sym);
}

static SVal fold_float(Lower *L, BinOp op, double a, double b, Loc loc)
{
    const char *sym = sema_binop_sym[op];
    double q, m;
    switch (op) {
    case BO_ADD: return sval_float(a + b);
    case BO_SUB: return sval_float(a - b);
    case BO_MUL: return sval_float(a * b);
    case BO_DIV:
        if (b == 0.0)
            return ops_fail(L, loc, "float division by zero in constexpr '/'");
        return sval_float(a / b);
    case BO_FLOORDIV:
    case BO_MOD:
        if (b == 0.0)
            return ops_fail(L, loc, "float division or modulo by zero in constexpr '%s'", sym);
        py_fdivmod(a, b, &q, &m);
        return sval_float(op == BO_MOD ? m : q);
    case BO_POW: {
        if (a == 0.0 && b < 0.0)
            return ops_fail(L, loc, "0.0 cannot be raised to a negative power");
        if (a < 0.0 && b != floor(b) && isfinite(b))
            return ops_fail(L, loc, "a negative constexpr raised to a fractional power is complex in Python");
        double r = pow(a, b);
        if (isinf(r) && isfinite(a) && isfinite(b))
            return ops_fail(L, loc, "constexpr float '**' overflows");
        return sval_float(r);
    }
    default: break;
    }
    return ops_fail(L, loc, "unsupported operand types for '%s': float and float", sym);
}

SVal sema_fold_binop(Lower *L, BinOp op, SVal x, SVal y, Loc loc)
{
    const char *sym = sema_binop_sym[op];
    /* tuples: + concatenates, * by an int repeats (shapes: [1] * N) */
    if (x.kind == SV_TUPLE && y.kind == SV_TUPLE && op == BO_ADD) {
        SVal *e = arena_alloc(L->a, sizeof *e * (size_t)(x.n + y.n + 1));
        memcpy(e, x.elts, sizeof *e * (size_t)x.n);
        memcpy(e + x.n, y.elts, sizeof *e * (size_t)y.n);
        return sval_tuple(L, e, x.n + y.n);
    }
    if (op == BO_MUL && ((x.kind == SV_TUPLE && sval_is_int(y)) || (y.kind == SV_TUPLE && sval_is_int(x)))) {
        SVal t = x.kind == SV_TUPLE ? x : y;
        int64_t k = x.kind == SV_TUPLE ? y.c.i : x.c.i;
        if (k < 0)
            k = 0;
        if ((int64_t)t.n * k > 4096)
            return ops_fail(L, loc, "constexpr tuple repetition is too long");
        SVal *e = arena_alloc(L->a, sizeof *e * (size_t)(t.n * k + 1));
        for (int64_t i = 0; i < k; i++)
            memcpy(e + i * t.n, t.elts, sizeof *e * (size_t)t.n);
        return sval_tuple(L, e, (int)(t.n * k));
    }
    if (x.kind == SV_CONST && y.kind == SV_CONST && x.c.kind == CK_STR && y.c.kind == CK_STR && op == BO_ADD)
        return sval_str(arena_printf(L->a, "%s%s", x.c.s, y.c.s));
    if (!sval_is_num(x) || !sval_is_num(y))
        return ops_fail(L, loc, "unsupported operand types for '%s': %s and %s", sym, ops_describe(L, x),
                        ops_describe(L, y));
    if (x.c.kind == CK_FLOAT || y.c.kind == CK_FLOAT) {
        if (op >= BO_LSHIFT)
            return ops_fail(L, loc, "unsupported operand types for '%s': %s and %s", sym, ops_describe(L, x),
                            ops_describe(L, y));
        return fold_float(L, op, const_as_double(x.c), const_as_double(y.c), loc);
    }
    return fold_int(L, op, x.c.i, y.c.i, x.c.kind == CK_BOOL && y.c.kind == CK_BOOL, loc);
}

/* Equality of constants (Python ==): numbers by value, strings, dtypes. */
static bool const_eq(ConstVal a, ConstVal b, bool *comparable)
{
    *comparable = true;
    bool an = a.kind == CK_INT || a.kind == CK_BOOL || a.kind == CK_FLOAT;
    bool bn = b.kind == CK_INT || b.kind == CK_BOOL || b.kind == CK_FLOAT;
    if (an && bn) {
        if (a.kind != CK_FLOAT && b.kind != CK_FLOAT)
            return a.i == b.i;
        return const_as_double(a) == const_as_double(b);
    }
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case CK_NONE: return true;
    case CK_STR: return strcmp(a.s, b.s) == 0;
    case CK_DTYPE:
        return a.dt == b.dt && (a.dt != DT_PTR || a.i == b.i) && a.brank == b.brank && a.of_block == b.of_block &&
               !memcmp(a.bshape, b.bshape, sizeof a.bshape);
    default: break;
    }
    *comparable = false;
    return false;
}

static bool sval_eq(SVal a, SVal b, bool *comparable)
{
    *comparable = true;
    if (sval_is_none(a) || sval_is_none(b))
        return sval_is_none(a) && sval_is_none(b);
    if (a.kind == SV_TUPLE || b.kind == SV_TUPLE) {
        if (a.kind != b.kind || a.n != b.n)
            return false;
        for (int i = 0; i < a.n; i++)
            if (!sval_eq(a.elts[i], b.elts[i], comparable))
                return false;
        return true;
    }
    if (a.kind == SV_CONST && b.kind == SV_CONST)
        return const_eq(a.c, b.c, comparable);
    *comparable = false;
    return false;
}

SVal ops_fold_compare(Lower *L, CmpOp op, SVal x, SVal y, Loc loc)
{
    bool ok;
    switch (op) {
    case CO_EQ:
    case CO_NE:
    case CO_IS:
    case CO_ISNOT: {
        bool eq = sval_eq(x, y, &ok);
        if (!ok && op != CO_IS && op != CO_ISNOT)
            return ops_fail(L, loc, "cannot compare %s and %s with '%s'", ops_describe(L, x),
                            ops_describe(L, y), sema_cmp_sym[op]);
        return sval_bool((op == CO_EQ || op == CO_IS) ? eq : !eq);
    }
    case CO_IN:
    case CO_NOTIN: {
        bool found = false;
        if (y.kind == SV_TUPLE) {
            for (int i = 0; i < y.n && !found; i++)
                found = sval_eq(x, y.elts[i], &ok);
        } else if (y.kind == SV_CONST && y.c.kind == CK_STR && x.kind == SV_CONST && x.c.kind == CK_STR) {
            found = strstr(y.c.s, x.c.s) != NULL;
        } else {
            return ops_fail(L, loc, "'%s' needs a constexpr tuple or string on the right, got %s",
                            sema_cmp_sym[op], ops_describe(L, y));
        }
        return sval_bool(op == CO_IN ? found : !found);
    }
    default: break;
    }
    int c;
    if (sval_is_num(x) && sval_is_num(y)) {
        if (x.c.kind != CK_FLOAT && y.c.kind != CK_FLOAT)
            c = x.c.i < y.c.i ? -1 : x.c.i > y.c.i;
        else {
            double a = const_as_double(x.c), b = const_as_double(y.c);
            if (isnan(a) || isnan(b))
                return sval_bool(false);
            c = a < b ? -1 : a > b;
        }
    } else if (x.kind == SV_CONST && y.kind == SV_CONST && x.c.kind == CK_STR && y.c.kind == CK_STR) {
        c = strcmp(x.c.s, y.c.s);
    } else {
        return ops_fail(L, loc, "cannot compare %s and %s with '%s'", ops_describe(L, x), ops_describe(L, y),
                        sema_cmp_sym[op]);
    }
    switch (op) {
    case CO_LT: return sval_bool(c < 0);
    case CO_LE: return sval_bool(c <= 0);
    case CO_GT: return sval_bool(c > 0);
    default: return sval_bool(c >= 0);
    }
}

/* ------------------------------------------------------------------ */
/* repr() of constants                                                 */
/* ------------------------------------------------------------------ */

/* Python's repr of a float (the shortest digits that read back, fixed
 * notation for exponents in [-4, 16), else scientific with 2+ digit
 * exponent) is what the IR printer writes: ir_format_float. */

const char *const_repr(Arena *a, ConstVal c)
{
    Buf b = {.a = a};
    switch (c.kind) {
    case CK_NONE: return "None";
    case CK_INT: buf_printf(&b, "%lld", (long long)c.i); break;
    case CK_BOOL: return c.i ? "True" : "False";
    case CK_FLOAT: ir_format_float(&b, c.f); break;
    case CK_STR:
        buf_putc(&b, '\'');
        for (const char *s = c.s ? c.s : ""; *s; s++) {
            if (*s == '\'' || *s == '\\')
                buf_putc(&b, '\\');
            if (*s == '\n')
                buf_puts(&b, "\\n");
            else
                buf_putc(&b, *s);
        }
        buf_putc(&b, '\'');
        break;
    case CK_DTYPE:
        if (c.brank) {
            /* Triton's str of a block_type: <[16, 16], fp32> */
            buf_puts(&b, c.of_block ? "pointer<<[" : "<[");
            for (int k = 0; k < c.brank; k++)
                buf_printf(&b, "%s%d", k ? ", " : "", (int)c.bshape[k]);
            Dtype e = c.of_block ? (Dtype)c.i : c.dt;
            if (!c.of_block && c.dt == DT_PTR)
                buf_printf(&b, "], pointer<%s>>", dtype_name((Dtype)c.i));
            else
                buf_printf(&b, "], %s>%s", dtype_name(e), c.of_block ? ">" : "");
        } else if (c.dt == DT_PTR)
            buf_printf(&b, "tl.pointer_type(tl.%s)", dtype_triton_name((Dtype)c.i));
        else
            buf_printf(&b, "tl.%s", dtype_triton_name(c.dt));
        break;
    }
    return buf_str(&b);
}

/* ------------------------------------------------------------------ */
/* f-string fields: str(), repr() and format() of constants            */
/* ------------------------------------------------------------------ */

/* str() of a Triton dtype: "int32", "fp32", "pointer<fp16>". */
static void dtype_str(Buf *b, Dtype dt, Dtype elem)
{
    if (dt == DT_PTR) {
        buf_puts(b, "pointer<");
        dtype_str(b, elem, DT_VOID);
        buf_putc(b, '>');
    } else {
        buf_puts(b, dtype_is_float(dt) ? dtype_name(dt) : dtype_triton_name(dt));
    }
}

/* Python's repr of a str: single quotes unless the text has ' and no ". */
static void repr_str(Buf *b, const char *s, bool ascii)
{
    char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    buf_putc(b, q);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == (unsigned char)q || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c == '\n')
            buf_puts(b, "\\n");
        else if (c == '\r')
            buf_puts(b, "\\r");
        else if (c == '\t')
            buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7F || (ascii && c >= 0x80))
            buf_printf(b, "\\x%02x", c);
        else
            buf_putc(b, (char)c);
    }
    buf_putc(b, q);
}

static const char *const_text(Arena *a, ConstVal c, char conv)
{
    Buf b = {.a = a};
    switch (c.kind) {
    case CK_STR:
        if (conv == 'r' || conv == 'a')
            repr_str(&b, c.s ? c.s : "", conv == 'a');
        else
            buf_puts(&b, c.s ? c.s : "");
        break;
    case CK_DTYPE:
        if (conv && conv != 's' && c.dt != DT_PTR)
            buf_printf(&b, "triton.language.%s", dtype_triton_name(c.dt));
        else
            dtype_str(&b, c.dt, (Dtype)c.i);
        break;
    default: return const_repr(a, c); /* None, bool, int, float: str == repr */
    }
    return buf_str(&b);
}

/* Inserts sep every `every` digits of the run of digits [s, s+n). */
static void put_grouped(Buf *b, const char *s, int n, char sep, int every)
{
    for (int k = 0; k < n; k++) {
        buf_putc(b, s[k]);
        if (sep && (n - 1 - k) % every == 0 && k != n - 1)
            buf_putc(b, sep);
    }
}

/* Python's format(c, spec) after the conversion conv (0, 's', 'r', 'a').
 * NULL with *err set when the spec does not apply (Python's ValueError or
 * TypeError) or uses what kad does not format. */
const char *const_format(Arena *a, ConstVal c, char conv, const char *spec, const char **err)
{
    *err = NULL;
    if (conv) {
        c = (ConstVal){.kind = CK_STR, .s = const_text(a, c, conv)};
    }
    if (!*spec)
        return const_text(a, c, 0);
    /* [[fill]align][sign][z][#][0][width][grouping][.precision][type] */
    const char *p = spec;
    char fill = ' ', align = 0, sign = 0, group = 0, type = 0;
    bool alt = false;
    int width = -1, prec = -1;
    if (p[0] && p[1] && strchr("<>=^", p[1])) {
        fill = p[0];
        align = p[1];
        p += 2;
    } else if (*p && strchr("<>=^", *p)) {
        align = *p++;
    }
    if (*p && strchr("+- ", *p))
        sign = *p++;
    if (*p == 'z')
        p++;
    if (*p == '#') {
        alt = true;
        p++;
    }
    if (*p == '0') {
        if (!align) {
            fill = '0';
            align = '=';
        }
        p++;
    }
    while (*p >= '0' && *p <= '9')
        width = (width < 0 ? 0 : width) * 10 + (*p++ - '0');
    if (*p == ',' || *p == '_')
        group = *p++;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) {
            *err = "format specifier missing precision";
            return NULL;
        }
        prec = 0;
        while (*p >= '0' && *p <= '9')
            prec = prec * 10 + (*p++ - '0');
    }
    if (*p)
        type = *p++;
    if (*p || width > 10000 || prec > 1000) {
        *err = "invalid format specifier";
        return NULL;
    }
    Buf body = {.a = a};
    const char *prefix = "";
    bool neg = false, numeric = true;
    ConstKind k = c.kind;
    if (k == CK_BOOL)
        k = CK_INT; /* bool.__format__ with a spec is int's */
    if (k == CK_STR && (!type || type == 's')) {
        if (sign || alt || group || align == '=') {
            *err = "sign, '#', grouping and '=' alignment are not allowed with a string";
            return NULL;
        }
        numeric = false;
        const char *s = c.s ? c.s : "";
        size_t n = strlen(s);
        if (prec >= 0) { /* at most prec characters (UTF-8 aware) */
            size_t cut = 0;
            for (int chars = 0; cut < n && chars < prec; chars++)
                do
                    cut++;
                while (cut < n && ((unsigned char)s[cut] & 0xC0) == 0x80);
            n = cut;
        }
        buf_printf(&body, "%.*s", (int)n, s);
    } else if (k == CK_INT && (!type || strchr("dboxXn", type))) {
        if (prec >= 0) {
            *err = "precision not allowed in integer format specifier";
            return NULL;
        }
        neg = c.i < 0;
        uint64_t u = neg ? (uint64_t)0 - (uint64_t)c.i : (uint64_t)c.i;
        int base = type == 'b' ? 2 : type == 'o' ? 8 : (type == 'x' || type == 'X') ? 16 : 10;
        char digits[80];
        int nd = 0;
        do {
            int dg = (int)(u % (uint64_t)base);
            digits[nd++] = (char)(dg < 10 ? '0' + dg : (type == 'X' ? 'A' : 'a') + dg - 10);
            u /= (uint64_t)base;
        } while (u);
        if (alt && base != 10)
            prefix = base == 2 ? "0b" : base == 8 ? "0o" : type == 'X' ? "0X" : "0x";
        int every = base == 10 ? 3 : 4, lead = (neg || sign ? 1 : 0) + (int)strlen(prefix);
        if (group && fill == '0' && align == '=') /* zero padding is grouped too */
            while (nd < 79 && lead + nd + (nd - 1) / every < width)
                digits[nd++] = '0';
        char rev[80];
        for (int i = 0; i < nd; i++)
            rev[i] = digits[nd - 1 - i];
        if (group == ',' && base != 10) {
            *err = "cannot specify ',' with this format type";
            return NULL;
        }
        put_grouped(&body, rev, nd, group, every);
    } else if ((k == CK_INT || k == CK_FLOAT) && (!type || strchr("eEfFgG%n", type))) {
        double f = k == CK_INT ? (double)c.i : c.f;
        neg = signbit(f) && !isnan(f);
        double af = fabs(f);
        char t = type == 'n' ? 'g' : type;
        char tmp[1200];
        if (!t && prec < 0) {
            Buf r = {.a = a};
            ir_format_float(&r, af);
            snprintf(tmp, sizeof tmp, "%s", buf_str(&r));
        } else if (!t) { /* like 'g', but a fixed-point result keeps a '.0' */
            snprintf(tmp, sizeof tmp, "%.*g", prec ? prec : 1, af);
            if (isfinite(af) && !strpbrk(tmp, ".e"))
                strcat(tmp, ".0");
        } else if (t == '%') {
            snprintf(tmp, sizeof tmp, "%.*f%%", prec < 0 ? 6 : prec, af * 100);
        } else {
            char f2[16];
            snprintf(f2, sizeof f2, "%%%s.*%c", alt ? "#" : "", t);
            snprintf(tmp, sizeof tmp, f2, prec < 0 ? 6 : prec, af);
        }
        int nd = 0;
        while (tmp[nd] >= '0' && tmp[nd] <= '9')
            nd++;
        const char *rest = tmp + nd;
        if (group && fill == '0' && align == '=') /* zero padding is grouped too */
            for (int lead = (int)strlen(rest) + (neg || sign ? 1 : 0); nd < 400 && lead + nd + (nd - 1) / 3 < width;)
                memmove(tmp + 1, tmp, strlen(tmp) + 1), tmp[0] = '0', nd++;
        put_grouped(&body, tmp, nd, group, 3);
        buf_puts(&body, tmp + nd);
    } else {
        *err = arena_printf(a, "unknown format code '%c' for a value of this type", type ? type : ' ');
        if (c.kind == CK_NONE || c.kind == CK_DTYPE)
            *err = "this value takes no format spec (only '{x}', '{x!r}' or '{x!s}')";
        return NULL;
    }
    const char *sgn = neg ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
    const char *text = buf_str(&body);
    int len = (int)strlen(sgn) + (int)strlen(prefix);
    for (const char *s = text; *s; s++)
        len += ((unsigned char)*s & 0xC0) != 0x80;
    int pad = width > len ? width - len : 0;
    if (!align)
        align = numeric ? '>' : '<';
    Buf out = {.a = a};
    int left = align == '<' ? 0 : align == '^' ? pad / 2 : pad;
    if (align != '=')
        for (int i = 0; i < left; i++)
            buf_putc(&out, fill);
    buf_puts(&out, sgn);
    buf_puts(&out, prefix);
    if (align == '=')
        for (int i = 0; i < pad; i++)
            buf_putc(&out, fill);
    buf_puts(&out, text);
    if (align != '=')
        for (int i = 0; i < pad - left; i++)
            buf_putc(&out, fill);
    return buf_str(&out);
}
