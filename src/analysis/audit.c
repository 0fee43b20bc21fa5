/* audit.c -- what makes a kernel nondeterministic or batch-variant
 * (`kad audit`, kad_audit; docs/AD.md, "Determinism audit").
 *
 * Two kinds of finding, each at the source construct it came from:
 *   - a float atomic_add: the order of the adds into one element is not
 *     fixed, so the rounding differs between runs.  The access analysis
 *     decides whether several adds can reach one element (a split
 *     reduction: nondeterministic) or whether every element receives at
 *     most one add per launch (a note: the order does not matter);
 *   - a loop carrying a float value (an accumulator) whose trip count or
 *     chunking depends on tl.num_programs, or on a runtime size that also
 *     bounds the program ids (a batch size): what one program accumulates,
 *     and in which order, changes with the grid or the batch.
 * A row reduced by one program over a loop bounded by the row length and
 * constexprs is batch-invariant and reported clean.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"

/* Dependence bits of a value: on program ids, on tl.num_programs, on tile
 * lanes, and (bit T_PARAM + i) on int parameter i. */
enum { T_PID = 1, T_NPROG = 2, T_LANE = 4, T_PARAM = 3, T_NPARAM = 60 };

typedef struct Audit {
    const Func *f;
    uint64_t *t;      /* by ValId */
    bool changed;
    uint64_t batch;   /* parameter bits of sizes that bound program ids */
    unsigned pid_axes; /* axes of tl.program_id the kernel reads */
    Access *acc;
    Buf out;
    int nondet, variant, notes;
} Audit;

static void join(Audit *au, ValId v, uint64_t bits)
{
    if (v && (au->t[v] | bits) != au->t[v]) {
        au->t[v] |= bits;
        au->changed = true;
    }
}

static uint64_t yield_bits(Audit *au, const Block *b, int j)
{
    const Inst *y = &b->insts.v[b->insts.n - 1];
    return j < y->nargs ? au->t[y->args[j]] : 0;
}

static void taint_block(Audit *au, const Block *b);

static void taint_inst(Audit *au, const Inst *in)
{
    uint64_t t = 0;
    for (int i = 0; i < in->nargs; i++)
        t |= au->t[in->args[i]];
    switch (in->op) {
    case OP_PROGRAM_ID:
        au->pid_axes |= 1u << (in->ival & 3);
        join(au, in->res[0], T_PID);
        return;
    case OP_NUM_PROGRAMS:
        join(au, in->res[0], T_NPROG);
        return;
    case OP_ARANGE:
        join(au, in->res[0], T_LANE);
        return;
    case OP_FOR: {
        const Block *r = in->regions[0];
        join(au, r->params[0], au->t[in->args[0]] | au->t[in->args[1]] | au->t[in->args[2]]);
        for (int j = 1; j < r->nparams; j++)
            join(au, r->params[j], au->t[in->args[2 + j]]);
        taint_block(au, r);
        for (int j = 1; j < r->nparams; j++) {
            join(au, r->params[j], yield_bits(au, r, j - 1));
            if (j - 1 < in->nres)
                join(au, in->res[j - 1], au->t[r->params[j]] | au->t[r->params[0]]);
        }
        return;
    }
    case OP_IF:
        taint_block(au, in->regions[0]);
        taint_block(au, in->regions[1]);
        for (int j = 0; j < in->nres; j++)
            join(au, in->res[j], t | yield_bits(au, in->regions[0], j) | yield_bits(au, in->regions[1], j));
        return;
    case OP_WHILE: {
        const Block *c = in->regions[0], *body = in->regions[1];
        for (int j = 0; j < in->nargs; j++) {
            join(au, c->params[j], au->t[in->args[j]]);
            join(au, body->params[j], au->t[in->args[j]]);
        }
        taint_block(au, c);
        taint_block(au, body);
        const Inst *cond = &c->insts.v[c->insts.n - 1];
        uint64_t ct = cond->nargs ? au->t[cond->args[0]] : 0;
        for (int j = 0; j < in->nargs; j++) {
            uint64_t y = yield_bits(au, body, j);
            join(au, c->params[j], y);
            join(au, body->params[j], y);
            if (j < in->nres)
                join(au, in->res[j], au->t[c->params[j]] | ct);
        }
        return;
    }
    default:
        for (int j = 0; j < in->nres; j++)
            join(au, in->res[j], t);
        return;
    }
}

static void taint_block(Audit *au, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++)
        taint_inst(au, &b->insts.v[i]);
}

static bool is_cmp(int op) { return op == OP_LT || op == OP_LE || op == OP_GT || op == OP_GE; }

/* A size compared with a program-id-dependent scalar (`row < n_rows`,
 * range(pid, n_rows, ...)) bounds the programs: a batch size. */
static void mark_batch(Audit *au, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        uint64_t ps = ~(uint64_t)0 << T_PARAM;
        if (is_cmp(in->op) && ir_type(au->f, in->res[0]).rank == 0) {
            uint64_t x = au->t[in->args[0]], y = au->t[in->args[1]];
            if ((x & T_PID) && !(x & T_LANE))
                au->batch |= y & ps & ~x;
            if ((y & T_PID) && !(y & T_LANE))
                au->batch |= x & ps & ~y;
        }
        if (in->op == OP_FOR && (au->t[in->args[0]] & T_PID))
            au->batch |= au->t[in->args[1]] & ps & ~au->t[in->args[0]];
        for (int r = 0; r < in->nregions; r++)
            mark_batch(au, in->regions[r]);
    }
}

static void loc(Audit *au, Loc l)
{
    buf_printf(&au->out, "%s:%d:%d: ", l.file ? l.file : "<ir>", l.line, l.col);
}

/* The names of the batch sizes among bits, "n_rows, n_cols". */
static const char *param_names(Audit *au, uint64_t bits)
{
    Buf b = {.a = au->f->a};
    for (int i = 0; i < au->f->nparams && i < T_NPARAM; i++)
        if (bits & ((uint64_t)1 << (T_PARAM + i)))
            buf_printf(&b, "%s%s", *buf_str(&b) ? ", " : "", au->f->vals.v[au->f->params[i]].name);
    return buf_str(&b);
}

static void audit_atomic(Audit *au, const Inst *in)
{
    Type vt = ir_type(au->f, in->args[1]);
    if (!dtype_is_float(vt.dt))
        return; /* integer adds commute exactly */
    int base = access_base(au->acc, in);
    const char *buf = base >= 0 ? au->f->vals.v[au->f->params[base]].name : "a computed pointer";
    const char *dt = dtype_name(vt.dt);
    AccResult r = access_injective(au->acc, in, ACC_VARY_PIDS | ACC_VARY_LOOPS | ACC_VARY_LANES);
    if (r.v == ACC_PROVEN || r.v == ACC_PROVEN_IF) {
        const char *cond = r.v == ACC_PROVEN_IF ? access_cond_python(au->acc, r.cond) : NULL;
        if (r.v == ACC_PROVEN || cond) {
            loc(au, in->loc);
            buf_printf(&au->out,
                       "note: atomic_add of %s into %s: the addresses are distinct (every element receives at "
                       "most one add per launch%s%s), so the order of the atomics does not change the result; "
                       "deterministic unless another launch or kernel adds into the same buffer concurrently\n",
                       dt, buf, cond ? " when " : "", cond ? cond : "");
            au->notes++;
            return;
        }
    }
    unsigned ind = 0;
    bool known = access_pid_independent(au->acc, in, &ind);
    unsigned axes = known ? ind & au->pid_axes : 0;
    loc(au, in->loc);
    buf_printf(&au->out, "nondeterministic: atomic_add of %s into %s: ", dt, buf);
    if (axes) {
        buf_puts(&au->out, "the address does not depend on");
        for (int k = 0; k < 3; k++)
            if (axes & (1u << k))
                buf_printf(&au->out, " tl.program_id(%d)", k);
        buf_puts(&au->out, ", so partial results of several programs are combined into one element (a split "
                           "reduction) in an order that varies between runs\n");
    } else if (!known && base < 0) {
        buf_puts(&au->out, "the address is unknown to the access analysis, so several adds may reach one element "
                           "in an order that varies between runs\n");
    } else {
        buf_printf(&au->out, "several adds may reach one element (%s), in an order that varies between runs\n",
                   r.why ? r.why : "distinct addresses not proven");
    }
    au->nondet++;
}

/* A loop that carries a float value: an accumulation. */
static bool carries_float(const Audit *au, const Inst *in)
{
    for (int j = 0; j < in->nres; j++)
        if (dtype_is_float(ir_type(au->f, in->res[j]).dt))
            return true;
    return false;
}

static void audit_loop(Audit *au, const Inst *in)
{
    if (!carries_float(au, in))
        return;
    uint64_t trip = 0;
    if (in->op == OP_FOR)
        trip = au->t[in->args[0]] | au->t[in->args[1]] | au->t[in->args[2]];
    else {
        const Block *c = in->regions[0];
        const Inst *cond = &c->insts.v[c->insts.n - 1];
        trip = cond->nargs ? au->t[cond->args[0]] : 0;
    }
    const char *what = in->op == OP_FOR ? "for" : "while";
    if (trip & T_NPROG) {
        loc(au, in->loc);
        buf_printf(&au->out,
                   "batch-variant: %s loop accumulating floats: its trip count or stride depends on "
                   "tl.num_programs, so the elements one program accumulates, and their order, change with "
                   "the grid\n",
                   what);
        au->variant++;
    } else if (trip & au->batch) {
        loc(au, in->loc);
        buf_printf(&au->out,
                   "batch-variant: %s loop accumulating floats: its trip count depends on %s, which also bounds "
                   "the program ids (a batch size), so what is accumulated, and its chunking, change with the "
                   "batch\n",
                   what, param_names(au, trip & au->batch));
        au->variant++;
    }
}

static void audit_block(Audit *au, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        if (in->op == OP_ATOMIC_ADD)
            audit_atomic(au, in);
        else if (in->op == OP_FOR || in->op == OP_WHILE)
            audit_loop(au, in);
        for (int r = 0; r < in->nregions; r++)
            audit_block(au, in->regions[r]);
    }
}

const char *audit_report(Arena *a, const Func *f)
{
    Audit au = {.f = f, .out = {.a = a}};
    au.t = arena_alloc(a, sizeof *au.t * (size_t)(f->vals.n + 1));
    memset(au.t, 0, sizeof *au.t * (size_t)(f->vals.n + 1));
    for (int i = 0; i < f->nparams && i < T_NPARAM; i++)
        if (dtype_is_int(ir_type(f, f->params[i]).dt))
            au.t[f->params[i]] = (uint64_t)1 << (T_PARAM + i);
    for (int it = 0; it < 64; it++) {
        au.changed = false;
        taint_block(&au, f->body);
        if (!au.changed)
            break;
    }
    mark_batch(&au, f->body);
    au.acc = access_analyze(a, f);
    audit_block(&au, f->body);
    if (!au.nondet && !au.variant)
        buf_printf(&au.out, "%s: clean: deterministic and batch-invariant%s\n", f->name,
                   au.notes ? " (see the notes)" : "");
    else
        buf_printf(&au.out, "%s: %d nondeterministic, %d batch-variant\n", f->name, au.nondet, au.variant);
    return buf_str(&au.out);
}
