/* text.c: a Program in the IR's textual form (docs/IR.md, "Programs").
 *
 * The text of a Program is its kernels, then its plan:
 *   - the main kernel, whose header carries the plan data that names its
 *     values: `tape(...)`, `spread(...)`, `fold(...)` (printed and read by
 *     ir.c and irparse.c from an IrPlanText);
 *   - every companion kernel (plan_companions' order: the fold's sum, the
 *     GEMM form's dacc and operand kernels, the gather and scatter kernels),
 *     each an IR kernel of its own;
 *   - `plan { ... }`: one line per item of the rest of the plan data (guards,
 *     flags, covers, cleared gradients, the sum kernel, the GEMM form, the
 *     gathers, notes, trusted buffers) and the host steps, in the grammar of
 *     plan_parse below.  A Program of one kernel and one launch has none.
 * Conditions and covers are the access analysis's (access_text.c); a parsed
 * Program's conditions live in one Access over its main kernel, whose int
 * parameters they name (the contract's come first in every kernel).
 * The parser reads the companions from the text (it rebuilds nothing) and
 * the steps when the plan lists them (else plan_steps orders them).
 * Keeps: print(parse(print(P))) == print(P).  Not in the text: AD's working
 * data (GatherIn.sites and its cover, the Loc of tapes and spread). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "plan/plan.h"

/* ------------------------------------------------------------------ */
/* Printing                                                            */
/* ------------------------------------------------------------------ */

/* What the plan's lines name: the main kernel's parameters by index (printed names). */
typedef struct Pr {
    Buf *b;
    const Program *P;
    const char **pnames; /* by parameter index */
    const char **vnames; /* by ValId */
} Pr;

static void put_param(Pr *p, ValId v) { buf_printf(p->b, "%%%s", p->vnames[v] ? p->vnames[v] : "?"); }

static void put_str(Buf *b, const char *s)
{
    buf_putc(b, '"');
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            buf_printf(b, "\\%c", c);
        else if (c == '\n')
            buf_puts(b, "\\n");
        else if (c == '\t')
            buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f)
            buf_printf(b, "\\x%02x", c);
        else
            buf_putc(b, (char)c);
    }
    buf_putc(b, '"');
}

static void put_texpr(Pr *p, const TapeExpr *e)
{
    switch (e->op) {
    case TX_CONST: buf_printf(p->b, "%lld", (long long)e->v); return;
    case TX_PARAM: buf_printf(p->b, "%%%s", p->pnames[e->v]); return;
    case TX_GRID: buf_printf(p->b, "grid(%lld)", (long long)e->v); return;
    case TX_PID: buf_printf(p->b, "pid(%lld)", (long long)e->v); return;
    default:
        buf_printf(p->b, "%s(", ir_tape_expr_op_name(e->op));
        put_texpr(p, e->x);
        buf_puts(p->b, ", ");
        put_texpr(p, e->y);
        buf_putc(p->b, ')');
    }
}

static void put_cond(Pr *p, Access *A, const AccCond *c)
{
    buf_puts(p->b, "{");
    access_cond_text(p->b, A, c, p->pnames, p->P->main->nparams);
    buf_puts(p->b, "}");
}

static void put_cover(Pr *p, Access *A, const AccCover *c)
{
    buf_putc(p->b, ' ');
    access_cover_text(p->b, A, c, p->pnames, p->P->main->nparams);
}

static void put_grid_add(Pr *p, const int64_t *g)
{
    buf_printf(p->b, " grid + [%lld, %lld, %lld]", (long long)g[0], (long long)g[1], (long long)g[2]);
}

static bool has_plan(const Program *P)
{
    return P->fold || P->sum || P->gemm || P->gather || P->spread || P->guards.n || P->flags.n || P->covers.n ||
           P->tapes.n || P->cleared.n || P->notes.n || P->trusted ||
           !(P->steps.n == 1 && P->steps.v[0].kind == STEP_LAUNCH);
}

static bool step_has_index(int kind)
{
    return kind == STEP_COPY || kind == STEP_FLAG || kind == STEP_TAPE || kind == STEP_ZERO ||
           kind == STEP_GATHER || kind == STEP_TAPE_CHECK;
}

static void print_plan(Pr *p)
{
    const Program *P = p->P;
    const Func *f = P->main;
    Buf *b = p->b;
    buf_puts(b, "\nplan {\n");
    for (int i = 0; i < P->guards.n; i++) { /* guard if {C} at "FILE":L:C "MSG" */
        const FuncGuard *g = &P->guards.v[i];
        buf_puts(b, "  guard if ");
        put_cond(p, g->acc, g->cond);
        buf_puts(b, " at ");
        put_str(b, g->loc.file ? g->loc.file : "");
        buf_printf(b, ":%d:%d ", g->loc.line, g->loc.col);
        put_str(b, g->msg);
        buf_putc(b, '\n');
    }
    for (int i = 0; i < P->flags.n; i++) { /* flag %p [grid + [..]] [if {C} ...] */
        const FuncFlag *fl = &P->flags.v[i];
        buf_puts(b, "  flag ");
        put_param(p, fl->param);
        if (fl->grid_add)
            put_grid_add(p, fl->grid_add);
        for (int c = 0; c < fl->ncond; c++) {
            buf_puts(b, c ? " " : " if ");
            put_cond(p, fl->acc, fl->cond[c]);
        }
        buf_putc(b, '\n');
    }
    for (int i = 0; i < P->covers.n; i++) { /* cover %d [flag %f] [reach(...)] ["WHY"] */
        const FuncCover *fc = &P->covers.v[i];
        buf_puts(b, "  cover ");
        put_param(p, fc->param);
        if (fc->flag) {
            buf_puts(b, " flag ");
            put_param(p, fc->flag);
        }
        if (fc->cover)
            put_cover(p, fc->acc, fc->cover);
        if (fc->why) {
            buf_putc(b, ' ');
            put_str(b, fc->why);
        }
        buf_putc(b, '\n');
    }
    for (int i = 0; i < P->cleared.n; i++) {
        buf_puts(b, "  cleared ");
        put_param(p, f->params[P->cleared.v[i]]);
        buf_putc(b, '\n');
    }
    if (P->sum)
        buf_printf(b, "  sum @%s\n", P->sum->name);
    if (P->gemm) { /* gemm @first u E v E trips E tile N DTYPE contract N data "D", then its operands */
        const GemmPlan *g = P->gemm;
        buf_printf(b, "  gemm @%s u ", g->first->name);
        put_texpr(p, g->id[0]);
        buf_puts(b, " v ");
        put_texpr(p, g->id[1]);
        buf_puts(b, " trips ");
        put_texpr(p, g->trips);
        buf_printf(b, " tile %lld %s contract %d data ", (long long)g->tile, dtype_name(g->sdt), g->nargs);
        put_str(b, g->data);
        buf_putc(b, '\n');
        for (int j = 0; j < g->n; j++) {
            const GemmOperand *o = &g->op[j];
            buf_printf(b, "  operand %s ", o->name);
            put_param(p, f->params[o->slot]);
            buf_printf(b, " own %s group %d%s", o->own ? "v" : "u", o->group, o->wide ? " wide" : "");
            if (o->chunk)
                buf_printf(b, " chunk %d", o->chunk);
            buf_printf(b, " @%s", o->k->name);
            if (o->single)
                buf_printf(b, " single @%s", o->single->name);
            if (o->cond) {
                buf_puts(b, " if ");
                put_cond(p, o->acc, o->cond);
            }
            if (o->cover)
                put_cover(p, o->acc, o->cover);
            buf_putc(b, '\n');
        }
    }
    for (int j = 0; P->gather && j < P->gather->n; j++) {
        /* gather NAME %d @k grid + [..] sites N [flag %f] [if {C}] | scatter NAME %d @k sites N */
        const GatherIn *gi = &P->gather->in[j];
        buf_printf(b, "  %s %s ", gi->scatter ? "scatter" : "gather", gi->name);
        put_param(p, f->params[gi->slot]);
        buf_printf(b, " @%s", gi->k->name);
        if (!gi->scatter)
            put_grid_add(p, gi->grid_add);
        buf_printf(b, " sites %d", gi->nsites);
        if (gi->flag >= 0) {
            buf_puts(b, " flag ");
            put_param(p, P->flags.v[gi->flag].param);
        }
        if (gi->cond) {
            buf_puts(b, " if ");
            put_cond(p, gi->acc, gi->cond);
        }
        buf_putc(b, '\n');
    }
    if (P->gather)
        buf_printf(b, "  main %s\n", P->gather->main == 0 ? "launched" : P->gather->main == 1 ? "idle" : "unless_gathered");
    for (int i = 0; i < P->notes.n; i++) {
        buf_puts(b, "  note ");
        put_str(b, P->notes.v[i]);
        buf_putc(b, '\n');
    }
    if (P->trusted) {
        buf_puts(b, "  trusted ");
        put_str(b, P->trusted);
        buf_putc(b, '\n');
    }
    buf_puts(b, "  steps");
    for (int i = 0; i < P->steps.n; i++) {
        const Step *s = &P->steps.v[i];
        buf_printf(b, "%s %s", i ? "," : "", plan_step_name(s->kind));
        if (step_has_index(s->kind))
            buf_printf(b, " %d", s->j);
    }
    buf_puts(b, "\n}\n");
}

void plan_print(Buf *b, const Program *P)
{
    IrPlanText pt = {.spread = P->spread, .fold = P->fold};
    pt.tapes.v = P->tapes.v;
    pt.tapes.n = pt.tapes.cap = P->tapes.n;
    ir_print_plan(b, P->main, &pt);
    int n = plan_companions(P, NULL);
    const Func **ks = arena_alloc(b->a, sizeof *ks * (size_t)(n + 1));
    plan_companions(P, ks);
    for (int i = 0; i < n; i++) {
        buf_putc(b, '\n');
        ir_print(b, ks[i]);
    }
    if (!has_plan(P))
        return;
    const Func *f = P->main;
    Pr p = {b, P, arena_alloc(b->a, sizeof(char *) * (size_t)(f->nparams + 1)), ir_names(b->a, f)};
    for (int i = 0; i < f->nparams; i++)
        p.pnames[i] = p.vnames[f->params[i]];
    print_plan(&p);
}

char *plan_to_string(Arena *a, const Program *P)
{
    Buf b = {.a = a};
    plan_print(&b, P);
    return (char *)buf_str(&b);
}

/* ------------------------------------------------------------------ */
/* Parsing                                                             */
/* ------------------------------------------------------------------ */

/* plan   := 'plan' '{' NL (line NL)* '}'
 * line   := 'guard' 'if' cond 'at' STRING ':' INT ':' INT STRING
 *         | 'flag' %p ['grid' '+' ints3] ['if' cond+]
 *         | 'cover' %p ['flag' %p] [reach] [STRING]
 *         | 'cleared' %p
 *         | 'sum' @k
 *         | 'gemm' @k 'u' texpr 'v' texpr 'trips' texpr 'tile' INT DTYPE 'contract' INT 'data' STRING
 *         | 'operand' NAME %p 'own' ('u'|'v') 'group' INT ['wide'] ['chunk' INT] @k ['single' @k]
 *           ['if' cond] [reach]
 *         | 'gather' NAME %p @k 'grid' '+' ints3 'sites' INT ['flag' %p] ['if' cond]
 *         | 'scatter' NAME %p @k 'sites' INT
 *         | 'main' ('launched' | 'idle' | 'unless_gathered')
 *         | 'note' STRING | 'trusted' STRING
 *         | 'steps' [step (',' step)*]            step := NAME [INT]
 * cond   := '{' access_text.c's cond '}'      reach := access_text.c's cover
 * ints3  := '[' INT ',' INT ',' INT ']'
 * texpr  := INT | %p | ('grid' | 'pid') '(' INT ')' | OP '(' texpr ',' texpr ')'
 * Values (%p) are the main kernel's parameters, kernels (@k) the text's. */
typedef struct Rd {
    Arena *a;
    Diags *d;
    const char *file;
    const char *s;          /* where the reader stands */
    const char *line_start; /* of s's line */
    int line;
    jmp_buf fail;
    Program *P;
    Func *f;                /* the main kernel */
    Access *A;              /* the conditions' symbols (over f) */
    const char **pnames;    /* f's parameters' printed names, by index */
    Vec(Func *) ks;         /* the text's kernels, main first */
} Rd;

static Loc loc_at(Rd *r, const char *at) { return (Loc){r->file, r->line, (int)(at - r->line_start) + 1}; }

static _Noreturn void rerr(Rd *r, const char *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_verror(r->d, loc_at(r, at), fmt, ap);
    va_end(ap);
    longjmp(r->fail, 1);
}

static bool word_char(char c)
{
    return c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Skips blanks and `#` comments; newlines too when nl. */
static void skip(Rd *r, bool nl)
{
    for (;;) {
        while (*r->s == ' ' || *r->s == '\t' || *r->s == '\r')
            r->s++;
        if (*r->s == '#') {
            while (*r->s && *r->s != '\n')
                r->s++;
        } else if (nl && *r->s == '\n') {
            r->s++;
            r->line++;
            r->line_start = r->s;
        } else {
            return;
        }
    }
}

static bool eat(Rd *r, const char *w)
{
    skip(r, false);
    size_t n = strlen(w);
    if (strncmp(r->s, w, n) || (word_char(w[n - 1]) && word_char(r->s[n])))
        return false;
    r->s += n;
    return true;
}

static void need(Rd *r, const char *w)
{
    if (!eat(r, w))
        rerr(r, r->s, "expected '%s' in the plan", w);
}

static const char *word(Rd *r, const char *what)
{
    skip(r, false);
    const char *q = r->s;
    while (word_char(*q))
        q++;
    if (q == r->s || (*r->s >= '0' && *r->s <= '9'))
        rerr(r, r->s, "expected %s", what);
    const char *w = arena_strndup(r->a, r->s, (size_t)(q - r->s));
    r->s = q;
    return w;
}

static int64_t integer(Rd *r, int64_t lo, int64_t hi, const char *what)
{
    skip(r, false);
    const char *at = r->s;
    char *end;
    long long v = strtoll(r->s, &end, 10);
    if (end == r->s || word_char(*end))
        rerr(r, at, "expected %s (an integer)", what);
    if (v < lo || v > hi)
        rerr(r, at, "%s: between %lld and %lld", what, (long long)lo, (long long)hi);
    r->s = end;
    return v;
}

/* STRING, with irparse's escapes. */
static const char *string(Rd *r)
{
    skip(r, false);
    if (*r->s != '"')
        rerr(r, r->s, "expected a string");
    const char *end, *at, *err;
    const char *text = ir_string_read(r->a, r->s, &end, &at, &err);
    if (!text)
        rerr(r, at, "%s", err);
    r->s = end;
    return text;
}

/* %p: the index of the main kernel's parameter it names. */
static int param(Rd *r)
{
    skip(r, false);
    const char *at = r->s;
    if (*r->s != '%')
        rerr(r, at, "expected a parameter of the main kernel (%%name)");
    const char *q = r->s + 1;
    while (word_char(*q))
        q++;
    size_t n = (size_t)(q - at - 1);
    for (int i = 0; i < r->f->nparams; i++)
        if (strlen(r->pnames[i]) == n && !strncmp(r->pnames[i], at + 1, n)) {
            r->s = q;
            return i;
        }
    rerr(r, at, "'%.*s' is not a parameter of the main kernel @%s", (int)(n + 1), at, r->f->name);
}

static ValId param_of(Rd *r, Dtype dt)
{
    const char *at = r->s;
    ValId v = r->f->params[param(r)];
    Type t = ir_type(r->f, v);
    if (dt == DT_I1 && (t.dt != DT_I1 || t.rank))
        rerr(r, at, "a flag is an i1 parameter");
    if (dt == DT_PTR && (t.dt != DT_PTR || t.rank))
        rerr(r, at, "expected a pointer parameter");
    return v;
}

/* @k: one of the text's kernels other than the main one. */
static Func *kernel(Rd *r)
{
    skip(r, false);
    const char *at = r->s;
    if (*r->s != '@')
        rerr(r, at, "expected a kernel of the text (@name)");
    r->s++;
    const char *n = word(r, "a kernel's name");
    for (int i = 1; i < r->ks.n; i++)
        if (!strcmp(r->ks.v[i]->name, n))
            return r->ks.v[i];
    rerr(r, at, "no companion kernel @%s in the text", n);
}

static void ints3(Rd *r, int64_t *g, int64_t lo)
{
    need(r, "[");
    for (int k = 0; k < 3; k++) {
        if (k)
            need(r, ",");
        g[k] = integer(r, lo, 1 << 30, "a grid's programs");
    }
    need(r, "]");
}

static const TapeExpr *texpr(Rd *r, int depth)
{
    TapeExpr *e = arena_alloc(r->a, sizeof *e);
    skip(r, false);
    if (depth > 64)
        rerr(r, r->s, "an expression nested too deeply");
    if (*r->s == '%') {
        const char *at = r->s;
        e->op = TX_PARAM;
        e->v = param(r);
        Type t = ir_type(r->f, r->f->params[e->v]);
        if (t.rank || !dtype_is_int((Dtype)t.dt) || t.dt == DT_I1)
            rerr(r, at, "an expression's parameter is an int");
        return e;
    }
    bool grid = eat(r, "grid");
    if (grid || eat(r, "pid")) {
        e->op = grid ? TX_GRID : TX_PID;
        need(r, "(");
        e->v = integer(r, 0, 2, "a grid axis");
        need(r, ")");
        return e;
    }
    for (int op = TX_ADD; op <= TX_CDIV; op++)
        if (eat(r, ir_tape_expr_op_name(op))) {
            e->op = op;
            need(r, "(");
            e->x = texpr(r, depth + 1);
            need(r, ",");
            e->y = texpr(r, depth + 1);
            need(r, ")");
            return e;
        }
    e->op = TX_CONST;
    e->v = integer(r, INT64_MIN, INT64_MAX, "an expression");
    return e;
}

static const AccCond *cond(Rd *r)
{
    need(r, "{");
    const AccCond *c;
    const char *err, *end = access_cond_read(r->A, r->s, r->pnames, r->f->nparams, &c, &err);
    if (!end)
        rerr(r, r->s, "bad condition (%s)", err);
    r->s = end;
    need(r, "}");
    return c;
}

static const AccCover *cover(Rd *r)
{
    const AccCover *c;
    skip(r, false);
    const char *err, *end = access_cover_read(r->A, r->s, r->pnames, r->f->nparams, &c, &err);
    if (!end)
        rerr(r, r->s, "bad cover (%s)", err);
    r->s = end;
    return c;
}

static bool at_word(Rd *r, const char *w)
{
    const char *s = r->s;
    bool ok = eat(r, w);
    r->s = s;
    return ok;
}

static int flag_index(Rd *r, ValId v, const char *at)
{
    for (int j = 0; j < r->P->flags.n; j++)
        if (r->P->flags.v[j].param == v)
            return j;
    rerr(r, at, "not a flag of the plan (flags come first)");
}

static void gemm_line(Rd *r)
{
    Program *P = r->P;
    if (P->gemm)
        rerr(r, r->s, "a second GEMM form");
    GemmPlan *g = arena_alloc(r->a, sizeof *g);
    g->first = kernel(r);
    need(r, "u");
    g->id[0] = texpr(r, 0);
    need(r, "v");
    g->id[1] = texpr(r, 0);
    need(r, "trips");
    g->trips = texpr(r, 0);
    need(r, "tile");
    g->tile = integer(r, 1, INT64_MAX, "a dacc tile's elements");
    const char *at = r->s;
    const char *dt = word(r, "the scratch's dtype");
    g->sdt = dtype_parse(dt, strlen(dt));
    if (g->sdt != DT_F32 && g->sdt != DT_F64 && g->sdt != DT_F16 && g->sdt != DT_BF16)
        rerr(r, at, "a GEMM scratch's dtype is a float");
    need(r, "contract");
    g->nargs = (int)integer(r, 0, r->f->nparams, "the contract's arguments");
    need(r, "data");
    g->data = string(r);
    P->gemm = g;
}

static void operand_line(Rd *r)
{
    GemmPlan *g = (GemmPlan *)r->P->gemm;
    if (!g || g->n == 2)
        rerr(r, r->s, g ? "a GEMM form has at most two operands" : "an operand before its 'gemm' line");
    GemmOperand *o = &g->op[g->n];
    o->name = word(r, "the operand's name");
    o->slot = param(r);
    need(r, "own");
    o->own = eat(r, "v") ? 1 : (need(r, "u"), 0);
    need(r, "group");
    o->group = (int)integer(r, 1, 1 << 20, "the K iterations a program owns");
    o->wide = eat(r, "wide");
    if (eat(r, "chunk"))
        o->chunk = (int)integer(r, 1, 1 << 20, "a chunk's lanes");
    o->k = kernel(r);
    if (eat(r, "single"))
        o->single = kernel(r);
    o->acc = r->A;
    if (eat(r, "if"))
        o->cond = cond(r);
    skip(r, false);
    if (at_word(r, "reach"))
        o->cover = cover(r);
    g->n++;
}

static void gather_line(Rd *r, bool scatter)
{
    Program *P = r->P;
    GatherPlan *pl = (GatherPlan *)P->gather;
    if (!pl) {
        pl = arena_alloc(r->a, sizeof *pl);
        P->gather = pl;
    }
    GatherIn *ins = arena_alloc(r->a, sizeof *ins * (size_t)(pl->n + 1));
    if (pl->n)
        memcpy(ins, pl->in, sizeof *ins * (size_t)pl->n);
    GatherIn *gi = &ins[pl->n];
    gi->name = word(r, "the input's name");
    gi->slot = param(r);
    gi->k = kernel(r);
    gi->scatter = scatter;
    gi->flag = -1;
    gi->acc = r->A;
    if (!scatter) {
        need(r, "grid");
        need(r, "+");
        ints3(r, gi->grid_add, 0);
    }
    need(r, "sites");
    gi->nsites = (int)integer(r, 1, 1 << 20, "the sites");
    if (!scatter && eat(r, "flag")) {
        skip(r, false);
        const char *at = r->s;
        gi->flag = flag_index(r, param_of(r, DT_I1), at);
    }
    if (!scatter && eat(r, "if"))
        gi->cond = cond(r);
    pl->in = ins;
    pl->n++;
}

static void steps_line(Rd *r)
{
    Program *P = r->P;
    skip(r, false);
    if (*r->s == '\n' || !*r->s)
        return;
    do {
        skip(r, false);
        const char *at = r->s;
        const char *w = word(r, "a step's kind");
        int kind = 0;
        while (kind < STEP_COUNT && strcmp(plan_step_name(kind), w))
            kind++;
        if (kind == STEP_COUNT)
            rerr(r, at, "unknown step '%s'", w);
        int n = kind == STEP_COPY ? P->cleared.n : kind == STEP_FLAG ? P->flags.n : kind == STEP_ZERO ? P->covers.n
              : kind == STEP_GATHER ? (P->gather ? P->gather->n : 0) : P->tapes.n;
        if ((kind == STEP_GEMM && !P->gemm) || (kind == STEP_FOLD && !P->fold) || (kind == STEP_SPREAD && !P->spread) ||
            (kind == STEP_LAUNCH_UNLESS_GATHERED && !P->gather) || (kind == STEP_TAPE_BUDGET && !P->tapes.n) ||
            (step_has_index(kind) && !n))
            rerr(r, at, "a step '%s' without its plan", w);
        int j = step_has_index(kind) ? (int)integer(r, 0, n - 1, arena_printf(r->a, "step %s's index", w)) : 0;
        vec_push(r->a, P->steps, ((Step){kind, j}));
    } while (eat(r, ","));
}

/* One line of the plan (its keyword read). */
static void plan_line(Rd *r, const char *kw, const char *at)
{
    Program *P = r->P;
    if (!strcmp(kw, "guard")) {
        FuncGuard g = {.acc = r->A};
        need(r, "if");
        g.cond = cond(r);
        need(r, "at");
        const char *file = string(r);
        need(r, ":");
        g.loc.file = *file ? file : NULL;
        g.loc.line = (int)integer(r, 0, 1 << 30, "a line");
        need(r, ":");
        g.loc.col = (int)integer(r, 0, 1 << 30, "a column");
        g.msg = string(r);
        vec_push(r->a, P->guards, g);
    } else if (!strcmp(kw, "flag")) {
        skip(r, false);
        FuncFlag fl = {.param = param_of(r, DT_I1), .acc = r->A};
        if (eat(r, "grid")) {
            need(r, "+");
            int64_t *g = arena_alloc(r->a, sizeof *g * 3);
            ints3(r, g, 0);
            fl.grid_add = g;
        }
        if (eat(r, "if")) {
            Vec(const AccCond *) cs = {0};
            do
                vec_push(r->a, cs, cond(r));
            while ((skip(r, false), *r->s == '{'));
            fl.cond = cs.v;
            fl.ncond = cs.n;
        }
        vec_push(r->a, P->flags, fl);
    } else if (!strcmp(kw, "cover")) {
        skip(r, false);
        FuncCover fc = {.param = param_of(r, DT_PTR), .acc = r->A};
        if (eat(r, "flag")) {
            skip(r, false);
            const char *fat = r->s;
            fc.flag = param_of(r, DT_I1);
            flag_index(r, fc.flag, fat);
        }
        skip(r, false);
        if (at_word(r, "reach"))
            fc.cover = cover(r);
        skip(r, false);
        if (*r->s == '"')
            fc.why = string(r);
        vec_push(r->a, P->covers, fc);
    } else if (!strcmp(kw, "cleared")) {
        skip(r, false);
        const char *pat = r->s;
        int i = param(r);
        if (ir_type(r->f, r->f->params[i]).dt != DT_PTR)
            rerr(r, pat, "a cleared gradient is a pointer parameter");
        vec_push(r->a, P->cleared, i);
    } else if (!strcmp(kw, "sum")) {
        if (P->sum)
            rerr(r, at, "a second sum kernel");
        P->sum = kernel(r);
    } else if (!strcmp(kw, "gemm")) {
        gemm_line(r);
    } else if (!strcmp(kw, "operand")) {
        operand_line(r);
    } else if (!strcmp(kw, "gather") || !strcmp(kw, "scatter")) {
        gather_line(r, kw[0] == 's');
    } else if (!strcmp(kw, "main")) {
        if (!P->gather)
            rerr(r, at, "'main' says how the gathers leave the main kernel: it follows them");
        const char *w = word(r, "launched, idle or unless_gathered");
        int m = !strcmp(w, "launched") ? 0 : !strcmp(w, "idle") ? 1 : !strcmp(w, "unless_gathered") ? 2 : -1;
        if (m < 0)
            rerr(r, at, "expected launched, idle or unless_gathered after 'main'");
        ((GatherPlan *)P->gather)->main = m;
    } else if (!strcmp(kw, "note")) {
        vec_push(r->a, P->notes, string(r));
    } else if (!strcmp(kw, "trusted")) {
        P->trusted = string(r);
    } else if (!strcmp(kw, "steps")) {
        steps_line(r);
    } else {
        rerr(r, at, "unknown plan line '%s'", kw);
    }
    skip(r, false);
    if (*r->s && *r->s != '\n')
        rerr(r, r->s, "expected the end of the plan's line");
}

/* Whether e's parameters are among the first nc. */
static bool texpr_in(const TapeExpr *e, int nc)
{
    if (e->op == TX_PARAM)
        return e->v < nc;
    return e->op == TX_CONST || e->op == TX_GRID || e->op == TX_PID || (texpr_in(e->x, nc) && texpr_in(e->y, nc));
}

/* The plan's data against its kernels: what plan_run and the emitters rely on. */
static void check_plan(Rd *r, const char *at)
{
    Program *P = r->P;
    const Func *f = r->f;
    int base = (P->fold ? P->fold->nargs : f->nparams) - P->tapes.n - !!P->spread - P->flags.n;
    for (int j = 0; j < P->flags.n; j++)
        if (base < 0 || f->params[base + j] != P->flags.v[j].param)
            rerr(r, at, "the plan's flags are the main kernel's parameters after the contract's, in order "
                        "(before its tapes, spread and fold)");
    if (!P->fold != !P->sum)
        rerr(r, at, "a folded backward has a sum kernel, and only it");
    if (P->gemm && P->gemm->nargs != plan_nargs(P))
        rerr(r, at, "the GEMM form's contract is the main kernel's (%d arguments)", plan_nargs(P));
    if (P->gemm && !P->gemm->n)
        rerr(r, at, "a GEMM form without operands");
    int nc = plan_nargs(P);
    for (int j = 0; j < P->cleared.n; j++)
        if (P->cleared.v[j] >= nc)
            rerr(r, at, "a cleared gradient is one of the contract's parameters");
    for (int j = 0; P->gemm && j < P->gemm->n; j++)
        if (P->gemm->op[j].slot >= nc)
            rerr(r, at, "a GEMM operand's gradient is one of the contract's parameters");
    for (int k = 0; P->gemm && k < 3; k++)
        if (!texpr_in(k < 2 ? P->gemm->id[k] : P->gemm->trips, nc))
            rerr(r, at, "the GEMM form's expressions name the contract's parameters only");
    for (int j = 0; P->gather && j < P->gather->n; j++)
        if (P->gather->in[j].slot >= nc)
            rerr(r, at, "a gathered gradient is one of the contract's parameters");
}

static void parse_plan_block(Rd *r)
{
    const char *at = r->s;
    need(r, "plan");
    need(r, "{");
    bool steps = false;
    for (;;) {
        skip(r, true);
        if (eat(r, "}"))
            break;
        if (!*r->s)
            rerr(r, r->s, "expected '}' at the end of the plan");
        const char *kat = r->s;
        const char *kw = word(r, "a plan line (guard, flag, cover, ..., steps)");
        if (!strcmp(kw, "steps")) {
            if (steps)
                rerr(r, kat, "a second 'steps' line");
            steps = true;
        }
        plan_line(r, kw, kat);
    }
    check_plan(r, at);
    if (!steps)
        plan_steps(r->P);
    if (!r->P->steps.n)
        rerr(r, at, "a plan whose steps launch nothing");
}

/* The companions and the plan after the main kernel (r->s after it); longjmps on an error. */
static void parse_rest(Rd *r, const char *src)
{
    Arena *a = r->a;
    Program *P = r->P;
    Func *f = r->f;
    r->line_start = r->s;
    while (r->line_start > src && r->line_start[-1] != '\n')
        r->line_start--;
    skip(r, true);
    while (at_word(r, "kernel")) { /* the companions */
        const char *at = r->s;
        IrPlanText kt;
        Func *k = ir_parse_next(a, r->d, r->file, src, &r->s, &r->line, &kt);
        if (!k)
            longjmp(r->fail, 1);
        r->line_start = r->s;
        while (r->line_start > src && r->line_start[-1] != '\n')
            r->line_start--;
        if (kt.tapes.n || kt.spread || kt.fold)
            rerr(r, at, "a companion kernel has no plan of its own (tape, spread, fold): the main kernel's");
        for (int i = 0; i < r->ks.n; i++)
            if (!strcmp(r->ks.v[i]->name, k->name))
                rerr(r, at, "a second kernel @%s", k->name);
        vec_push(a, r->ks, k);
        skip(r, true);
    }
    r->pnames = arena_alloc(a, sizeof(char *) * (size_t)(f->nparams + 1));
    const char **vn = ir_names(a, f);
    for (int i = 0; i < f->nparams; i++)
        r->pnames[i] = vn[f->params[i]];
    if (at_word(r, "plan")) {
        r->A = access_analyze(a, f);
        parse_plan_block(r);
        skip(r, true);
    } else {
        if (r->ks.n > 1)
            rerr(r, r->s, "companion kernels without a plan naming them");
        if (P->fold)
            rerr(r, r->s, "a folded backward without its plan (its sum kernel)");
        plan_steps(P);
    }
    if (*r->s)
        rerr(r, r->s, "expected the end of the input after the plan");
    /* every companion kernel is one the plan launches */
    int n = plan_companions(P, NULL);
    if (n != r->ks.n - 1)
        rerr(r, r->s, "the text has %d companion kernels, the plan launches %d", r->ks.n - 1, n);
}

static bool parse_guarded(Rd *r, const char *src)
{
    if (setjmp(r->fail))
        return false;
    parse_rest(r, src);
    return true;
}

Program *plan_parse(Arena *a, Diags *d, const char *file, const char *text)
{
    const char *src = text ? text : "";
    Rd r = {.a = a, .d = d, .file = arena_strdup(a, file ? file : "<ir>"), .s = src, .line = 1};
    IrPlanText pt;
    Func *f = ir_parse_next(a, d, r.file, src, &r.s, &r.line, &pt);
    if (!f)
        return NULL;
    Program *P = r.P = plan_new(a, f);
    r.f = f;
    P->tapes.v = pt.tapes.v;
    P->tapes.n = P->tapes.cap = pt.tapes.n;
    P->spread = pt.spread;
    P->fold = pt.fold;
    vec_push(a, r.ks, f);
    return parse_guarded(&r, src) ? P : NULL;
}
