/* ad_analysis.c -- what reverse-mode AD differentiates, and what it refuses.
 *
 * Job: the decisions the reverse sweep (sweep_rev.c) relies on, made once over the whole
 * forward kernel before any backward code is emitted (docs/AD.md):
 *
 *   1. roles: the names of the AdSpec resolved to pointer parameters
 *      (differentiated inputs, differentiated outputs).
 *   2. facts (a fixpoint over the kernel, loops included): pointer
 *      provenance (which parameter, or which of several, each pointer
 *      derives from), "varied" (depends on a differentiated input),
 *      "useful" (reaches a differentiated output); active = varied and
 *      useful and float.  Only active values get adjoints, so no dead
 *      gradient code is emitted.
 *   3. shift invariance: maxima/minima the outputs provably do not depend
 *      on (softmax's x - max(x)) are made inactive, since their adjoint is
 *      exactly zero.
 *   4. validation: every construct AD cannot handle exactly is refused with
 *      an error at the instruction's Loc (stores to inputs, loads from
 *      outputs, ambiguous pointers, stores that may overwrite each other,
 *      non-linear loop-carried values, ops without a rule, ...).  Stores
 *      to one output at several sites are accepted only where the last
 *      write is known: the branches of one `if`, or one block storing
 *      through the same pointer value (the later store wins), and loop
 *      iterations only where their addresses are proven disjoint.
 *
 * Requires: a verified forward Func and an Ad with a, d, fw and spec set.
 * Guarantees: ad_analyze fills the fact arrays of the Ad (kad_int.h) and
 * returns true only when no error was reported; then every active value
 * has an adjoint rule, every load/store of a differentiated buffer has a
 * known parameter, and every output element's last write is known, which
 * is what the reverse sweep (sweep_rev.c) assumes without checking again.  fw is not
 * modified.
 */
#include <math.h>
#include <string.h>

#include "ad/ad.h"

/* Ad.root: 0 unknown / not a pointer, p+1 derives from parameter p,
 * ROOT_AMBIG read from memory (or converted), ROOT_SET(s) one of the
 * parameters of provenance set s (a `tl.where`, or values chosen in the
 * branches of an `if` or the iterations of a loop). */
#define ROOT_AMBIG (-1)
#define ROOT_SET(s) (-2 - (s))
#define SET_OF(r) (-2 - (r))

/* Where a store to an output sits: its block and `if` nesting, so that two
 * stores in the two branches of one `if` are known to be mutually
 * exclusive, and two in one block to run in program order. */
typedef struct IfStep {
    const Inst *inst; /* an enclosing `if` */
    int region;       /* 0: then, 1: else */
} IfStep;
typedef struct StoreSite {
    const Inst *store;
    const Block *block; /* the block holding the store */
    int root;           /* Ad.root code of the pointer (a parameter or a set) */
    const IfStep *path; /* enclosing ifs, outermost first */
    int npath;
    int loop_depth;
} StoreSite;
typedef Vec(StoreSite) SiteVec;

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */


/* The type of fw value v as the forward has it (not ad.h's fty: no lanes). */
static Type fw_ty(const Ad *ad, ValId v) { return ad->fw->vals.v[v].ty; }
static bool is_float_type(Type t) { return t.dt != DT_PTR && dtype_is_float((Dtype)t.dt); }

bool ad_active(const Ad *ad, ValId v)
{
    return v > 0 && ad->varied[v] && ad->useful[v] && is_float_type(fw_ty(ad, v));
}

/* Is parameter p a candidate of root code r? */
static bool root_has(const Ad *ad, int r, int p)
{
    return r > 0 ? r == p + 1 : r <= ROOT_SET(0) ? ad->psets.v[SET_OF(r)][p] != 0 : false;
}

bool ad_root_has(const Ad *ad, ValId v, int p) { return root_has(ad, ad->root[v], p); }

int ad_root_role(const Ad *ad, ValId v)
{
    int r = ad->root[v];
    if (r > 0)
        return ad->role[r - 1];
    for (int p = 0; r <= ROOT_SET(0) && p < ad->fw->nparams; p++)
        if (root_has(ad, r, p) && ad->role[p] != AD_ROLE_NONE)
            return ad->role[p];
    return AD_ROLE_NONE;
}

const Inst *ad_block_term(const Block *b)
{
    return b->insts.n ? &b->insts.v[b->insts.n - 1] : NULL;
}

static const char *param_name(const Ad *ad, int p)
{
    const char *n = fname(ad, ad->fw->params[p]);
    return n ? n : "?";
}

/* v's parameter, in messages quoted as '%s'; a set's candidates joined
 * by "', '" so that the quoted text reads 'a', 'b'. */
static const char *root_name(const Ad *ad, ValId v)
{
    int r = ad->root[v];
    if (r > 0)
        return param_name(ad, r - 1);
    Buf b = {ad->a, NULL, 0, 0};
    for (int p = 0; r <= ROOT_SET(0) && p < ad->fw->nparams; p++)
        if (root_has(ad, r, p))
            buf_printf(&b, "%s%s", b.len ? "', '" : "", param_name(ad, p));
    return b.len ? buf_str(&b) : "?";
}


/* How a value is called in messages. */
static const char *display(const Ad *ad, ValId v, ValId alt)
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
        u[p] = root_has(ad, x, p) || root_has(ad, y, p);
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
        if (!is_float_type(f->vals.v[scan->res[k]].ty))
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

/* Forward facts (root, varied) of one instruction's results. */
static void forward_inst(Ad *ad, const Inst *in)
{
    OpKind op = (OpKind)in->op;
    switch (op) {
    case OP_FOR: {
        const Block *r = in->regions[0];
        int nc = in->nargs - 3;
        for (int i = 0; i < nc; i++)
            flow(ad, r->params[1 + i], in->args[3 + i]);
        forward_block(ad, r);
        const Inst *y = ad_block_term(r);
        for (int i = 0; i < nc; i++) {
            flow(ad, r->params[1 + i], y->args[i]);
            flow(ad, in->res[i], r->params[1 + i]);
        }
        return;
    }
    case OP_WHILE: {
        const Block *c = in->regions[0], *body = in->regions[1];
        for (int i = 0; i < in->nargs; i++)
            flow(ad, c->params[i], in->args[i]);
        forward_block(ad, c);
        for (int i = 0; i < in->nres; i++)
            flow(ad, body->params[i], c->params[i]);
        forward_block(ad, body);
        const Inst *y = ad_block_term(body);
        for (int i = 0; i < in->nres; i++) {
            flow(ad, c->params[i], y->args[i]);
            flow(ad, in->res[i], c->params[i]);
        }
        return;
    }
    case OP_IF:
        for (int r = 0; r < 2; r++) {
            forward_block(ad, in->regions[r]);
            const Inst *y = ad_block_term(in->regions[r]);
            for (int i = 0; i < in->nres; i++)
                flow(ad, in->res[i], y->args[i]);
        }
        return;
    case OP_SCAN: { /* every result depends on every input (the region is closed) */
        bool v = false;
        for (int i = 0; i < in->nargs; i++)
            v = v || ad->varied[in->args[i]];
        for (int i = 0; i < in->nres; i++)
            set_flag(ad, ad->varied, in->res[i], v && is_float_type(fw_ty(ad, in->res[i])));
        if (ad_scan_kind(ad->fw, in) == SCAN_OTHER) { /* the general rule differentiates the region */
            const Block *r = in->regions[0];
            for (int i = 0; i < r->nparams; i++)
                set_flag(ad, ad->varied, r->params[i], v && is_float_type(fw_ty(ad, r->params[i])));
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
            set_flag(ad, ad->varied, r->params[i], v && is_float_type(fw_ty(ad, r->params[i])));
            set_flag(ad, ad->varied, r->params[n + i], v && is_float_type(fw_ty(ad, r->params[i])));
        }
        forward_block(ad, r);
        for (int i = 0; i < n; i++)
            set_flag(ad, ad->varied, in->res[i],
                     (ad->varied[in->args[i]] || ad->varied[y->args[i]]) && is_float_type(fw_ty(ad, in->res[i])));
        return;
    }
    case OP_LOAD: {
        ValId res = in->res[0];
        if (fw_ty(ad, res).dt == DT_PTR) {
            join_root(ad, res, ROOT_AMBIG); /* a pointer read from memory */
            return;
        }
        bool v = ad_role_reads(ad_root_role(ad, in->args[0])) && is_float_type(fw_ty(ad, res));
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
    if (op_differentiable(op) && is_float_type(fw_ty(ad, res))) {
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

static void backward_block(Ad *ad, const Block *b);

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
                backward_block(ad, r);
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
                backward_block(ad, body);
                backward_block(ad, c);
            }
        }
        return;
    }
    case OP_IF:
        for (int r = 0; r < 2; r++) {
            const Inst *y = ad_block_term(in->regions[r]);
            for (int i = 0; i < in->nres; i++)
                set_flag(ad, ad->useful, y->args[i], ad->useful[in->res[i]]);
            backward_block(ad, in->regions[r]);
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
        backward_block(ad, in->regions[0]);
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
            backward_block(ad, in->regions[0]);
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

static void backward_block(Ad *ad, const Block *b)
{
    for (int i = b->insts.n - 1; i >= 0; i--)
        if (b->insts.v[i].op != OP_STORE || !ad_store_overwritten(b, i)) /* else reaches nothing */
            backward_inst(ad, &b->insts.v[i]);
}

/* Definitions and use counts, for validation messages and checks. */
static void index_block(Ad *ad, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++)
            ad->nuses[in->args[k]]++;
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
        backward_block(ad, ad->fw->body);
        if (!ad->changed)
            break;
    }
    index_block(ad, ad->fw->body);
}

/* ------------------------------------------------------------------ */
/* 3. Shift-invariant maxima: adjoints that are zero exactly           */
/* ------------------------------------------------------------------ */

/* A numerically stable softmax computes exp(x - m) / sum(exp(x - m)) with
 * m = max(x): the result does not depend on m at all, so m's adjoint is
 * zero in exact arithmetic, and the rounding noise kad would compute for
 * it (a sum over the row, the max's tie mask) is better left out.
 *
 * The proof treats m as a free scalar and gives every value a class
 * saying how it depends on m, c = e^m:
 *   SH_NONE  not at all          SH_ZERO  the constant 0 (any SH_MUL too)
 *   SH_ADD k v0 + k*m            SH_MUL k v0 * c^k
 *   SH_ANY   some other way
 * with v0 independent of m.  The rules below are identities of exact
 * arithmetic (k integer, m one number per program, c > 0): x - m is
 * SH_ADD -1, exp turns SH_ADD k into SH_MUL k, a sum keeps SH_MUL k, a
 * quotient of SH_MUL k by SH_MUL k is SH_NONE, log(SH_MUL k) is SH_ADD k
 * (logsumexp: m + log(sum(exp(x - m))) is SH_NONE).  m is shift-invariant
 * when every stored value, pointer and mask of a differentiated output is
 * SH_NONE or SH_ZERO and no dependent value enters control flow.  Then
 * m and every value that depends on the inputs only through m get no
 * adjoint; the others' adjoints are the partial derivatives with m held
 * fixed, which is the gradient, since the outputs do not depend on m. */
enum { SH_NONE, SH_ZERO, SH_ADD, SH_MUL, SH_ANY };
typedef struct Sh {
    uint8_t kind; /* SH_* */
    int32_t k;    /* SH_ADD: m's coefficient; SH_MUL: c's power */
} Sh;

#define SH_LIMIT (1 << 20) /* beyond this, SH_ANY (no overflow) */

static Sh sh_mk(int kind, int64_t k)
{
    if ((kind == SH_ADD || kind == SH_MUL) && k == 0)
        return (Sh){SH_NONE, 0};
    if (k > SH_LIMIT || k < -SH_LIMIT)
        return (Sh){SH_ANY, 0};
    return (Sh){(uint8_t)kind, (int32_t)k};
}

static bool sh_dep(Sh x) { return x.kind == SH_ADD || x.kind == SH_MUL || x.kind == SH_ANY; }

/* x as v0 + k*m (SH_NONE and SH_ZERO: k = 0). */
static bool sh_as_add(Sh x, int64_t *k)
{
    *k = x.kind == SH_ADD ? x.k : 0;
    return x.kind == SH_NONE || x.kind == SH_ZERO || x.kind == SH_ADD;
}

/* x as v0 * c^k (SH_NONE and SH_ZERO: k = 0). */
static bool sh_as_mul(Sh x, int64_t *k)
{
    *k = x.kind == SH_MUL ? x.k : 0;
    return x.kind == SH_NONE || x.kind == SH_ZERO || x.kind == SH_MUL;
}

/* The class shared by two values combined lane by lane without changing
 * their dependence on m (select, maximum): equal classes; 0 joins
 * any SH_MUL (max(0, v0*c^k) = c^k * max(0, v0)). */
static Sh sh_same(Sh x, Sh y)
{
    if (x.kind == SH_ZERO && y.kind != SH_ADD && y.kind != SH_ANY)
        return y;
    if (y.kind == SH_ZERO && x.kind != SH_ADD && x.kind != SH_ANY)
        return x;
    if (x.kind == y.kind && x.k == y.k && x.kind != SH_ANY)
        return x;
    return (Sh){SH_ANY, 0};
}

/* x + sign*y. */
static Sh sh_add(Sh x, Sh y, int sign)
{
    int64_t a, b;
    if (sh_as_add(x, &a) && sh_as_add(y, &b))
        return sh_mk(SH_ADD, a + sign * b);
    return sh_same(x, y); /* v0*c^k + w0*c^k */
}

/* x * y (sign 1) or x / y (sign -1). */
static Sh sh_mul(Sh x, Sh y, int sign)
{
    int64_t a, b;
    if (sh_as_mul(x, &a) && sh_as_mul(y, &b))
        return sh_mk(SH_MUL, a + sign * b);
    return (Sh){SH_ANY, 0};
}

/* Is v the float constant 0 (through broadcasts)? */
static bool zero_const(const Ad *ad, ValId v)
{
    const Inst *in = ad->def[v];
    while (in && (in->op == OP_BROADCAST || in->op == OP_EXPAND_DIMS))
        in = ad->def[in->args[0]];
    return in && in->op == OP_CONST && is_float_type(fw_ty(ad, in->res[0])) && in->fval == 0.0;
}

/* Is v a float NaN constant (through broadcasts)? */
static bool nan_const(const Ad *ad, ValId v)
{
    const Inst *in = ad->def[v];
    while (in && (in->op == OP_BROADCAST || in->op == OP_EXPAND_DIMS))
        in = ad->def[in->args[0]];
    return in && in->op == OP_CONST && is_float_type(fw_ty(ad, in->res[0])) && isnan(in->fval);
}

/* The class of the result of `in` from its operands' classes. */
static Sh sh_rule(const Ad *ad, const Inst *in, const Sh *cls)
{
    Sh x = cls[in->args[0]];
    Sh y = in->nargs > 1 ? cls[in->args[1]] : (Sh){SH_NONE, 0};
    Sh z = in->nargs > 2 ? cls[in->args[2]] : (Sh){SH_NONE, 0};
    int64_t k;
    switch ((OpKind)in->op) {
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
    case OP_PERMUTE:
    case OP_MAX: /* max(v0 + k*m) = max(v0) + k*m; max(v0*c^k) = max(v0)*c^k */
    case OP_MIN:
        return x;
    case OP_CAST: /* a float conversion is the identity in exact arithmetic */
        if (is_float_type(fw_ty(ad, in->args[0])) && is_float_type(fw_ty(ad, in->res[0])))
            return x;
        break;
    case OP_NEG:
        return x.kind == SH_ADD ? sh_mk(SH_ADD, -(int64_t)x.k) : x;
    case OP_ADD:
        return sh_add(x, y, 1);
    case OP_SUB:
        return sh_add(x, y, -1);
    case OP_MUL:
        return sh_mul(x, y, 1);
    case OP_DIV:
        return sh_mul(x, y, -1);
    case OP_FMA: /* a*b + c, and a@b + acc */
    case OP_DOT:
        return sh_add(sh_mul(x, y, 1), z, 1);
    case OP_MAXIMUM:
    case OP_MINIMUM:
        return sh_same(x, y);
    case OP_WHERE:
        return sh_dep(x) ? (Sh){SH_ANY, 0} : sh_same(y, z);
    case OP_SUM: /* sums of v0*c^k are c^k times the sum */
    case OP_CUMSUM:
        if (x.kind != SH_ADD)
            return x;
        break;
    case OP_EXP:
        if (sh_as_add(x, &k))
            return sh_mk(SH_MUL, k);
        break;
    case OP_LOG:
        if (sh_as_mul(x, &k))
            return sh_mk(SH_ADD, k);
        break;
    default:
        break;
    }
    for (int i = 0; i < in->nargs; i++)
        if (sh_dep(cls[in->args[i]]))
            return (Sh){SH_ANY, 0};
    return (Sh){SH_NONE, 0};
}

static bool sh_block(const Ad *ad, const Block *b, ValId m, Sh *cls, bool carries);

/* Does b (or a region nested in it) define v? */
static bool block_defines(const Block *b, ValId v)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nres; k++)
            if (in->res[k] == v)
                return true;
        for (int r = 0; r < in->nregions; r++)
            if (block_defines(in->regions[r], v))
                return true;
    }
    return false;
}

/* A `for` loop whose bounds do not depend on m: each carried value's class
 * is a fixpoint of the body, its start's class joined with its yield's
 * (a running sum of exp(x - m) starting at 0 is SH_MUL -1 on every
 * iteration, by induction); its results get those classes, and m itself
 * when it is one of them (a running max) SH_ADD 1.  A loop whose body
 * defines m has one m per iteration, not one number: no value that depends
 * on it may be carried to the next iteration (the proof shifts them all
 * by one amount). */
static bool sh_for(const Ad *ad, const Inst *in, ValId m, Sh *cls)
{
    for (int k = 0; k < 3; k++)
        if (sh_dep(cls[in->args[k]]))
            return false;
    const Block *body = in->regions[0];
    const Inst *y = ad_block_term(body);
    bool inside = block_defines(body, m);
    for (int i = 0; i < in->nres; i++)
        cls[body->params[1 + i]] = cls[in->args[3 + i]];
    for (int round = 0; round < 4; round++) {
        if (!sh_block(ad, body, m, cls, !inside))
            return false;
        bool same = true;
        for (int i = 0; i < in->nres; i++) {
            Sh p = cls[body->params[1 + i]], j = sh_same(p, cls[y->args[i]]);
            if (j.kind != p.kind || j.k != p.k) {
                cls[body->params[1 + i]] = j;
                same = false;
            }
        }
        if (same) {
            for (int i = 0; i < in->nres; i++)
                cls[in->res[i]] = in->res[i] == m ? (Sh){SH_ADD, 1} : cls[body->params[1 + i]];
            return true;
        }
    }
    return false;
}

/* Classes of b's values with m free; false when m might reach an output
 * (see above).  carries: b is a `for` body, whose yield may carry values
 * that depend on m (sh_for checks their classes). */
static bool sh_block(const Ad *ad, const Block *b, ValId m, Sh *cls, bool carries)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        bool dep = false;
        for (int k = 0; k < in->nargs; k++)
            dep = dep || sh_dep(cls[in->args[k]]);
        switch (in->op) {
        case OP_FOR:
            if (!sh_for(ad, in, m, cls))
                return false;
            continue;
        case OP_IF:
        case OP_WHILE:
            if (dep)
                return false;
            for (int r = 0; r < in->nregions; r++)
                if (!sh_block(ad, in->regions[r], m, cls, false))
                    return false;
            continue;
        case OP_YIELD:
            if (dep && !carries)
                return false;
            continue;
        case OP_CONDITION:
            if (dep)
                return false;
            continue;
        case OP_STORE:
        case OP_ATOMIC_ADD: /* scratch stores are dropped; inputs are refused */
        case OP_ATOMIC_MAX:
        case OP_ATOMIC_MIN:
        case OP_ATOMIC_XCHG:
            if (dep && (ad->root[in->args[0]] == ROOT_AMBIG || ad_root_role(ad, in->args[0]) != AD_ROLE_NONE) &&
                !(in->op == OP_STORE && ad_store_overwritten(b, i)))
                return false;
            continue;
        default:
            break;
        }
        if (in->nres != 1)
            continue;
        ValId r = in->res[0];
        if (r == m)
            cls[r] = (Sh){SH_ADD, 1};
        else if (dep)
            cls[r] = sh_rule(ad, in, cls);
        else if (in->op == OP_CONST && zero_const(ad, r))
            cls[r] = (Sh){SH_ZERO, 0};
        else if ((in->op == OP_BROADCAST || in->op == OP_EXPAND_DIMS) && cls[in->args[0]].kind == SH_ZERO)
            cls[r] = cls[in->args[0]];
    }
    return true;
}

/* Marks in `only` the values that depend on the inputs only through m:
 * m, and results of differentiable ops whose varied operands all are
 * marked (loads are never: they read the inputs). */
static void through_only(const Ad *ad, const Block *b, ValId m, uint8_t *only)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions; r++)
            through_only(ad, in->regions[r], m, only);
        if (in->nres != 1 || !op_differentiable(in->op))
            continue;
        bool some = false, all = true;
        for (int k = 0; k < in->nargs; k++) {
            ValId a = in->args[k];
            some = some || only[a];
            all = all && (only[a] || !ad->varied[a]);
        }
        only[in->res[0]] = in->res[0] == m || (some && all);
    }
}

/* Is res[i] of `for` in a running max or min alone: a scalar yielded as
 * maximum(m, y) or minimum(m, y) (either order) of its carried m, which
 * nothing else uses, and used by nothing but that yield?  (An online
 * softmax's first loop after gauge_rewrite.)  Its chain is then pinned
 * with it: it only feeds the result. */
static bool running_extreme(const Ad *ad, const Inst *in, int i)
{
    const Block *body = in->regions[0];
    ValId p = body->params[1 + i], n = ad_block_term(body)->args[i];
    const Inst *e = ad->def[n];
    return e && (e->op == OP_MAXIMUM || e->op == OP_MINIMUM) && (e->args[0] == p || e->args[1] == p) &&
           e->args[0] != e->args[1] && ad->nuses[p] == 1 && ad->nuses[n] == 1 &&
           type_numel(fw_ty(ad, in->res[i])) == 1;
}

/* Pins m (and for a loop's running extreme its carried chain) and what
 * depends on the inputs only through it, when the outputs provably do not
 * depend on m (AD_MUTATE_MAX_DROP, tests only: without the proof). */
static void try_drop(Ad *ad, ValId m, const Inst *loop, int slot)
{
    if (!ad_active(ad, m) || (ad->pinned && ad->pinned[m]))
        return;
    Sh *cls = arena_alloc(ad->a, sizeof *cls * (size_t)ad->nvals);
    if (ad->spec->mutate != AD_MUTATE_MAX_DROP && !sh_block(ad, ad->fw->body, m, cls, false))
        return;
    uint8_t *only = arena_alloc(ad->a, (size_t)ad->nvals);
    only[m] = 1; /* (a loop's result is no op's through_only marks) */
    through_only(ad, ad->fw->body, m, only);
    if (!ad->pinned)
        ad->pinned = arena_alloc(ad->a, (size_t)ad->nvals);
    for (int v = 0; v < ad->nvals; v++)
        ad->pinned[v] |= only[v];
    if (loop) {
        ad->pinned[loop->regions[0]->params[1 + slot]] = 1;
        ad->pinned[ad_block_term(loop->regions[0])->args[slot]] = 1;
    }
}

/* Finds the shift-invariant maxima and minima in b: scalar max/min
 * reductions and loops' running extremes (try_drop). */
static void find_shift_invariant(Ad *ad, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions; r++)
            find_shift_invariant(ad, in->regions[r]);
        if ((in->op == OP_MAX || in->op == OP_MIN) && type_numel(fw_ty(ad, in->res[0])) == 1)
            try_drop(ad, in->res[0], NULL, 0);
        for (int k = 0; in->op == OP_FOR && k < in->nres; k++)
            if (running_extreme(ad, in, k))
                try_drop(ad, in->res[k], in, k);
    }
}

/* Takes the shift-invariant maxima out of the adjoint: usefulness is
 * recomputed with them pinned, so that the values only they used (a
 * running max's loop) need no adjoint either. */
static void drop_shift_invariant(Ad *ad)
{
    find_shift_invariant(ad, ad->fw->body);
    if (!ad->pinned)
        return;
    memset(ad->useful, 0, (size_t)ad->nvals);
    for (int round = 0; round < 1000; round++) {
        ad->changed = false;
        backward_block(ad, ad->fw->body);
        if (!ad->changed)
            break;
    }
}

/* ------------------------------------------------------------------ */
/* 4. Validation                                                       */
/* ------------------------------------------------------------------ */


bool ad_carried_chain(Ad *ad, const Block *body, int k, bool (*link)(Ad *, const Inst *, int, ValId))
{
    ValId cur = body->params[1 + k];
    ValId marks[64];
    int nmarks = 0;
    for (;;) {
        const Inst *use = NULL;
        int nuse = 0, pos = -1;
        for (int i = 0; i < body->insts.n; i++) {
            const Inst *in = &body->insts.v[i];
            for (int j = 0; j < in->nargs; j++)
                if (in->args[j] == cur) {
                    nuse++;
                    use = in;
                    pos = j;
                }
            for (int r = 0; r < in->nregions; r++)
                if (ir_block_uses(in->regions[r], cur))
                    return false;
        }
        if (nuse != 1)
            return false;
        if (use->op == OP_YIELD) {
            if (pos != k)
                return false;
            for (int i = 0; i < nmarks; i++) /* marked only when the whole chain is accepted */
                ad->chain[marks[i]] = 1;
            return true;
        }
        if (!link(ad, use, pos, cur) || nmarks == (int)(sizeof marks / sizeof marks[0]))
            return false;
        marks[nmarks++] = use->res[0];
        cur = use->res[0];
    }
}

/* A link of a linear accumulator's chain: add (either side), sub (left
 * side), dot/fma (accumulator operand), keeping the carried type.  Then the
 * accumulator's adjoint is the same in every iteration and the other
 * operands of the chain cannot depend on it. */
static bool linear_link(Ad *ad, const Inst *use, int pos, ValId cur)
{
    switch (use->op) {
    case OP_ADD:
        break;
    case OP_SUB:
        if (pos != 0)
            return false;
        break;
    case OP_DOT:
    case OP_FMA:
        if (pos != 2)
            return false;
        break;
    default:
        return false;
    }
    return type_eq(fw_ty(ad, use->res[0]), fw_ty(ad, cur));
}

static bool has_rule(OpKind op)
{
    return op_info[op].diff == 'D'; /* 'N': differentiable, no rule yet */
}

/* Stamps every value defined in b (regions included) with id. */
void ad_mark_defs(Ad *ad, const Block *b, int id)
{
    for (int i = 0; i < b->nparams; i++)
        ad->stamp[b->params[i]] = id;
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nres; k++)
            ad->stamp[in->res[k]] = id;
        for (int r = 0; r < in->nregions; r++)
            ad_mark_defs(ad, in->regions[r], id);
    }
}

/* Offsets as civ * iv + [lo, hi] (same_address_lanes below uses it with no
 * loop: every lane's offset, scalars counting 0).  Stores in loops are
 * proven by access.c (check_loop_store). */
typedef struct Aff {
    int64_t civ, lo, hi;
} Aff;

#define AFF_LIMIT ((int64_t)1 << 40) /* beyond this, give up (no overflow) */

/* The integer constant v (through broadcasts), if it is one. */
static bool const_int(const Ad *ad, ValId v, int64_t *k)
{
    for (const Inst *in = ad->def[v]; in; in = ad->def[in->args[0]]) {
        if (in->op == OP_CONST && !is_float_type(fw_ty(ad, v))) {
            *k = in->ival;
            return true;
        }
        if (in->op != OP_BROADCAST && in->op != OP_EXPAND_DIMS)
            return false;
    }
    return false;
}

/* v as an Aff.  A scalar not defined in the loop (stamp != id) is the
 * same in every iteration and on every lane: it shifts the whole range and
 * counts as 0.  Every other value is derived from its definition: a tile
 * defined outside the loop is invariant too (civ 0) but its lanes differ. */
static bool aff_of(const Ad *ad, ValId v, ValId iv, int id, Aff *out, int depth)
{
    *out = (Aff){0, 0, 0};
    if (v == iv) {
        out->civ = 1;
        return true;
    }
    if (ad->stamp[v] != id && fw_ty(ad, v).rank == 0)
        return true;
    const Inst *in = ad->def[v];
    if (!in || depth > 64)
        return false; /* carried values: unknown */
    Aff a, b;
    int64_t k;
    switch (in->op) {
    case OP_CONST:
        return true;
    case OP_ARANGE:
        out->lo = in->ival;
        out->hi = in->ival + fw_ty(ad, v).shape[0] - 1;
        return true;
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
    case OP_MULTIPLE_OF:
    case OP_MAX_CONTIGUOUS:
        return aff_of(ad, in->args[0], iv, id, out, depth + 1);
    case OP_CAST:
        if (dtype_is_float((Dtype)fw_ty(ad, in->args[0]).dt) ||
            dtype_bits((Dtype)fw_ty(ad, v).dt) < dtype_bits((Dtype)fw_ty(ad, in->args[0]).dt))
            return false;
        return aff_of(ad, in->args[0], iv, id, out, depth + 1);
    case OP_ADD:
    case OP_ADDPTR:
    case OP_SUB:
        if (!aff_of(ad, in->args[0], iv, id, &a, depth + 1) || !aff_of(ad, in->args[1], iv, id, &b, depth + 1))
            return false;
        if (in->op == OP_SUB)
            *out = (Aff){a.civ - b.civ, a.lo - b.hi, a.hi - b.lo};
        else
            *out = (Aff){a.civ + b.civ, a.lo + b.lo, a.hi + b.hi};
        break;
    case OP_MUL:
        if (const_int(ad, in->args[1], &k) && aff_of(ad, in->args[0], iv, id, &a, depth + 1)) {
        } else if (const_int(ad, in->args[0], &k) && aff_of(ad, in->args[1], iv, id, &a, depth + 1)) {
        } else {
            return false;
        }
        if (k > AFF_LIMIT || k < -AFF_LIMIT)
            return false;
        *out = (Aff){a.civ * k, k >= 0 ? a.lo * k : a.hi * k, k >= 0 ? a.hi * k : a.lo * k};
        break;
    default:
        return false;
    }
    return out->civ < AFF_LIMIT && out->civ > -AFF_LIMIT && out->lo > -AFF_LIMIT && out->hi < AFF_LIMIT;
}

/* A store to an output inside loops (access.c): the adjoint reads d_out
 * at the store's address once per iteration, which is right as it stands
 * only when no two iterations of the enclosing loops write one element.
 * Lanes the address does not depend on are not varied: one iteration
 * writing an element from several lanes is the forward's own race (the
 * one-writer check, ad_race.c).  A proof that needs a runtime condition
 * the host can evaluate becomes a guard of the backward (ad->guards).
 * Otherwise the iterations may write one element several times (a running
 * state written out every iteration, or under `if i == last`): the output
 * keeps the last write.  The loop's verdict, once per store. */
typedef enum { LS_DISTINCT, LS_GUARDED, LS_REPEATS } LoopStore;

static LoopStore loop_store_kind(Ad *ad, const Inst *st, AccResult *out)
{
    if (!ad->vacc)
        ad->vacc = access_analyze(ad->a, ad->fw);
    AccResult r = access_injective(ad->vacc, st, ACC_VARY_LOOPS | ACC_VARY_LANES | ACC_SKIP_UNUSED_LANES);
    if (out)
        *out = r;
    if (r.v == ACC_PROVEN)
        return LS_DISTINCT;
    if (r.v == ACC_PROVEN_IF && access_cond_python(ad->vacc, r.cond) && access_cond_host(ad->vacc, r.cond, "a", "g"))
        return LS_GUARDED;
    return LS_REPEATS;
}

/* The loops around st must run their adjoints backwards over the iterations: st's writes are
 * ordered by the iterations (a store writing one element in several, or two store sites that
 * meet), and the reverse sweep finds the last write by reading and clearing each store's
 * gradient in reverse order.  Counted (Ad.nrev): each enclosing loop, validated before its tape
 * is planned, puts itself on a tape when its body added one. */
static void need_reverse(Ad *ad, const Inst *st)
{
    ad->nrev++;
    ad->rev_store = st;
}

static void check_loop_store(Ad *ad, const Inst *st, ValId p)
{
    AccResult r;
    LoopStore k = loop_store_kind(ad, st, &r);
    Access *acc = ad->vacc;
    if (k == LS_DISTINCT)
        return;
    if (k == LS_GUARDED) {
        FuncGuard g = {acc, r.cond, st->loc,
                       arena_printf(ad->a, "store to output '%s' inside a loop: the backward is right only when "
                                           "the iterations write distinct elements, which needs %s; this launch "
                                           "breaks it",
                                    root_name(ad, p), access_cond_python(acc, r.cond))};
        vec_push(ad->a, ad->guards, g);
        return;
    }
    int root = ad->root[p];
    if (root > 0) {
        /* the last write wins: the enclosing loops' adjoints run backwards (their tapes, planned
         * after their bodies: need_reverse), and the stores read and clear their gradient */
        ad->cleared[root - 1] = 1;
        need_reverse(ad, st);
        return;
    }
    const char *why = r.v == ACC_PROVEN_IF
                          ? arena_printf(ad->a, "only when %s holds", access_cond_python(acc, r.cond)
                                                                          ? access_cond_python(acc, r.cond)
                                                                          : "a condition on runtime values")
                          : r.why;
    diag_error(ad->d, st->loc,
               "store to output '%s' inside a loop, through a pointer selected among several buffers: "
               "kad cannot prove that the iterations write distinct addresses (%s)",
               root_name(ad, p), why);
}

/* Does every lane of the pointer tile p hold the same address?  Then a
 * store through it writes one element BLOCK times, and the adjoint would
 * read that element's gradient once per lane.  Proof: p's offsets as an
 * Aff over no loop (every value derived, scalars counting 0) have lo == hi:
 * y_ptr broadcast, y_ptr + offs * 0, y_ptr + tl.zeros(...).  The range is
 * an over-approximation, so a failed proof never refuses a store. */
static bool same_address_lanes(Ad *ad, ValId p)
{
    if (type_numel(fw_ty(ad, p)) <= 1)
        return false;
    Aff a;
    int id = ++ad->gen; /* stamps no value: nothing is "in the loop" */
    return aff_of(ad, p, 0, id, &a, 0) && a.lo == a.hi;
}

/* Are two stores mutually exclusive: in different branches of one `if`? */
static bool sites_exclusive(const StoreSite *x, const StoreSite *y)
{
    for (int k = 0; k < x->npath && k < y->npath; k++) {
        if (x->path[k].inst != y->path[k].inst)
            return false;
        if (x->path[k].region != y->path[k].region)
            return true;
    }
    return false;
}

/* Do two stores through one parameter never write the same element in the
 * whole launch?  Then neither overwrites the other, and each store's
 * adjoint reads its own elements of the output gradient (rotary embeddings
 * store a row's two halves through two tl.stores; a reverse tile walk
 * stores its masked first tile before the loop over the others).  Proof:
 * in one program they touch disjoint elements (access_disjoint; for stores
 * in loops access_disjoint_all, over every iteration of both), and no two
 * programs share an element of their union (access_private over every grid
 * axis).  That each store's own iterations write distinct elements is
 * check_loop_store's. */
static bool sites_disjoint(Ad *ad, const StoreSite *x, const StoreSite *y)
{
    if (x->root <= 0 || x->root != y->root)
        return false;
    Access *A = access_analyze(ad->a, ad->fw);
    if (access_base(A, x->store) != x->root - 1 || access_base(A, y->store) != x->root - 1)
        return false;
    /* within a program, proven outright (a condition there, `n <= 0` when the masks are the
     * same, would only turn this refusal into one at every launch); across programs, possibly
     * under a condition on the strides */
    if ((x->loop_depth || y->loop_depth ? access_disjoint_all(A, x->store, y->store)
                                         : access_disjoint(A, x->store, y->store)).v != ACC_PROVEN)
        return false;
    const Inst *both[2] = {x->store, y->store};
    AccResult r[2] = {{ACC_PROVEN, NULL, NULL}, access_private(A, both, 2, 7)};
    for (int i = 0; i < 2; i++)
        if (r[i].v != ACC_PROVEN &&
            (r[i].v != ACC_PROVEN_IF || !access_cond_python(A, r[i].cond) || !access_cond_host(A, r[i].cond, "a", "g")))
            return false;
    /* under runtime conditions: launch guards (the launcher and the interpreter refuse a
     * launch that breaks one) */
    for (int i = 0; i < 2; i++)
        if (r[i].v == ACC_PROVEN_IF) {
            const char *root = ad->fw->vals.v[ad->fw->params[x->root - 1]].name;
            FuncGuard g = {A, r[i].cond, y->store->loc,
                           arena_printf(ad->a, "stores to output '%s' at lines %d and %d: the backward is right only "
                                               "when they never write one element, which needs %s; this launch "
                                               "breaks it",
                                        root ? root : "?", x->store->loc.line, y->store->loc.line,
                                        access_cond_python(A, r[i].cond))};
            vec_push(ad->a, ad->guards, g);
        }
    return true;
}

/* Does the later of two stores overwrite the earlier one exactly where it
 * writes: the same block (both run, in program order, in the same
 * iteration) and the same pointer value (the same addresses, lane by
 * lane)?  Then the output keeps the later store's lanes, and the earlier
 * store's value reaches it only on the lanes the later one masks off
 * (adj_store).  Equal addresses computed by different values are not
 * recognised: they might as well differ, and the last write would be
 * unknown. */
static bool sites_overwrite(const StoreSite *x, const StoreSite *y)
{
    return x->block == y->block && x->store->args[0] == y->store->args[0];
}

bool ad_store_overwritten(const Block *b, int k)
{
    const Inst *st = &b->insts.v[k];
    for (int j = k + 1; j < b->insts.n; j++) {
        const Inst *o = &b->insts.v[j];
        if (o->op == OP_STORE && o->args[0] == st->args[0] && !(o->flags & IF_HAS_MASK))
            return true;
    }
    return false;
}

/* Where a block sits: the instruction (index i of block b) whose region it
 * is, and where that block sits in turn (NULL for the kernel's body). */
typedef struct BlockPos {
    const Block *b;
    int i;
    const struct BlockPos *up;
} BlockPos;

/* A store or atomic into buffer root r among insts [from, to) of b, in
 * their regions too: the first one, or NULL. */
static const Inst *store_into(const Ad *ad, const Block *b, int from, int to, int r)
{
    for (int j = from; j < to; j++) {
        const Inst *o = &b->insts.v[j];
        if (op_writes_memory(o->op) && ad->root[o->args[0]] == r)
            return o;
        for (int k = 0; k < o->nregions; k++) {
            const Inst *s = store_into(ad, o->regions[k], 0, o->regions[k]->insts.n, r);
            if (s)
                return s;
        }
    }
    return NULL;
}

/* Are a and b the same value: one ValId, or results of the same pure
 * instruction (op, attributes, type) on the same values, recursively?  A
 * pointer recomputed inside an `if` region (`x_ptr + offs` written again
 * there) is then the pointer computed outside it. */
static bool same_value(const Ad *ad, ValId a, ValId b, int depth)
{
    if (a == b)
        return true;
    if (!a || !b || depth > 32)
        return false;
    const Inst *x = ad->def[a], *y = ad->def[b];
    if (!x || !y || x->op != y->op || !op_info[x->op].pure || x->nregions || y->nregions || x->nres != 1 ||
        y->nres != 1 || x->flags != y->flags || x->ival != y->ival || x->nargs != y->nargs ||
        x->nints != y->nints || memcmp(&x->fval, &y->fval, sizeof x->fval) ||
        memcmp(x->ints, y->ints, sizeof x->ints[0] * (size_t)x->nints) || (x->sattr != NULL) != (y->sattr != NULL) ||
        (x->sattr && strcmp(x->sattr, y->sattr)) || !type_eq(ad->fw->vals.v[a].ty, ad->fw->vals.v[b].ty))
        return false;
    for (int k = 0; k < x->nargs; k++)
        if (!same_value(ad, x->args[k], y->args[k], depth + 1))
            return false;
    return true;
}

/* A store through pointer p under mask m (or none) at the top level of b
 * after index i: it runs whenever instruction i does.  exact: the same
 * ValIds (the load's block), else the same values (an enclosing block). */
static bool matching_store_after(const Ad *ad, const Block *b, int i, ValId p, ValId m, bool exact)
{
    for (int j = i + 1; j < b->insts.n; j++) {
        const Inst *o = &b->insts.v[j];
        if (o->op != OP_STORE)
            continue;
        bool same_p = exact ? o->args[0] == p : same_value(ad, o->args[0], p, 0);
        bool same_m = !(o->flags & IF_HAS_MASK) || (exact ? o->args[2] == m : same_value(ad, o->args[2], m, 0));
        if (same_p && same_m)
            return true;
    }
    return false;
}

/* A load from a buffer updated in place must read the value before the
 * launch: the backward recomputes it from the buffer the caller passes,
 * which holds that value.  Sufficient condition (docs/AD.md, "In-place
 * buffers"): a later store goes through the same pointer value under the
 * same mask (or none) whenever the load runs -- in the load's block, or,
 * for a load in a region of runtime `if`s (no loop between), in an
 * enclosing block after that `if` -- and no store into the buffer comes
 * before the load (in its block, the blocks enclosing it, or their earlier
 * regions).  Then each element the load reads is written by the same lane
 * of the same program, after the read; any other writer of it would race
 * with that store in the forward.  Atomics into the buffer are refused:
 * their order decides what a load reads. */
static void validate_inplace_load(Ad *ad, const Block *b, int i, const BlockPos *up)
{
    const Inst *ld = &b->insts.v[i];
    ValId p = ld->args[0], m = ld->flags & IF_HAS_MASK ? ld->args[1] : 0;
    int r = ad->root[p];
    if (ad->first_atomic[r - 1]) {
        diag_error(ad->d, ld->loc,
                   "load from '%s', which the kernel updates in place and also atomically adds to "
                   "(line %d): what the load reads depends on the order of the programs",
                   root_name(ad, p), ad->first_atomic[r - 1]->loc.line);
        return;
    }
    /* stores before the load, on the way out to the block of the matching store */
    const Block *cb = b;
    int ci = i;
    const BlockPos *pos = up;
    for (;;) {
        const Inst *o = store_into(ad, cb, 0, ci, r);
        if (o) {
            diag_error(ad->d, ld->loc,
                       "the kernel reads an element of '%s' after writing it (line %d): kad "
                       "differentiates in-place updates only where every load reads the value "
                       "before the launch",
                       root_name(ad, p), o->loc.line);
            return;
        }
        if (matching_store_after(ad, cb, ci, p, m, cb == b))
            return;
        if (!pos || pos->b->insts.v[pos->i].op != OP_IF)
            break;
        cb = pos->b;
        ci = pos->i;
        pos = pos->up;
    }
    diag_error(ad->d, ld->loc,
               "load from '%s', which the kernel updates in place: kad cannot prove that it reads "
               "the value before the launch (the kernel might read an element after writing it "
               "through another lane or program); it can when a later tl.store writes through the "
               "same pointer value, under the same mask or none, in the load's block or, for a load "
               "inside runtime `if`s, after them in a block enclosing them",
               root_name(ad, p));
}

/* Do roots x and y share a candidate parameter? */
static bool roots_meet(const Ad *ad, int x, int y)
{
    for (int p = 0; p < ad->fw->nparams; p++)
        if (root_has(ad, x, p) && root_has(ad, y, p))
            return true;
    return false;
}

/* A load, store or atomic_add through a pointer selected among several
 * parameters (docs/AD.md, "Pointers selected among parameters"): the
 * checks of a single parameter apply to every candidate, and the
 * differentiated ones must share one role (the shadow is the same
 * selection over their gradients; the lanes of a candidate without one
 * are masked off).  In-place buffers are refused: their loads are proven
 * to read the pre-launch value through their own stores.  False after an
 * error. */
static bool validate_set_access(Ad *ad, const Inst *in)
{
    ValId p = in->args[0];
    const char *what = in->op == OP_LOAD ? "load" : in->op == OP_STORE ? "store" : "atomic_add";
    const char *names = root_name(ad, p);
    int role = AD_ROLE_NONE;
    Type pt = fw_ty(ad, p);
    for (int q = 0; q < ad->fw->nparams; q++) {
        if (!ad_root_has(ad, p, q))
            continue;
        int rq = ad->role[q];
        const char *why = NULL;
        if (rq == AD_ROLE_INOUT)
            why = "is updated in place (named both as an input and as an output); kad differentiates "
                  "the loads of an in-place buffer only through pointers derived from it alone";
        else if (in->op == OP_LOAD && rq == AD_ROLE_OUT)
            why = "is a differentiated output, which must only be written";
        else if (in->op == OP_LOAD && rq == AD_ROLE_NONE && ad->stored[q])
            why = "is also written by the kernel: the backward kernel drops stores, so this load "
                  "would read different data";
        else if (in->op != OP_LOAD && rq == AD_ROLE_IN)
            why = "is a differentiated input, which must only be read";
        else if (rq != AD_ROLE_NONE && role != AD_ROLE_NONE && rq != role)
            why = "does not share the role of the other differentiated candidates";
        else if (fw_ty(ad, ad->fw->params[q]).elem != pt.elem)
            why = "has another element type";
        if (why) {
            diag_error(ad->d, in->loc, "cannot differentiate a %s through a pointer selected among '%s': '%s' %s",
                       what, names, param_name(ad, q), why);
            return false;
        }
        if (rq != AD_ROLE_NONE)
            role = rq;
    }
    return true;
}

/* A pointer selected among differentiated and non-differentiated
 * parameters carries, next to its shadow, which lanes have one (Ad.vm);
 * region ops do not carry that mask: such a pointer must not be an `if`'s
 * result or a loop-carried value.  vs: the values carrying in's slots. */
static void validate_carried(Ad *ad, const Inst *in, const ValId *vs)
{
    for (int k = 0; k < in->nres; k++) {
        ValId v = vs[k];
        int r = ad->root[v];
        if (r > ROOT_SET(0) || ad_root_role(ad, v) == AD_ROLE_NONE)
            continue;
        for (int q = 0; q < ad->fw->nparams; q++)
            if (root_has(ad, r, q) && ad->role[q] == AD_ROLE_NONE) {
                diag_error(ad->d, in->loc,
                           "pointer '%s' is selected among '%s', of which '%s' is not differentiated, and "
                           "carried out of this %s: not supported (select it with tl.where where it is used)",
                           display(ad, v, in->res[k]), root_name(ad, v), param_name(ad, q),
                           in->op == OP_IF ? "`if`" : "loop");
                break;
            }
    }
}


/* path/npath: the enclosing ifs (for StoreSite); loop: the innermost
 * enclosing loop, loop_depth: how many loops enclose b. */
static void validate_block(Ad *ad, const Block *b, int loop_depth, const Inst *loop, const IfStep *path,
                           int npath, SiteVec *sites, const BlockPos *up)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        OpKind op = (OpKind)in->op;
        BlockPos here = {b, i, up};
        switch (op) {
        case OP_LOAD: {
            ValId p = in->args[0];
            int r = ad->root[p];
            /* NaN lanes meet zero adjoints in the backward's products and sums (0 * NaN) */
            if ((in->flags & IF_HAS_OTHER) && ad->useful[in->res[0]] && nan_const(ad, in->args[2]))
                diag_error(ad->d, in->loc,
                           "cannot differentiate through a load whose masked-off lanes are NaN "
                           "(other=nan, padding_option=\"nan\"): the backward would multiply their "
                           "zero adjoints by NaN; use other=0 or padding_option=\"zero\"");
            if (r == ROOT_AMBIG)
                diag_error(ad->d, in->loc,
                           "cannot differentiate a load through a pointer of ambiguous provenance "
                           "(read from memory, or converted)");
            else if (r <= ROOT_SET(0))
                validate_set_access(ad, in);
            else if (r > 0 && ad->role[r - 1] == AD_ROLE_OUT)
                diag_error(ad->d, in->loc,
                           "load from output '%s': a differentiated output must only be written (a "
                           "buffer the kernel updates in place is named both as an input and as an "
                           "output)",
                           root_name(ad, p));
            else if (r > 0 && ad->role[r - 1] == AD_ROLE_INOUT)
                validate_inplace_load(ad, b, i, up);
            else if (r > 0 && ad->stored[r - 1] && ad->role[r - 1] == AD_ROLE_NONE)
                diag_error(ad->d, in->loc,
                           "load from '%s', which the kernel also writes: the backward kernel drops "
                           "stores, so this load would read different data",
                           root_name(ad, p));
            break;
        }
        case OP_STORE:
        case OP_ATOMIC_ADD:
        case OP_ATOMIC_MAX:
        case OP_ATOMIC_MIN:
        case OP_ATOMIC_XCHG: {
            ValId p = in->args[0];
            int r = ad->root[p];
            const char *what = op_info[op].name;
            if (r == ROOT_AMBIG) {
                diag_error(ad->d, in->loc,
                           "cannot differentiate a %s through a pointer of ambiguous provenance "
                           "(read from memory, or converted)", what);
                break;
            }
            if (r <= ROOT_SET(0) && !validate_set_access(ad, in))
                break;
            int role = ad_root_role(ad, p);
            if (role == AD_ROLE_IN) {
                diag_error(ad->d, in->loc, "%s to differentiated input '%s': inputs must only be read",
                           what, root_name(ad, p));
            } else if (ad_role_writes(role) && op != OP_STORE && op != OP_ATOMIC_ADD) {
                /* out = max(out, v) over every program: the gradient reaches the value that won,
                 * which only the final contents of the output tell */
                diag_error(ad->d, in->loc,
                           "%s into differentiated output '%s': the gradient would reach the one value "
                           "(of every program's) that the output kept; not supported. An amax or a "
                           "counter is usually not differentiated: leave '%s' out of outputs=[...] "
                           "(its writes then stay in the forward and are dropped from the backward)",
                           what, root_name(ad, p), root_name(ad, p));
            } else if (ad_role_writes(role) && op == OP_ATOMIC_ADD) {
                /* out += v is linear: dv = d_out at the same addresses, from any
                 * site, iteration or program.  Mixed with a store, the order of
                 * the writes would decide what reaches the output. */
                const Inst *st = NULL;
                for (int q = 0; q < ad->fw->nparams && !st; q++)
                    if (root_has(ad, r, q) && ad_role_writes(ad->role[q]))
                        st = ad->first_store[q];
                if (st)
                    diag_error(ad->d, in->loc,
                               "output '%s' is both stored (line %d) and atomically added to; not "
                               "supported (the gradient would depend on the order of the writes)",
                               root_name(ad, p), st->loc.line);
                if (ad->nuses[in->res[0]] > 0)
                    diag_error(ad->d, in->loc,
                               "the result of atomic_add on output '%s' is used: the old value depends "
                               "on the order of the programs and cannot be differentiated",
                               root_name(ad, p));
            } else if (ad_role_writes(role)) {
                StoreSite site = {in, b, r, path, npath, loop_depth};
                for (int k = 0; k < sites->n; k++) {
                    const StoreSite *o = &sites->v[k];
                    if (!roots_meet(ad, o->root, r) || sites_overwrite(o, &site) ||
                        (!o->loop_depth && !loop_depth && sites_exclusive(o, &site)) ||
                        sites_disjoint(ad, o, &site))
                        continue;
                    if (r > 0 && o->root == r) {
                        /* the later store wins where they meet, whatever their addresses: the
                         * backward's reverse sweep reads each store's gradient and clears it
                         * (adj_store), so the earlier store then reads zeros there.  In loops,
                         * the loops around the later store run backwards, so that its
                         * iterations and the earlier store's in a loop they share are visited
                         * last write first (a loop around the earlier store alone needs that
                         * only if its own iterations repeat an element: check_loop_store) */
                        ad->cleared[r - 1] = 1;
                        if (loop_depth || o->loop_depth)
                            need_reverse(ad, in);
                        continue;
                    }
                    diag_error(ad->d, in->loc,
                               "output '%s' is stored at more than one site (first at line %d), in "
                               "loops, and kad cannot tell which write is the last (it can for stores "
                               "outside loops, stores in loops that provably never write one element, "
                               "and stores through the same pointer value in one block)",
                               root_name(ad, p), o->store->loc.line);
                    break;
                }
                vec_push(ad->a, *sites, site);
                if (loop_depth > 0)
                    check_loop_store(ad, in, p);
                if (same_address_lanes(ad, p))
                    diag_error(ad->d, in->loc,
                               "every lane of this store writes the same address of output '%s'; "
                               "store a scalar instead", root_name(ad, p));
            } else if (op != OP_STORE && ad->nuses[in->res[0]] > 0) {
                diag_error(ad->d, in->loc,
                           "the result of %s is used: the backward kernel drops atomics on "
                           "scratch buffers, so it cannot recompute it", what);
            }
            break;
        }
        case OP_BITCAST:
            if (ad->varied[in->args[0]] && ad->useful[in->res[0]])
                diag_error(ad->d, in->loc, "cannot differentiate through 'bitcast' of a differentiated value");
            break;
        case OP_FOR: {
            const Block *r = in->regions[0];
            validate_carried(ad, in, r->params + 1);
            /* linear accumulators keep the forward-running adjoint loop; any
             * other differentiated carried value puts the loop on a tape */
            uint8_t *lin = arena_alloc(ad->a, (size_t)in->nres + 1);
            bool tape = false;
            for (int k = 0; k < in->nres; k++) {
                ValId c = r->params[1 + k];
                if (ad_active(ad, c) || ad_active(ad, in->res[k])) {
                    lin[k] = ad_carried_chain(ad, r, k, linear_link);
                    tape |= !lin[k];
                }
            }
            /* a store under it whose writes the iterations order (need_reverse): the reverse
             * sweep visits the iterations backwards, on a tape; planned after the body (at the
             * loop's place in the tapes' order) */
            int at = ad->tapes.n, nrev = ad->nrev;
            validate_block(ad, r, loop_depth + 1, in, path, npath, sites, &here);
            if (tape || ad->nrev > nrev)
                ad_tape_plan(ad, in, lin, ad->nrev > nrev ? ad->rev_store : NULL, at);
            break;
        }
        case OP_WHILE: {
            const Block *c = in->regions[0];
            validate_carried(ad, in, c->params);
            /* any differentiated carried value puts a `while` on a tape (its adjoint loop runs
             * backwards over the iterations the primal sweep counted) */
            bool tape = false;
            for (int k = 0; k < in->nres; k++)
                tape |= ad_active(ad, c->params[k]) || ad_active(ad, in->regions[1]->params[k]) ||
                        ad_active(ad, in->res[k]);
            int at = ad->tapes.n, nrev = ad->nrev;
            validate_block(ad, c, loop_depth + 1, NULL, path, npath, sites, &here); /* no stores in a condition */
            validate_block(ad, in->regions[1], loop_depth + 1, in, path, npath, sites, &here);
            if (tape || ad->nrev > nrev)
                ad_tape_plan_while(ad, in, ad->nrev > nrev ? ad->rev_store : NULL, at);
            break;
        }
        case OP_IF:
            validate_carried(ad, in, in->res);
            for (int r = 0; r < 2; r++) {
                IfStep *np = arena_alloc(ad->a, sizeof *np * (size_t)(npath + 1));
                if (npath)
                    memcpy(np, path, sizeof *np * (size_t)npath);
                np[npath] = (IfStep){in, r};
                validate_block(ad, in->regions[r], loop_depth, loop, np, npath + 1, sites, &here);
            }
            break;
        case OP_CUSTOM_JVP: {
            /* operand 0 is the helper's automatic result unless the helper also has a vjp rule
             * (sema puts its custom_vjp right before); the automatic adjoint would disagree with the
             * jvp rule */
            bool vjp = false;
            for (int j = i - 1; j >= 0 && !vjp; j--)
                vjp = b->insts.v[j].op == OP_CUSTOM_VJP && b->insts.v[j].res[0] == in->args[0];
            if (!vjp && ad_active(ad, in->res[0]))
                diag_error(ad->d, in->loc, "this helper call has a custom jvp rule (@kad.jvp_of) but no vjp rule: "
                           "reverse mode needs a @kad.vjp_of rule for the helper (its automatic adjoint would "
                           "disagree with the jvp rule)");
            break;
        }
        case OP_SCAN: {
            bool act = false;
            for (int k = 0; k < in->nres; k++)
                act = act || ad_active(ad, in->res[k]);
            if (!act || ad_scan_kind(ad->fw, in) != SCAN_OTHER)
                break;
            const Block *r = in->regions[0]; /* the general rule: the combine's adjoint rules, lane by lane */
            for (int j = 0; j + 1 < r->insts.n; j++) {
                const Inst *c = &r->insts.v[j];
                OpKind cop = (OpKind)c->op;
                if (c->nres != 1 || !ad_active(ad, c->res[0]) || !op_differentiable(cop))
                    continue;
                if (!has_rule(cop) || (!op_info[cop].elementwise && cop != OP_CONST))
                    diag_error(ad->d, c->loc, "cannot differentiate this tl.associative_scan: its combine "
                               "function uses '%s', for which kad has no elementwise adjoint rule (the scan's "
                               "gradient differentiates the combine function)", op_info[cop].name);
            }
            break;
        }
        case OP_REDUCE: {
            bool act = false;
            for (int k = 0; k < in->nres; k++)
                act = act || ad_active(ad, in->res[k]);
            const Block *r = in->regions[0];
            for (int j = 0; act && j + 1 < r->insts.n; j++) {
                const Inst *c = &r->insts.v[j];
                OpKind cop = (OpKind)c->op;
                if (c->nres != 1 || !ad_active(ad, c->res[0]))
                    continue;
                if (!op_differentiable(cop))
                    continue;
                if (!has_rule(cop) || (!op_info[cop].elementwise && cop != OP_CONST))
                    diag_error(ad->d, c->loc, "cannot differentiate this tl.reduce: its combine function uses "
                               "'%s', for which kad has no elementwise adjoint rule (the reduce's gradient "
                               "differentiates the combine function)", op_info[cop].name);
            }
            break;
        }
        default:
            if ((op == OP_GATHER || op == OP_SORT) && ad_active(ad, in->res[0]) &&
                fw_ty(ad, in->args[0]).rank >= KAD_MAX_RANK)
                diag_error(ad->d, in->loc, "cannot differentiate '%s' of a rank-%d tile: its adjoint works on a "
                           "tile with one more axis and kad's tiles have at most %d", op_info[op].name,
                           KAD_MAX_RANK, KAD_MAX_RANK);
            if (op_differentiable(op) && !has_rule(op) && in->nres == 1 && ad_active(ad, in->res[0]))
                diag_error(ad->d, in->loc, "no adjoint rule for '%s'", op_info[op].name);
            break;
        }
    }
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
        if (root_has(ad, root, i) || root == ROOT_AMBIG)
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
