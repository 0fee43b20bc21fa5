/* access_text.c -- the access analysis's conditions and covers as text.
 *
 * Job: the part of a Program's textual form (src/plan/text.c, docs/IR.md
 * "Programs") that is the analysis's data: a runtime condition (AccCond: the
 * launch flags, guards, the GEMM form's and the gathers' conditions) and a
 * cover (AccCover: what a launch's stores reach, which lets the launcher skip
 * a zero-fill), printed and read back.
 *
 *   cond   := 'true' | clause ('and' clause)*
 *   clause := ineq | '(' ineq ('or' ineq)+ ')'
 *   ineq   := poly '>=' poly
 *   poly   := ['-'] mono (('+' | '-') mono)*
 *   mono   := INT ('*' sym)* | sym ('*' sym)*
 *   sym    := '%' NAME | 'grid' '(' INT ')' | 'val' '(' expr ')' | 'opaque' '(' '%' NAME ')'
 *   expr   := INT | '%' NAME | 'grid' '(' INT ')' | ('add'|'sub'|'mul'|'div'|'rem') '(' expr ',' expr ')'
 *   cover  := 'reach' '(' [cvar (',' cvar)*] ';' [term ('+' term)* '<' atom (',' ...)*] ';'
 *             [poly '<' '0' (',' ...)*] ';' 'nonempty' [INT (',' INT)*] ')'
 *   cvar   := ('pid' '(' INT ')' | 'lane' '(' INT ')' | 'loop') '*' atom
 *   term   := atom '*' 'v' INT        atom := mono (a positive one) | '0' | '(' poly ')'
 *
 * A symbol is one of the contract's int parameters (`%n`, named as the main
 * kernel prints it: pnames), a grid size (`grid(K)`, tl.num_programs(K)), a
 * value computed from them by + - * // % (`val(...)`), or a value kad cannot
 * compute on the host (`opaque(%x)`: a condition naming it cannot be
 * evaluated, a flag under it is false, which is always right).  The text does
 * not depend on the symbols' ids: monomials print in the order of their
 * symbols' text, so a condition read back prints the same.
 *
 * Requires: the Access a condition or cover came from (printing), or an
 * Access over the kernel whose parameters pnames names (reading: its symbols
 * are interned there).  Guarantees: what is read means what was printed;
 * evaluation and host printing (access_report.c, access_cover.c) work on it.
 * Memory from the Access's arena.
 */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "analysis/access_int.h"

/* ------------------------------------------------------------------ */
/* Printing                                                            */
/* ------------------------------------------------------------------ */

/* A value computed from int parameters, constants and num_programs, as an expr; false
 * when it is not (then it prints as opaque). */
static bool val_text(Buf *b, Access *A, ValId v, const char *const *pnames, int np, int depth)
{
    const Inst *in = v > 0 && v < A->nv ? A->def[v] : NULL;
    if (depth > 8)
        return false;
    if (!in) {
        for (int p = 0; p < A->f->nparams && p < np; p++)
            if (A->f->params[p] == v) {
                buf_printf(b, "%%%s", pnames[p]);
                return true;
            }
        return false;
    }
    if (in->op == OP_CONST && dtype_is_int((Dtype)ac_vty(A, v).dt)) {
        buf_printf(b, "%lld", (long long)in->ival);
        return true;
    }
    if (in->op == OP_NUM_PROGRAMS) {
        buf_printf(b, "grid(%d)", (int)in->ival);
        return true;
    }
    int tx = in->op == OP_ADD ? TX_ADD : in->op == OP_SUB ? TX_SUB : in->op == OP_MUL ? TX_MUL
           : in->op == OP_DIV ? TX_DIV : in->op == OP_REM ? TX_REM : -1;
    if (tx < 0 || in->nargs != 2)
        return false;
    buf_printf(b, "%s(", ir_tape_expr_op_name(tx));
    if (!val_text(b, A, in->args[0], pnames, np, depth + 1))
        return false;
    buf_puts(b, ", ");
    if (!val_text(b, A, in->args[1], pnames, np, depth + 1))
        return false;
    buf_putc(b, ')');
    return true;
}

/* Symbol id as the text names it. */
static const char *sym_text(Access *A, int id, const char *const *pnames, int np)
{
    const AcSym *s = &A->syms.v[id - 1];
    Buf b = {.a = A->a};
    if (s->kind == SYM_NPROG) {
        buf_printf(&b, "grid(%d)", s->axis);
        return buf_str(&b);
    }
    if (s->kind == SYM_VAL && !s->v) /* read from text */
        return s->name;
    int param, axis;
    if (access_sym(A, id, &param, &axis) == 1 && param < np) {
        buf_printf(&b, "%%%s", pnames[param]);
        return buf_str(&b);
    }
    if (s->kind == SYM_VAL) {
        buf_puts(&b, "val(");
        if (val_text(&b, A, s->v, pnames, np, 0)) {
            buf_putc(&b, ')');
            return buf_str(&b);
        }
        b.len = 0;
    }
    buf_printf(&b, "opaque(%%%s)", ac_vname(A, s->v));
    return buf_str(&b);
}

/* A monomial's symbols, each as text, sorted, joined by '*' ("" for a constant). */
static const char *mono_key(Access *A, const AccMono *m, const char *const *pnames, int np)
{
    const char *t[ACC_NSYM];
    int n = 0;
    for (int i = 0; i < ACC_NSYM && m->s[i]; i++) {
        const char *x = sym_text(A, m->s[i], pnames, np);
        int j = n++;
        while (j > 0 && strcmp(t[j - 1], x) > 0) {
            t[j] = t[j - 1];
            j--;
        }
        t[j] = x;
    }
    Buf b = {.a = A->a};
    buf_puts(&b, "");
    for (int i = 0; i < n; i++)
        buf_printf(&b, "%s%s", i ? "*" : "", t[i]);
    return buf_str(&b);
}

static void mono_text(Buf *b, int64_t k, const char *key)
{
    if (!*key)
        buf_printf(b, "%lld", (long long)k);
    else if (k == 1)
        buf_puts(b, key);
    else
        buf_printf(b, "%lld*%s", (long long)k, key);
}

/* The monomials of p whose coefficient has sign sg (or all: sg 0), in text order, the
 * constant last, each with |k| when sg != 0.  The sum printed; "0" when there is none. */
static void poly_side(Buf *b, Access *A, const AccPoly *p, int sg, const char *const *pnames, int np)
{
    const char *key[ACC_NMONO];
    int ord[ACC_NMONO], n = 0;
    for (int i = 0; i < p->n; i++) {
        if ((sg > 0 && p->m[i].k < 0) || (sg < 0 && p->m[i].k > 0))
            continue;
        key[i] = mono_key(A, &p->m[i], pnames, np);
        int j = n++;
        /* text order, the constant ("") last */
        while (j > 0 && (!*key[ord[j - 1]] || (*key[i] && strcmp(key[ord[j - 1]], key[i]) > 0))) {
            ord[j] = ord[j - 1];
            j--;
        }
        ord[j] = i;
    }
    if (!n)
        buf_puts(b, "0");
    for (int j = 0; j < n; j++) {
        int64_t k = p->m[ord[j]].k;
        if (sg) {
            buf_puts(b, j ? " + " : "");
            k = k < 0 ? -k : k;
        } else if (j) {
            buf_puts(b, k < 0 ? " - " : " + ");
            k = k < 0 ? -k : k;
        } else if (k < 0) {
            buf_puts(b, "-");
            k = -k;
        }
        mono_text(b, k, key[ord[j]]);
    }
}

/* An atom: a positive monomial or 0 as it is, else the polynomial in parentheses. */
static void atom_text(Buf *b, Access *A, const AccPoly *p, const char *const *pnames, int np)
{
    bool bare = p->n == 0 || (p->n == 1 && p->m[0].k > 0);
    buf_puts(b, bare ? "" : "(");
    poly_side(b, A, p, 0, pnames, np);
    buf_puts(b, bare ? "" : ")");
}

void access_cond_text(Buf *b, Access *A, const AccCond *c, const char *const *pnames, int np)
{
    if (!c->n)
        buf_puts(b, "true");
    for (int i = 0; i < c->n; i++) {
        const AccClause *cl = &c->c[i];
        buf_puts(b, i ? " and " : "");
        buf_puts(b, cl->n > 1 ? "(" : "");
        for (int j = 0; j < cl->n; j++) {
            buf_puts(b, j ? " or " : "");
            poly_side(b, A, &cl->p[j], 1, pnames, np);
            buf_puts(b, " >= ");
            poly_side(b, A, &cl->p[j], -1, pnames, np);
        }
        buf_puts(b, cl->n > 1 ? ")" : "");
    }
}

void access_cover_text(Buf *b, Access *A, const AccCover *c, const char *const *pnames, int np)
{
    buf_puts(b, "reach(");
    for (int j = 0; j < c->nv; j++) {
        const CovVar *v = &c->v[j];
        buf_puts(b, j ? ", " : "");
        if (v->kind == CV_PID)
            buf_printf(b, "pid(%d) * ", v->ext);
        else if (v->kind == CV_LANE)
            buf_printf(b, "lane(%d) * ", v->ext);
        else
            buf_puts(b, "loop * ");
        atom_text(b, A, &v->c, pnames, np);
    }
    buf_puts(b, "; ");
    for (int i = 0; i < c->cl.n; i++) {
        const CovClause *cl = &c->cl.v[i];
        buf_puts(b, i ? ", " : "");
        for (int k = 0; k < cl->n; k++) {
            buf_puts(b, k ? " + " : "");
            atom_text(b, A, &cl->a[k], pnames, np);
            buf_printf(b, "*v%d", cl->idx[k]);
        }
        buf_puts(b, " < ");
        atom_text(b, A, &cl->bound, pnames, np);
    }
    buf_puts(b, "; ");
    for (int i = 0; i < c->neg.n; i++) {
        buf_puts(b, i ? ", " : "");
        poly_side(b, A, &c->neg.v[i], 0, pnames, np);
        buf_puts(b, " < 0");
    }
    buf_puts(b, "; nonempty");
    for (int k = 0, n = 0; k < 3; k++)
        if (c->nonempty >> k & 1)
            buf_printf(b, "%s %d", n++ ? "," : "", k);
    buf_putc(b, ')');
}

/* ------------------------------------------------------------------ */
/* Reading                                                             */
/* ------------------------------------------------------------------ */

typedef struct Rd {
    Access *A;
    const char *s;     /* where the reader stands */
    const char *const *pnames;
    int np;
    const char *err;   /* the first error; s then stands where it is */
} Rd;

static void skip_ws(Rd *r)
{
    while (*r->s == ' ' || *r->s == '\t')
        r->s++;
}

static bool fail(Rd *r, const char *msg)
{
    if (!r->err)
        r->err = msg;
    return false;
}

static bool word_char(char c)
{
    return c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Accepts the punctuation or word w (a word must end there). */
static bool eat(Rd *r, const char *w)
{
    skip_ws(r);
    size_t n = strlen(w);
    if (strncmp(r->s, w, n) || (word_char(w[n - 1]) && word_char(r->s[n])))
        return false;
    r->s += n;
    return true;
}

static bool need(Rd *r, const char *w, const char *msg)
{
    return eat(r, w) || fail(r, msg);
}

static bool at_word(Rd *r, const char *w)
{
    const char *s = r->s;
    bool ok = eat(r, w);
    r->s = s;
    return ok;
}

static bool read_int(Rd *r, int64_t *out)
{
    skip_ws(r);
    const char *q = r->s;
    if (*q == '-')
        q++;
    if (*q < '0' || *q > '9')
        return fail(r, "expected an integer");
    char *end;
    long long v = strtoll(r->s, &end, 10);
    if (!ac_in_limit(v) || word_char(*end))
        return fail(r, "an integer out of range");
    r->s = end;
    *out = v;
    return true;
}

/* '%' NAME: the index of the contract's int parameter it names. */
static bool read_param(Rd *r, int *out)
{
    skip_ws(r);
    if (*r->s != '%')
        return fail(r, "expected a parameter name (%name)");
    const char *q = r->s + 1;
    while (word_char(*q))
        q++;
    size_t n = (size_t)(q - r->s - 1);
    for (int p = 0; p < r->np; p++)
        if (r->pnames[p] && strlen(r->pnames[p]) == n && !strncmp(r->pnames[p], r->s + 1, n) &&
            dtype_is_int((Dtype)ir_type(r->A->f, r->A->f->params[p]).dt) && !ir_type(r->A->f, r->A->f->params[p]).rank) {
            r->s = q;
            *out = p;
            return true;
        }
    return fail(r, "not an int parameter of the contract");
}

static bool read_axis(Rd *r, int64_t *k)
{
    if (!need(r, "(", "expected '('") || !read_int(r, k) || !need(r, ")", "expected ')'"))
        return false;
    return (*k >= 0 && *k <= 2) || fail(r, "a grid axis is 0, 1 or 2");
}

static const TapeExpr *read_expr(Rd *r, int depth)
{
    TapeExpr *e = arena_alloc(r->A->a, sizeof *e);
    int64_t k;
    skip_ws(r);
    if (depth > 32)
        return fail(r, "an expression nested too deeply"), NULL;
    if (*r->s == '%') {
        int p;
        if (!read_param(r, &p))
            return NULL;
        e->op = TX_PARAM;
        e->v = p;
        return e;
    }
    if (eat(r, "grid")) {
        if (!read_axis(r, &k))
            return NULL;
        e->op = TX_GRID;
        e->v = k;
        return e;
    }
    for (int op = TX_ADD; op <= TX_REM; op++)
        if (eat(r, ir_tape_expr_op_name(op))) {
            e->op = op;
            if (!need(r, "(", "expected '('") || !(e->x = read_expr(r, depth + 1)) || !need(r, ",", "expected ','") ||
                !(e->y = read_expr(r, depth + 1)) || !need(r, ")", "expected ')'"))
                return NULL;
            return e;
        }
    if (!read_int(r, &k))
        return NULL;
    e->op = TX_CONST;
    e->v = k;
    return e;
}

/* A symbol read from text: a parameter or a grid size as the analysis's own, a val(...) or
 * opaque(...) by its text (s->v = 0). */
static int read_sym(Rd *r)
{
    Access *A = r->A;
    skip_ws(r);
    const char *start = r->s;
    int64_t k;
    if (*r->s == '%') {
        int p;
        return read_param(r, &p) ? ac_sym_intern(A, SYM_PARAM, A->f->params[p], 0, 0) : 0;
    }
    if (eat(r, "grid"))
        return read_axis(r, &k) ? ac_sym_intern(A, SYM_NPROG, 0, (int)k, 0) : 0;
    const TapeExpr *e = NULL;
    if (eat(r, "val")) {
        if (!need(r, "(", "expected '('") || !(e = read_expr(r, 0)) || !need(r, ")", "expected ')'"))
            return 0;
    } else if (eat(r, "opaque")) {
        if (!need(r, "(", "expected '('"))
            return 0;
        skip_ws(r);
        if (*r->s != '%')
            return fail(r, "expected a value name (%name)"), 0;
        r->s++;
        while (word_char(*r->s))
            r->s++;
        if (!need(r, ")", "expected ')'"))
            return 0;
    } else {
        return fail(r, "expected a symbol: %param, grid(K), val(...) or opaque(%name)"), 0;
    }
    const char *text = arena_strndup(A->a, start, (size_t)(r->s - start));
    for (int i = 0; i < A->syms.n; i++)
        if (A->syms.v[i].kind == SYM_VAL && !A->syms.v[i].v && !strcmp(A->syms.v[i].name, text))
            return i + 1;
    AcSym s = {SYM_VAL, 0, 0, 0, e, text};
    vec_push(A->a, A->syms, s);
    return A->syms.n;
}

static bool at_sym(Rd *r)
{
    skip_ws(r);
    return *r->s == '%' || at_word(r, "grid") || at_word(r, "val") || at_word(r, "opaque");
}

/* Accepts '*' when a symbol follows it (not a cover's v<index>). */
static bool times_sym(Rd *r)
{
    const char *s = r->s;
    if (eat(r, "*") && at_sym(r))
        return true;
    r->s = s;
    return false;
}

/* mono, times sign, added into p. */
static bool read_mono(Rd *r, AccPoly *p, int64_t sign)
{
    AccMono m = {sign, {0}};
    int n = 0;
    skip_ws(r);
    if (!at_sym(r)) {
        if (!read_int(r, &m.k))
            return false;
        m.k *= sign;
        if (!times_sym(r))
            return ac_padd_mono(p, m) || fail(r, "a polynomial too large");
    }
    do {
        int id = read_sym(r);
        if (!id)
            return false;
        if (n == ACC_NSYM)
            return fail(r, "a monomial of more than 3 symbols");
        int j = n++; /* descending ids */
        while (j > 0 && m.s[j - 1] < id) {
            m.s[j] = m.s[j - 1];
            j--;
        }
        m.s[j] = id;
    } while (times_sym(r));
    return ac_padd_mono(p, m) || fail(r, "a polynomial too large");
}

static bool read_poly(Rd *r, AccPoly *p)
{
    *p = (AccPoly){0};
    int64_t sign = eat(r, "-") ? -1 : 1;
    if (!read_mono(r, p, sign))
        return false;
    for (;;) {
        skip_ws(r);
        if (r->s[0] == '+' || (r->s[0] == '-' && r->s[1] == ' ')) {
            sign = *r->s++ == '+' ? 1 : -1;
            if (!read_mono(r, p, sign))
                return false;
        } else {
            return true;
        }
    }
}

static bool read_ineq(Rd *r, AccPoly *p)
{
    AccPoly l, rt;
    if (!read_poly(r, &l) || !need(r, ">=", "expected '>='") || !read_poly(r, &rt))
        return false;
    return ac_padd(p, &l, &rt, -1) || fail(r, "a polynomial too large");
}

const char *access_cond_read(Access *A, const char *s, const char *const *pnames, int np, const AccCond **out,
                             const char **err)
{
    Rd r = {A, s, pnames, np, NULL};
    AccCond *c = arena_alloc(A->a, sizeof *c);
    if (!eat(&r, "true")) {
        do {
            if (c->n == ACC_NCLAUSE) {
                fail(&r, "a condition of more than 8 clauses");
                break;
            }
            AccClause *cl = &c->c[c->n++];
            bool paren = eat(&r, "(");
            do {
                if (cl->n == ACC_NALT) {
                    fail(&r, "a clause of more than 4 alternatives");
                    break;
                }
                if (!read_ineq(&r, &cl->p[cl->n++]))
                    break;
            } while (paren && !r.err && eat(&r, "or"));
            if (paren && !r.err)
                need(&r, ")", "expected ')' or 'or'");
        } while (!r.err && eat(&r, "and"));
    }
    *err = r.err;
    *out = c;
    return r.err ? NULL : r.s;
}

/* atom := mono | '(' poly ')' */
static bool read_atom(Rd *r, AccPoly *p)
{
    if (eat(r, "(")) {
        return read_poly(r, p) && need(r, ")", "expected ')'");
    }
    *p = (AccPoly){0};
    return read_mono(r, p, 1);
}

/* 'v' INT: a cover's variable j < nv. */
static bool read_var(Rd *r, int nv, int *out)
{
    int64_t v;
    skip_ws(r);
    if (r->s[0] != 'v' || r->s[1] < '0' || r->s[1] > '9')
        return fail(r, "expected a cover's variable v<index>");
    r->s++;
    if (!read_int(r, &v))
        return false;
    if (v >= nv)
        return fail(r, "a clause names a variable the cover does not have");
    *out = (int)v;
    return true;
}

const char *access_cover_read(Access *A, const char *s, const char *const *pnames, int np, const AccCover **out,
                              const char **err)
{
    Rd r = {A, s, pnames, np, NULL};
    AccCover *c = arena_alloc(A->a, sizeof *c);
    *out = NULL;
    if (need(&r, "reach", "expected 'reach'") && need(&r, "(", "expected '('") && !eat(&r, ";")) {
        do { /* the variables */
            int64_t k = 0;
            if (c->nv == AC_NTERM) {
                fail(&r, "a cover of more than 10 variables");
                break;
            }
            CovVar *v = &c->v[c->nv++];
            v->var = -1;
            if (eat(&r, "pid")) {
                v->kind = CV_PID;
                read_axis(&r, &k);
            } else if (eat(&r, "lane")) {
                v->kind = CV_LANE;
                if (need(&r, "(", "expected '('") && read_int(&r, &k) && need(&r, ")", "expected ')'") &&
                    (k < 1 || k > (1 << 30)))
                    fail(&r, "a lane extent is positive");
            } else if (eat(&r, "loop")) {
                v->kind = CV_LOOP;
            } else {
                fail(&r, "expected pid(K), lane(N) or loop");
            }
            v->ext = (int)k;
            if (!r.err && need(&r, "*", "expected '*'"))
                read_atom(&r, &v->c);
        } while (!r.err && eat(&r, ","));
        if (!r.err)
            need(&r, ";", "expected ';' after the cover's variables");
    }
    if (!r.err && !eat(&r, ";")) {
        do { /* the clauses */
            CovClause cl = {0};
            do {
                if (cl.n == AC_NTERM) {
                    fail(&r, "a clause of more than 10 terms");
                    break;
                }
                if (!read_atom(&r, &cl.a[cl.n]) || !need(&r, "*", "expected '*'") || !read_var(&r, c->nv, &cl.idx[cl.n]))
                    break;
                cl.n++;
            } while (eat(&r, "+"));
            if (!r.err && need(&r, "<", "expected '<'") && read_atom(&r, &cl.bound))
                vec_push(A->a, c->cl, cl);
        } while (!r.err && eat(&r, ","));
        if (!r.err)
            need(&r, ";", "expected ';' after the cover's clauses");
    }
    if (!r.err && !eat(&r, ";")) {
        do { /* the polynomials below zero */
            AccPoly p;
            if (read_poly(&r, &p) && need(&r, "<", "expected '<'") && need(&r, "0", "expected '0'"))
                vec_push(A->a, c->neg, p);
        } while (!r.err && eat(&r, ","));
        if (!r.err)
            need(&r, ";", "expected ';' after the cover's negative polynomials");
    }
    if (!r.err && need(&r, "nonempty", "expected 'nonempty'")) {
        skip_ws(&r);
        for (int n = 0; !r.err && *r.s != ')'; n++) {
            int64_t k;
            if (n && !need(&r, ",", "expected ','"))
                break;
            if (read_int(&r, &k) && (k < 0 || k > 2 || (c->nonempty >> k & 1)))
                fail(&r, "nonempty axes are distinct, among 0, 1, 2");
            if (!r.err)
                c->nonempty |= 1u << k;
            skip_ws(&r);
        }
        if (!r.err)
            need(&r, ")", "expected ')'");
    }
    *err = r.err;
    *out = r.err ? NULL : c;
    return r.err ? NULL : r.s;
}
