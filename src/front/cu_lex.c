/* cu_lex.c -- CUDA C / HIP tokens and the preprocessor subset.
 *
 * Two steps: the text becomes raw tokens (each marked when it starts a
 * line, so that `#` lines are directives); then the directives run in order
 * over them: object-like and function-like #define (with # and ##), #undef,
 * #if/#ifdef/#ifndef/#elif/#else/#endif with integer expressions and
 * defined(), #pragma and #error skipped or reported.  #include of the
 * runtime and host-library headers (CUDA, HIP, C/C++, torch, ATen, c10,
 * thrust...) is ignored: what a kernel uses from them is either a name the
 * front end knows or an unknown name refused where it is used.  A quoted
 * #include "h" is read as nvcc reads it, relative to the directory of the
 * file that includes it, and its raw tokens are spliced in place of the
 * directive (so macros, conditionals and #pragma once span files; each
 * token keeps its own file's location).  Macros expand with the usual rule that a macro is not expanded
 * inside its own expansion.  Expanded tokens keep the location of the use.
 * Comments, backslash-newlines and string literals are handled; host code
 * is tokenized like device code (the parser skips it).
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "front/cuda.h"
#include "front/cu.h"

typedef Vec(CuTok) TokVec;

static const char *const puncts[] = {
    "<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+=", "-=",
    "*=", "/=", "%=", "&=", "|=", "^=", "::", "##",
    "+", "-", "*", "/", "%", "<", ">", "=", "!", "~", "&", "|", "^", "?", ":", ";", ",", ".", "(", ")",
    "[", "]", "{", "}", "#",
};

/* Raw tokens of text; line starts marked. */
static void lex_raw(Arena *a, Diags *d, const char *file, const char *text, TokVec *out)
{
    const char *p = text, *ls = text;
    int line = 1;
    bool bol = true;
    while (*p) {
        if (*p == '\n') {
            line++, p++, ls = p, bol = true;
            continue;
        }
        if (*p == '\\' && p[1] == '\n') {
            line++, p += 2, ls = p;
            continue;
        }
        if (*p == '\\' && p[1] == '\r' && p[2] == '\n') {
            line++, p += 3, ls = p;
            continue;
        }
        if (isspace((unsigned char)*p)) {
            p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '/') {
            while (*p && *p != '\n')
                p++;
            continue;
        }
        if (p[0] == '/' && p[1] == '*') {
            p += 2;
            while (*p && !(p[0] == '*' && p[1] == '/')) {
                if (*p == '\n')
                    line++, ls = p + 1;
                p++;
            }
            if (*p)
                p += 2;
            continue;
        }
        CuTok t = {0};
        t.loc = (Loc){file, line, (int)(p - ls) + 1};
        t.bol = bol;
        bol = false;
        const char *s = p;
        if (isalpha((unsigned char)*p) || *p == '_') {
            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            t.kind = CT_IDENT;
        } else if (isdigit((unsigned char)*p) || (*p == '.' && isdigit((unsigned char)p[1]))) {
            bool hex = p[0] == '0' && (p[1] == 'x' || p[1] == 'X');
            bool flt = false;
            if (hex) {
                p += 2;
                while (isxdigit((unsigned char)*p))
                    p++;
            } else {
                while (isdigit((unsigned char)*p))
                    p++;
                if (*p == '.') {
                    flt = true;
                    p++;
                    while (isdigit((unsigned char)*p))
                        p++;
                }
                if (*p == 'e' || *p == 'E') {
                    const char *q = p + 1;
                    if (*q == '+' || *q == '-')
                        q++;
                    if (isdigit((unsigned char)*q)) {
                        flt = true;
                        p = q;
                        while (isdigit((unsigned char)*p))
                            p++;
                    }
                }
            }
            const char *num_end = p;
            if (flt) {
                t.kind = CT_FLOAT;
                t.fval = strtod(arena_strndup(a, s, (size_t)(num_end - s)), NULL);
                if (*p == 'f' || *p == 'F')
                    t.is_f32 = true, p++;
                else if (*p == 'l' || *p == 'L')
                    p++;
            } else {
                t.kind = CT_INT;
                char *e;
                unsigned long long v = strtoull(arena_strndup(a, s, (size_t)(num_end - s)), &e, 0);
                t.ival = (int64_t)v;
                for (;;) {
                    if (*p == 'u' || *p == 'U')
                        t.is_unsigned = true, p++;
                    else if (*p == 'l' || *p == 'L')
                        t.is_long = true, p++;
                    else
                        break;
                }
                if (*p == 'f' || *p == 'F') { /* 1f is not C, but `1.f` is handled above */
                    diag_error(d, t.loc, "integer literal with an 'f' suffix: write 1.0f");
                    p++;
                }
            }
            if (isalnum((unsigned char)*p) || *p == '_') {
                diag_error(d, t.loc, "malformed number");
                while (isalnum((unsigned char)*p) || *p == '_')
                    p++;
            }
        } else if (*p == '"' || *p == '\'') {
            char q = *p++;
            while (*p && *p != q && *p != '\n') {
                if (*p == '\\' && p[1])
                    p++;
                p++;
            }
            if (*p != q)
                diag_error(d, t.loc, "unterminated %s literal", q == '"' ? "string" : "character");
            else
                p++;
            t.kind = q == '"' ? CT_STRING : CT_CHAR;
            if (q == '\'')
                t.ival = s[1] == '\\' ? (s[2] == 'n' ? 10 : s[2] == '0' ? 0 : s[2]) : (unsigned char)s[1];
        } else {
            t.kind = CT_PUNCT;
            size_t n = 0;
            for (size_t k = 0; k < sizeof puncts / sizeof *puncts; k++) {
                size_t m = strlen(puncts[k]);
                if (!strncmp(p, puncts[k], m)) {
                    n = m;
                    break;
                }
            }
            if (!n) {
                diag_error(d, t.loc, "unexpected character '%c'", *p);
                p++;
                continue;
            }
            p += n;
        }
        t.text = arena_strndup(a, s, (size_t)(p - s));
        vec_push(a, *out, t);
    }
    CuTok eof = {.kind = CT_EOF, .loc = {file, line, (int)(p - ls) + 1}, .text = "", .bol = true};
    vec_push(a, *out, eof);
}

/* ---- macros ---- */

typedef struct Macro {
    const char *name;
    bool func;
    const char **params;
    int nparams;
    bool variadic;
    CuTok *body;
    int nbody;
    bool busy; /* being expanded */
} Macro;

typedef struct Pre {
    Arena *a;
    Diags *d;
    Vec(Macro) macros;
    TokVec out;
} Pre;

static Macro *find_macro(Pre *P, const char *name)
{
    for (int i = P->macros.n - 1; i >= 0; i--)
        if (P->macros.v[i].name && !strcmp(P->macros.v[i].name, name))
            return &P->macros.v[i];
    return NULL;
}

static bool is_p(const CuTok *t, const char *s) { return t->kind == CT_PUNCT && !strcmp(t->text, s); }

/* Expands toks[*i] (a macro name) reading arguments from toks[..n); appends
 * the result to out.  Returns false when toks[*i] is not expanded. */
static bool expand_one(Pre *P, const CuTok *toks, int n, int *i, TokVec *out, Loc use);

/* Appends toks[0..n) to out with every macro expanded. */
static void expand_list(Pre *P, const CuTok *toks, int n, TokVec *out, Loc use, bool keep_loc)
{
    for (int i = 0; i < n; i++) {
        if (toks[i].kind == CT_IDENT && expand_one(P, toks, n, &i, out, keep_loc ? toks[i].loc : use))
            continue;
        CuTok t = toks[i];
        if (!keep_loc)
            t.loc = use;
        t.bol = false;
        vec_push(P->a, *out, t);
    }
}

/* The index of the parameter of m that t names (__VA_ARGS__: the one after
 * the named ones), or -1. */
static int param_index(const Macro *m, const CuTok *t)
{
    if (!m->func || t->kind != CT_IDENT)
        return -1;
    for (int q = 0; q < m->nparams; q++)
        if (!strcmp(m->params[q], t->text))
            return q;
    return m->variadic && !strcmp(t->text, "__VA_ARGS__") ? m->nparams : -1;
}

/* `#x`: the argument's spelling as a string literal, one space where its
 * tokens were apart, quotes and backslashes of its literals escaped. */
static CuTok stringize(Pre *P, const TokVec *arg, Loc use)
{
    Buf b = {.a = P->a};
    buf_puts(&b, "\"");
    for (int k = 0; k < arg->n; k++) {
        const CuTok *t = &arg->v[k];
        if (k && !(t->loc.line == arg->v[k - 1].loc.line &&
                   t->loc.col == arg->v[k - 1].loc.col + (int)strlen(arg->v[k - 1].text)))
            buf_puts(&b, " ");
        for (const char *c = t->text; *c; c++) {
            if ((t->kind == CT_STRING || t->kind == CT_CHAR) && (*c == '"' || *c == '\\'))
                buf_puts(&b, "\\");
            buf_printf(&b, "%c", *c);
        }
    }
    buf_puts(&b, "\"");
    return (CuTok){.kind = CT_STRING, .loc = use, .text = buf_str(&b)};
}

/* `l ## r`: the one token that the two spellings make together, relexed;
 * an error when they make none or several. */
static CuTok paste(Pre *P, const CuTok *l, const CuTok *r, Loc at)
{
    Buf b = {.a = P->a};
    buf_printf(&b, "%s%s", l->text, r->text);
    const char *text = buf_str(&b);
    TokVec tv = {0};
    Diags quiet;
    diag_init(&quiet, P->a);
    lex_raw(P->a, &quiet, at.file, text, &tv);
    if (quiet.nerrors || tv.n != 2) {
        diag_error(P->d, at, "'##' pastes '%s' and '%s' into '%s', which is not one token", l->text, r->text, text);
        return *l;
    }
    CuTok t = tv.v[0];
    t.loc = at;
    t.bol = false;
    return t;
}

/* The body of m with its parameters replaced by args[0..nargs): an
 * argument is macro-expanded first unless it is the operand of # or ##
 * (C11 6.10.3.1); `#p` stringizes, `a ## b` pastes the tokens at its
 * sides.  An empty operand of ## leaves the other side as it is. */
static void substitute(Pre *P, const Macro *m, const TokVec *args, int nargs, TokVec *out, Loc use)
{
    static const TokVec none = {0};
    for (int k = 0; k < m->nbody; k++) {
        const CuTok *t = &m->body[k];
        int pi = param_index(m, t);
        const TokVec *arg = pi >= 0 ? (pi < nargs ? &args[pi] : &none) : NULL;
        if (m->func && is_p(t, "#")) {
            int qi = k + 1 < m->nbody ? param_index(m, &m->body[k + 1]) : -1;
            if (qi < 0) {
                diag_error(P->d, t->loc, "'#' in a function-like macro must be followed by a parameter's name");
                continue;
            }
            vec_push(P->a, *out, stringize(P, qi < nargs ? &args[qi] : &none, use));
            k++;
            continue;
        }
        if (is_p(t, "##")) {
            if (k + 1 >= m->nbody || k == 0) {
                diag_error(P->d, t->loc, "'##' cannot be at either end of a macro body");
                continue;
            }
            const CuTok *rt = &m->body[++k];
            int ri = param_index(m, rt);
            const CuTok *rv = rt;
            int rn = 1;
            if (ri >= 0) {
                rv = ri < nargs ? args[ri].v : NULL;
                rn = ri < nargs ? args[ri].n : 0;
            }
            int start = 0;
            if (rn && out->n) {
                out->v[out->n - 1] = paste(P, &out->v[out->n - 1], &rv[0], use);
                start = 1;
            }
            for (int q = start; q < rn; q++)
                vec_push(P->a, *out, rv[q]);
            continue;
        }
        if (!arg) {
            vec_push(P->a, *out, *t);
        } else if (k + 1 < m->nbody && is_p(&m->body[k + 1], "##")) {
            for (int q = 0; q < arg->n; q++)
                vec_push(P->a, *out, arg->v[q]);
        } else {
            expand_list(P, arg->v, arg->n, out, use, false);
        }
    }
}

static bool expand_one(Pre *P, const CuTok *toks, int n, int *i, TokVec *out, Loc use)
{
    Macro *m = find_macro(P, toks[*i].text);
    if (!m || m->busy)
        return false;
    if (!m->func) {
        TokVec subst = {0};
        substitute(P, m, NULL, 0, &subst, use);
        m->busy = true;
        expand_list(P, subst.v, subst.n, out, use, false);
        m->busy = false;
        return true;
    }
    int j = *i + 1;
    if (j >= n || !is_p(&toks[j], "("))
        return false; /* a function-like macro's name alone is not a use */
    /* the arguments: balanced, split at top-level commas */
    Vec(TokVec) args = {0};
    TokVec cur = {0};
    int depth = 0;
    j++;
    for (; j < n; j++) {
        const CuTok *t = &toks[j];
        if (t->kind == CT_EOF)
            break;
        if (is_p(t, "(") || is_p(t, "[") || is_p(t, "{"))
            depth++;
        if (is_p(t, ")") || is_p(t, "]") || is_p(t, "}")) {
            if (depth == 0 && is_p(t, ")"))
                break;
            depth--;
        }
        if (depth == 0 && is_p(t, ",") && !(m->variadic && args.n >= m->nparams)) {
            vec_push(P->a, args, cur);
            cur = (TokVec){0};
            continue;
        }
        vec_push(P->a, cur, *t);
    }
    if (j >= n || !is_p(&toks[j], ")")) {
        diag_error(P->d, use, "unterminated call of macro '%s'", m->name);
        *i = n - 1;
        return true;
    }
    if (cur.n || args.n || m->nparams)
        vec_push(P->a, args, cur);
    int want = m->nparams + (m->variadic ? 1 : 0);
    if (args.n != want && !(m->variadic && args.n == m->nparams)) {
        diag_error(P->d, use, "macro '%s' takes %d arguments, %d given", m->name, m->nparams, args.n);
        *i = j;
        return true;
    }
    /* substitute the arguments (expanded, except next to # and ##), then rescan */
    TokVec subst = {0};
    substitute(P, m, args.v, args.n, &subst, use);
    m->busy = true;
    expand_list(P, subst.v, subst.n, out, use, false);
    m->busy = false;
    *i = j;
    return true;
}

/* ---- #if expressions ---- */

typedef struct CondP {
    Pre *P;
    const CuTok *t;
    int n, i;
    bool bad;
} CondP;

static int64_t cond_expr(CondP *C, int prec);

static int64_t cond_primary(CondP *C)
{
    if (C->i >= C->n) {
        C->bad = true;
        return 0;
    }
    const CuTok *t = &C->t[C->i++];
    if (t->kind == CT_INT || t->kind == CT_CHAR)
        return t->ival;
    if (is_p(t, "(")) {
        int64_t v = cond_expr(C, 0);
        if (C->i < C->n && is_p(&C->t[C->i], ")"))
            C->i++;
        else
            C->bad = true;
        return v;
    }
    if (is_p(t, "!"))
        return !cond_primary(C);
    if (is_p(t, "-"))
        return -cond_primary(C);
    if (is_p(t, "~"))
        return ~cond_primary(C);
    if (t->kind == CT_IDENT)
        return 0; /* an undefined name (defined() was resolved before) */
    C->bad = true;
    return 0;
}

static int cond_prec(const CuTok *t)
{
    static const struct { const char *op; int prec; } ops[] = {
        {"||", 1}, {"&&", 2}, {"|", 3}, {"^", 4}, {"&", 5}, {"==", 6}, {"!=", 6}, {"<", 7}, {">", 7},
        {"<=", 7}, {">=", 7}, {"<<", 8}, {">>", 8}, {"+", 9}, {"-", 9}, {"*", 10}, {"/", 10}, {"%", 10},
    };
    if (t->kind != CT_PUNCT)
        return -1;
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (!strcmp(t->text, ops[k].op))
            return ops[k].prec;
    return -1;
}

static int64_t cond_expr(CondP *C, int prec)
{
    int64_t l = cond_primary(C);
    for (;;) {
        if (C->i < C->n && is_p(&C->t[C->i], "?") && prec == 0) {
            C->i++;
            int64_t x = cond_expr(C, 0);
            if (C->i < C->n && is_p(&C->t[C->i], ":"))
                C->i++;
            else
                C->bad = true;
            int64_t y = cond_expr(C, 0);
            l = l ? x : y;
            continue;
        }
        int p = C->i < C->n ? cond_prec(&C->t[C->i]) : -1;
        if (p < 0 || p < prec)
            return l;
        const char *op = C->t[C->i++].text;
        int64_t r = cond_expr(C, p + 1);
        if (!strcmp(op, "||")) l = l || r;
        else if (!strcmp(op, "&&")) l = l && r;
        else if (!strcmp(op, "|")) l |= r;
        else if (!strcmp(op, "^")) l ^= r;
        else if (!strcmp(op, "&")) l &= r;
        else if (!strcmp(op, "==")) l = l == r;
        else if (!strcmp(op, "!=")) l = l != r;
        else if (!strcmp(op, "<")) l = l < r;
        else if (!strcmp(op, ">")) l = l > r;
        else if (!strcmp(op, "<=")) l = l <= r;
        else if (!strcmp(op, ">=")) l = l >= r;
        else if (!strcmp(op, "<<")) l = (int64_t)((uint64_t)l << (r & 63));
        else if (!strcmp(op, ">>")) l >>= (r & 63);
        else if (!strcmp(op, "+")) l = (int64_t)((uint64_t)l + (uint64_t)r);
        else if (!strcmp(op, "-")) l = (int64_t)((uint64_t)l - (uint64_t)r);
        else if (!strcmp(op, "*")) l = (int64_t)((uint64_t)l * (uint64_t)r);
        else if (r == 0) C->bad = true;
        else if (!strcmp(op, "/")) l = (l == INT64_MIN && r == -1) ? l : l / r;
        else l = (l == INT64_MIN && r == -1) ? 0 : l % r;
    }
}

/* The value of an #if line's tokens t[0..n). */
static bool eval_cond(Pre *P, const CuTok *t, int n, Loc loc)
{
    /* defined X / defined(X) first, then macro expansion */
    TokVec pre = {0};
    for (int i = 0; i < n; i++) {
        if (t[i].kind == CT_IDENT && !strcmp(t[i].text, "defined")) {
            int j = i + 1;
            bool par = j < n && is_p(&t[j], "(");
            if (par)
                j++;
            CuTok v = {.kind = CT_INT, .loc = t[i].loc, .text = "0"};
            if (j < n && t[j].kind == CT_IDENT)
                v.ival = find_macro(P, t[j].text) != NULL;
            else
                diag_error(P->d, t[i].loc, "defined needs a macro name");
            if (par && j + 1 < n && is_p(&t[j + 1], ")"))
                j++;
            i = j;
            vec_push(P->a, pre, v);
            continue;
        }
        vec_push(P->a, pre, t[i]);
    }
    TokVec x = {0};
    expand_list(P, pre.v, pre.n, &x, loc, true);
    CondP C = {P, x.v, x.n, 0, false};
    int64_t v = cond_expr(&C, 0);
    if (C.bad || C.i != C.n) {
        diag_error(P->d, loc, "cannot evaluate this #if condition (integers, defined(), arithmetic and comparisons only)");
        return false;
    }
    return v != 0;
}

/* Headers of the CUDA and HIP runtimes and the C/C++ libraries a kernel
 * file includes: their names are known to the front end, so the include
 * itself is dropped. */
static bool known_header(const char *h)
{
    static const char *const known[] = {
        "cuda.h", "cuda_runtime.h", "cuda_runtime_api.h", "cuda_fp16.h", "cuda_bf16.h", "device_launch_parameters.h",
        "math.h", "cmath", "stdint.h", "cstdint", "stdio.h", "cstdio", "stdlib.h", "cstdlib", "float.h", "cfloat",
        "limits.h", "climits", "math_constants.h", "hip/hip_runtime.h", "hip/hip_fp16.h", "hip/hip_bf16.h",
        "hip/hip_runtime_api.h", "assert.h", "cassert", "stddef.h", "cstddef", "vector", "algorithm", "string",
        "iostream", "torch/extension.h", "torch/types.h", "ATen/ATen.h", "ATen/cuda/CUDAContext.h",
        "c10/cuda/CUDAGuard.h", "pybind11/pybind11.h", "type_traits", "limits", "cooperative_groups.h",
        "device_functions.h", "sm_60_atomic_functions.h", "cuda/std/cmath",
    };
    for (size_t k = 0; k < sizeof known / sizeof *known; k++)
        if (!strcmp(h, known[k]))
            return true;
    /* the host side of PyTorch extensions and the CUDA/HIP libraries: declarations the device
     * code of a per-thread kernel does not take numbers from */
    static const char *const dirs[] = {
        "torch/", "ATen/", "c10/", "thrust/", "cub/", "hipcub/", "pybind11/", "cuda/", "hip/", "curand",
        "hiprand", "cooperative_groups/", "crt/",
    };
    for (size_t k = 0; k < sizeof dirs / sizeof *dirs; k++)
        if (!strncmp(h, dirs[k], strlen(dirs[k])))
            return true;
    return false;
}

/* At most this many #include files read into one source: a bound on an
 * include cycle that has neither a guard nor #pragma once. */
#define CU_MAX_INCLUDES 256

/* The path of a quoted #include "h" written in file `from`: h relative to
 * from's directory (h itself when absolute or when from has none). */
static const char *include_path(Arena *a, const char *from, const char *h)
{
    const char *slash = strrchr(from, '/');
    if (h[0] == '/' || !slash)
        return arena_strdup(a, h);
    Buf b = {.a = a};
    buf_printf(&b, "%.*s/%s", (int)(slash - from), from, h);
    return buf_str(&b);
}

/* Conditional stack entry: whether this group is taken, whether one was. */
typedef struct Cond {
    bool on, taken, outer_on, seen_else;
    Loc loc;
} Cond;

CuTok *cu_lex(Arena *a, Diags *d, const char *file, const char *text, const char *const *dirs, int ndirs, int *ntok)
{
    TokVec raw = {0};
    lex_raw(a, d, file, text, &raw);
    Pre P = {.a = a, .d = d};
    Vec(Cond) conds = {0};
    Vec(const char *) once = {0}; /* files that said #pragma once */
    int nincludes = 0;
    bool on = true;
    int i = 0;
    while (raw.v[i].kind != CT_EOF) {
        CuTok *t = &raw.v[i];
        if (t->bol && is_p(t, "#")) {
            /* a directive: its tokens up to the next line start */
            int j = i + 1;
            int e = j;
            while (raw.v[e].kind != CT_EOF && !raw.v[e].bol)
                e++;
            const char *dn = j < e && raw.v[j].kind == CT_IDENT ? raw.v[j].text : "";
            const CuTok *args = &raw.v[j + 1];
            int nargs = e - j - 1;
            Loc dl = j < e ? raw.v[j].loc : t->loc;
            if (!strcmp(dn, "if") || !strcmp(dn, "ifdef") || !strcmp(dn, "ifndef")) {
                bool v = false;
                if (on) {
                    if (!strcmp(dn, "if"))
                        v = eval_cond(&P, args, nargs, dl);
                    else if (nargs >= 1 && args[0].kind == CT_IDENT)
                        v = (find_macro(&P, args[0].text) != NULL) == !strcmp(dn, "ifdef");
                    else
                        diag_error(d, dl, "#%s needs a macro name", dn);
                }
                vec_push(a, conds, ((Cond){on && v, on && v, on, false, dl}));
                on = on && v;
            } else if (!strcmp(dn, "elif") || !strcmp(dn, "else")) {
                if (!conds.n) {
                    diag_error(d, dl, "#%s without #if", dn);
                } else {
                    Cond *c = &conds.v[conds.n - 1];
                    bool v = false;
                    if (c->outer_on && !c->taken)
                        v = !strcmp(dn, "else") ? true : eval_cond(&P, args, nargs, dl);
                    c->on = v;
                    c->taken = c->taken || v;
                    on = v;
                }
            } else if (!strcmp(dn, "endif")) {
                if (!conds.n)
                    diag_error(d, dl, "#endif without #if");
                else
                    on = conds.v[--conds.n].outer_on;
            } else if (!on) {
                /* skipped group */
            } else if (!strcmp(dn, "define")) {
                if (nargs < 1 || args[0].kind != CT_IDENT) {
                    diag_error(d, dl, "#define needs a name");
                } else {
                    Macro m = {.name = args[0].text};
                    int k = 1;
                    /* function-like only when '(' follows the name without a space */
                    if (k < nargs && is_p(&args[k], "(") && args[k].loc.line == args[0].loc.line &&
                        args[k].loc.col == args[0].loc.col + (int)strlen(args[0].text)) {
                        m.func = true;
                        Vec(const char *) ps = {0};
                        k++;
                        while (k < nargs && !is_p(&args[k], ")")) {
                            if (args[k].kind == CT_IDENT)
                                vec_push(a, ps, args[k].text);
                            else if (is_p(&args[k], "..."))
                                m.variadic = true;
                            else if (!is_p(&args[k], ","))
                                diag_error(d, args[k].loc, "unexpected '%s' in a macro's parameters", args[k].text);
                            k++;
                        }
                        k++;
                        m.params = ps.v;
                        m.nparams = ps.n;
                    }
                    m.body = (CuTok *)&args[k < nargs ? k : nargs];
                    m.nbody = k < nargs ? nargs - k : 0;
                    vec_push(a, P.macros, m);
                }
            } else if (!strcmp(dn, "undef")) {
                Macro *m = nargs >= 1 ? find_macro(&P, args[0].text) : NULL;
                if (m)
                    m->name = NULL;
            } else if (!strcmp(dn, "include")) {
                const char *h = NULL;
                size_t hlen = nargs >= 1 && args[0].kind == CT_STRING ? strlen(args[0].text) : 0;
                if (hlen >= 2 && args[0].text[hlen - 1] == '"') {
                    h = arena_strndup(a, args[0].text + 1, hlen - 2);
                } else if (nargs >= 1 && is_p(&args[0], "<")) {
                    Buf b = {.a = a};
                    for (int k = 1; k < nargs && !is_p(&args[k], ">"); k++)
                        buf_puts(&b, args[k].text);
                    h = arena_strdup(a, buf_str(&b));
                }
                if (!h) {
                    diag_error(d, dl, "malformed #include");
                } else if (!known_header(h)) {
                    Loc hl = nargs ? args[0].loc : dl;
                    /* "h": beside the including file, then in the include directories; <h>: there */
                    bool quoted = args[0].kind == CT_STRING;
                    const char *path = quoted ? include_path(a, hl.file, h) : h;
                    char *text2 = quoted ? read_file(a, path, NULL) : NULL;
                    for (int k = 0; k < ndirs && !text2 && h[0] != '/'; k++) {
                        Buf pb = {.a = a};
                        buf_printf(&pb, "%s/%s", dirs[k], h);
                        text2 = read_file(a, buf_str(&pb), NULL);
                        if (text2)
                            path = buf_str(&pb);
                    }
                    if (!quoted && !text2) {
                        diag_error(d, hl,
                                   "#include <%s>: kad knows the CUDA/HIP runtime, C/C++ and PyTorch headers, and "
                                   "reads other headers from the include directories (-I DIR, include_dirs=[...]); "
                                   "this one is in none: add its directory, or paste what the kernel needs from it",
                                   h);
                    } else {
                        bool skip = false;
                        for (int k = 0; k < once.n; k++)
                            skip = skip || !strcmp(once.v[k], path);
                        if (skip) {
                            /* #pragma once: already included */
                        } else if (!text2) {
                            diag_error(d, hl,
                                       "#include \"%s\": cannot read '%s' (a quoted include is read relative to the "
                                       "directory of the file that includes it, then in the include directories: "
                                       "-I DIR, include_dirs=[...]; a source given as text has no directory: pass "
                                       "its path)", h, path);
                        } else if (++nincludes > CU_MAX_INCLUDES) {
                            diag_error(d, hl,
                                       "#include \"%s\": more than %d files included (an include cycle without a "
                                       "guard or #pragma once?)", h, CU_MAX_INCLUDES);
                        } else {
                            /* splice the header's raw tokens in place of the directive */
                            diag_add_source(d, path, text2);
                            TokVec hv = {0};
                            lex_raw(a, d, path, text2, &hv);
                            TokVec nv = {0};
                            vec_reserve(a, nv, raw.n + hv.n);
                            memcpy(nv.v, raw.v, (size_t)e * sizeof *nv.v);
                            memcpy(nv.v + e, hv.v, (size_t)(hv.n - 1) * sizeof *nv.v);
                            memcpy(nv.v + e + hv.n - 1, raw.v + e, (size_t)(raw.n - e) * sizeof *nv.v);
                            nv.n = raw.n + hv.n - 1;
                            raw = nv;
                        }
                    }
                }
            } else if (!strcmp(dn, "pragma") && nargs >= 1 && args[0].kind == CT_IDENT &&
                       !strcmp(args[0].text, "once")) {
                vec_push(a, once, t->loc.file);
            } else if (!strcmp(dn, "error")) {
                diag_error(d, dl, "#error in the kernel file");
            } else if (!strcmp(dn, "pragma") || !strcmp(dn, "line") || !*dn) {
                /* #pragma unroll, #pragma once: no effect on the semantics */
            } else {
                diag_error(d, dl, "unknown preprocessor directive '#%s'", dn);
            }
            i = e;
            continue;
        }
        if (!on) {
            i++;
            continue;
        }
        if (t->kind == CT_IDENT) {
            /* a function-like macro may take its arguments from the next lines */
            int end = i + 1;
            while (raw.v[end].kind != CT_EOF && !(raw.v[end].bol && is_p(&raw.v[end], "#")))
                end++;
            int k = i;
            if (expand_one(&P, raw.v, end, &k, &P.out, t->loc)) {
                i = k + 1;
                continue;
            }
        }
        vec_push(a, P.out, *t);
        i++;
    }
    if (conds.n)
        diag_error(d, conds.v[conds.n - 1].loc, "#if without #endif");
    vec_push(a, P.out, raw.v[i]);
    *ntok = P.out.n;
    return P.out.v;
}
