/* access_report.c -- the access analysis's runtime conditions printed and
 * evaluated, and its report: a condition as Python for Triton
 * (access_cond_python) or for the host (access_cond_host, ac_poly_host:
 * parameters as args["n"], program counts as grid[k]), evaluated for given
 * arguments (access_cond_eval, func_guards_hold), conjoined and compared
 * (access_cond_conj, access_cond_implies); access_report is `kad access`,
 * one line per memory site with its verdict and why.
 *
 * Requires: an Access from access_analyze whose Func is unchanged.
 * Guarantees: a printed condition means what the decision proved under it
 * (`//` and `%` truncate as Triton's do); memory from the Access's arena;
 * no output but the Buf given.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "analysis/access_int.h"

/* ------------------------------------------------------------------ */
/* Printing and evaluation                                             */
/* ------------------------------------------------------------------ */

/* A scalar computed from parameters and constants as a Triton expression
 * (`//` and `%` truncate like Triton's), or NULL. */
static const char *val_expr(Access *A, ValId v, int depth)
{
    const Inst *in = A->def[v];
    if (depth > 8)
        return NULL;
    if (!in) {
        for (int p = 0; p < A->f->nparams; p++)
            if (A->f->params[p] == v)
                return A->host_args ? arena_printf(A->a, "%s[\"%s\"]", A->host_args, ac_vname(A, v)) : ac_vname(A, v);
        return NULL;
    }
    if (in->op == OP_CONST && dtype_is_int((Dtype)ac_vty(A, v).dt))
        return arena_printf(A->a, "%lld", (long long)in->ival);
    if (in->op == OP_NUM_PROGRAMS)
        return A->host_grid ? arena_printf(A->a, "%s[%d]", A->host_grid, (int)in->ival)
                            : arena_printf(A->a, "tl.num_programs(%d)", (int)in->ival);
    if (A->host_args && (in->op == OP_DIV || in->op == OP_REM) && in->nargs == 2) {
        /* Python's // and % floor, Triton's truncate: the launcher defines these */
        const char *x = val_expr(A, in->args[0], depth + 1), *y = val_expr(A, in->args[1], depth + 1);
        return x && y ? arena_printf(A->a, "%s(%s, %s)", in->op == OP_DIV ? "_tdiv" : "_trem", x, y) : NULL;
    }
    const char *op = in->op == OP_ADD ? "+" : in->op == OP_SUB ? "-" : in->op == OP_MUL ? "*"
                   : in->op == OP_DIV ? "//" : in->op == OP_REM ? "%" : NULL;
    if (!op || in->nargs != 2)
        return NULL;
    const char *x = val_expr(A, in->args[0], depth + 1), *y = val_expr(A, in->args[1], depth + 1);
    return x && y ? arena_printf(A->a, "(%s %s %s)", x, op, y) : NULL;
}

/* A symbol read from text (access_text.c) as val_expr prints a value: e over f's int
 * parameters, constants and the grid; NULL when kad cannot compute it. */
static const char *expr_str(Access *A, const TapeExpr *e, int depth)
{
    if (!e || depth > 32)
        return NULL;
    if (e->op == TX_CONST)
        return arena_printf(A->a, "%lld", (long long)e->v);
    if (e->op == TX_PARAM) {
        const char *n = ac_vname(A, A->f->params[e->v]);
        return A->host_args ? arena_printf(A->a, "%s[\"%s\"]", A->host_args, n) : n;
    }
    if (e->op == TX_GRID)
        return A->host_grid ? arena_printf(A->a, "%s[%d]", A->host_grid, (int)e->v)
                            : arena_printf(A->a, "tl.num_programs(%d)", (int)e->v);
    const char *x = expr_str(A, e->x, depth + 1), *y = expr_str(A, e->y, depth + 1);
    if (!x || !y)
        return NULL;
    if (A->host_args && (e->op == TX_DIV || e->op == TX_REM))
        return arena_printf(A->a, "%s(%s, %s)", e->op == TX_DIV ? "_tdiv" : "_trem", x, y);
    const char *op = e->op == TX_ADD ? "+" : e->op == TX_SUB ? "-" : e->op == TX_MUL ? "*" : e->op == TX_DIV ? "//" : "%";
    return arena_printf(A->a, "(%s %s %s)", x, op, y);
}

static const char *sym_str(Access *A, int id, bool py)
{
    const AcSym *s = &A->syms.v[id - 1];
    if (s->kind == SYM_VAL && !s->v) /* read from text */
        return py ? expr_str(A, s->expr, 0) : s->name;
    if (s->kind == SYM_NPROG && A->host_grid)
        return arena_printf(A->a, "%s[%d]", A->host_grid, s->axis);
    if (s->kind == SYM_NPROG)
        return py ? arena_printf(A->a, "tl.num_programs(%d)", s->axis) : arena_printf(A->a, "nprog%d", s->axis);
    if (s->kind == SYM_PARAM && A->host_args)
        return arena_printf(A->a, "%s[\"%s\"]", A->host_args, ac_vname(A, s->v));
    if (s->kind == SYM_PARAM)
        return ac_vname(A, s->v);
    return py ? val_expr(A, s->v, 0) : arena_printf(A->a, "%%%s", ac_vname(A, s->v));
}

static void mono_print(Access *A, Buf *b, const AccMono *m, int64_t k, bool py, bool *ok)
{
    bool any = false;
    if (k != 1 || !m->s[0]) {
        buf_printf(b, "%lld", (long long)k);
        any = true;
    }
    for (int s = 0; s < ACC_NSYM && m->s[s]; s++) {
        const char *n = sym_str(A, m->s[s], py);
        if (!n)
            *ok = false;
        buf_printf(b, "%s%s", any ? "*" : "", n ? n : "?");
        any = true;
    }
}

const char *access_poly_str(Access *A, const AccPoly *p, bool py)
{
    Buf b = {A->a, NULL, 0, 0};
    bool ok = true;
    if (!p->n)
        buf_puts(&b, "0");
    for (int i = p->n - 1; i >= 0; i--) { /* symbols first, the constant last */
        int64_t k = p->m[i].k;
        if (i != p->n - 1)
            buf_puts(&b, k < 0 ? " - " : " + ");
        else if (k < 0)
            buf_puts(&b, "-");
        mono_print(A, &b, &p->m[i], k < 0 ? -k : k, py, &ok);
    }
    return ok ? buf_str(&b) : NULL;
}

/* p >= 0 as `lhs >= rhs` with the positive monomials on the left. */
static const char *ineq_str(Access *A, const AccPoly *p, bool py)
{
    AccPoly l = {0}, r = {0};
    for (int i = 0; i < p->n; i++) {
        AccMono m = p->m[i];
        if (m.k > 0)
            ac_padd_mono(&l, m);
        else {
            m.k = -m.k;
            ac_padd_mono(&r, m);
        }
    }
    const char *ls = access_poly_str(A, &l, py), *rs = access_poly_str(A, &r, py);
    return ls && rs ? arena_printf(A->a, "%s >= %s", ls, rs) : NULL;
}

static const char *cond_str(Access *A, const AccCond *c, bool py)
{
    Buf b = {A->a, NULL, 0, 0};
    for (int i = 0; i < c->n; i++) {
        if (i)
            buf_puts(&b, " and ");
        bool paren = c->c[i].n > 1 && c->n > 1;
        if (paren)
            buf_putc(&b, '(');
        for (int j = 0; j < c->c[i].n; j++) {
            const char *s = ineq_str(A, &c->c[i].p[j], py);
            if (!s)
                return NULL;
            buf_printf(&b, "%s%s", j ? " or " : "", s);
        }
        if (paren)
            buf_putc(&b, ')');
    }
    return buf_str(&b);
}

const char *access_cond_python(Access *A, const AccCond *c) { return cond_str(A, c, true); }

bool access_cond_param_product(Access *A, const AccCond *c)
{
    for (int i = 0; c && i < c->n; i++)
        for (int j = 0; j < c->c[i].n; j++)
            for (int k = 0; k < c->c[i].p[j].n; k++) {
                const AccMono *m = &c->c[i].p[j].m[k];
                if (!m->s[1])
                    continue;
                bool params = true;
                for (int s = 0; s < ACC_NSYM && m->s[s]; s++)
                    params &= A->syms.v[m->s[s] - 1].kind == SYM_PARAM;
                if (params)
                    return true;
            }
    return false;
}

/* c (or, when NULL, p) as Python for the host: parameters as args["p"],
 * tl.num_programs(k) as grid[k]. */
static const char *host_str(Access *A, const AccCond *c, const AccPoly *p, const char *args, const char *grid)
{
    A->host_args = args;
    A->host_grid = grid;
    const char *s = c ? cond_str(A, c, true) : access_poly_str(A, p, true);
    A->host_args = A->host_grid = NULL;
    return s;
}

const char *access_cond_host(Access *A, const AccCond *c, const char *args, const char *grid)
{
    return host_str(A, c, NULL, args, grid);
}

const char *ac_poly_host(Access *A, const AccPoly *p, const char *args, const char *grid)
{
    return host_str(A, NULL, p, args, grid);
}

/* A scalar computed from int parameters, constants and num_programs
 * (val_expr's values), with Triton's truncating `//` and `%`. */
static bool val_eval(Access *A, ValId v, const int64_t *params, const int64_t grid[3], int depth, int64_t *out)
{
    const Inst *in = A->def[v];
    if (depth > 8)
        return false;
    if (!in) {
        for (int p = 0; p < A->f->nparams; p++)
            if (A->f->params[p] == v && params) {
                *out = params[p];
                return true;
            }
        return false;
    }
    if (in->op == OP_CONST && dtype_is_int((Dtype)ac_vty(A, v).dt)) {
        *out = in->ival;
        return true;
    }
    if (in->op == OP_NUM_PROGRAMS) {
        *out = grid[in->ival];
        return true;
    }
    int64_t x, y;
    if (in->nargs != 2 || !val_eval(A, in->args[0], params, grid, depth + 1, &x) ||
        !val_eval(A, in->args[1], params, grid, depth + 1, &y) || !ac_in_limit(x) || !ac_in_limit(y))
        return false;
    switch (in->op) {
    case OP_ADD:
        *out = x + y;
        return true;
    case OP_SUB:
        *out = x - y;
        return true;
    case OP_MUL:
        if (access_iabs(x) > (1 << 20) && access_iabs(y) > (1 << 20))
            return false;
        *out = x * y;
        return true;
    case OP_DIV:
    case OP_REM:
        if (!y)
            return false;
        *out = in->op == OP_DIV ? x / y : x % y;
        return true;
    default:
        return false;
    }
}

/* expr_str's expression evaluated as val_eval evaluates a value. */
static bool expr_eval(const TapeExpr *e, const int64_t *params, const int64_t grid[3], int depth, int64_t *out)
{
    int64_t x, y;
    if (!e || depth > 32)
        return false;
    switch (e->op) {
    case TX_CONST: *out = e->v; return true;
    case TX_PARAM:
        if (!params)
            return false;
        *out = params[e->v];
        return true;
    case TX_GRID: *out = grid[e->v]; return true;
    default: break;
    }
    if (!expr_eval(e->x, params, grid, depth + 1, &x) || !expr_eval(e->y, params, grid, depth + 1, &y) ||
        !ac_in_limit(x) || !ac_in_limit(y))
        return false;
    switch (e->op) {
    case TX_ADD: *out = x + y; return true;
    case TX_SUB: *out = x - y; return true;
    case TX_MUL:
        if (access_iabs(x) > (1 << 20) && access_iabs(y) > (1 << 20))
            return false;
        *out = x * y;
        return true;
    case TX_DIV:
    case TX_REM:
        if (!y)
            return false;
        *out = e->op == TX_DIV ? x / y : x % y;
        return true;
    default: return false;
    }
}

static bool peval(Access *A, const AccPoly *p, const int64_t *params, const int64_t grid[3], int64_t *out)
{
    int64_t r = 0;
    for (int i = 0; i < p->n; i++) {
        int64_t m = p->m[i].k;
        for (int s = 0; s < ACC_NSYM && p->m[i].s[s]; s++) {
            const AcSym *y = &A->syms.v[p->m[i].s[s] - 1];
            int64_t x;
            if (y->kind == SYM_NPROG)
                x = grid[y->axis];
            else if (y->kind == SYM_PARAM) {
                int k = 0;
                while (k < A->f->nparams && A->f->params[k] != y->v)
                    k++;
                if (k == A->f->nparams)
                    return false;
                x = params[k];
            } else if (!y->v ? !expr_eval(y->expr, params, grid, 0, &x) : !val_eval(A, y->v, params, grid, 0, &x))
                return false;
            if (!ac_in_limit(x) || !ac_in_limit(m) || (access_iabs(m) > (1 << 20) && access_iabs(x) > (1 << 20)))
                return false;
            m *= x;
        }
        if (!ac_in_limit(m))
            return false;
        r += m;
    }
    *out = r;
    return true;
}

bool access_cond_eval(Access *A, const AccCond *c, const int64_t *params, const int64_t grid[3], bool *holds)
{
    bool all = true;
    for (int i = 0; i < c->n; i++) {
        bool any = false;
        for (int j = 0; j < c->c[i].n; j++) {
            int64_t v;
            if (!peval(A, &c->c[i].p[j], params, grid, &v))
                return false;
            any |= v >= 0;
        }
        all &= any;
    }
    *holds = all;
    return true;
}

static const char *form_str(Access *A, const AcForm *f);

const char *access_var_str(Access *A, int v)
{
    if (v < V_LANE)
        return arena_printf(A->a, "pid%d", v);
    if (v < V_DYN)
        return arena_printf(A->a, "lane%d", v - V_LANE);
    if (v == V_HOLE)
        return "?";
    const AcVar *x = &A->vars.v[v];
    if (x->kind == VK_LOOP) {
        const Inst *in = A->loops.v[x->loop].in;
        if (in->op == OP_FOR)
            return arena_printf(A->a, "iter(%%%s)", ac_vname(A, in->regions[0]->params[0]));
        return arena_printf(A->a, "iter(while@%d)", in->loc.line);
    }
    if (x->swz) /* a grouped swizzle's row or column (access.c swizzle) */
        return arena_printf(A->a, "swizzle_%s(%s; %s)", x->kind == VK_DIV ? "m" : "n", form_str(A, x->e),
                            access_poly_str(A, &x->d, false));
    return arena_printf(A->a, "(%s %s %s)", form_str(A, x->e), x->kind == VK_DIV ? "//" : "%",
                        access_poly_str(A, &x->d, false));
}

static const char *form_str(Access *A, const AcForm *f)
{
    if (f->why)
        return arena_printf(A->a, "unknown: %s", f->why);
    Buf b = {A->a, NULL, 0, 0};
    if (f->base)
        buf_printf(&b, "%%%s + ", ac_vname(A, A->f->params[f->base - 1]));
    bool any = false;
    for (int i = 0; i < f->nt; i++) {
        const AccPoly *c = &f->t[i].c;
        int64_t k;
        const char *vs = access_var_str(A, f->t[i].var);
        if (any)
            buf_puts(&b, " + ");
        if (ac_pis_const(c, &k) && k == 1)
            buf_puts(&b, vs);
        else if (c->n == 1)
            buf_printf(&b, "%s*%s", access_poly_str(A, c, false), vs);
        else
            buf_printf(&b, "(%s)*%s", access_poly_str(A, c, false), vs);
        any = true;
    }
    if (f->c0.n || !any)
        buf_printf(&b, "%s%s", any ? " + " : "",
                   f->c0.n > 1 && any ? arena_printf(A->a, "(%s)", access_poly_str(A, &f->c0, false))
                                      : access_poly_str(A, &f->c0, false));
    return buf_str(&b);
}

static const char *verdict_str(Access *A, AccResult r)
{
    switch (r.v) {
    case ACC_PROVEN:
        return "proven";
    case ACC_PROVEN_IF:
        return arena_printf(A->a, "proven if %s", cond_str(A, r.cond, false));
    case ACC_NOT_INJECTIVE:
        return arena_printf(A->a, "not injective: %s", r.why);
    default:
        return arena_printf(A->a, "unknown: %s", r.why);
    }
}

const char *access_report(Access *A)
{
    Buf b = {A->a, NULL, 0, 0};
    for (int i = 0; i < A->sites.n; i++) {
        AcSite *s = &A->sites.v[i];
        const Inst *in = s->in;
        buf_printf(&b, "%s line %d: %s\n", op_info[in->op].name, in->loc.line, form_str(A, ac_site_form(A, s)));
        Cons cs = ac_site_cons(A, s);
        for (int k = 0; k < cs.n; k++)
            buf_printf(&b, "  where %s < 0\n", form_str(A, cs.v[k]));
        buf_printf(&b, "  launch: %s\n", verdict_str(A, access_injective(A, in, ACC_VARY_PIDS | ACC_VARY_LOOPS |
                                                                             ACC_VARY_LANES)));
        if (s->loops)
            buf_printf(&b, "  iterations: %s\n",
                       verdict_str(A, access_injective(A, in, ACC_VARY_LOOPS | ACC_VARY_LANES |
                                                                  ACC_SKIP_UNUSED_LANES)));
        unsigned axes;
        if (access_pid_independent(A, in, &axes) && axes)
            buf_printf(&b, "  independent of:%s%s%s\n", axes & 1 ? " pid0" : "", axes & 2 ? " pid1" : "",
                       axes & 4 ? " pid2" : "");
        for (int j = 0; j < i; j++) {
            const Inst *o = A->sites.v[j].in;
            if (o->op == OP_LOAD && in->op == OP_LOAD)
                continue;
            if (access_base(A, o) != access_base(A, in) || access_base(A, in) < 0)
                continue;
            buf_printf(&b, "  vs line %d: disjoint %s\n", o->loc.line,
                       verdict_str(A, access_disjoint(A, o, in)));
        }
    }
    /* per parameter: is each program's footprint (all its sites) private? */
    for (int p = 0; p < A->f->nparams; p++) {
        const Inst **ms = arena_alloc(A->a, sizeof *ms * (size_t)(A->sites.n + 1));
        int n = 0;
        for (int i = 0; i < A->sites.n; i++)
            if (access_base(A, A->sites.v[i].in) == p)
                ms[n++] = A->sites.v[i].in;
        if (!n)
            continue;
        buf_printf(&b, "footprint of %%%s (%d site%s):\n", ac_vname(A, A->f->params[p]), n, n > 1 ? "s" : "");
        buf_printf(&b, "  private over every axis: %s\n", verdict_str(A, access_private(A, ms, n, 7)));
        int nread = (A->pid_axes & 1) + (A->pid_axes >> 1 & 1) + (A->pid_axes >> 2 & 1);
        for (int k = 0; k < 3 && nread > 1; k++)
            if (A->pid_axes >> k & 1)
                buf_printf(&b, "  private over pid%d: %s\n", k, verdict_str(A, access_private(A, ms, n, 1u << k)));
    }
    return buf_str(&b);
}

int access_sym(Access *A, int id, int *param, int *axis)
{
    if (id < 1 || id > A->syms.n)
        return 0;
    const AcSym *y = &A->syms.v[id - 1];
    if (y->kind == SYM_NPROG) {
        *axis = y->axis;
        return 2;
    }
    for (int k = 0; y->kind == SYM_PARAM && k < A->f->nparams; k++)
        if (A->f->params[k] == y->v) {
            *param = k;
            return 1;
        }
    return 0;
}

bool func_guards_hold(const FuncGuard *gs, int n, const int64_t *iargs, const int64_t grid[3], Diags *d)
{
    for (int i = 0; i < n; i++) {
        const FuncGuard *g = &gs[i];
        bool holds = false;
        if (!access_cond_eval(g->acc, g->cond, iargs, grid, &holds)) {
            diag_error(d, g->loc, "%s (kad cannot evaluate the condition for this launch)", g->msg);
            return false;
        }
        if (!holds) {
            diag_error(d, g->loc, "%s", g->msg);
            return false;
        }
    }
    return true;
}

void access_cond_conj(Access *A, AccCondVec *out, const AccCond *c)
{
    Vec(AccClause) all = {0}; /* every clause of out and c */
    for (int k = 0; k <= out->n; k++) {
        const AccCond *x = k < out->n ? out->v[k] : c;
        for (int i = 0; i < x->n; i++)
            vec_push(A->a, all, x->c[i]);
    }
    access_drop_implied(all.v, &all.n);
    out->n = 0;
    for (int i = 0; i < all.n; i += ACC_NCLAUSE) {
        AccCond *one = arena_alloc(A->a, sizeof *one);
        for (int j = i; j < all.n && j < i + ACC_NCLAUSE; j++)
            one->c[one->n++] = all.v[j];
        vec_push(A->a, *out, (const AccCond *)one);
    }
}

bool access_cond_implies(const AccCondVec *x, const AccCond *y)
{
    for (int j = 0; j < y->n; j++) {
        bool some = false;
        for (int k = 0; k < x->n && !some; k++)
            for (int i = 0; i < x->v[k]->n && !some; i++)
                some = access_clause_implies(&x->v[k]->c[i], &y->c[j]);
        if (!some)
            return false;
    }
    return true;
}
