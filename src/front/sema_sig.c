/* sema_sig.c -- signatures: the types and constexpr values a kernel is
 * specialized for.
 *
 * Job: parse a signature string ("x_ptr=*fp32,n=i32,BLOCK=1024,ACT='relu'")
 * into SigParams located inside the string, and bind a kernel's parameters
 * from one: runtime parameters become Func params in source order (pointers,
 * or scalars of the types a kernel takes by value), tl.constexpr parameters
 * become constants (from the signature, else the parameter's default),
 * listed in Func.consts for the kernel header.  A runtime parameter given a
 * value is specialized as Triton's JIT does: None and the int 1 become
 * constants (Func.consts, marked runtime), other ints i32/i64 by range,
 * bools i1, floats fp32, and an annotated one (`n: tl.int64`) keeps its
 * annotated type.
 *
 * Invariant: parsing knows nothing of the kernel: a bare dtype (`fp32`)
 * stays SIG_SCALAR, and binding decides from the parameter's annotation
 * whether it is a runtime scalar type or a dtype constant (tl.float32).
 *
 * Requires: util.c (dtypes, diagnostics); for binding, sema.c's state and
 * helpers (front.h, "sema.c, sema_sig.c and sema_stmt.c").  Guarantees:
 * sig_parse reports the first error at its column in "<sig>" and returns
 * false; binding reports every bad entry or parameter, one error each.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "front/front.h"

/* ------------------------------------------------------------------ */
/* Signatures                                                          */
/* ------------------------------------------------------------------ */

/* Pointer element types and runtime scalar types a signature may name. */
static const Dtype sig_ptr_dtypes[] = {DT_F16,  DT_BF16, DT_F32, DT_F64,  DT_I1,    DT_I8,      DT_U8,
                                       DT_I16,  DT_I32,  DT_I64, DT_U32,  DT_F8E5, DT_F8E4NV, DT_F8E4B15};
static const Dtype sig_scalar_dtypes[] = {DT_I1, DT_I32, DT_I64, DT_U32, DT_F32, DT_F64};

static bool dtype_in(Dtype dt, const Dtype *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == dt)
            return true;
    return false;
}

static bool is_ident_start(char c) { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

/* Locations inside the signature string: one line, column = offset + 1. */
static Loc sig_loc(size_t off) { return (Loc){"<sig>", 1, (int)off + 1}; }

static size_t skip_ws(const char *s, size_t i)
{
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
        i++;
    return i;
}

/* The dtype whose Triton name is s[0..n) ("float16"), DT_VOID if none. */
static Dtype dtype_by_triton_name(const char *s, size_t n)
{
    for (int dt = DT_I1; dt < DT_PTR; dt++) {
        const char *t = dtype_triton_name((Dtype)dt);
        if (strlen(t) == n && !memcmp(t, s, n))
            return (Dtype)dt;
    }
    return DT_VOID;
}

/* number := ['+'|'-'] (DECIMAL | '0x' HEX | '0o' OCT | '0b' BIN | FLOAT)
 * Python's literal rules, ints limited to int64. */
static bool sig_number(Arena *a, Diags *d, const char *s, size_t *pi, SigParam *p)
{
    size_t i = *pi, j = i;
    if (s[j] == '+' || s[j] == '-')
        j++;
    size_t body = j;
    bool prefixed = s[body] == '0' && s[body + 1] && strchr("xXoObB", s[body + 1]);
    while (s[j] && (is_ident_char(s[j]) || s[j] == '.' ||
                    ((s[j] == '+' || s[j] == '-') && !prefixed && j > body &&
                     (s[j - 1] == 'e' || s[j - 1] == 'E'))))
        j++;
    char *tok = arena_strndup(a, s + i, j - i);
    const char *digits = tok + (body - i);
    if (!prefixed && strpbrk(digits, ".eE")) {
        char *end;
        errno = 0;
        double v = strtod(tok, &end);
        if (*end || end == tok || !is_digit(digits[0] == '.' ? digits[1] : digits[0])) {
            diag_error(d, sig_loc(i), "invalid number '%s' for parameter '%s'", tok, p->name);
            return false;
        }
        if (errno == ERANGE && (v > 1 || v < -1)) {
            diag_error(d, sig_loc(i), "float '%s' for parameter '%s' is out of range", tok, p->name);
            return false;
        }
        p->kind = SIG_CONST;
        p->value = (ConstVal){.kind = CK_FLOAT, .f = v};
    } else {
        int base = 10;
        if (prefixed) {
            char c = digits[1];
            base = c == 'x' || c == 'X' ? 16 : c == 'o' || c == 'O' ? 8 : 2;
            digits += 2;
        }
        char *end;
        errno = 0;
        unsigned long long u = is_ident_char(digits[0]) ? strtoull(digits, &end, base) : 0;
        bool neg = tok[0] == '-';
        if (!is_ident_char(digits[0]) || *end || (base == 10 && digits[0] == '0' && digits[1])) {
            diag_error(d, sig_loc(i), "invalid number '%s' for parameter '%s'", tok, p->name);
            return false;
        }
        if (errno == ERANGE || u > (neg ? (unsigned long long)INT64_MAX + 1 : (unsigned long long)INT64_MAX)) {
            diag_error(d, sig_loc(i), "integer '%s' for parameter '%s' does not fit in 64 bits", tok,
                       p->name);
            return false;
        }
        p->kind = SIG_CONST;
        p->value = (ConstVal){.kind = CK_INT, .i = neg ? (int64_t)(0 - u) : (int64_t)u};
    }
    *pi = j;
    return true;
}

/* 'tensordesc<' DTYPE '[' INT (',' INT)* ']' (',' ('zero' | 'nan'))? '>' at *pi:
 * Triton's type of a host-side TensorDescriptor (its padding is kad's
 * addition: Triton puts it in the TMA descriptor, not the type). */
static bool sig_tensordesc(Diags *d, const char *s, size_t *pi, SigParam *p)
{
    size_t i = skip_ws(s, *pi + 11), w = i;
    while (is_ident_char(s[i]))
        i++;
    Dtype dt = dtype_parse(s + w, i - w);
    if (i == w || !dtype_in(dt, sig_ptr_dtypes, sizeof sig_ptr_dtypes / sizeof *sig_ptr_dtypes) || dt == DT_I1) {
        diag_error(d, sig_loc(w), "expected an element type after 'tensordesc<' for parameter '%s' (e.g. "
                   "tensordesc<fp32[64, 64]>)", p->name);
        return false;
    }
    i = skip_ws(s, i);
    if (s[i] != '[') {
        diag_error(d, sig_loc(i), "expected '[' and the block shape in 'tensordesc<...>' for parameter '%s' "
                   "(e.g. tensordesc<fp32[64, 64]>)", p->name);
        return false;
    }
    p->rank = 0;
    do {
        i = skip_ws(s, i + 1);
        size_t b = i;
        int64_t v = 0;
        while (is_digit(s[i]) && v < 100000000)
            v = v * 10 + (s[i++] - '0');
        if (i == b || is_digit(s[i])) {
            diag_error(d, sig_loc(b), "expected a block dimension in 'tensordesc<...>' for parameter '%s'", p->name);
            return false;
        }
        if (p->rank == KAD_MAX_RANK) {
            diag_error(d, sig_loc(b), "tensor descriptor '%s' has more than %d dimensions, kad allows up to %d",
                       p->name, KAD_MAX_RANK, KAD_MAX_RANK);
            return false;
        }
        p->block[p->rank++] = v;
        i = skip_ws(s, i);
    } while (s[i] == ',');
    if (s[i] != ']') {
        diag_error(d, sig_loc(i), "expected ']' after the block shape in 'tensordesc<...>' for parameter '%s'",
                   p->name);
        return false;
    }
    i = skip_ws(s, i + 1);
    p->nan = false;
    if (s[i] == ',') {
        i = skip_ws(s, i + 1);
        if (!strncmp(s + i, "nan", 3) && !is_ident_char(s[i + 3])) {
            p->nan = true, i += 3;
        } else if (!strncmp(s + i, "zero", 4) && !is_ident_char(s[i + 4])) {
            i += 4;
        } else {
            diag_error(d, sig_loc(i), "expected the padding 'zero' or 'nan' after the block shape in "
                       "'tensordesc<...>' for parameter '%s'", p->name);
            return false;
        }
        i = skip_ws(s, i);
    }
    if (s[i] != '>') {
        diag_error(d, sig_loc(i), "expected '>' to end 'tensordesc<...>' for parameter '%s'", p->name);
        return false;
    }
    p->kind = SIG_TENSORDESC;
    p->dt = dt;
    *pi = i + 1;
    return true;
}

/* range := '[' INT ':' INT ']' after an int scalar type: the value lies in
 * [LO, HI] (ParamRange, docs/LANGUAGE.md "Signatures"). */
static bool sig_range(Arena *a, Diags *d, const char *s, size_t *pi, SigParam *p)
{
    size_t i = *pi;
    if (p->dt != DT_I32 && p->dt != DT_I64 && p->dt != DT_U32) {
        diag_error(d, sig_loc(i), "a range '[lo:hi]' is for int parameters (i32, i64, u32), not %s ('%s')",
                   dtype_name(p->dt), p->name);
        return false;
    }
    int64_t b[2];
    for (int k = 0; k < 2; k++) {
        i = skip_ws(s, i + 1);
        size_t w = i;
        SigParam q = {.name = p->name};
        if (!sig_number(a, d, s, &i, &q))
            return false;
        if (q.value.kind != CK_INT) {
            diag_error(d, sig_loc(w), "expected an int bound in the range of parameter '%s'", p->name);
            return false;
        }
        b[k] = q.value.i;
        i = skip_ws(s, i);
        if (s[i] != (k ? ']' : ':')) {
            diag_error(d, sig_loc(i), "expected '%c' in the range '[lo:hi]' of parameter '%s'", k ? ']' : ':',
                       p->name);
            return false;
        }
    }
    int64_t tlo = p->dt == DT_I32 ? INT32_MIN : p->dt == DT_U32 ? 0 : INT64_MIN;
    int64_t thi = p->dt == DT_I32 ? INT32_MAX : p->dt == DT_U32 ? (int64_t)UINT32_MAX : INT64_MAX;
    if (b[0] > b[1] || b[0] < tlo || b[1] > thi) {
        diag_error(d, sig_loc(*pi), "the range [%lld:%lld] of parameter '%s' is empty or outside %s",
                   (long long)b[0], (long long)b[1], p->name, dtype_name(p->dt));
        return false;
    }
    p->ranged = true;
    p->lo = b[0];
    p->hi = b[1];
    *pi = i + 1;
    return true;
}

/* spec := '*' DTYPE                       pointer (runtime)
 *       | DTYPE [range]                   scalar type (or dtype constant); an int's range
 *       | number | 'True' | 'False' | 'None' | STRING
 *       | ('tl.' | 'triton.language.') TRITON_DTYPE
 *       | 'tensordesc<' DTYPE '[' INT (',' INT)* ']' (',' ('zero' | 'nan'))? '>'
 *                                            Triton's host-side TensorDescriptor */
static bool sig_spec(Arena *a, Diags *d, const char *s, size_t *pi, SigParam *p)
{
    size_t i = *pi;
    char c = s[i];
    if (c == '*') {
        i = skip_ws(s, i + 1);
        size_t w = i;
        while (is_ident_char(s[i]))
            i++;
        Dtype dt = dtype_parse(s + w, i - w);
        if (i == w || !dtype_in(dt, sig_ptr_dtypes, sizeof sig_ptr_dtypes / sizeof *sig_ptr_dtypes)) {
            diag_error(d, sig_loc(w),
                       "expected a pointer element type after '*' for parameter '%s' (fp16, bf16, "
                       "fp32, fp64, i1, i8, u8, i16, i32, i64, u32, fp8e5, fp8e4nv or fp8e4b15)",
                       p->name);
            return false;
        }
        p->kind = SIG_PTR;
        p->dt = dt;
    } else if (c == '\'' || c == '"') {
        size_t j = i + 1;
        while (s[j] && s[j] != c)
            j++;
        if (!s[j]) {
            diag_error(d, sig_loc(i), "unterminated string for parameter '%s'", p->name);
            return false;
        }
        p->kind = SIG_CONST;
        p->value = (ConstVal){.kind = CK_STR, .s = arena_strndup(a, s + i + 1, j - i - 1)};
        i = j + 1;
    } else if (is_digit(c) || c == '-' || c == '+' || c == '.') {
        if (!sig_number(a, d, s, &i, p))
            return false;
    } else if (!strncmp(s + i, "tensordesc<", 11)) {
        if (!sig_tensordesc(d, s, &i, p))
            return false;
    } else if (is_ident_start(c)) {
        size_t w = i;
        while (is_ident_char(s[i]) || (s[i] == '.' && is_ident_start(s[i + 1])))
            i++;
        const char *word = s + w;
        size_t n = i - w;
        if (n == 4 && !memcmp(word, "True", 4)) {
            p->kind = SIG_CONST;
            p->value = (ConstVal){.kind = CK_BOOL, .i = 1};
        } else if (n == 5 && !memcmp(word, "False", 5)) {
            p->kind = SIG_CONST;
            p->value = (ConstVal){.kind = CK_BOOL, .i = 0};
        } else if (n == 4 && !memcmp(word, "None", 4)) {
            p->kind = SIG_CONST;
            p->value = (ConstVal){.kind = CK_NONE};
        } else if (memchr(word, '.', n)) {
            size_t pre = n > 3 && !memcmp(word, "tl.", 3) ? 3
                         : n > 16 && !memcmp(word, "triton.language.", 16) ? 16 : 0;
            Dtype dt = pre ? dtype_by_triton_name(word + pre, n - pre) : DT_VOID;
            if (dt == DT_VOID) {
                diag_error(d, sig_loc(w), "unknown dtype '%.*s' for parameter '%s'", (int)n, word,
                           p->name);
                return false;
            }
            p->kind = SIG_CONST;
            p->value = (ConstVal){.kind = CK_DTYPE, .dt = dt};
        } else {
            Dtype dt = dtype_parse(word, n);
            if (dt == DT_VOID || dt == DT_PTR) {
                diag_error(d, sig_loc(w), "unknown type or value '%.*s' for parameter '%s'", (int)n,
                           word, p->name);
                return false;
            }
            /* a runtime scalar, or a dtype constant for a constexpr
             * parameter: sema_kernel decides from the annotation */
            p->kind = SIG_SCALAR;
            p->dt = dt;
            if (s[i] == '[' && !sig_range(a, d, s, &i, p))
                return false;
        }
    } else {
        diag_error(d, sig_loc(i), "expected a type or a value for parameter '%s'", p->name);
        return false;
    }
    *pi = i;
    return true;
}

/* signature := [ param (',' param)* ]     param := NAME '=' spec */
bool sig_parse(Arena *a, Diags *d, const char *text, Signature *out)
{
    memset(out, 0, sizeof *out);
    const char *s = text;
    size_t i = skip_ws(s, 0);
    if (!s[i])
        return true;
    for (;;) {
        i = skip_ws(s, i);
        size_t ns = i;
        while (is_ident_char(s[i]))
            i++;
        if (i == ns || !is_ident_start(s[ns])) {
            diag_error(d, sig_loc(ns), "expected a parameter name");
            return false;
        }
        SigParam p = {.name = arena_strndup(a, s + ns, i - ns), .loc = sig_loc(ns)};
        i = skip_ws(s, i);
        if (s[i] != '=') {
            diag_error(d, sig_loc(i), "expected '=' after parameter name '%s'", p.name);
            return false;
        }
        i = skip_ws(s, i + 1);
        if (!sig_spec(a, d, s, &i, &p))
            return false;
        for (int k = 0; k < out->params.n; k++)
            if (!strcmp(out->params.v[k].name, p.name)) {
                diag_error(d, p.loc, "parameter '%s' appears twice in the signature", p.name);
                return false;
            }
        vec_push(a, out->params, p);
        i = skip_ws(s, i);
        if (!s[i])
            return true;
        if (s[i] != ',') {
            diag_error(d, sig_loc(i), "unexpected '%c' after parameter '%s' (parameters are separated by ',')",
                       s[i], p.name);
            return false;
        }
        i++;
    }
}

/* ------------------------------------------------------------------ */
/* The kernel's parameters                                             */
/* ------------------------------------------------------------------ */

/* A ConstVal as an SVal: Python None is SV_NONE, not a constant. */
static SVal sv_from_const(ConstVal c)
{
    if (c.kind == CK_NONE)
        return sval_none();
    return (SVal){.kind = SV_CONST, .c = c};
}

/* A constexpr tuple as Python prints it, for the kernel header. */
static const char *sval_repr(Sema *S, SVal x)
{
    if (x.kind == SV_NONE)
        return "None";
    if (x.kind == SV_CONST)
        return const_repr(S->a, x.c);
    if (x.kind == SV_TUPLE) {
        Buf b = {.a = S->a};
        buf_putc(&b, '(');
        for (int i = 0; i < x.n; i++)
            buf_printf(&b, "%s%s", i ? ", " : "", sval_repr(S, x.elts[i]));
        buf_puts(&b, x.n == 1 ? ",)" : ")");
        return buf_str(&b);
    }
    return "?";
}

static const SigParam *sig_find(const Signature *sig, const char *name)
{
    for (int i = 0; i < sig->params.n; i++)
        if (!strcmp(sig->params.v[i].name, name))
            return &sig->params.v[i];
    return NULL;
}

static const char *param_list(Arena *a, const FuncDef *fn)
{
    Buf b = {.a = a};
    for (int i = 0; i < fn->nparams; i++)
        buf_printf(&b, "%s%s", i ? ", " : "", fn->params[i].name);
    return fn->nparams ? buf_str(&b) : "none";
}

/* The dtype a runtime parameter's annotation names (`n: tl.int64`,
 * `n: "i64"`), DT_VOID when it has none or names no dtype. */
static Dtype ann_dtype(Sema *S, const Module *m, const Expr *ann)
{
    if (!ann)
        return DT_VOID;
    if (ann->kind == EX_STR) {
        const char *t = ann->str;
        size_t n = strlen(t);
        size_t pre = n > 3 && !memcmp(t, "tl.", 3) ? 3 : n > 16 && !memcmp(t, "triton.language.", 16) ? 16 : 0;
        Dtype dt = pre ? dtype_by_triton_name(t + pre, n - pre) : dtype_parse(t, n);
        return dt == DT_PTR ? DT_VOID : dt;
    }
    const char *q = sema_qual_of(S, m, NULL, ann);
    if (q && !strncmp(q, "triton.language.", 16))
        return dtype_by_triton_name(q + 16, strlen(q + 16));
    return DT_VOID;
}

/* A host-side tensor descriptor parameter (Triton's TensorDescriptor):
 * expanded as Triton's launcher passes it (base, shape, strides), the
 * last stride the constant 1 (TensorDescriptor asserts it), into Func
 * params named `p`, `p_shape_<k>`, `p_stride_<k>` (Func.descs), and bound
 * to the descriptor of sema those name (sval_host_tensor_desc). */
static bool bind_host_desc(Sema *S, const FuncDef *fn, const Param *p, const SigParam *sp)
{
    Func *f = S->L.f;
    int rank = sp->rank, bytes = dtype_bytes(sp->dt);
    for (int k = 0; k < rank; k++)
        if (sp->block[k] <= 0 || (sp->block[k] & (sp->block[k] - 1)) != 0) {
            diag_error(S->d, sp->loc, "tensor descriptor '%s': block dimensions must be powers of 2, got %lld",
                       p->name, (long long)sp->block[k]);
            return false;
        }
    if (sp->block[rank - 1] * bytes < 16) {
        diag_error(S->d, sp->loc, "tensor descriptor '%s': the block shape must have at least 16 bytes in the "
                   "last dimension, got %lld * %d bytes", p->name, (long long)sp->block[rank - 1], bytes);
        return false;
    }
    const char *names[2 * KAD_MAX_RANK];
    names[0] = p->name;
    for (int k = 0; k < rank; k++)
        names[1 + k] = arena_printf(S->a, "%s_shape_%d", p->name, k);
    for (int k = 0; k + 1 < rank; k++)
        names[1 + rank + k] = arena_printf(S->a, "%s_stride_%d", p->name, k);
    for (int j = 1; j < 2 * rank; j++)
        for (int k = 0; k < fn->nparams; k++)
            if (!strcmp(fn->params[k].name, names[j])) {
                diag_error(S->d, p->loc, "tensor descriptor '%s' is passed to the kernel as '%s', '%s', ...: the "
                           "kernel's parameter '%s' has that name; rename it", p->name, names[0], names[1],
                           names[j]);
                return false;
            }
    FuncDesc fd = {.name = p->name, .param = f->nparams, .rank = rank, .nan = sp->nan};
    memcpy(fd.block, sp->block, sizeof fd.block);
    ValId base = ir_param_add(f, type_ptr(sp->dt, 0, NULL), p->name, p->loc), shape[KAD_MAX_RANK],
          strides[KAD_MAX_RANK];
    for (int k = 0; k < rank; k++)
        shape[k] = ir_param_add(f, type_scalar(DT_I32), names[1 + k], p->loc);
    for (int k = 0; k + 1 < rank; k++)
        strides[k] = ir_param_add(f, type_scalar(DT_I64), names[1 + rank + k], p->loc);
    vec_push(S->a, f->descs, fd);
    sema_env_set(S->a, &S->fr->env, p->name,
                 sval_host_tensor_desc(&S->L, base, shape, strides, sp->block, rank, sp->nan));
    return true;
}

/* Binds the kernel's parameters from the signature: runtime ones become
 * Func params (source order), constexpr ones constants (Func.consts). */
void sema_bind_kernel_params(Sema *S, const Module *m, const FuncDef *fn, const Signature *sig)
{
    Func *f = S->L.f;
    for (int i = 0; i < sig->params.n; i++) {
        const SigParam *sp = &sig->params.v[i];
        int k = 0;
        while (k < fn->nparams && strcmp(fn->params[k].name, sp->name))
            k++;
        if (k == fn->nparams)
            diag_error(S->d, sp->loc, "'%s' is not a parameter of kernel '%s' (its parameters: %s)", sp->name,
                       fn->name, param_list(S->a, fn));
    }
    /* at: the def position in the kernel as kad emits it, a host descriptor counting as its 2*rank parts */
    for (int i = 0, at = 0; i < fn->nparams; i++, at++) {
        const Param *p = &fn->params[i];
        const SigParam *sp = sig_find(sig, p->name);
        if (sema_is_constexpr_ann(S, m, p->ann)) {
            SVal v;
            if (sp && sp->kind == SIG_CONST) {
                v = sv_from_const(sp->value);
            } else if (sp && sp->kind == SIG_SCALAR && sp->ranged) {
                diag_error(S->d, sp->loc, "parameter '%s' is tl.constexpr: the signature gives its value, not a range",
                           p->name);
                continue;
            } else if (sp && sp->kind == SIG_SCALAR) { /* `fp32` for a constexpr: the dtype tl.float32 */
                v = (SVal){.kind = SV_CONST, .c = {.kind = CK_DTYPE, .dt = sp->dt}};
            } else if (sp) {
                diag_error(S->d, sp->loc,
                           "parameter '%s' is tl.constexpr: the signature must give its value (e.g. %s=1024), "
                           "not a pointer type",
                           p->name, p->name);
                continue;
            } else if (p->dflt) {
                v = sema_eval_module_const(S, m, p->dflt, -1, arena_printf(S->a, "the default value of '%s'", p->name));
            } else {
                diag_error(S->d, p->loc, "missing value for tl.constexpr parameter '%s' in the signature", p->name);
                continue;
            }
            sema_env_set(S->a, &S->fr->env, p->name, v);
            if (v.kind != SV_ERROR) {
                ConstParam cp = {p->name, sval_repr(S, v), at + 1, false};
                vec_push(S->a, f->consts, cp);
            }
            continue;
        }
        if (!sp) {
            diag_error(S->d, p->loc, "missing type for parameter '%s' in the signature (e.g. %s=i32 or %s=*fp32)",
                       p->name, p->name, p->name);
            continue;
        }
        Type ty;
        if (sp->kind == SIG_CONST) {
            /* a value for a runtime parameter: specialized as Triton's JIT does */
            Dtype ann = ann_dtype(S, m, p->ann);
            ConstKind ck = sp->value.kind;
            if (ann != DT_VOID && (ck == CK_INT || ck == CK_BOOL || ck == CK_FLOAT)) {
                /* `n: tl.int64` keeps its type whatever the value */
                if (!dtype_in(ann, sig_scalar_dtypes, sizeof sig_scalar_dtypes / sizeof *sig_scalar_dtypes)) {
                    diag_error(S->d, p->loc,
                               "runtime scalar parameter '%s' is annotated %s: kad takes i1, i32, i64, u32, fp32 "
                               "or fp64",
                               p->name, dtype_name(ann));
                    continue;
                }
                ty = type_scalar(ann);
            } else if (ann == DT_VOID && (ck == CK_NONE || (ck == CK_INT && sp->value.i == 1))) {
                /* None and the int 1 become constants (Triton: ("constexpr", value)) */
                SVal v = sv_from_const(sp->value);
                sema_env_set(S->a, &S->fr->env, p->name, v);
                ConstParam cp = {p->name, sval_repr(S, v), at + 1, true};
                vec_push(S->a, f->consts, cp);
                continue;
            } else if (ann == DT_VOID && ck == CK_INT) {
                ty = type_scalar(sp->value.i >= INT32_MIN && sp->value.i <= INT32_MAX ? DT_I32 : DT_I64);
            } else if (ann == DT_VOID && ck == CK_BOOL) {
                ty = type_scalar(DT_I1);
            } else if (ann == DT_VOID && ck == CK_FLOAT) {
                ty = type_scalar(DT_F32);
            } else {
                diag_error(S->d, sp->loc,
                           "parameter '%s' is not tl.constexpr: the signature must give its type (e.g. %s=i32) "
                           "or a value Triton specializes on (None, an int, a float or a bool), not %s; "
                           "annotate it '%s: tl.constexpr' to specialize on that value",
                           p->name, p->name, ann != DT_VOID && ck == CK_NONE ? "None for an annotated parameter"
                                                                              : "this value",
                           p->name);
                continue;
            }
        } else if (sp->kind == SIG_TENSORDESC) {
            if (bind_host_desc(S, fn, p, sp))
                at += 2 * sp->rank - 1;
            continue;
        } else if (sp->kind == SIG_PTR) {
            ty = type_ptr(sp->dt, 0, NULL);
        } else {
            if (!dtype_in(sp->dt, sig_scalar_dtypes, sizeof sig_scalar_dtypes / sizeof *sig_scalar_dtypes)) {
                diag_error(S->d, sp->loc,
                           "runtime scalar parameter '%s' must be i1, i32, i64, u32, fp32 or fp64, not %s",
                           p->name, dtype_name(sp->dt));
                continue;
            }
            ty = type_scalar(sp->dt);
        }
        if (sp->ranged) {
            if (ty.dt != sp->dt) {
                diag_error(S->d, sp->loc, "parameter '%s' has a range: it must be a runtime int", p->name);
                continue;
            }
            ParamRange r = {f->nparams, sp->lo, sp->hi};
            vec_push(S->a, f->ranges, r);
        }
        ValId v = ir_param_add(f, ty, p->name, p->loc);
        sema_env_set(S->a, &S->fr->env, p->name, sval_value(v));
    }
}
