/* sweep_fwd.c -- forward-mode automatic differentiation (JVP) of the tile IR.
 *
 * Job: from a forward kernel `fwd` and the names of its differentiated
 * inputs and outputs (AdSpec, as for reverse mode), build ONE kernel that
 * computes the primal outputs and their tangents in one pass
 * (docs/AD.md, "Forward mode"):
 *
 *   kernel @k_jvp(<fwd params>, %t_x_ptr..., %t_y_ptr...) {
 *     <fwd's body, every instruction followed by its tangent>
 *   }
 *
 * Each pointer into a buffer with a tangent (an input in wrt, an output in
 * outs, one buffer for a name in both) gets a shadow pointer into the
 * tangent buffer (the same address arithmetic replayed on t_<param>), so a
 * load reads the tangent with the load's own offsets and mask, a store
 * writes it with the store's, an atomic_add adds it with the atomic's.
 * Tangents have their primal's dtype; a value without a tangent (ints,
 * comparisons, values not depending on an input) has tangent zero and
 * gets no code.  Loops and `if`s carry the tangents (and shadows) of their
 * carried values and results as extra carried values and results: forward
 * mode needs no tape.
 *
 * Stages of ad_forward:
 *   1. facts (mark_block, to a fixpoint over loops): pointer provenance,
 *      which floats have tangents, which pointers have shadows;
 *   2. emission (emit_block): a copy of each instruction, then its tangent
 *      rule (tan_rule in rules_fwd.c, one case per op) or shadow; refusals are located
 *      errors at the instruction.
 *
 * Requires: a verified fwd.  Guarantees: a new Func in `a` that verifies,
 * or NULL with located errors; fwd is unchanged.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ad/autodiff.h"
#include "ad/ad.h"
#include "ad/ad_int.h"

/* ------------------------------------------------------------------ */
/* 1. Facts                                                            */
/* ------------------------------------------------------------------ */

static void set8(Fd *f, uint8_t *arr, ValId v, bool on)
{
    if (on && !arr[v]) {
        arr[v] = 1;
        f->changed = true;
    }
}

static void join_root(Fd *f, ValId v, int r)
{
    int o = f->root[v];
    int n = o == R_NONE ? r : r == R_NONE || r == o ? o : (o == R_UNKNOWN || r == R_UNKNOWN) ? R_UNKNOWN : R_MANY;
    if (n != o) {
        f->root[v] = n;
        f->changed = true;
    }
}

/* to takes from's facts (a carried value, a result). */
static void flow(Fd *f, ValId to, ValId from)
{
    set8(f, f->tv, to, f->tv[from] && is_float(fd_ty(f, to)));
    set8(f, f->sv, to, f->sv[from]);
    if (fd_ty(f, to).dt == DT_PTR)
        join_root(f, to, f->root[from]);
}

static void mark_block(Fd *f, const Block *b);

static void fact_flow(void *f, ValId to, ValId from) { flow(f, to, from); }
static void fact_walk(void *f, const Block *b) { mark_block(f, b); }

static void mark_inst(Fd *f, const Inst *in)
{
    int op = in->op;
    if (op == OP_FOR || op == OP_WHILE || op == OP_IF) { /* the regions' flows as reverse mode's */
        ad_flow_regions(in, &(FactWalk){f, fact_flow, fact_walk});
        return;
    }
    switch (op) {
    case OP_LOAD: {
        ValId r = in->res[0];
        if (fd_ty(f, r).dt == DT_PTR) {
            join_root(f, r, R_UNKNOWN);
            return;
        }
        bool other = in->nargs > 2 && f->tv[in->args[2]];
        set8(f, f->tv, r, is_float(fd_ty(f, r)) && (f->sv[in->args[0]] || other));
        return;
    }
    case OP_SCAN:
    case OP_REDUCE: { /* a float slot has a tangent when its input has one or the combine region's
                     * result for it does (from the slots with tangents; to the fixpoint), in the
                     * result and both halves of the region's params */
        const Block *reg = in->regions[0];
        const Inst *y = ad_block_term(reg);
        for (int k = 0; k < in->nres; k++) {
            bool on = is_float(fd_ty(f, in->res[k])) && (f->tv[in->args[k]] || f->tv[y->args[k]]);
            set8(f, f->tv, in->res[k], on);
            set8(f, f->tv, reg->params[k], on);
            set8(f, f->tv, reg->params[in->nres + k], on);
        }
        mark_block(f, reg);
        return;
    }
    default:
        break;
    }
    if (in->nres != 1 || op_writes_memory(op)) /* terminators, asserts, stores, atomics' old values */
        return;
    ValId r = in->res[0];
    Type rt = fd_ty(f, r);
    if (rt.dt == DT_PTR) {
        if (op == OP_BITCAST && fd_ty(f, in->args[0]).dt != DT_PTR) {
            join_root(f, r, R_UNKNOWN);
            return;
        }
        for (int k = 0; k < in->nargs; k++)
            if (fd_ty(f, in->args[k]).dt == DT_PTR) {
                join_root(f, r, op == OP_BITCAST ? R_UNKNOWN : f->root[in->args[k]]);
                set8(f, f->sv, r, op != OP_BITCAST && f->sv[in->args[k]]);
            }
        return;
    }
    char diff = op_info[op].diff;
    if (!is_float(rt) || (diff != 'D' && diff != 'N'))
        return;
    for (int k = 0; k < in->nargs; k++)
        set8(f, f->tv, r, f->tv[in->args[k]]);
}

static void mark_block(Fd *f, const Block *b)
{
    for (int k = 0; k < b->insts.n; k++)
        mark_inst(f, &b->insts.v[k]);
}

/* ------------------------------------------------------------------ */
/* 2. Emission                                                         */
/* ------------------------------------------------------------------ */

/* A copy of `in` with other operands and result type rt. */
Inst *emit_copy(Em *e, const Inst *in, const ValId *args, int nargs, Type rt)
{
    Inst *ni = ir_emit(e->f->jv, e->b, (OpKind)in->op, args, nargs, &rt, in->nres ? 1 : 0, e->loc);
    ir_inst_copy_attrs(ni, in);
    return ni;
}



/* The slots of a region op: primal carried values, then the tangents of
 * those tv marks, then the shadows of those sv marks. */
typedef struct Lay {
    int n;
    bool *t, *s;
} Lay;

static Lay layout(Fd *f, const ValId *carriers, int n)
{
    Lay l = {n, arena_alloc(f->a, (size_t)n + 1), arena_alloc(f->a, (size_t)n + 1)};
    for (int i = 0; i < n; i++) {
        l.t[i] = f->tv[carriers[i]];
        l.s[i] = f->sv[carriers[i]];
    }
    return l;
}

/* Appends the values of fw values vs (n = l.n) in l's layout to args. */
static int lay_args(Em *e, const Lay *l, const ValId *vs, ValId *args, int na, Loc loc)
{
    Fd *f = e->f;
    for (int i = 0; i < l->n; i++)
        args[na++] = PF(f, vs[i]);
    for (int i = 0; i < l->n; i++)
        if (l->t[i])
            args[na++] = TZ(e, vs[i]);
    for (int i = 0; i < l->n; i++)
        if (l->s[i]) {
            if (!f->sm[vs[i]]) {
                fd_fail(f, loc, "forward mode: a carried pointer '%s' points into a buffer with a tangent on "
                               "some paths only", fd_name(f, vs[i]));
                args[na++] = PF(f, vs[i]);
            } else {
                args[na++] = f->sm[vs[i]];
            }
        }
    return na;
}

static int lay_types(const Fd *f, const Lay *l, const ValId *vs, Type *tys)
{
    int n = 0;
    for (int pass = 0; pass < 3; pass++)
        for (int i = 0; i < l->n; i++)
            if (pass == 0 || (pass == 1 ? l->t[i] : l->s[i]))
                tys[n++] = fd_ty(f, vs[i]);
    return n;
}

/* Region parameters mirroring fr's (nlead leading ones, then l's layout). */
static void lay_params(Fd *f, Block *reg, const Block *fr, int nlead, const Lay *l)
{
    for (int i = 0; i < nlead + l->n; i++) {
        ValId p = fr->params[i];
        f->pm[p] = ir_block_param_add(f->jv, reg, fd_ty(f, p), fd_name(f, p), f->fw->vals.v[p].loc);
    }
    for (int pass = 1; pass < 3; pass++)
        for (int i = 0; i < l->n; i++) {
            ValId p = fr->params[nlead + i];
            if (pass == 1 ? !l->t[i] : !l->s[i])
                continue;
            const char *n = fd_name(f, p);
            ValId q = ir_block_param_add(f->jv, reg, fd_ty(f, p), n ? arena_printf(f->a, "t_%s", n) : NULL,
                                         f->fw->vals.v[p].loc);
            (pass == 1 ? f->tm : f->sm)[p] = q;
        }
}

static void lay_results(Fd *f, const Inst *in, const Inst *ni, const Lay *l)
{
    int j = l->n;
    for (int i = 0; i < l->n; i++) {
        f->pm[in->res[i]] = ni->res[i];
        fd_name_after(f, ni->res[i], "", in->res[i]);
    }
    for (int pass = 1; pass < 3; pass++)
        for (int i = 0; i < l->n; i++)
            if (pass == 1 ? l->t[i] : l->s[i]) {
                (pass == 1 ? f->tm : f->sm)[in->res[i]] = ni->res[j];
                fd_name_after(f, ni->res[j++], "t_", in->res[i]);
            }
}

static void region_op(Em *e, const Inst *in)
{
    Fd *f = e->f;
    int n = in->nres, nfix = in->op == OP_FOR ? 3 : in->op == OP_IF ? 1 : 0, lead = in->op == OP_FOR ? 1 : 0;
    const ValId *carr = in->op == OP_IF ? in->res : in->regions[0]->params + lead;
    Lay l = layout(f, carr, n);
    ValId *args = arena_alloc(f->a, sizeof(ValId) * (size_t)(nfix + 3 * n + 1));
    Type *tys = arena_alloc(f->a, sizeof(Type) * (size_t)(3 * n + 1));
    int na = 0;
    for (int i = 0; i < nfix; i++)
        args[na++] = PF(f, in->args[i]);
    if (in->op != OP_IF)
        na = lay_args(e, &l, in->args + nfix, args, na, in->loc);
    int nt = lay_types(f, &l, in->res, tys);
    ir_emit(f->jv, e->b, (OpKind)in->op, args, na, tys, nt, in->loc);
    int idx = e->b->insts.n - 1;
    Inst *ni = &e->b->insts.v[idx];
    if (in->op == OP_FOR && in->nints == LH_N) {
        memcpy(ni->ints, in->ints, sizeof(int32_t) * LH_N);
        ni->nints = LH_N;
    }
    for (int r = 0; r < in->nregions; r++) {
        Block *reg = ir_inst_add_region(f->jv, &e->b->insts.v[idx]);
        const Block *fr = in->regions[r];
        if (in->op != OP_IF)
            lay_params(f, reg, fr, lead, &l);
        emit_block(f, fr, reg);
        const Inst *term = ad_block_term(fr);
        Em er = em_fwd(f, reg, term->loc);
        if (term->op == OP_CONDITION) {
            ValId c = PF(f, term->args[0]);
            ir_emit(f->jv, reg, OP_CONDITION, &c, 1, NULL, 0, term->loc);
        } else {
            ValId *ya = arena_alloc(f->a, sizeof(ValId) * (size_t)(3 * n + 1));
            int ny = lay_args(&er, &l, term->args, ya, 0, term->loc);
            ir_emit(f->jv, reg, OP_YIELD, ya, ny, NULL, 0, term->loc);
        }
    }
    lay_results(f, in, &e->b->insts.v[idx], &l);
}

/* A scan (or a tl.reduce, the same with the axis removed) over dual
 * numbers: the forward's scan with a tangent slot per
 * float slot with a tangent, its combine region differentiated in forward
 * mode: the tangent of f((a, ta), (b, tb)) is J_a f ta + J_b f tb, and the
 * dual combine is associative when f is.  Slots: the n primal ones, then
 * the tangents; region params: the running values (primal, tangents), then
 * the next element's in the same order. */
static void scan_op(Em *e, const Inst *in)
{
    Fd *f = e->f;
    int n = in->nres, m = 0;
    bool *t = arena_alloc(f->a, (size_t)n + 1);
    for (int k = 0; k < n; k++)
        m += t[k] = f->tv[in->res[k]];
    int N = n + m;
    ValId *xs = arena_alloc(f->a, sizeof *xs * (size_t)(N + 1));
    Type *rt = arena_alloc(f->a, sizeof *rt * (size_t)(N + 1));
    for (int pass = 0, j = 0; pass < 2; pass++)
        for (int k = 0; k < n; k++)
            if (!pass || t[k]) {
                xs[j] = pass ? TZ(e, in->args[k]) : PF(f, in->args[k]);
                rt[j++] = fd_ty(f, in->res[k]);
            }
    Inst *ni = ir_emit(f->jv, e->b, (OpKind)in->op, xs, N, rt, N, in->loc);
    ni->ival = in->ival;
    ni->flags = in->flags;
    int idx = e->b->insts.n - 1;
    Block *reg = ir_inst_add_region(f->jv, ni);
    const Block *fr = in->regions[0];
    for (int h = 0; h < 2; h++)
        for (int pass = 0; pass < 2; pass++)
            for (int k = 0; k < n; k++) {
                ValId p = fr->params[h * n + k];
                if (!pass) {
                    f->pm[p] = ir_block_param_add(f->jv, reg, fd_ty(f, p), fd_name(f, p), f->fw->vals.v[p].loc);
                } else if (t[k]) {
                    const char *nm = fd_name(f, p);
                    f->tm[p] = ir_block_param_add(f->jv, reg, fd_ty(f, p), nm ? arena_printf(f->a, "t_%s", nm) : NULL,
                                                  f->fw->vals.v[p].loc);
                }
            }
    emit_block(f, fr, reg);
    if (f->errors)
        return;
    const Inst *term = ad_block_term(fr);
    Em er = em_fwd(f, reg, term->loc);
    ValId *ys = arena_alloc(f->a, sizeof *ys * (size_t)(N + 1));
    for (int pass = 0, j = 0; pass < 2; pass++)
        for (int k = 0; k < n; k++)
            if (!pass || t[k])
                ys[j++] = pass ? TZ(&er, term->args[k]) : PF(f, term->args[k]);
    ir_emit(f->jv, reg, OP_YIELD, ys, N, NULL, 0, term->loc);
    const Inst *si = &e->b->insts.v[idx];
    for (int k = 0, j = n; k < n; k++) {
        f->pm[in->res[k]] = si->res[k];
        fd_name_after(f, si->res[k], "", in->res[k]);
        if (t[k]) {
            f->tm[in->res[k]] = si->res[j];
            fd_name_after(f, si->res[j++], "t_", in->res[k]);
        }
    }
}

/* The root parameter's name of pointer v, for messages. */
static const char *root_name(const Fd *f, ValId v)
{
    int r = f->root[v];
    return r > 0 ? fd_name(f, f->fw->params[r - 1]) : "a pointer kad cannot trace to one parameter";
}

/* A store or atomic of a value with a tangent into a buffer without one:
 * fine for scratch the kernel never reads, else the tangent would be lost. */
static void check_dropped(Fd *f, const Inst *in)
{
    ValId p = in->args[0], v = in->args[1];
    if (!f->tv[v])
        return;
    int r = f->root[p];
    if (r > 0 && !(ad_param_access(f->a, f->fw, r - 1) & AD_ACCESS_LOAD))
        return;
    fd_fail(f, in->loc,
           "forward mode: a value with a tangent is stored into '%s', which the kernel also reads (or whose "
           "provenance is unknown) and which has no tangent: name it in both --wrt and --out",
           root_name(f, p));
}

static void emit_inst(Fd *f, Block *jb, const Inst *in)
{
    Em e0 = em_fwd(f, jb, in->loc), *e = &e0;
    switch (in->op) {
    case OP_FOR:
    case OP_IF:
    case OP_WHILE:
        region_op(e, in);
        return;
    case OP_SCAN:
    case OP_REDUCE:
        scan_op(e, in);
        return;
    case OP_YIELD:
    case OP_CONDITION:
        return; /* the region op writes the terminators */
    default:
        break;
    }
    if (in->op == OP_CUSTOM_VJP || in->op == OP_CUSTOM_JVP) { /* identities (the rules are AD's): no copy */
        f->pm[in->res[0]] = PF(f, in->args[0]);
        if (f->tv[in->res[0]]) {
            ValId t = tan_rule(e, in);
            f->tm[in->res[0]] = t;
            fd_name_after(f, t, "t_", in->res[0]);
        }
        return;
    }
    ValId *args = arena_alloc(f->a, sizeof(ValId) * (size_t)(in->nargs + 1));
    for (int k = 0; k < in->nargs; k++)
        args[k] = PF(f, in->args[k]);
    Inst *ni = emit_copy(e, in, args, in->nargs, in->nres ? fd_ty(f, in->res[0]) : type_scalar(DT_VOID));
    ValId r = in->nres ? ni->res[0] : 0;
    if (r) {
        f->pm[in->res[0]] = r;
        fd_name_after(f, r, "", in->res[0]);
    }
    ValId fp = in->nargs ? in->args[0] : 0;
    switch (in->op) {
    case OP_LOAD: {
        ValId fr = in->res[0];
        if (fd_ty(f, fr).dt != DT_PTR && is_float(fd_ty(f, fr)) && f->root[fp] == R_UNKNOWN && !f->sv[fp]) {
            fd_fail(f, in->loc, "forward mode: a float load through %s: its tangent is unknown", root_name(f, fp));
            return;
        }
        if (!f->tv[fr])
            return;
        ValId t;
        if (f->sv[fp]) {
            if (!f->sm[fp]) {
                fd_fail(f, in->loc, "forward mode: the load's pointer reaches '%s' (with a tangent) on some lanes "
                                   "or paths only", root_name(f, fp));
                return;
            }
            ValId ta[3] = {f->sm[fp], in->nargs > 1 ? args[1] : 0, in->nargs > 2 ? TZ(e, in->args[2]) : 0};
            /* pointer form: the tangent buffer gets no descriptor (IF_DESC operands dropped) */
            Inst *tl = emit_copy(e, in, ta, ir_desc_at(in), fd_ty(f, fr));
            tl->flags &= (uint16_t)~IF_DESC;
            t = tl->res[0];
        } else { /* only `other` has a tangent */
            t = ewhere(e, args[1], ezero(e, fd_ty(f, fr)), f->tm[in->args[2]]);
        }
        f->tm[fr] = t;
        fd_name_after(f, t, "t_", fr);
        return;
    }
    case OP_STORE:
    case OP_ATOMIC_ADD:
    case OP_ATOMIC_MAX:
    case OP_ATOMIC_MIN:
    case OP_ATOMIC_XCHG: {
        if (f->sv[fp] && in->op != OP_STORE && in->op != OP_ATOMIC_ADD) {
            fd_fail(f, in->loc, arena_printf(f->a, "forward mode: %s into '%%s', which has a tangent: the tangent "
                                               "would be that of the value the output kept; not supported",
                                               op_info[in->op].name), root_name(f, fp));
            return;
        }
        if (in->op == OP_ATOMIC_ADD && f->sv[fp] && f->nuses[in->res[0]]) {
            fd_fail(f, in->loc, "forward mode: the old value an atomic_add into '%s' returns is used", root_name(f, fp));
            return;
        }
        if (!f->sv[fp]) {
            check_dropped(f, in);
            return;
        }
        if (!f->sm[fp]) {
            fd_fail(f, in->loc, "forward mode: the pointer reaches '%s' (with a tangent) on some lanes or paths only",
                   root_name(f, fp));
            return;
        }
        ValId ta[3] = {f->sm[fp], TZ(e, in->args[1]), in->nargs > 2 ? args[2] : 0};
        emit_copy(e, in, ta, ir_desc_at(in), in->nres ? fd_ty(f, in->res[0]) : type_scalar(DT_VOID))->flags &=
            (uint16_t)~IF_DESC;
        return;
    }
    default:
        break;
    }
    if (!r)
        return;
    ValId fr = in->res[0];
    if (f->sv[fr]) { /* a pointer into a buffer with a tangent: its shadow */
        ValId *sa = arena_alloc(f->a, sizeof(ValId) * (size_t)(in->nargs + 1));
        for (int k = 0; k < in->nargs; k++) {
            ValId v = in->args[k];
            sa[k] = args[k];
            if (fd_ty(f, v).dt == DT_PTR) {
                if (!f->sm[v]) {
                    fd_fail(f, in->loc, "forward mode: selects between a pointer into '%s' (with a tangent) and one "
                                       "without", root_name(f, fr));
                    return;
                }
                sa[k] = f->sm[v];
            }
        }
        ValId s = emit_copy(e, in, sa, in->nargs, fd_ty(f, fr))->res[0];
        f->sm[fr] = s;
        fd_name_after(f, s, "t_", fr);
        return;
    }
    if (!f->tv[fr])
        return;
    if (op_info[in->op].diff == 'N') {
        fd_fail(f, in->loc, "forward mode: no tangent rule for '%s'", op_info[in->op].name);
        return;
    }
    ValId t = tan_rule(e, in);
    f->tm[fr] = t;
    fd_name_after(f, t, "t_", fr);
}

void emit_block(Fd *f, const Block *fb, Block *jb)
{
    for (int k = 0; k < fb->insts.n && !f->errors; k++)
        emit_inst(f, jb, &fb->insts.v[k]);
}

/* The jvp kernel of fwd: params = fwd's, then t_<x> per input (in-place
 * names among them), then t_<y> per output, in fwd's parameter order. */
static Func *ad_jvp_raw(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec)
{
    Fd f0 = {.a = a, .d = d, .fw = fwd, .spec = spec}, *f = &f0;
    int nv = f->nvals = fwd->vals.n, np = f->np = fwd->nparams;
    if (spec->mutate != AD_MUTATE_STRONG_ZERO)
        f->fin = ad_value_facts(a, fwd);
    f->role = arena_alloc(a, sizeof(int) * (size_t)(np + 1));
    f->root = arena_alloc(a, sizeof(int) * (size_t)nv);
    f->tv = arena_alloc(a, (size_t)nv);
    f->sv = arena_alloc(a, (size_t)nv);
    f->nuses = arena_alloc(a, sizeof(int) * (size_t)nv);
    f->jcov = arena_alloc(a, sizeof(int) * (size_t)nv);
    f->pm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    f->tm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    f->sm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    if (!ad_assign_roles(d, fwd, spec, f->role, true))
        return NULL;
    for (int i = 0; i < np; i++) {
        ValId p = fwd->params[i];
        if (fd_ty(f, p).dt == DT_PTR)
            f->root[p] = i + 1;
        f->sv[p] = f->role[i] != AD_ROLE_NONE;
    }
    ad_count_uses(fwd->body, f->nuses, f->jcov);
    do {
        f->changed = false;
        mark_block(f, fwd->body);
    } while (f->changed);

    Func *jv = f->jv = ir_func_new(a, arena_printf(a, "%s_jvp", fwd->name), fwd->loc);
    for (int i = 0; i < np; i++) {
        ValId p = fwd->params[i];
        f->pm[p] = ir_param_add(jv, fd_ty(f, p), fd_name(f, p), fwd->vals.v[p].loc);
    }
    jv->ranges = fwd->ranges; /* the forward's parameters come first, in order */
    jv->ranges.cap = jv->ranges.n; /* a push copies */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < np; i++)
            if (pass ? f->role[i] == AD_ROLE_OUT : ad_role_reads(f->role[i])) {
                ValId p = fwd->params[i];
                f->sm[p] = ir_param_add(jv, fd_ty(f, p), arena_printf(a, "t_%s", fd_name(f, p)), fwd->vals.v[p].loc);
            }
    for (int i = 0; i < fwd->consts.n; i++)
        vec_push(a, jv->consts, fwd->consts.v[i]);
    emit_block(f, fwd->body, jv->body);
    return f->errors ? NULL : jv;
}

Func *ad_forward(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec)
{
    Func *jv = ad_jvp_raw(a, d, fwd, spec);
    if (!jv)
        return NULL;
    bool ok = ir_verify(jv, d) && pass_run(jv, "simplify", d) && ir_verify(jv, d);
    if (!ok) {
        diag_note(d, fwd->loc, "kad bug: the jvp kernel of '%s' is invalid", fwd->name);
        return NULL;
    }
    return jv;
}
