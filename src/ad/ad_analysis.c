/* ad_analysis.c -- what reverse-mode AD differentiates, and what it refuses.
 *
 * Job: the decisions the reverse sweep (sweep_rev.c) relies on, made once over the whole
 * forward kernel before any backward code is emitted (docs/AD.md):
 *
 *   1. roles: the names of the AdSpec resolved to pointer parameters
 *      (differentiated inputs, differentiated outputs); ad_assign_roles,
 *      which forward mode (sweep_fwd.c) calls too.
 *   2. facts (a fixpoint over the kernel, loops included): pointer
 *      provenance (which parameter, or which of several, each pointer
 *      derives from), "varied" (depends on a differentiated input),
 *      "useful" (reaches a differentiated output); active = varied and
 *      useful and float.  Only active values get adjoints, so no dead
 *      gradient code is emitted.
 *   3. shift invariance (ad_shift.c): maxima/minima the outputs provably do not depend
 *      on (softmax's x - max(x)) are made inactive, since their adjoint is
 *      exactly zero.
 *   4. validation (ad_validate.c): every construct AD cannot handle exactly is refused with
 *      an error at the instruction's Loc (stores to inputs, loads from
 *      outputs, ambiguous pointers, stores that may overwrite each other,
 *      non-linear loop-carried values, ops without a rule, ...).  Stores
 *      to one output at several sites are accepted only where the last
 *      write is known: the branches of one `if`, or one block storing
 *      through the same pointer value (the later store wins), and loop
 *      iterations only where their addresses are proven disjoint.
 *
 * Requires: a verified forward Func and an Ad with a, d, fw and spec set.
 * Guarantees: ad_analyze fills the fact arrays of the Ad (ad_int.h) and
 * returns true only when no error was reported; then every active value
 * has an adjoint rule, every load/store of a differentiated buffer has a
 * known parameter, and every output element's last write is known, which
 * is what the reverse sweep (sweep_rev.c) assumes without checking
 * again.  fw is not modified.  This file holds 1, 2 and the entry point
 * (ad_analyze); the shared definitions (root codes, store sites) are in ad.h.
 */
#include <math.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ad/autodiff.h"
#include "ad/ad.h"
#include "ad/ad_int.h"


/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */



bool ad_active(const Ad *ad, ValId v)
{
    return v > 0 && ad->varied[v] && ad->useful[v] && is_float(fw_ty(ad, v));
}

/* Is parameter p a candidate of root code r? */
bool an_root_has(const Ad *ad, int r, int p)
{
    return r > 0 ? r == p + 1 : r <= ROOT_SET(0) ? ad->psets.v[SET_OF(r)][p] != 0 : false;
}

bool ad_root_has(const Ad *ad, ValId v, int p) { return an_root_has(ad, ad->root[v], p); }

int ad_root_role(const Ad *ad, ValId v)
{
    int r = ad->root[v];
    if (r > 0)
        return ad->role[r - 1];
    for (int p = 0; r <= ROOT_SET(0) && p < ad->fw->nparams; p++)
        if (an_root_has(ad, r, p) && ad->role[p] != AD_ROLE_NONE)
            return ad->role[p];
    return AD_ROLE_NONE;
}

const Inst *ad_block_term(const Block *b)
{
    return b->insts.n ? &b->insts.v[b->insts.n - 1] : NULL;
}

const char *an_param_name(const Ad *ad, int p)
{
    const char *n = fname(ad, ad->fw->params[p]);
    return n ? n : "?";
}

/* v's parameter, in messages quoted as '%s'; a set's candidates joined
 * by "', '" so that the quoted text reads 'a', 'b'. */
const char *an_root_name(const Ad *ad, ValId v)
{
    int r = ad->root[v];
    if (r > 0)
        return an_param_name(ad, r - 1);
    Buf b = {ad->a, NULL, 0, 0};
    for (int p = 0; r <= ROOT_SET(0) && p < ad->fw->nparams; p++)
        if (an_root_has(ad, r, p))
            buf_printf(&b, "%s%s", b.len ? "', '" : "", an_param_name(ad, p));
    return b.len ? buf_str(&b) : "?";
}


/* How a value is called in messages. */
const char *an_display(const Ad *ad, ValId v, ValId alt)
{
    const char *n = fname(ad, v);
    if (!n && alt)
        n = fname(ad, alt);
    return n ? n : arena_printf(ad->a, "#%d", (int)v);
}

/* ------------------------------------------------------------------ */
/* 1. Roles                                                            */
/* ------------------------------------------------------------------ */

bool ad_assign_roles(Diags *d, const Func *f, const AdSpec *spec, int *role, bool forward)
{
    bool ok = true;
    for (int pass = 0; pass < 2; pass++) {
        const char *const *names = pass ? spec->outs : spec->wrt;
        int n = pass ? spec->nouts : spec->nwrt;
        for (int i = 0; i < n; i++) {
            int found = -1;
            for (int p = 0; p < f->nparams; p++) {
                const char *pn = f->vals.v[f->params[p]].name;
                if (pn && !strcmp(pn, names[i]))
                    found = p;
            }
            if (found < 0) {
                diag_error(d, f->loc, "kernel '%s' has no runtime parameter '%s' (to differentiate %s)",
                           f->name, names[i], pass ? "as an output" : "with respect to");
                ok = false;
                continue;
            }
            Type t = f->vals.v[f->params[found]].ty;
            Loc at = f->vals.v[f->params[found]].loc;
            if (t.dt != DT_PTR || !dtype_is_float((Dtype)t.elem)) {
                diag_error(d, at, "'%s' is not a pointer to floating-point data: it cannot be differentiated",
                           names[i]);
                ok = false;
                continue;
            }
            if (!forward && dtype_is_fp8((Dtype)t.elem)) {
                diag_error(d, at,
                           "'%s' points to %s data: kad does not differentiate fp8 buffers (their "
                           "gradients would be rounded to 2 or 3 mantissa bits and fp8 has no "
                           "atomic_add); load them and differentiate the float32 values cast from them",
                           names[i], dtype_name((Dtype)t.elem));
                ok = false;
                continue;
            }
            if (pass && role[found] == AD_ROLE_IN) { /* in wrt and in outs: updated in place */
                role[found] = AD_ROLE_INOUT;
                continue;
            }
            if (role[found] != AD_ROLE_NONE) {
                diag_error(d, at, "'%s' is named twice as %s", names[i], pass ? "an output" : "an input");
                ok = false;
                continue;
            }
            role[found] = pass ? AD_ROLE_OUT : AD_ROLE_IN;
        }
    }
    if (ok && !spec->nouts) {
        diag_error(d, f->loc, "no differentiated output given");
        ok = false;
    }
    if (ok && forward && !spec->nwrt) {
        diag_error(d, f->loc, "no differentiated input given");
        ok = false;
    }
    return ok;
}

/* ------------------------------------------------------------------ */
/* 2. Facts: provenance, varied, useful                                */
/* ------------------------------------------------------------------ */

/* The root code of the union of the candidates of roots x and y (both
 * single parameters or sets): sets are interned, so equal sets get one
 * code. */
static int root_union(Ad *ad, int x, int y)
{
    int np = ad->fw->nparams;
    uint8_t *u = arena_alloc(ad->a, (size_t)np + 1);
    for (int p = 0; p < np; p++)
        u[p] = an_root_has(ad, x, p) || an_root_has(ad, y, p);
    for (int s = 0; s < ad->psets.n; s++)
        if (!memcmp(ad->psets.v[s], u, (size_t)np))
            return ROOT_SET(s);
    vec_push(ad->a, ad->psets, u);
    return ROOT_SET(ad->psets.n - 1);
}

static void join_root(Ad *ad, ValId v, int r)
{
    int old = ad->root[v];
    int nw = old == 0 ? r
             : (r == 0 || r == old) ? old
             : (old == ROOT_AMBIG || r == ROOT_AMBIG) ? ROOT_AMBIG
                                                       : root_union(ad, old, r);
    if (nw != old) {
        ad->root[v] = nw;
        ad->changed = true;
    }
}

static void set_flag(Ad *ad, uint8_t *arr, ValId v, bool on)
{
    if (on && v > 0 && !arr[v] && !(arr == ad->useful && ad->pinned && ad->pinned[v])) {
        arr[v] = 1;
        ad->changed = true;
    }
}

/* Joins a carried/result value with the value flowing into it. */
static void flow(Ad *ad, ValId to, ValId from)
{
    join_root(ad, to, ad->root[from]);
    set_flag(ad, ad->varied, to, ad->varied[from]);
}

/* The instruction of b defining v, or NULL (a param, or outside b). */
static const Inst *def_in(const Block *b, ValId v)
{
    for (int i = 0; i < b->insts.n; i++)
        if (b->insts.v[i].nres == 1 && b->insts.v[i].res[0] == v)
            return &b->insts.v[i];
    return NULL;
}

/* Is v op(x, y) or op(y, x) in b? */
static bool is_op2(const Block *b, ValId v, OpKind op, ValId x, ValId y)
{
    const Inst *d = def_in(b, v);
    return d && d->op == op && d->nargs == 2 &&
           ((d->args[0] == x && d->args[1] == y) || (d->args[0] == y && d->args[1] == x));
}

bool ad_scan_select(const Inst *scan, int k, ValId *cond, bool *running_when_true)
{
    const Block *b = scan->regions[0];
    const Inst *y = ad_block_term(b);
    int n = scan->nargs;
    const Inst *d = def_in(b, y->args[k]);
    if (!d || d->op != OP_WHERE)
        return false;
    ValId x = b->params[k], nx = b->params[n + k];
    if (d->args[1] == x && d->args[2] == nx)
        *running_when_true = true;
    else if (d->args[1] == nx && d->args[2] == x)
        *running_when_true = false;
    else
        return false;
    *cond = d->args[0];
    return true;
}

/* SCAN_SELECT when every float slot is a selection (ad_scan_select), else SCAN_OTHER. */
static ScanKind scan_select(const Func *f, const Inst *scan)
{
    bool any = false;
    for (int k = 0; k < scan->nres; k++) {
        ValId c;
        bool first;
        if (!is_float(f->vals.v[scan->res[k]].ty))
            continue;
        if (!ad_scan_select(scan, k, &c, &first))
            return SCAN_OTHER;
        any = true;
    }
    return any ? SCAN_SELECT : SCAN_OTHER;
}

ScanKind ad_scan_kind(const Func *f, const Inst *scan)
{
    const Block *b = scan->regions[0];
    const Inst *y = ad_block_term(b);
    const ValId *p = b->params;
    if (!y || y->op != OP_YIELD || y->nargs != scan->nargs || b->nparams != 2 * scan->nargs)
        return SCAN_OTHER;
    if (scan->nargs == 1) {
        if (is_op2(b, y->args[0], OP_ADD, p[0], p[1]))
            return SCAN_SUM;
        if (is_op2(b, y->args[0], OP_MAXIMUM, p[0], p[1]))
            return SCAN_MAX;
        if (is_op2(b, y->args[0], OP_MINIMUM, p[0], p[1]))
            return SCAN_MIN;
    }
    if (scan->nargs != 2 || !is_op2(b, y->args[0], OP_MUL, p[0], p[2]))
        return scan_select(f, scan);
    /* a2*b1 + b2, or fma(a2, b1, b2) */
    const Inst *d = def_in(b, y->args[1]);
    if (d && d->op == OP_FMA && d->args[2] == p[3] &&
        ((d->args[0] == p[2] && d->args[1] == p[1]) || (d->args[0] == p[1] && d->args[1] == p[2])))
        return SCAN_LINREC;
    if (!d || d->op != OP_ADD)
        return scan_select(f, scan);
    for (int k = 0; k < 2; k++)
        if (d->args[1 - k] == p[3] && is_op2(b, d->args[k], OP_MUL, p[2], p[1]))
            return SCAN_LINREC;
    return scan_select(f, scan);
}

static bool is_ptr_shape_op(OpKind op)
{
    return op == OP_ADDPTR || op == OP_BROADCAST || op == OP_EXPAND_DIMS || op == OP_RESHAPE ||
           op == OP_PERMUTE || op == OP_MULTIPLE_OF || op == OP_MAX_CONTIGUOUS;
}

static void forward_block(Ad *ad, const Block *b);

void ad_flow_regions(const Inst *in, const FactWalk *w)
{
    switch (in->op) {
    case OP_FOR: {
        const Block *r = in->regions[0];
        int nc = in->nargs - 3;
        for (int i = 0; i < nc; i++)
            w->flow(w->ctx, r->params[1 + i], in->args[3 + i]);
        w->walk(w->ctx, r);
        const Inst *y = ad_block_term(r);
        for (int i = 0; i < nc; i++) {
            w->flow(w->ctx, r->params[1 + i], y->args[i]);
            w->flow(w->ctx, in->res[i], r->params[1 + i]);
        }
        return;
    }
    case OP_WHILE: {
        const Block *c = in->regions[0], *body = in->regions[1];
        for (int i = 0; i < in->nargs; i++)
            w->flow(w->ctx, c->params[i], in->args[i]);
        w->walk(w->ctx, c);
        for (int i = 0; i < in->nres; i++)
            w->flow(w->ctx, body->params[i], c->params[i]);
        w->walk(w->ctx, body);
        const Inst *y = ad_block_term(body);
        for (int i = 0; i < in->nres; i++) {
            w->flow(w->ctx, c->params[i], y->args[i]);
            w->flow(w->ctx, in->res[i], c->params[i]);
        }
        return;
    }
    case OP_IF:
        for (int r = 0; r < 2; r++) {
            w->walk(w->ctx, in->regions[r]);
            const Inst *y = ad_block_term(in->regions[r]);
            for (int i = 0; i < in->nres; i++)
                w->flow(w->ctx, in->res[i], y->args[i]);
        }
        return;
    default:
        ASSERT(!"a region op");
    }
}

static void fact_flow(void *ad, ValId to, ValId from) { flow(ad, to, from); }
static void fact_walk(void *ad, const Block *b) { forward_block(ad, b); }

/* Forward facts (root, varied) of one instruction's results. */
static void forward_inst(Ad *ad, const Inst *in)
{
    OpKind op = (OpKind)in->op;
    switch (op) {
    case OP_FOR:
    case OP_WHILE:
    case OP_IF:
        ad_flow_regions(in, &(FactWalk){ad, fact_flow, fact_walk});
        return;
    case OP_SCAN: { /* every result depends on every input (the region is closed) */
        bool v = false;
        for (int i = 0; i < in->nargs; i++)
            v = v || ad->varied[in->args[i]];
        for (int i = 0; i < in->nres; i++)
            set_flag(ad, ad->varied, in->res[i], v && is_float(fw_ty(ad, in->res[i])));
        if (ad_scan_kind(ad->fw, in) == SCAN_OTHER) { /* the general rule differentiates the region */
            const Block *r = in->regions[0];
            for (int i = 0; i < r->nparams; i++)
                set_flag(ad, ad->varied, r->params[i], v && is_float(fw_ty(ad, r->params[i])));
            forward_block(ad, r);
        }
        return;
    }
    case OP_REDUCE: { /* the combine region walked: its params take the inputs and the yields */
        const Block *r = in->regions[0];
        const Inst *y = ad_block_term(r);
        int n = in->nargs;
        for (int i = 0; i < n; i++) {
            bool v = ad->varied[in->args[i]] || ad->varied[y->args[i]];
            set_flag(ad, ad->varied, r->params[i], v && is_float(fw_ty(ad, r->params[i])));
            set_flag(ad, ad->varied, r->params[n + i], v && is_float(fw_ty(ad, r->params[i])));
        }
        forward_block(ad, r);
        for (int i = 0; i < n; i++)
            set_flag(ad, ad->varied, in->res[i],
                     (ad->varied[in->args[i]] || ad->varied[y->args[i]]) && is_float(fw_ty(ad, in->res[i])));
        return;
    }
    case OP_LOAD: {
        ValId res = in->res[0];
        if (fw_ty(ad, res).dt == DT_PTR) {
            join_root(ad, res, ROOT_AMBIG); /* a pointer read from memory */
            return;
        }
        bool v = ad_role_reads(ad_root_role(ad, in->args[0])) && is_float(fw_ty(ad, res));
        if (in->flags & IF_HAS_OTHER)
            v = v || ad->varied[in->args[2]];
        set_flag(ad, ad->varied, res, v);
        return;
    }
    default:
        break;
    }
    if (in->nres != 1)
        return;
    ValId res = in->res[0];
    if (fw_ty(ad, res).dt == DT_PTR) {
        if (is_ptr_shape_op(op))
            join_root(ad, res, ad->root[in->args[0]]);
        else if (op == OP_WHERE) {
            join_root(ad, res, ad->root[in->args[1]]);
            join_root(ad, res, ad->root[in->args[2]]);
        } else
            join_root(ad, res, ROOT_AMBIG); /* bitcast or anything else: unknown */
        return;
    }
    if (op_differentiable(op) && is_float(fw_ty(ad, res))) {
        bool v = false;
        for (int i = 0; i < in->nargs; i++)
            v = v || ad->varied[in->args[i]];
        set_flag(ad, ad->varied, res, v);
    }
}

static void forward_block(Ad *ad, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++)
        forward_inst(ad, &b->insts.v[i]);
}


/* Marks the values tied together by a loop-carried slot useful together. */
static void useful_tie(Ad *ad, const ValId *vs, int n)
{
    bool u = false;
    for (int i = 0; i < n; i++)
        u = u || ad->useful[vs[i]];
    for (int i = 0; i < n; i++)
        set_flag(ad, ad->useful, vs[i], u);
}

/* Backward facts (useful) of one instruction's operands. */
static void backward_inst(Ad *ad, const Inst *in)
{
    OpKind op = (OpKind)in->op;
    switch (op) {
    case OP_STORE:
    case OP_ATOMIC_ADD: /* out += v: v reaches the output like a stored value */
    case OP_ATOMIC_MAX: /* (refused into an output: validate_block) */
    case OP_ATOMIC_MIN:
    case OP_ATOMIC_XCHG:
        if (ad_role_writes(ad_root_role(ad, in->args[0])))
            set_flag(ad, ad->useful, in->args[1], true);
        return;
    case OP_LOAD:
        if ((in->flags & IF_HAS_OTHER) && ad->useful[in->res[0]])
            set_flag(ad, ad->useful, in->args[2], true);
        return;
    case OP_FOR: {
        const Block *r = in->regions[0];
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < in->nres; i++) {
                ValId t[4] = {in->res[i], r->params[1 + i], in->args[3 + i], ad_block_term(r)->args[i]};
                useful_tie(ad, t, 4);
            }
            if (pass == 0)
                an_useful_block(ad, r);
        }
        return;
    }
    case OP_WHILE: {
        const Block *c = in->regions[0], *body = in->regions[1];
        for (int pass = 0; pass < 2; pass++) {
            for (int i = 0; i < in->nres; i++) {
                ValId t[5] = {in->res[i], c->params[i], body->params[i], in->args[i],
                              ad_block_term(body)->args[i]};
                useful_tie(ad, t, 5);
            }
            if (pass == 0) {
                an_useful_block(ad, body);
                an_useful_block(ad, c);
            }
        }
        return;
    }
    case OP_IF:
        for (int r = 0; r < 2; r++) {
            const Inst *y = ad_block_term(in->regions[r]);
            for (int i = 0; i < in->nres; i++)
                set_flag(ad, ad->useful, y->args[i], ad->useful[in->res[i]]);
            an_useful_block(ad, in->regions[r]);
        }
        return;
    case OP_CUSTOM_JVP: /* a tangent rule (forward mode's): reverse mode goes through operand 0 */
        set_flag(ad, ad->useful, in->args[0], ad->useful[in->res[0]]);
        return;
    case OP_CUSTOM_VJP: /* its rule gives the arguments' adjoints; the helper's own result gets none */
        for (int i = 1; i < in->nargs && ad->useful[in->res[0]]; i++)
            set_flag(ad, ad->useful, in->args[i], true);
        return;
    case OP_REDUCE: {
        bool u = false;
        for (int i = 0; i < in->nres; i++)
            u = u || ad->useful[in->res[i]];
        if (!u)
            return;
        const Inst *y = ad_block_term(in->regions[0]);
        for (int i = 0; i < y->nargs; i++)
            set_flag(ad, ad->useful, y->args[i], true);
        an_useful_block(ad, in->regions[0]);
        for (int i = 0; i < in->nargs; i++)
            set_flag(ad, ad->useful, in->args[i], true);
        return;
    }
    case OP_SCAN: {
        bool u = false;
        for (int i = 0; i < in->nres; i++)
            u = u || ad->useful[in->res[i]];
        if (!u)
            return;
        if (ad_scan_kind(ad->fw, in) == SCAN_OTHER) { /* the general rule differentiates the region */
            const Inst *y = ad_block_term(in->regions[0]);
            for (int i = 0; i < y->nargs; i++)
                set_flag(ad, ad->useful, y->args[i], true);
            an_useful_block(ad, in->regions[0]);
        }
        for (int i = 0; i < in->nargs; i++)
            set_flag(ad, ad->useful, in->args[i], true);
        return;
    }
    default:
        break;
    }
    if (op_differentiable(op) && in->nres == 1 && ad->useful[in->res[0]])
        for (int i = 0; i < in->nargs; i++)
            set_flag(ad, ad->useful, in->args[i], true);
}

void an_useful_block(Ad *ad, const Block *b)
{
    for (int i = b->insts.n - 1; i >= 0; i--)
        if (b->insts.v[i].op != OP_STORE || !ad_store_overwritten(b, i)) /* else reaches nothing */
            backward_inst(ad, &b->insts.v[i]);
}

void ad_count_uses(const Block *b, int *nuses, int *jcov)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        for (int j = 0; j < in->nargs; j++)
            nuses[in->args[j]]++;
        if (jcov && in->op == OP_CUSTOM_JVP)
            jcov[in->args[0]]++;
        for (int r = 0; r < in->nregions; r++)
            ad_count_uses(in->regions[r], nuses, jcov);
    }
}

/* Definitions (and use counts: ad_count_uses), for validation messages and checks. */
static void index_block(Ad *ad, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nres; k++)
            ad->def[in->res[k]] = in;
        for (int r = 0; r < in->nregions; r++)
            index_block(ad, in->regions[r]);
        for (int p = 0; op_writes_memory(in->op) && p < ad->fw->nparams; p++) {
            if (!ad_root_has(ad, in->args[0], p))
                continue;
            const Inst **first = in->op == OP_STORE ? &ad->first_store[p] : &ad->first_atomic[p];
            ad->stored[p] = 1;
            if (!*first)
                *first = in;
        }
    }
}

static void analyze(Ad *ad)
{
    for (int i = 0; i < ad->fw->nparams; i++) {
        ValId p = ad->fw->params[i];
        if (fw_ty(ad, p).dt == DT_PTR)
            ad->root[p] = i + 1;
    }
    /* Monotone facts over a finite lattice: a few rounds reach the fixpoint
     * (each round settles at least one more level of loop nesting). */
    for (int round = 0; round < 1000; round++) {
        ad->changed = false;
        forward_block(ad, ad->fw->body);
        an_useful_block(ad, ad->fw->body);
        if (!ad->changed)
            break;
    }
    ad_count_uses(ad->fw->body, ad->nuses, NULL);
    index_block(ad, ad->fw->body);
}

/* ------------------------------------------------------------------ */
/* Entry point                                                         */
/* ------------------------------------------------------------------ */

/* The facts' arrays of ad (zeroed: no roles, no roots, nothing varied). */
static void alloc_facts(Ad *ad)
{
    Arena *a = ad->a;
    int nv = ad->nvals = ad->fw->vals.n;
    int np = ad->fw->nparams;
    ad->role = arena_alloc(a, sizeof(int) * (size_t)(np + 1));
    ad->stored = arena_alloc(a, (size_t)np + 1);
    ad->cleared = arena_alloc(a, (size_t)np + 1);
    ad->first_store = arena_alloc(a, sizeof(const Inst *) * (size_t)(np + 1));
    ad->first_atomic = arena_alloc(a, sizeof(const Inst *) * (size_t)(np + 1));
    ad->root = arena_alloc(a, sizeof(int) * (size_t)nv);
    ad->varied = arena_alloc(a, (size_t)nv);
    ad->useful = arena_alloc(a, (size_t)nv);
    ad->chain = arena_alloc(a, (size_t)nv);
    ad->nuses = arena_alloc(a, sizeof(int) * (size_t)nv);
    ad->def = arena_alloc(a, sizeof(const Inst *) * (size_t)nv);
    ad->stamp = arena_alloc(a, sizeof(int) * (size_t)nv);
}

bool ad_analyze(Ad *ad)
{
    alloc_facts(ad);
    int before = ad->d->nerrors;
    if (!ad_assign_roles(ad->d, ad->fw, ad->spec, ad->role, false))
        return false;
    analyze(ad);
    drop_shift_invariant(ad);
    SiteVec sites = {0};
    validate_block(ad, ad->fw->body, 0, NULL, NULL, 0, &sites, NULL);
    return ad->d->nerrors == before;
}

/* ------------------------------------------------------------------ */
/* Queries                                                             */
/* ------------------------------------------------------------------ */

static int access_block(const Ad *ad, const Block *b, int i)
{
    int acc = 0;
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        for (int r = 0; r < in->nregions; r++)
            acc |= access_block(ad, in->regions[r], i);
        if (in->op != OP_LOAD && !op_writes_memory(in->op))
            continue;
        int root = ad->root[in->args[0]];
        if (an_root_has(ad, root, i) || root == ROOT_AMBIG)
            acc |= in->op == OP_LOAD ? AD_ACCESS_LOAD : AD_ACCESS_STORE;
    }
    return acc;
}

int ad_param_access(Arena *a, const Func *f, int i)
{
    if (i < 0 || i >= f->nparams || f->vals.v[f->params[i]].ty.dt != DT_PTR)
        return 0;
    Ad ad0 = {.a = a, .fw = f}, *ad = &ad0;
    alloc_facts(ad); /* every role AD_ROLE_NONE */
    analyze(ad);
    return access_block(ad, f->body, i);
}

int ad_spec_nwrt_only(const AdSpec *spec)
{
    int n = 0;
    for (int i = 0; i < spec->nwrt; i++) {
        bool both = false;
        for (int k = 0; k < spec->nouts; k++)
            both = both || !strcmp(spec->wrt[i], spec->outs[k]);
        n += !both;
    }
    return n;
}

