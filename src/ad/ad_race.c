/* ad_race.c -- one writer per element: the check that no two programs, and no two lanes of
 * one store, write the same element of a differentiated output in one launch.
 *
 * A backward reads each output element's gradient once for every store that wrote it.  When
 * two programs (or two lanes of one tl.store) write one element, the forward races: one of the
 * values survives, which one is undefined, and the gradient kad would give counts every
 * writer.  No gradient is right there, so such a launch is refused.  What kad proves is free:
 *   - the access analysis (access.c) decides each output's stores: across programs
 *     (access_private over every grid axis, all of the output's store sites together) and
 *     across the lanes of each site (access_injective over the lanes).  PROVEN needs nothing;
 *     PROVEN_IF a condition on the launch (a row stride at least the row's width), which the
 *     launcher evaluates; anything else (an index loaded from memory: a scatter) is decided
 *     by running the check kernel on the launch's own data.
 *   - the check kernel (race_kernel) is the forward with every store into a checked output
 *     replaced by an exchange into a tag buffer laid out like the output (int64, the same
 *     element offsets): each lane swaps in its code pid * NS + site + 1 and looks at the
 *     code it took out.  Another program's code there: two programs write the element.  Its
 *     own code (the same site of the same program): two lanes of one store, or two
 *     iterations, wrote it (counted only where the lanes are not proven distinct: two
 *     iterations are an ordered overwrite, the last write wins).  A code of another site of the same program is an ordered
 *     overwrite, which AD handles (the later store wins).  The counts go to a small info
 *     buffer (two per site), read by the host once.  Every other store and atomic of the
 *     forward is left out, so the kernel writes nothing but its own buffers; it runs before
 *     the forward, on the launch's arguments.
 * The interpreter runs the same kernel (race_run) before a forward that will be
 * differentiated; the generated module prints it with a launcher (emit_grad.c,
 * emit_triton_race) that the Python package calls on the first launch of each launch key.
 *
 * Requires: fwd verified and accepted by AD for (wrt, outs) (the stores' roots are outputs or
 * scratch; atomic results unused).  Keeps fwd unchanged. */
#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"
#include "ad/autodiff.h"

#include <stdlib.h>
#include <string.h>

/* The pointer parameters each value may derive from through pointer arithmetic, shape ops,
 * selects and loop-carried or yielded values, as a set: bit i for parameter i (i < 63),
 * RT_UNKNOWN for a pointer read from memory or converted, or a parameter past the 63rd. */
typedef uint64_t Roots;
#define RT_UNKNOWN ((Roots)1 << 63)

static Roots root_bit(int param) { return param < 63 ? (Roots)1 << param : RT_UNKNOWN; }

static bool join_root(Roots *r, Roots v)
{
    Roots n = *r | v;
    bool ch = n != *r;
    *r = n;
    return ch;
}

static bool roots_block(const Func *f, const Block *b, Roots *root);

/* One pass over a region-holding instruction: its region params and results from its
 * inits and yields. */
static bool roots_region_op(const Func *f, const Inst *in, Roots *root)
{
    bool ch = false;
    if (in->op == OP_FOR) {
        Block *r = in->regions[0];
        const Inst *y = &r->insts.v[r->insts.n - 1];
        for (int k = 0; k < in->nres; k++) {
            ch |= join_root(&root[r->params[1 + k]], root[in->args[3 + k]]);
            ch |= join_root(&root[r->params[1 + k]], root[y->args[k]]);
            ch |= join_root(&root[in->res[k]], root[r->params[1 + k]]);
        }
        ch |= roots_block(f, r, root);
    } else if (in->op == OP_IF) {
        for (int g = 0; g < 2; g++) {
            Block *r = in->regions[g];
            ch |= roots_block(f, r, root);
            const Inst *y = &r->insts.v[r->insts.n - 1];
            for (int k = 0; k < in->nres && k < y->nargs; k++)
                ch |= join_root(&root[in->res[k]], root[y->args[k]]);
        }
    } else if (in->op == OP_WHILE) {
        Block *c = in->regions[0], *body = in->regions[1];
        const Inst *y = &body->insts.v[body->insts.n - 1];
        for (int k = 0; k < in->nres; k++) {
            Roots *cp = &root[c->params[k]];
            ch |= join_root(cp, root[in->args[k]]);
            ch |= join_root(cp, root[y->args[k]]);
            ch |= join_root(&root[body->params[k]], *cp);
            ch |= join_root(&root[in->res[k]], *cp);
        }
        ch |= roots_block(f, c, root);
        ch |= roots_block(f, body, root);
    } else {
        for (int g = 0; g < in->nregions; g++)
            ch |= roots_block(f, in->regions[g], root);
    }
    return ch;
}

static bool roots_block(const Func *f, const Block *b, Roots *root)
{
    bool ch = false;
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        switch ((OpKind)in->op) {
        case OP_ADDPTR: case OP_BROADCAST: case OP_EXPAND_DIMS: case OP_RESHAPE: case OP_PERMUTE:
        case OP_SPLIT: case OP_FLIP: case OP_MULTIPLE_OF: case OP_MAX_CONTIGUOUS:
            ch |= join_root(&root[in->res[0]], root[in->args[0]]);
            break;
        case OP_JOIN:
            ch |= join_root(&root[in->res[0]], root[in->args[0]]);
            ch |= join_root(&root[in->res[0]], root[in->args[1]]);
            break;
        case OP_WHERE:
            ch |= join_root(&root[in->res[0]], root[in->args[1]]);
            ch |= join_root(&root[in->res[0]], root[in->args[2]]);
            break;
        case OP_BITCAST: case OP_LOAD: /* a pointer converted or read from memory: unknown */
            if (in->nres && ir_type(f, in->res[0]).dt == DT_PTR)
                ch |= join_root(&root[in->res[0]], RT_UNKNOWN);
            break;
        default:
            if (in->nregions)
                ch |= roots_region_op(f, in, root);
            break;
        }
    }
    return ch;
}

static Roots *value_roots(Arena *a, const Func *f)
{
    Roots *root = arena_alloc(a, sizeof *root * (size_t)(f->vals.n + 1));
    for (int i = 0; i < f->nparams; i++)
        if (ir_type(f, f->params[i]).dt == DT_PTR)
            root[f->params[i]] = root_bit(i);
    /* to the fixpoint: the sets only grow */
    while (roots_block(f, f->body, root))
        ;
    return root;
}

/* The stores of b (and its regions) that may write a checked output (chk), in program order:
 * site.param is the one parameter its pointer derives from, or -1 when it is selected among
 * several (the candidates then all get tag buffers: *tagged). */
static void collect_sites(Arena *a, const Block *b, const Roots *root, Roots chk, RaceSiteVec *out, Roots *tagged)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        Roots r = in->op == OP_STORE ? root[in->args[0]] : 0;
        if (r & chk) {
            int param = -1;
            for (int p = 0; p < 63; p++)
                if (r == root_bit(p))
                    param = p;
            vec_push(a, *out, ((RaceSite){in, param, NULL, NULL, false}));
            *tagged |= r;
        }
        for (int k = 0; k < in->nregions; k++)
            collect_sites(a, in->regions[k], root, chk, out, tagged);
    }
}

/* Whether the check kernel cannot be built for the tagged parameters: a write through a
 * pointer of unknown provenance that may be one of them, an atomic into one, a pointer that
 * mixes tagged and other parameters (its type could not be both).  *why says which. */
static bool blocks_check(const Func *f, const Block *b, const Roots *root, Roots tagged, const char **why)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        if (op_writes_memory(in->op) && (root[in->args[0]] & RT_UNKNOWN)) {
            *why = "a store's pointer has no known provenance";
            return true;
        }
        if (op_is_atomic(in->op) && (root[in->args[0]] & tagged)) {
            *why = "the output is also written by an atomic";
            return true;
        }
        for (int k = 0; k < in->nres; k++) {
            Roots r = root[in->res[k]];
            if ((r & tagged) && (r & ~tagged)) {
                *why = "a pointer is selected between an output and another buffer";
                return true;
            }
        }
        for (int k = 0; k < in->nregions; k++)
            if (blocks_check(f, in->regions[k], root, tagged, why))
                return true;
    }
    return false;
}

/* ---- The check kernel ---- */

typedef struct Rk {
    Func *f;
    const Roots *root;
    Roots tagged; /* the parameters whose buffers the launcher replaces by tag buffers */
    const RacePlan *plan;
    ValId info, pid, nsite; /* the info buffer; pid * NS, NS (i64 scalars) */
    Vec(ValId) stand;       /* zeros standing for loads of an output updated in place */
} Rk;

static ValId rk_sum_all(Rk *k, Block *b, ValId x, Loc loc)
{
    Type t = ir_type(k->f, x);
    while (t.rank > 0) {
        int32_t sh[KAD_MAX_RANK];
        memcpy(sh, t.shape, sizeof sh);
        Type rt = type_tile((Dtype)t.dt, t.rank - 1, sh + 1);
        Inst *s = ir_emit(k->f, b, OP_SUM, &x, 1, &rt, 1, loc);
        s->ival = 0;
        x = s->res[0];
        t = rt;
    }
    return x;
}

/* store p, v [, mask m] (site s) -> the exchange and its counts. */
static void rk_store(Rk *k, Block *b, const Inst *in, int s)
{
    Func *f = k->f;
    Loc loc = in->loc;
    ValId p = in->args[0];
    ValId m = (in->flags & IF_HAS_MASK) ? in->args[2] : 0;
    Type pt = ir_type(f, p);
    Type it = type_tile(DT_I64, pt.rank, pt.shape), bt = type_tile(DT_I1, pt.rank, pt.shape);
    Type is = type_scalar(DT_I64), cs = type_scalar(DT_I32), ct = type_tile(DT_I32, pt.rank, pt.shape);
    ValId code = ir_op2(f, b, OP_ADD, is, k->pid, ir_const_int(f, b, is, s + 1, loc), loc);
    ValId mine = k->pid;
    if (pt.rank) {
        code = ir_op1(f, b, OP_BROADCAST, it, code, loc);
        mine = ir_op1(f, b, OP_BROADCAST, it, mine, loc);
    }
    ValId xa[3] = {p, code, m};
    Inst *x = ir_emit(f, b, OP_ATOMIC_XCHG, xa, m ? 3 : 2, &it, 1, loc);
    x->flags = m ? IF_HAS_MASK : 0;
    ValId old = x->res[0];
    ValId zero = ir_const_int(f, b, it, 0, loc), one = ir_const_int(f, b, it, 1, loc);
    ValId ns = pt.rank ? ir_op1(f, b, OP_BROADCAST, it, k->nsite, loc) : k->nsite;
    /* the program that wrote the code taken out, times NS: (old - 1) - (old - 1) % NS */
    ValId om1 = ir_op2(f, b, OP_SUB, it, old, one, loc);
    ValId prog = ir_op2(f, b, OP_SUB, it, om1, ir_op2(f, b, OP_REM, it, om1, ns, loc), loc);
    ValId other = ir_op2(f, b, OP_AND, bt, ir_op2(f, b, OP_NE, bt, old, zero, loc),
                         ir_op2(f, b, OP_NE, bt, prog, mine, loc), loc);
    ValId same = ir_op2(f, b, OP_EQ, bt, old, code, loc);
    if (m) {
        other = ir_op2(f, b, OP_AND, bt, other, m, loc);
        same = ir_op2(f, b, OP_AND, bt, same, m, loc);
    }
    ValId cnt[2] = {other, same};
    /* its own code: two lanes of the store, or two iterations of its loops -- not counted where
     * the lanes are proven distinct: then it is an ordered overwrite, the last write wins */
    int ncnt = k->plan->sites.v[s].lanes_proven ? 1 : 2;
    for (int j = 0; j < ncnt; j++) {
        ValId c = rk_sum_all(k, b, ir_op1(f, b, OP_CAST, ct, cnt[j], loc), loc);
        ValId at = ir_op2(f, b, OP_ADDPTR, ir_type(f, k->info), k->info,
                          ir_const_int(f, b, cs, 2 * s + j, loc), loc);
        ValId aa[2] = {at, c};
        ir_emit(f, b, OP_ATOMIC_ADD, aa, 2, &cs, 1, loc);
    }
}

/* b rebuilt: stores into checked outputs become exchanges, other stores and atomics are
 * left out.  False when an atomic's old value is used (kept, it would write memory). */
static bool rk_block(Rk *k, Block *b, int *site)
{
    int n;
    Inst *old = ir_block_detach(b, &n);
    for (int i = 0; i < n; i++) {
        Inst *in = &old[i];
        for (int r = 0; r < in->nregions; r++)
            if (!rk_block(k, in->regions[r], site))
                return false;
        Roots r = in->nargs ? k->root[in->args[0]] : 0;
        if (in->op == OP_STORE && (r & k->tagged)) {
            rk_store(k, b, in, (*site)++);
            continue;
        }
        if (in->op == OP_STORE)
            continue;
        if (in->op == OP_LOAD && (r & k->tagged)) {
            /* a read of an output updated in place: its value reaches stored values only,
             * which the check drops (race_kernel makes sure), so a zero stands for it */
            Type lt = ir_type(k->f, in->res[0]);
            Inst *z = ir_emit(k->f, b, OP_CONST, NULL, 0, &lt, 1, in->loc);
            z->fval = 0.0;
            z->ival = 0;
            /* the const defines the load's ValId: every use keeps reading it */
            z->res[0] = in->res[0];
            vec_push(k->f->a, k->stand, in->res[0]);
            continue;
        }
        if (op_is_atomic(in->op)) {
            for (int j = i + 1; j < n; j++)
                if (ir_inst_uses(&old[j], in->res[0]))
                    return false;
            continue;
        }
        vec_push(k->f->a, b->insts, *in);
    }
    return true;
}

static Func *race_kernel(Arena *a, const Func *fwd, const Roots *root, const RacePlan *plan)
{
    Func *f = ir_func_clone(a, fwd, arena_printf(a, "%s_race", fwd->name));
    f->ranges.cap = f->ranges.n; /* a push copies */
    for (int v = 1; v < f->vals.n; v++) /* the tagged pointers address the tag buffers */
        if ((root[v] & plan->tagged) && f->vals.v[v].ty.dt == DT_PTR)
            f->vals.v[v].ty.elem = DT_I64;
    Rk k = {.f = f, .root = root, .tagged = plan->tagged, .plan = plan};
    k.info = ir_param_add(f, type_ptr(DT_I32, 0, NULL), KAD_RACE_PARAM, fwd->loc);
    /* pid = (pid0 + G0 * (pid1 + G1 * pid2)) * NS in int64, first in the body */
    Block *b = f->body;
    int n;
    Inst *body = ir_block_detach(b, &n);
    Type is = type_scalar(DT_I32), ls = type_scalar(DT_I64);
    Loc loc = fwd->loc;
    ValId pid[3], np[2];
    for (int ax = 0; ax < 3; ax++) {
        Inst *in = ir_emit(f, b, OP_PROGRAM_ID, NULL, 0, &is, 1, loc);
        in->ival = ax;
        pid[ax] = in->res[0];
        if (ax < 2) {
            Inst *g = ir_emit(f, b, OP_NUM_PROGRAMS, NULL, 0, &is, 1, loc);
            g->ival = ax;
            np[ax] = g->res[0];
        }
    }
    for (int ax = 0; ax < 3; ax++)
        pid[ax] = ir_op1(f, b, OP_CAST, ls, pid[ax], loc);
    for (int ax = 0; ax < 2; ax++)
        np[ax] = ir_op1(f, b, OP_CAST, ls, np[ax], loc);
    ValId lin = ir_op2(f, b, OP_ADD, ls, pid[0],
                       ir_op2(f, b, OP_MUL, ls, np[0],
                              ir_op2(f, b, OP_ADD, ls, pid[1], ir_op2(f, b, OP_MUL, ls, np[1], pid[2], loc), loc),
                              loc),
                       loc);
    k.nsite = ir_const_int(f, b, ls, plan->sites.n, loc);
    k.pid = ir_op2(f, b, OP_MUL, ls, lin, k.nsite, loc);
    f->vals.v[k.pid].name = "kad_pid";
    Block tmp = {0};
    for (int i = 0; i < n; i++)
        vec_push(a, tmp.insts, body[i]);
    int site = 0;
    if (!rk_block(&k, &tmp, &site))
        return NULL;
    for (int i = 0; i < tmp.insts.n; i++)
        vec_push(a, b->insts, tmp.insts.v[i]);
    pass_dce(f, false);
    for (int i = 0; i < k.stand.n; i++) /* an in-place value still used: it decides an address */
        if (ir_block_uses(f->body, k.stand.v[i]))
            return NULL;
    return f;
}

/* ---- The plan ---- */

RacePlan *race_plan(Arena *a, const Func *fwd, const AdSpec *spec)
{
    int np = fwd->nparams;
    Roots chk = 0;
    for (int i = 0; i < np; i++) {
        const char *name = fwd->vals.v[fwd->params[i]].name;
        for (int j = 0; name && j < spec->nouts; j++)
            if (!strcmp(name, spec->outs[j]) && ir_type(fwd, fwd->params[i]).dt == DT_PTR)
                chk |= root_bit(i);
    }
    if (!chk)
        return NULL;
    const Roots *root = value_roots(a, fwd);
    RacePlan *plan = arena_alloc(a, sizeof *plan);
    collect_sites(a, fwd->body, root, chk, &plan->sites, &plan->tagged);
    plan->tagged &= ~RT_UNKNOWN;
    if (!plan->sites.n)
        return NULL;
    Access *A = plan->acc = access_analyze(a, fwd);
    /* the decisions, per output (every site of it together across programs) and per site
     * (its lanes) */
    for (int p = 0; p < np; p++) {
        if (!(chk & root_bit(p)) || root_bit(p) == RT_UNKNOWN)
            continue;
        Vec(const Inst *) mine = {0};
        bool based = true;
        for (int s = 0; s < plan->sites.n; s++)
            if (root[plan->sites.v[s].store->args[0]] & root_bit(p)) {
                vec_push(a, mine, plan->sites.v[s].store);
                based &= plan->sites.v[s].param == p && access_base(A, plan->sites.v[s].store) == p;
            }
        if (!mine.n)
            continue;
        /* r = 0: across programs (every site of p); r = 1 + s: the lanes of p's site s */
        for (int r = 0, s = -1; r <= mine.n; r++) {
            AccResult v = r ? access_injective(A, mine.v[r - 1], ACC_VARY_LANES)
                            : based ? access_private(A, mine.v, mine.n, 7)
                                    : (AccResult){ACC_UNKNOWN, "an address kad cannot express", NULL};
            if (v.v == ACC_PROVEN) {
                for (int t = 0; r && t < plan->sites.n; t++)
                    if (plan->sites.v[t].store == mine.v[r - 1])
                        plan->sites.v[t].lanes_proven = true;
                continue;
            }
            if (v.v == ACC_PROVEN_IF && access_cond_host(A, v.cond, "_a", "_g")) {
                vec_push(a, plan->skip, v.cond);
                continue;
            }
            plan->always = true;
            if (v.v != ACC_NOT_INJECTIVE || !v.why)
                continue;
            for (s = 0; s < plan->sites.n; s++) /* the witness, on the sites it is about */
                if (plan->sites.v[s].param == p && (!r || plan->sites.v[s].store == mine.v[r - 1])) {
                    if (r)
                        plan->sites.v[s].why_lanes = v.why;
                    else
                        plan->sites.v[s].why_programs = v.why;
                }
        }
    }
    if (!plan->always && !plan->skip.n)
        return NULL; /* proven for every launch */
    const char *why = NULL;
    if (np > 63) { /* (the tag sets' width) */
        plan->why = "the kernel has more than 63 parameters";
        return plan;
    }
    if (blocks_check(fwd, fwd->body, root, plan->tagged, &why)) {
        plan->why = why;
        return plan;
    }
    plan->kernel = race_kernel(a, fwd, root, plan);
    if (!plan->kernel)
        plan->why = "an atomic's old value is used, or an address or mask depends on a value read from "
                    "the output the kernel updates in place";
    return plan;
}

bool race_skip(const RacePlan *p, const int64_t *iargs, const int64_t grid[3])
{
    if (p->always)
        return false;
    for (int i = 0; i < p->skip.n; i++) {
        bool holds = false;
        if (!access_cond_eval(p->acc, p->skip.v[i], iargs, grid, &holds) || !holds)
            return false;
    }
    return true;
}

/* The refusals (docs/TROUBLESHOOTING.md): the output's name, then the analysis's witness. */
static const char *const race_programs_msg =
    "this store writes elements of %s that another program of the launch also writes: the forward races "
    "(which value survives is undefined), so no gradient is right; make each program store its own elements%s%s%s";
static const char *const race_lanes_msg =
    "two lanes of this store (or two iterations of its loop) write one element of %s: the forward "
    "races (which value survives is undefined), so no gradient is right; make each lane store its own element "
    "(deduplicate scattered indices)%s%s%s";

const char *race_message(Arena *a, const Func *fwd, const RacePlan *p, int s, bool programs)
{
    const RaceSite *site = &p->sites.v[s];
    const char *name = site->param >= 0 ? fwd->vals.v[fwd->params[site->param]].name : NULL;
    const char *what = site->param >= 0 ? arena_printf(a, "output '%s'", name ? name : "?")
                                        : "one of the buffers its pointer selects among";
    const char *why = programs ? site->why_programs : site->why_lanes;
    return arena_printf(a, programs ? race_programs_msg : race_lanes_msg, what,
                        why ? " (kad's analysis: " : "", why ? why : "", why ? ")" : "");
}

bool race_run(const Func *fwd, const RacePlan *p, const int64_t grid[3], const InterpArg *args, int nargs,
              InterpMode mode, Diags *d)
{
    int np = fwd->nparams;
    if (nargs != np)
        return true; /* (interp_run of the forward reports the mismatch) */
    int64_t *iargs = calloc((size_t)np + 1, sizeof *iargs);
    InterpArg *ra = calloc((size_t)np + 2, sizeof *ra);
    int32_t *info = calloc((size_t)(2 * p->sites.n + 1), sizeof *info);
    void **tags = calloc((size_t)np + 1, sizeof *tags);
    bool ok = iargs && ra && info && tags;
    if (!ok) {
        diag_error(d, fwd->loc, "interpreter: out of memory");
        goto done;
    }
    for (int i = 0; i < np; i++)
        iargs[i] = args[i].i;
    if (race_skip(p, iargs, grid))
        goto done;
    if (!p->kernel) {
        diag_error(d, p->sites.v[0].store->loc,
                   "kad cannot check that no two programs or lanes of this launch store one element of "
                   "this output (%s), and cannot prove it: the gradient might count a write that does not "
                   "survive", p->why ? p->why : "?");
        ok = false;
        goto done;
    }
    for (int i = 0; i < np; i++) {
        ra[i] = args[i];
        if (i >= 63 || !(p->tagged & ((uint64_t)1 << i)))
            continue;
        Type pt = ir_type(fwd, fwd->params[i]);
        int es = mode == IM_F64 && dtype_is_float((Dtype)pt.elem) ? 8 : dtype_bytes((Dtype)pt.elem);
        int64_t n = es > 0 ? args[i].nbytes / es : 0;
        tags[i] = calloc((size_t)(n > 0 ? n : 1), sizeof(int64_t));
        if (!tags[i]) {
            diag_error(d, fwd->loc, "interpreter: out of memory");
            ok = false;
            goto done;
        }
        ra[i] = (InterpArg){.data = tags[i], .nbytes = n * (int64_t)sizeof(int64_t)};
    }
    ra[np] = (InterpArg){.data = info, .nbytes = (int64_t)sizeof *info * 2 * p->sites.n};
    ok = interp_run(p->kernel, grid, ra, np + 1, mode, d); /* the inputs as the caller laid them out */
    for (int s = 0; ok && s < p->sites.n; s++)
        for (int j = 0; j < 2; j++)
            if (info[2 * s + j] > 0) {
                diag_error(d, p->sites.v[s].store->loc, "%s", race_message(d->a, fwd, p, s, j == 0));
                ok = false;
                break;
            }
done:
    for (int i = 0; tags && i < np; i++)
        free(tags[i]);
    free(tags);
    free(iargs);
    free(ra);
    free(info);
    return ok;
}
