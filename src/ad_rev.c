/* ad_rev.c -- reverse-mode automatic differentiation of the tile IR.
 *
 * Job: from a forward kernel `fwd` and the names of its differentiated
 * inputs (read-only pointer params) and outputs (write-only pointer params),
 * build the backward kernel as IR (docs/AD.md has the full contract):
 *
 *   kernel @k_bwd(<fwd params>, %d_y_ptr..., %d_x_ptr...) {
 *     <primal sweep: fwd's body with every store removed, plus shadow
 *      pointers into the gradient buffers>
 *     <adjoint sweep: fwd's instructions walked backwards>
 *   }
 *
 * Nothing from the forward goes through memory: the primal sweep recomputes
 * every value in registers ("recompute in kernel", AD-NOTES.md).  A region
 * (if/for/while) is handled by recomputing its primal body inside the
 * adjoint region, so a value is always available in the scope where its
 * adjoint rule needs it.
 *
 * Stages of ad_reverse:
 *   1. analysis (fixpoint over the whole kernel): pointer provenance (which
 *      parameter each pointer derives from), "varied" (depends on a
 *      differentiated input), "useful" (reaches a differentiated output);
 *      active = varied and useful and float.  Only active values get
 *      adjoints, so no dead gradient code is emitted.
 *   2. validation: every construct AD cannot handle exactly is refused with
 *      an error at the instruction's Loc (stores to inputs, loads from
 *      outputs, ambiguous pointers, non-linear loop-carried values, ...).
 *      Emission starts only when validation found nothing.  Before it,
 *      maxima the outputs provably do not depend on (softmax's x - max(x))
 *      are made inactive: their adjoint is zero exactly (2b).
 *   3. emission: the primal sweep (clone_block), then the adjoint sweep
 *      (adj_block), whose per-op rules all sit in adj_rule.  Contributions
 *      to one value from one op are summed before they are accumulated
 *      (x * x: (d * x) * 2), and loads through one pointer and mask in one
 *      block share one atomic_add.
 *
 * Requires: a verified fwd.  Guarantees: the result is a new Func in `a`
 * (fwd is not modified) that verifies; or NULL with located errors.
 * Adjoints of fp16/bf16 values are carried in fp32 (adt()); every adjoint
 * value is named after its primal (`x` -> `dx`), shadow pointers `d_` +
 * name.
 */
#include <math.h>
#include <string.h>

#include "kad_int.h"

/* ln 2 and 2/sqrt(pi), spelled out: M_LN2 and M_2_SQRTPI are not C11. */
#define AD_LN2 0.69314718055994530942
#define AD_2_SQRTPI 1.12837916709551257390

/* What a pointer parameter is to AD. */
enum { ROLE_NONE, ROLE_IN, ROLE_OUT };

/* Provenance lattice per value: 0 unknown / not a pointer, p+1 derives
 * from parameter p, ROOT_AMBIG from several (or from memory). */
#define ROOT_AMBIG (-1)

typedef Vec(ValId) ValVec;

/* Where a store to an output sits: its `if` nesting, so that two stores in
 * the two branches of one `if` are known to be mutually exclusive. */
typedef struct IfStep {
    const Inst *inst; /* an enclosing `if` */
    int region;       /* 0: then, 1: else */
} IfStep;
typedef struct StoreSite {
    const Inst *store;
    int param;          /* fw param index of the output */
    const IfStep *path; /* enclosing ifs, outermost first */
    int npath;
    int loop_depth;
} StoreSite;

typedef struct Ad {
    Arena *a;
    Diags *d;
    const Func *fw;
    Func *bw;
    const AdSpec *spec;
    int nvals;           /* fw->vals.n: size of the per-value arrays */
    int *role;           /* by fw param index: ROLE_* */
    int *root;           /* by fw ValId: provenance (see ROOT_AMBIG) */
    uint8_t *varied;     /* by fw ValId: depends on a differentiated input */
    uint8_t *useful;     /* by fw ValId: reaches a differentiated output */
    uint8_t *chain;      /* by fw ValId: on a loop's linear-accumulator chain */
    int *nuses;          /* by fw ValId: operand uses anywhere */
    const Inst **def;    /* by fw ValId: defining instruction (NULL: param) */
    uint8_t *stored;     /* by fw param index: some store/atomic writes through it */
    const Inst **first_store;  /* by fw param index: the first tl.store through it, or NULL */
    const Inst **first_atomic; /* by fw param index: the first atomic_add through it, or NULL */
    Vec(struct StoreSite) sites; /* stores to outputs seen so far (validation) */
    ValId *pm;           /* fw value -> its primal copy in the current bw scope */
    ValId *sm;           /* fw pointer -> its shadow (gradient-buffer pointer) */
    ValId *adj;          /* fw value -> accumulated adjoint (0 = zero so far) */
    ValId *grad;         /* by fw param index: its gradient param in bw, or 0 */
    int *stamp, *seen;   /* scratch marks for collect_outside */
    int gen;             /* generation for stamp/seen */
    bool changed;        /* analysis fixpoint: something changed this round */
} Ad;

/* ------------------------------------------------------------------ */
/* Small helpers                                                       */
/* ------------------------------------------------------------------ */

static Type fty(const Ad *ad, ValId v) { return ad->fw->vals.v[v].ty; }
static Type bty(const Ad *ad, ValId v) { return ad->bw->vals.v[v].ty; }
static const char *fname(const Ad *ad, ValId v) { return ad->fw->vals.v[v].name; }

static bool is_float_type(Type t) { return t.dt != DT_PTR && dtype_is_float((Dtype)t.dt); }

static bool active(const Ad *ad, ValId v)
{
    return v > 0 && ad->varied[v] && ad->useful[v] && is_float_type(fty(ad, v));
}

static int root_role(const Ad *ad, ValId v)
{
    int r = ad->root[v];
    return r > 0 ? ad->role[r - 1] : ROLE_NONE;
}

/* A pointer into a differentiated buffer: it gets a shadow. */
static bool needs_shadow(const Ad *ad, ValId v)
{
    return fty(ad, v).dt == DT_PTR && root_role(ad, v) != ROLE_NONE;
}

static const char *root_name(const Ad *ad, ValId v)
{
    int r = ad->root[v];
    if (r <= 0)
        return "?";
    const char *n = fname(ad, ad->fw->params[r - 1]);
    return n ? n : "?";
}

/* The adjoint dtype: fp16/bf16 adjoints accumulate in fp32. */
static Type adt(Type t)
{
    if (t.dt == DT_F16 || t.dt == DT_BF16)
        t.dt = DT_F32;
    return t;
}

/* Names a bw value after a fw value, with a prefix ("d", "d_"), unless it
 * already has a name. */
static void name_after(Ad *ad, ValId bv, const char *prefix, ValId fv)
{
    const char *n = fv ? fname(ad, fv) : NULL;
    if (!bv || ad->bw->vals.v[bv].name || !n)
        return;
    ad->bw->vals.v[bv].name = arena_printf(ad->a, "%s%s", prefix, n);
}

/* How a value is called in messages. */
static const char *display(const Ad *ad, ValId v, ValId alt)
{
    const char *n = fname(ad, v);
    if (!n && alt)
        n = fname(ad, alt);
    return n ? n : arena_printf(ad->a, "#%d", (int)v);
}

static const Inst *block_term(const Block *b)
{
    return b->insts.n ? &b->insts.v[b->insts.n - 1] : NULL;
}

int ad_mutation_by_name(const char *name)
{
    static const char *const names[] = {"none", "exp", "mul", "max", "where", "cumsum"};
    for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
        if (name && !strcmp(name, names[i]))
            return i;
    return -1;
}

int ad_split_names(Arena *a, const char *s, const char ***out)
{
    Vec(const char *) v = {0};
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        const char *p = s, *q = s + n;
        while (p < q && (*p == ' ' || *p == '\t'))
            p++;
        while (q > p && (q[-1] == ' ' || q[-1] == '\t'))
            q--;
        if (q > p)
            vec_push(a, v, arena_strndup(a, p, (size_t)(q - p)));
        s = e ? e + 1 : NULL;
    }
    *out = v.v;
    return v.n;
}

/* ------------------------------------------------------------------ */
/* 1. Analysis: provenance, varied, useful                             */
/* ------------------------------------------------------------------ */

static void join_root(Ad *ad, ValId v, int r)
{
    int old = ad->root[v];
    int nw = old == 0 ? r : (r == 0 || r == old) ? old : ROOT_AMBIG;
    if (nw != old) {
        ad->root[v] = nw;
        ad->changed = true;
    }
}

static void set_flag(Ad *ad, uint8_t *arr, ValId v, bool on)
{
    if (on && v > 0 && !arr[v]) {
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
        const Inst *y = block_term(r);
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
        const Inst *y = block_term(body);
        for (int i = 0; i < in->nres; i++) {
            flow(ad, c->params[i], y->args[i]);
            flow(ad, in->res[i], c->params[i]);
        }
        return;
    }
    case OP_IF:
        for (int r = 0; r < 2; r++) {
            forward_block(ad, in->regions[r]);
            const Inst *y = block_term(in->regions[r]);
            for (int i = 0; i < in->nres; i++)
                flow(ad, in->res[i], y->args[i]);
        }
        return;
    case OP_LOAD: {
        ValId res = in->res[0];
        if (fty(ad, res).dt == DT_PTR) {
            join_root(ad, res, ROOT_AMBIG); /* a pointer read from memory */
            return;
        }
        bool v = root_role(ad, in->args[0]) == ROLE_IN && is_float_type(fty(ad, res));
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
    if (fty(ad, res).dt == DT_PTR) {
        if (is_ptr_shape_op(op))
            join_root(ad, res, ad->root[in->args[0]]);
        else if (op == OP_WHERE) {
            join_root(ad, res, ad->root[in->args[1]]);
            join_root(ad, res, ad->root[in->args[2]]);
        } else
            join_root(ad, res, ROOT_AMBIG); /* bitcast or anything else: unknown */
        return;
    }
    if (op_info[op].diff == 'D' && is_float_type(fty(ad, res))) {
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
        if (root_role(ad, in->args[0]) == ROLE_OUT)
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
                ValId t[4] = {in->res[i], r->params[1 + i], in->args[3 + i], block_term(r)->args[i]};
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
                              block_term(body)->args[i]};
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
            const Inst *y = block_term(in->regions[r]);
            for (int i = 0; i < in->nres; i++)
                set_flag(ad, ad->useful, y->args[i], ad->useful[in->res[i]]);
            backward_block(ad, in->regions[r]);
        }
        return;
    default:
        break;
    }
    if (op_info[op].diff == 'D' && in->nres == 1 && ad->useful[in->res[0]])
        for (int i = 0; i < in->nargs; i++)
            set_flag(ad, ad->useful, in->args[i], true);
}

static void backward_block(Ad *ad, const Block *b)
{
    for (int i = b->insts.n - 1; i >= 0; i--)
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
        if ((in->op == OP_STORE || in->op == OP_ATOMIC_ADD) && ad->root[in->args[0]] > 0) {
            int p = ad->root[in->args[0]] - 1;
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
        if (fty(ad, p).dt == DT_PTR)
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
/* 2. Validation                                                       */
/* ------------------------------------------------------------------ */

/* Does b (or a region nested in it) use v? */
static bool block_uses(const Block *b, ValId v)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++)
            if (in->args[k] == v)
                return true;
        for (int r = 0; r < in->nregions; r++)
            if (block_uses(in->regions[r], v))
                return true;
    }
    return false;
}

/* Is carried slot i of a for body a linear accumulator?  The carried value
 * must flow through a chain of single-use ops -- add (either side), sub
 * (left side), dot/fma (accumulator operand) -- into the yield at position
 * i, and be used nowhere else.  Then its adjoint is the same in every
 * iteration and the other operands of the chain cannot depend on it.
 * Marks the chain's values in ad->chain. */
static bool linear_chain(Ad *ad, const Block *body, int i)
{
    ValId cur = body->params[1 + i];
    for (;;) {
        const Inst *use = NULL;
        int nuse = 0, pos = -1;
        for (int k = 0; k < body->insts.n; k++) {
            const Inst *in = &body->insts.v[k];
            for (int j = 0; j < in->nargs; j++)
                if (in->args[j] == cur) {
                    nuse++;
                    use = in;
                    pos = j;
                }
            for (int r = 0; r < in->nregions; r++)
                if (block_uses(in->regions[r], cur))
                    return false;
        }
        if (nuse != 1)
            return false;
        switch (use->op) {
        case OP_YIELD:
            return pos == i;
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
        if (!type_eq(fty(ad, use->res[0]), fty(ad, cur)))
            return false;
        ad->chain[use->res[0]] = 1;
        cur = use->res[0];
    }
}

static bool has_rule(OpKind op)
{
    return op_info[op].diff == 'D' && op != OP_CUMPROD;
}

/* Stamps every value defined in b (regions included) with id. */
static void mark_defs(Ad *ad, const Block *b, int id)
{
    for (int i = 0; i < b->nparams; i++)
        ad->stamp[b->params[i]] = id;
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nres; k++)
            ad->stamp[in->res[k]] = id;
        for (int r = 0; r < in->nregions; r++)
            mark_defs(ad, in->regions[r], id);
    }
}

/* Stores inside a loop.  The adjoint adds d_y[address] into the stored
 * value once per iteration, which is right only if no two iterations write
 * the same address (else the last write wins and only it may get the
 * gradient).  Proof used: the store's element offset is
 *     civ * iv + lane + invariant,   lane in [lo, hi]
 * (iv the loop's induction variable, invariant defined outside the loop)
 * and the loop's step is a constant with |civ * step| > hi - lo: the
 * address ranges of two iterations are then disjoint.  This covers the
 * chunked sweeps `for start in range(0, N, BLOCK): ... start +
 * tl.arange(0, BLOCK)`. */
typedef struct Aff {
    int64_t civ, lo, hi;
} Aff;

#define AFF_LIMIT ((int64_t)1 << 40) /* beyond this, give up (no overflow) */

/* The integer constant v (through broadcasts), if it is one. */
static bool const_int(const Ad *ad, ValId v, int64_t *k)
{
    for (const Inst *in = ad->def[v]; in; in = ad->def[in->args[0]]) {
        if (in->op == OP_CONST && !is_float_type(fty(ad, v))) {
            *k = in->ival;
            return true;
        }
        if (in->op != OP_BROADCAST && in->op != OP_EXPAND_DIMS)
            return false;
    }
    return false;
}

/* v as an Aff; values not defined in the loop (stamp != id) are invariant. */
static bool aff_of(const Ad *ad, ValId v, ValId iv, int id, Aff *out, int depth)
{
    *out = (Aff){0, 0, 0};
    if (v == iv) {
        out->civ = 1;
        return true;
    }
    if (ad->stamp[v] != id)
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
        out->hi = in->ival + fty(ad, v).shape[0] - 1;
        return true;
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
    case OP_MULTIPLE_OF:
    case OP_MAX_CONTIGUOUS:
        return aff_of(ad, in->args[0], iv, id, out, depth + 1);
    case OP_CAST:
        if (dtype_is_float((Dtype)fty(ad, in->args[0]).dt) ||
            dtype_bits((Dtype)fty(ad, v).dt) < dtype_bits((Dtype)fty(ad, in->args[0]).dt))
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

/* A loop-invariant integer known to be >= *lb >= 1: a positive constant,
 * num_programs (a grid has at least one program per axis), and sums and
 * products of such values.  Grid-stride loops step by
 * `tl.num_programs(0) * BLOCK`. */
static bool positive_lb(const Ad *ad, ValId v, int64_t *lb, int depth)
{
    const Inst *in = ad->def[v];
    int64_t a, b;
    if (!in || depth > 32 || is_float_type(fty(ad, v)) || fty(ad, v).dt == DT_PTR)
        return false;
    switch (in->op) {
    case OP_CONST:
        *lb = in->ival;
        return in->ival >= 1 && in->ival < AFF_LIMIT;
    case OP_NUM_PROGRAMS:
        *lb = 1;
        return true;
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_MULTIPLE_OF:
    case OP_MAX_CONTIGUOUS:
        return positive_lb(ad, in->args[0], lb, depth + 1);
    case OP_CAST: /* integer widening keeps the value */
        if (dtype_is_float((Dtype)fty(ad, in->args[0]).dt) ||
            dtype_bits((Dtype)fty(ad, v).dt) < dtype_bits((Dtype)fty(ad, in->args[0]).dt))
            return false;
        return positive_lb(ad, in->args[0], lb, depth + 1);
    case OP_ADD:
    case OP_MUL:
        if (!positive_lb(ad, in->args[0], &a, depth + 1) || !positive_lb(ad, in->args[1], &b, depth + 1))
            return false;
        *lb = in->op == OP_ADD ? a + b : a * b;
        return *lb < AFF_LIMIT;
    default:
        return false;
    }
}

/* Is the carried slot whose region parameter is `cur` advanced by a
 * positive amount each iteration (`next = cur + inc`)?  Sets *lb to a lower
 * bound of inc.  positive_lb only accepts values built from constants and
 * num_programs, so inc is the same in every iteration even when it is
 * computed inside the loop. */
static bool counter_step(const Ad *ad, ValId cur, ValId next, int64_t *lb)
{
    const Inst *in = ad->def[next];
    if (!in || in->op != OP_ADD)
        return false;
    ValId inc = in->args[0] == cur ? in->args[1] : in->args[1] == cur ? in->args[0] : 0;
    return inc && positive_lb(ad, inc, lb, 0);
}

/* Do the iterations of `loop` store through p at disjoint addresses?  The
 * loop advances a counter iv by at least lb >= 1 per iteration (a `for`
 * with a constant or provably positive step; a `while` whose carried
 * counter is advanced by a positive invariant, the grid-stride loop), and
 * the store's offsets are civ * iv + [lo, hi] + invariant with
 * |civ| * lb > hi - lo. */
static bool loop_store_disjoint(Ad *ad, const Inst *loop, ValId p)
{
    if (!loop)
        return false;
    int id = ++ad->gen;
    for (int r = 0; r < loop->nregions; r++)
        mark_defs(ad, loop->regions[r], id);
    Aff a;
    int64_t lb;
    if (loop->op == OP_FOR) {
        int64_t step;
        if (const_int(ad, loop->args[2], &step) && step != 0 && step < AFF_LIMIT && step > -AFF_LIMIT)
            lb = step < 0 ? -step : step;
        else if (!positive_lb(ad, loop->args[2], &lb, 0))
            return false;
        if (!aff_of(ad, p, loop->regions[0]->params[0], id, &a, 0))
            return false;
        int64_t civ = a.civ < 0 ? -a.civ : a.civ;
        return civ > 0 && civ * lb > a.hi - a.lo;
    }
    if (loop->op != OP_WHILE)
        return false;
    const Block *body = loop->regions[1];
    const Inst *y = block_term(body);
    for (int i = 0; i < body->nparams; i++) {
        ValId iv = body->params[i];
        if (!counter_step(ad, iv, y->args[i], &lb) || !aff_of(ad, p, iv, id, &a, 0))
            continue;
        int64_t civ = a.civ < 0 ? -a.civ : a.civ;
        if (civ > 0 && civ * lb > a.hi - a.lo)
            return true;
    }
    return false;
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

static const char *const tape_msg =
    "loop-carried value '%s' is not a linear accumulator; kad needs a tape for this loop "
    "(not supported yet)";

/* path/npath: the enclosing ifs (for StoreSite); loop: the innermost
 * enclosing loop, loop_depth: how many loops enclose b. */
static void validate_block(Ad *ad, const Block *b, int loop_depth, const Inst *loop, const IfStep *path,
                           int npath)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        OpKind op = (OpKind)in->op;
        switch (op) {
        case OP_LOAD: {
            ValId p = in->args[0];
            int r = ad->root[p];
            if (r == ROOT_AMBIG)
                diag_error(ad->d, in->loc,
                           "cannot differentiate a load through a pointer of ambiguous provenance "
                           "(selected from several parameters, or read from memory)");
            else if (r > 0 && ad->role[r - 1] == ROLE_OUT)
                diag_error(ad->d, in->loc,
                           "load from output '%s': a differentiated output must only be written",
                           root_name(ad, p));
            else if (r > 0 && ad->stored[r - 1] && ad->role[r - 1] == ROLE_NONE)
                diag_error(ad->d, in->loc,
                           "load from '%s', which the kernel also writes: the backward kernel drops "
                           "stores, so this load would read different data",
                           root_name(ad, p));
            break;
        }
        case OP_STORE:
        case OP_ATOMIC_ADD: {
            ValId p = in->args[0];
            int r = ad->root[p];
            const char *what = op == OP_STORE ? "store" : "atomic_add";
            if (r == ROOT_AMBIG) {
                diag_error(ad->d, in->loc,
                           "cannot differentiate a %s through a pointer of ambiguous provenance "
                           "(selected from several parameters, or read from memory)", what);
                break;
            }
            int role = r > 0 ? ad->role[r - 1] : ROLE_NONE;
            if (role == ROLE_IN) {
                diag_error(ad->d, in->loc, "%s to differentiated input '%s': inputs must only be read",
                           what, root_name(ad, p));
            } else if (role == ROLE_OUT && op == OP_ATOMIC_ADD) {
                /* out += v is linear: dv = d_out at the same addresses, from any
                 * site, iteration or program.  Mixed with a store, the order of
                 * the writes would decide what reaches the output. */
                const Inst *st = ad->first_store[r - 1];
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
            } else if (role == ROLE_OUT) {
                StoreSite site = {in, r - 1, path, npath, loop_depth};
                for (int k = 0; k < ad->sites.n; k++) {
                    const StoreSite *o = &ad->sites.v[k];
                    if (o->param == r - 1 && (o->loop_depth || loop_depth || !sites_exclusive(o, &site))) {
                        diag_error(ad->d, in->loc,
                                   "output '%s' is stored at more than one site (first at line %d) "
                                   "outside the two branches of one `if`; not supported yet",
                                   root_name(ad, p), o->store->loc.line);
                        break;
                    }
                }
                vec_push(ad->a, ad->sites, site);
                if (loop_depth > 1 || (loop_depth == 1 && !loop_store_disjoint(ad, loop, p)))
                    diag_error(ad->d, in->loc,
                               "store to output '%s' inside a loop: kad cannot prove that the "
                               "iterations write distinct addresses (it can for one `for` or "
                               "grid-stride `while` whose step exceeds the span of the "
                               "`iv + tl.arange(...)` offsets)",
                               root_name(ad, p));
                const Inst *pd = ad->def[p];
                if (pd && pd->op == OP_BROADCAST && fty(ad, pd->args[0]).rank == 0)
                    diag_error(ad->d, in->loc,
                               "every lane of this store writes the same address of output '%s'; "
                               "store a scalar instead", root_name(ad, p));
            } else if (op == OP_ATOMIC_ADD && ad->nuses[in->res[0]] > 0) {
                diag_error(ad->d, in->loc,
                           "the result of atomic_add is used: the backward kernel drops atomics on "
                           "scratch buffers, so it cannot recompute it");
            }
            break;
        }
        case OP_BITCAST:
            if (ad->varied[in->args[0]] && ad->useful[in->res[0]])
                diag_error(ad->d, in->loc, "cannot differentiate through 'bitcast' of a differentiated value");
            break;
        case OP_FOR: {
            const Block *r = in->regions[0];
            for (int k = 0; k < in->nres; k++) {
                ValId c = r->params[1 + k];
                if ((active(ad, c) || active(ad, in->res[k])) && !linear_chain(ad, r, k))
                    diag_error(ad->d, in->loc, tape_msg, display(ad, c, in->res[k]));
            }
            validate_block(ad, r, loop_depth + 1, in, path, npath);
            break;
        }
        case OP_WHILE: {
            const Block *c = in->regions[0];
            for (int k = 0; k < in->nres; k++)
                if (active(ad, c->params[k]) || active(ad, in->res[k]))
                    diag_error(ad->d, in->loc, tape_msg, display(ad, c->params[k], in->res[k]));
            validate_block(ad, c, loop_depth + 1, NULL, path, npath); /* no stores in a condition */
            validate_block(ad, in->regions[1], loop_depth + 1, in, path, npath);
            break;
        }
        case OP_IF:
            for (int r = 0; r < 2; r++) {
                IfStep *np = arena_alloc(ad->a, sizeof *np * (size_t)(npath + 1));
                if (npath)
                    memcpy(np, path, sizeof *np * (size_t)npath);
                np[npath] = (IfStep){in, r};
                validate_block(ad, in->regions[r], loop_depth, loop, np, npath + 1);
            }
            break;
        default:
            if (op_info[op].diff == 'D' && !has_rule(op) && in->nres == 1 && active(ad, in->res[0]))
                diag_error(ad->d, in->loc, "no adjoint rule for '%s'", op_info[op].name);
            break;
        }
    }
}

/* ------------------------------------------------------------------ */
/* 2b. Shift-invariant maxima: adjoints that are zero exactly          */
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
    return in && in->op == OP_CONST && is_float_type(fty(ad, in->res[0])) && in->fval == 0.0;
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
        if (is_float_type(fty(ad, in->args[0])) && is_float_type(fty(ad, in->res[0])))
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

/* Classes of b's values with m free; false when m might reach an output
 * (see above). */
static bool sh_block(const Ad *ad, const Block *b, ValId m, Sh *cls)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        bool dep = false;
        for (int k = 0; k < in->nargs; k++)
            dep = dep || sh_dep(cls[in->args[k]]);
        switch (in->op) {
        case OP_FOR:
        case OP_IF:
        case OP_WHILE:
            if (dep)
                return false;
            for (int r = 0; r < in->nregions; r++)
                if (!sh_block(ad, in->regions[r], m, cls))
                    return false;
            continue;
        case OP_YIELD:
        case OP_CONDITION:
            if (dep)
                return false;
            continue;
        case OP_STORE:
        case OP_ATOMIC_ADD: /* scratch stores are dropped; inputs are refused */
            if (dep && (ad->root[in->args[0]] < 0 || root_role(ad, in->args[0]) != ROLE_NONE))
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
        if (in->nres != 1 || op_info[in->op].diff != 'D')
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

/* Finds the shift-invariant maxima and minima in b and takes them (with
 * what depends on the inputs only through them) out of the adjoint. */
static void drop_shift_invariant(Ad *ad, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions; r++)
            drop_shift_invariant(ad, in->regions[r]);
        if ((in->op != OP_MAX && in->op != OP_MIN) || !active(ad, in->res[0]) ||
            type_numel(fty(ad, in->res[0])) != 1)
            continue;
        ValId m = in->res[0];
        Sh *cls = arena_alloc(ad->a, sizeof *cls * (size_t)ad->nvals);
        if (!sh_block(ad, ad->fw->body, m, cls))
            continue;
        uint8_t *only = arena_alloc(ad->a, (size_t)ad->nvals);
        through_only(ad, ad->fw->body, m, only);
        for (int v = 0; v < ad->nvals; v++)
            if (only[v])
                ad->useful[v] = 0;
    }
}

/* ------------------------------------------------------------------ */
/* 3a. Primal sweep: clone without stores, with shadow pointers         */
/* ------------------------------------------------------------------ */

/* Emits a copy of `in` (attributes, result types, Loc) with new operands. */
static Inst *emit_like(Ad *ad, Block *b, const Inst *in, const ValId *args)
{
    Type rt[1];
    if (in->nres)
        rt[0] = fty(ad, in->res[0]);
    ASSERT(in->nres <= 1);
    Inst *ni = ir_emit(ad->bw, b, (OpKind)in->op, args, in->nargs, rt, in->nres, in->loc);
    ni->flags = in->flags;
    ni->ival = in->ival;
    ni->fval = in->fval;
    memcpy(ni->ints, in->ints, sizeof ni->ints);
    ni->nints = in->nints;
    ni->sattr = in->sattr;
    return ni;
}

static ValId P0(const Ad *ad, ValId v)
{
    ASSERT(v > 0 && ad->pm[v] > 0);
    return ad->pm[v];
}

static ValId S0(const Ad *ad, ValId v)
{
    ASSERT(v > 0 && ad->sm[v] > 0);
    return ad->sm[v];
}

static ValId *map_args(Ad *ad, const Inst *in, bool shadow)
{
    ValId *args = arena_alloc(ad->a, sizeof *args * (size_t)(in->nargs + 1));
    for (int k = 0; k < in->nargs; k++) {
        ValId v = in->args[k];
        args[k] = shadow && fty(ad, v).dt == DT_PTR ? S0(ad, v) : P0(ad, v);
    }
    return args;
}

/* New block parameter mirroring fw value v (primal or shadow). */
static ValId param_like(Ad *ad, Block *b, ValId v, const char *prefix)
{
    const char *n = fname(ad, v);
    return ir_block_param_add(ad->bw, b, fty(ad, v), n ? arena_printf(ad->a, "%s%s", prefix, n) : NULL,
                              ad->fw->vals.v[v].loc);
}

enum { CL_YIELD = 1, CL_SKIP_CHAIN = 2 };

static void clone_block(Ad *ad, const Block *fb, Block *bb, unsigned mode, const bool *ysh);

/* Region ops (for, if, while) are rebuilt in bw with more operands and
 * results than in fw: after the forward's carried values come the shadows
 * of the carried pointers, and in adjoint regions the adjoints of outside
 * values.  These helpers fill and bind those lists in that one order, for
 * the primal sweep and the adjoint sweep alike. */

/* sh[i]: does carried slot i (carried by fw value vs[i]) need a shadow? */
static bool *shadow_flags(Ad *ad, const ValId *vs, int n)
{
    bool *sh = arena_alloc(ad->a, (size_t)n + 1);
    for (int i = 0; i < n; i++)
        sh[i] = needs_shadow(ad, vs[i]);
    return sh;
}

/* The operands and result types of a rebuilt region op or terminator. */
typedef struct Slots {
    ValId *args; /* operands */
    Type *tys;   /* result types (unused for terminators) */
    int na, nt;
} Slots;

static Slots slots_new(Ad *ad, int cap)
{
    Slots s = {arena_alloc(ad->a, sizeof(ValId) * (size_t)(cap + 1)),
               arena_alloc(ad->a, sizeof(Type) * (size_t)(cap + 1)), 0, 0};
    return s;
}

/* Appends n carried slots: the primal copies of fw values fv[i] (except
 * those skip marks), then the shadows of those sh marks.  rt (fw values
 * whose types the results take) may be NULL for a terminator; fv may be
 * NULL for an `if`, whose results have no operands. */
static void add_carried(Ad *ad, Slots *s, const ValId *fv, const ValId *rt, int n, const bool *skip,
                        const bool *sh)
{
    for (int shadow = 0; shadow < 2; shadow++)
        for (int i = 0; i < n; i++) {
            if (shadow ? !(sh && sh[i]) : skip && skip[i])
                continue;
            if (fv)
                s->args[s->na++] = shadow ? S0(ad, fv[i]) : P0(ad, fv[i]);
            if (rt)
                s->tys[s->nt++] = fty(ad, rt[i]);
        }
}

/* The parameters of a rebuilt region mirroring fr's: its first nlead (a
 * for's induction variable), the carried values' primal copies (those skip
 * marks get none: pm cleared), then the shadows of those sh marks. */
static void add_params(Ad *ad, Block *reg, const Block *fr, int nlead, const bool *skip, const bool *sh)
{
    int n = fr->nparams - nlead;
    for (int i = 0; i < nlead; i++)
        ad->pm[fr->params[i]] = param_like(ad, reg, fr->params[i], "");
    for (int i = 0; i < n; i++) {
        ValId p = fr->params[nlead + i];
        ad->pm[p] = skip && skip[i] ? 0 : param_like(ad, reg, p, "");
    }
    for (int i = 0; i < n; i++)
        if (sh[i])
            ad->sm[fr->params[nlead + i]] = param_like(ad, reg, fr->params[nlead + i], "d_");
}

/* Maps in's results onto ni's: primal copies first, then the shadows of
 * the positions sh marks. */
static void bind_results(Ad *ad, const Inst *in, const Inst *ni, const bool *sh)
{
    for (int i = 0, j = in->nres; i < in->nres; i++) {
        ad->pm[in->res[i]] = ni->res[i];
        name_after(ad, ni->res[i], "", in->res[i]);
        if (sh[i]) {
            ad->sm[in->res[i]] = ni->res[j];
            name_after(ad, ni->res[j++], "d_", in->res[i]);
        }
    }
}

/* Operands before the carried ones (for: lb, ub, step; if: the condition)
 * and region parameters before them (for: the induction variable). */
static int fixed_operands(const Inst *in) { return in->op == OP_FOR ? 3 : in->op == OP_IF ? 1 : 0; }
static int lead_params(const Inst *in) { return in->op == OP_FOR ? 1 : 0; }

/* The fw values that carry each result through the regions: they decide
 * which results get shadows. */
static const ValId *carriers(const Inst *in)
{
    return in->op == OP_IF ? in->res : in->regions[0]->params + lead_params(in);
}

/* for, if, while in the primal sweep: the same op over the copied regions,
 * carrying shadows next to the carried pointers. */
static void clone_region_op(Ad *ad, Block *bb, const Inst *in)
{
    int n = in->nres, nfix = fixed_operands(in);
    bool *sh = shadow_flags(ad, carriers(in), n);
    Slots s = slots_new(ad, nfix + 2 * n);
    for (int i = 0; i < nfix; i++)
        s.args[s.na++] = P0(ad, in->args[i]);
    add_carried(ad, &s, in->op == OP_IF ? NULL : in->args + nfix, in->res, n, NULL, sh);
    ir_emit(ad->bw, bb, (OpKind)in->op, s.args, s.na, s.tys, s.nt, in->loc);
    int idx = bb->insts.n - 1;
    for (int r = 0; r < in->nregions; r++) {
        Block *reg = ir_inst_add_region(ad->bw, &bb->insts.v[idx]);
        add_params(ad, reg, in->regions[r], lead_params(in), NULL, sh);
        clone_block(ad, in->regions[r], reg, CL_YIELD, sh);
    }
    bind_results(ad, in, &bb->insts.v[idx], sh);
}

/* Copies fb into bb: stores and (scratch) atomics dropped, shadows made
 * for pointers into differentiated buffers, region-carried shadows added.
 * CL_YIELD: copy fb's terminating yield, extended by the shadows of the
 * positions ysh marks (else the caller writes the terminator).
 * CL_SKIP_CHAIN: leave out linear-accumulator chains (adjoint loops). */
static void clone_block(Ad *ad, const Block *fb, Block *bb, unsigned mode, const bool *ysh)
{
    for (int k = 0; k < fb->insts.n; k++) {
        const Inst *in = &fb->insts.v[k];
        switch (in->op) {
        case OP_STORE:
        case OP_ATOMIC_ADD:
            continue; /* validated: outputs and scratch only, atomic results unused */
        case OP_FOR:
        case OP_IF:
        case OP_WHILE:
            clone_region_op(ad, bb, in);
            continue;
        case OP_YIELD: {
            if (!(mode & CL_YIELD))
                continue;
            Slots s = slots_new(ad, 2 * in->nargs);
            add_carried(ad, &s, in->args, NULL, in->nargs, NULL, ysh);
            ir_emit(ad->bw, bb, OP_YIELD, s.args, s.na, NULL, 0, in->loc);
            continue;
        }
        default:
            break;
        }
        if ((mode & CL_SKIP_CHAIN) && in->nres == 1 && ad->chain[in->res[0]])
            continue;
        ValId *args = map_args(ad, in, false);
        Inst *ni = emit_like(ad, bb, in, args);
        if (in->nres == 1) {
            ValId r = ni->res[0], fr = in->res[0];
            ad->pm[fr] = r;
            name_after(ad, r, "", fr);
            if (needs_shadow(ad, fr)) {
                ni = emit_like(ad, bb, in, map_args(ad, in, true));
                ad->sm[fr] = ni->res[0];
                name_after(ad, ni->res[0], "d_", fr);
            }
        }
    }
}

/* ------------------------------------------------------------------ */
/* 3b. Adjoint sweep                                                   */
/* ------------------------------------------------------------------ */

/* Where adjoint code goes: the block and the forward instruction's Loc. */
typedef struct Em {
    Ad *ad;
    Block *b;
    Loc loc;
} Em;

static ValId e1(Em *e, OpKind op, ValId x)
{
    return ir_op1(e->ad->bw, e->b, op, bty(e->ad, x), x, e->loc);
}
static ValId e2(Em *e, OpKind op, ValId x, ValId y)
{
    return ir_op2(e->ad->bw, e->b, op, bty(e->ad, x), x, y, e->loc);
}
static ValId ecmp(Em *e, OpKind op, ValId x, ValId y)
{
    return ir_op2(e->ad->bw, e->b, op, type_with_dtype(bty(e->ad, x), DT_I1), x, y, e->loc);
}
static ValId ewhere(Em *e, ValId c, ValId x, ValId y)
{
    return ir_op3(e->ad->bw, e->b, OP_WHERE, bty(e->ad, x), c, x, y, e->loc);
}
/* A float constant shaped like x. */
static ValId ec(Em *e, ValId like, double v)
{
    return ir_const_float(e->ad->bw, e->b, bty(e->ad, like), v, e->loc);
}
static ValId ezero(Em *e, Type t) { return ir_const_float(e->ad->bw, e->b, t, 0.0, e->loc); }
static ValId ecast(Em *e, ValId x, Dtype dt)
{
    if (bty(e->ad, x).dt == dt)
        return x;
    return ir_op1(e->ad->bw, e->b, OP_CAST, type_with_dtype(bty(e->ad, x), dt), x, e->loc);
}
static ValId ereduce(Em *e, OpKind op, ValId x, int axis, bool keep)
{
    Type t = bty(e->ad, x);
    int32_t sh[KAD_MAX_RANK];
    int n = 0;
    for (int i = 0; i < t.rank; i++)
        if (i != axis)
            sh[n++] = t.shape[i];
        else if (keep)
            sh[n++] = 1;
    Inst *in = ir_emit(e->ad->bw, e->b, op, &x, 1, (Type[]){type_with_shape(t, n, sh)}, 1, e->loc);
    in->ival = axis;
    in->flags = keep ? IF_KEEP_DIMS : 0;
    return in->res[0];
}
static ValId eshape(Em *e, OpKind op, ValId x, Type to, int64_t ival)
{
    Inst *in = ir_emit(e->ad->bw, e->b, op, &x, 1, &to, 1, e->loc);
    in->ival = ival;
    return in->res[0];
}
static ValId epermute(Em *e, ValId x, const int32_t *perm)
{
    Type t = bty(e->ad, x);
    int32_t sh[KAD_MAX_RANK];
    for (int i = 0; i < t.rank; i++)
        sh[i] = t.shape[perm[i]];
    Inst *in = ir_emit(e->ad->bw, e->b, OP_PERMUTE, &x, 1, (Type[]){type_with_shape(t, t.rank, sh)}, 1,
                       e->loc);
    memcpy(in->ints, perm, sizeof(int32_t) * (size_t)t.rank);
    in->nints = t.rank;
    return in->res[0];
}

/* The primal of fw value v in the current scope, in its adjoint dtype. */
static ValId P(Em *e, ValId v) { return ecast(e, P0(e->ad, v), (Dtype)adt(fty(e->ad, v)).dt); }

/* adj[v] += c (c cast to v's adjoint dtype); only active values. */
static void accum(Em *e, ValId v, ValId c)
{
    Ad *ad = e->ad;
    if (!active(ad, v) || !c)
        return;
    Type t = adt(fty(ad, v));
    c = ecast(e, c, (Dtype)t.dt);
    ASSERT(type_eq(bty(ad, c), t));
    if (!ad->adj[v]) {
        ad->adj[v] = c;
    } else {
        ad->adj[v] = e2(e, OP_ADD, ad->adj[v], c);
    }
    name_after(ad, ad->adj[v], "d", v);
}

/* A reduction's value (or adjoint) r broadcast back to x's shape xt. */
static ValId bcast_back(Em *e, ValId r, Type xt, int axis, bool keep)
{
    Type rt = bty(e->ad, r);
    xt.dt = rt.dt;
    if (!keep && xt.rank > 1) {
        Type et = rt;
        et.rank = xt.rank;
        for (int i = 0; i < xt.rank; i++)
            et.shape[i] = i == axis ? 1 : xt.shape[i];
        r = eshape(e, OP_EXPAND_DIMS, r, et, axis);
    }
    return eshape(e, OP_BROADCAST, r, xt, 0);
}

/* The adjoint of a broadcast from xt: sum over the broadcast axes. */
static ValId unbroadcast(Em *e, ValId d, Type xt)
{
    if (xt.rank == 0) {
        while (bty(e->ad, d).rank > 0)
            d = ereduce(e, OP_SUM, d, 0, false);
        return d;
    }
    for (int i = 0; i < xt.rank; i++)
        if (xt.shape[i] == 1 && bty(e->ad, d).shape[i] != 1)
            d = ereduce(e, OP_SUM, d, i, true);
    return d;
}

/* Hands operand k's contribution x to accum(), or, when the same value is
 * also operand j != k, keeps it in c[k]: merge_contribs() adds those up so
 * that the value's adjoint gets one term (x * x gives (d * x) * 2). */
static void give(Em *e, const Inst *in, ValId *c, int k, ValId x)
{
    for (int j = 0; j < in->nargs; j++)
        if (j != k && in->args[j] == in->args[k]) {
            c[k] = x;
            return;
        }
    accum(e, in->args[k], x);
}

static void merge_contribs(Em *e, const Inst *in, ValId *c)
{
    for (int k = 1; k < in->nargs; k++)
        for (int j = 0; j < k && c[k]; j++)
            if (c[j] && in->args[j] == in->args[k]) {
                c[j] = c[j] == c[k] ? e2(e, OP_MUL, c[j], ec(e, c[j], 2.0)) : e2(e, OP_ADD, c[j], c[k]);
                c[k] = 0;
            }
    for (int k = 0; k < in->nargs; k++)
        if (c[k])
            accum(e, in->args[k], c[k]);
}

/* Every adjoint rule, one case per op, neighbours together.  d is the
 * adjoint of the result y; GIVE(k, x) adds x to operand k's adjoint
 * (inactive operands ignore it; ACT() saves emitting code for them). */
static void adj_rule(Em *e, const Inst *in)
{
    Ad *ad = e->ad;
    ValId y = in->res[0], d = ad->adj[y];
    if (!d || !active(ad, y))
        return;
    ValId a0 = in->args[0], a1 = in->nargs > 1 ? in->args[1] : 0, a2 = in->nargs > 2 ? in->args[2] : 0;
    ValId c[3] = {0, 0, 0}; /* contributions to repeated operands (give) */
    ASSERT(in->nargs <= 3);
#define ACT(v) active(ad, (v))
#define GIVE(k, x) give(e, in, c, (k), (x))
#define MUL(x, z) e2(e, OP_MUL, (x), (z))
#define DIV(x, z) e2(e, OP_DIV, (x), (z))
#define ADD(x, z) e2(e, OP_ADD, (x), (z))
#define SUB(x, z) e2(e, OP_SUB, (x), (z))
#define NEG(x) e1(e, OP_NEG, (x))
#define K(v) ec(e, d, (v))
    switch ((OpKind)in->op) {
    /* arithmetic */
    case OP_ADD:
        GIVE(0, d);
        GIVE(1, d);
        break;
    case OP_SUB:
        GIVE(0, d);
        if (ACT(a1))
            GIVE(1, NEG(d));
        break;
    case OP_MUL:
        if (ACT(a0))
            GIVE(0, MUL(d, P(e, ad->spec->mutate == AD_MUTATE_MUL ? a0 : a1)));
        if (ACT(a1))
            GIVE(1, a1 == a0 && c[0] ? c[0] : MUL(d, P(e, a0)));
        break;
    case OP_DIV: /* y = a/b: da = d/b, db = -d*y/b */
        if (ACT(a0))
            GIVE(0, DIV(d, P(e, a1)));
        if (ACT(a1))
            GIVE(1, NEG(DIV(MUL(d, P(e, y)), P(e, a1))));
        break;
    case OP_REM: /* float fmod: y = a - trunc(a/b)*b */
        GIVE(0, d);
        if (ACT(a1))
            GIVE(1, NEG(MUL(d, e1(e, OP_TRUNC, DIV(P(e, a0), P(e, a1))))));
        break;
    case OP_POW: /* da = d*b*a^(b-1), db = d*y*log(a) */
        if (ACT(a0))
            GIVE(0, MUL(MUL(d, P(e, a1)), e2(e, OP_POW, P(e, a0), SUB(P(e, a1), K(1.0)))));
        if (ACT(a1))
            GIVE(1, MUL(MUL(d, P(e, y)), e1(e, OP_LOG, P(e, a0))));
        break;
    case OP_MAXIMUM: /* ties: the whole gradient to the first operand */
    case OP_MINIMUM: {
        ValId m = ecmp(e, in->op == OP_MAXIMUM ? OP_GE : OP_LE, P(e, a0), P(e, a1));
        if (ACT(a0))
            GIVE(0, ewhere(e, m, d, K(0.0)));
        if (ACT(a1))
            GIVE(1, ewhere(e, m, K(0.0), d));
        break;
    }
    case OP_ATAN2: { /* atan2(a, b): da = d*b/(a^2+b^2), db = -d*a/(a^2+b^2) */
        ValId pa = P(e, a0), pb = P(e, a1);
        ValId r = ADD(MUL(pa, pa), MUL(pb, pb));
        if (ACT(a0))
            GIVE(0, DIV(MUL(d, pb), r));
        if (ACT(a1))
            GIVE(1, NEG(DIV(MUL(d, pa), r)));
        break;
    }
    case OP_NEG:
        GIVE(0, NEG(d));
        break;
    case OP_ABS: { /* sign(x)*d, 0 at x == 0 (PyTorch's convention) */
        ValId x = P(e, a0), z = K(0.0);
        GIVE(0, ewhere(e, ecmp(e, OP_GT, x, z), d, ewhere(e, ecmp(e, OP_LT, x, z), NEG(d), z)));
        break;
    }
    case OP_FMA: /* a*b + c */
        if (ACT(a0))
            GIVE(0, MUL(d, P(e, a1)));
        if (ACT(a1))
            GIVE(1, a1 == a0 && c[0] ? c[0] : MUL(d, P(e, a0)));
        GIVE(2, d);
        break;
    case OP_WHERE: { /* the condition gets nothing; each side its lanes */
        bool swap = ad->spec->mutate == AD_MUTATE_WHERE;
        if (ACT(a1))
            GIVE(1, swap ? ewhere(e, P0(ad, a0), K(0.0), d) : ewhere(e, P0(ad, a0), d, K(0.0)));
        if (ACT(a2))
            GIVE(2, swap ? ewhere(e, P0(ad, a0), d, K(0.0)) : ewhere(e, P0(ad, a0), K(0.0), d));
        break;
    }
    case OP_CAST: /* the adjoint cast back (accum converts to the operand's adjoint dtype) */
        GIVE(0, d);
        break;
    /* elementwise math: y = f(x) */
    case OP_EXP:
        GIVE(0, MUL(d, P(e, ad->spec->mutate == AD_MUTATE_EXP ? a0 : y)));
        break;
    case OP_EXP2:
        GIVE(0, MUL(MUL(d, P(e, y)), K(AD_LN2)));
        break;
    case OP_EXPM1:
        GIVE(0, MUL(d, ADD(P(e, y), K(1.0))));
        break;
    case OP_LOG:
        GIVE(0, DIV(d, P(e, a0)));
        break;
    case OP_LOG2:
        GIVE(0, DIV(d, MUL(P(e, a0), K(AD_LN2))));
        break;
    case OP_LOG1P:
        GIVE(0, DIV(d, ADD(P(e, a0), K(1.0))));
        break;
    case OP_SQRT:
        GIVE(0, DIV(MUL(d, K(0.5)), P(e, y)));
        break;
    case OP_RSQRT: { /* -0.5*d*y^3 */
        ValId py = P(e, y);
        GIVE(0, MUL(MUL(d, K(-0.5)), MUL(py, MUL(py, py))));
        break;
    }
    case OP_SIGMOID: {
        ValId py = P(e, y);
        GIVE(0, MUL(d, MUL(py, SUB(K(1.0), py))));
        break;
    }
    case OP_SIN:
        GIVE(0, MUL(d, e1(e, OP_COS, P(e, a0))));
        break;
    case OP_COS:
        GIVE(0, NEG(MUL(d, e1(e, OP_SIN, P(e, a0)))));
        break;
    case OP_TAN: {
        ValId py = P(e, y);
        GIVE(0, MUL(d, ADD(K(1.0), MUL(py, py))));
        break;
    }
    case OP_ASIN:
    case OP_ACOS: { /* +-d/sqrt(1-x^2) */
        ValId x = P(e, a0);
        ValId g = MUL(d, e1(e, OP_RSQRT, SUB(K(1.0), MUL(x, x))));
        GIVE(0, in->op == OP_ASIN ? g : NEG(g));
        break;
    }
    case OP_ATAN: {
        ValId x = P(e, a0);
        GIVE(0, DIV(d, ADD(K(1.0), MUL(x, x))));
        break;
    }
    case OP_SINH:
        GIVE(0, MUL(d, e1(e, OP_COSH, P(e, a0))));
        break;
    case OP_COSH:
        GIVE(0, MUL(d, e1(e, OP_SINH, P(e, a0))));
        break;
    case OP_TANH: {
        ValId py = P(e, y);
        GIVE(0, MUL(d, SUB(K(1.0), MUL(py, py))));
        break;
    }
    case OP_ERF: { /* d * 2/sqrt(pi) * exp(-x^2) */
        ValId x = P(e, a0);
        GIVE(0, MUL(MUL(d, K(AD_2_SQRTPI)), e1(e, OP_EXP, NEG(MUL(x, x)))));
        break;
    }
    /* shape ops */
    case OP_BROADCAST:
        GIVE(0, unbroadcast(e, d, adt(fty(ad, a0))));
        break;
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
        GIVE(0, eshape(e, OP_RESHAPE, d, adt(fty(ad, a0)), 0));
        break;
    case OP_PERMUTE: {
        int32_t inv[KAD_MAX_RANK];
        for (int i = 0; i < in->nints; i++)
            inv[in->ints[i]] = i;
        GIVE(0, epermute(e, d, inv));
        break;
    }
    /* reductions and scans */
    case OP_SUM:
        GIVE(0, bcast_back(e, d, fty(ad, a0), (int)in->ival, in->flags & IF_KEEP_DIMS));
        break;
    case OP_MAX:
    case OP_MIN: {
        /* Lanes equal to the result share d evenly (PyTorch's amax/amin). */
        int axis = (int)in->ival;
        bool keep = in->flags & IF_KEEP_DIMS;
        Type xt = fty(ad, a0);
        ValId x = P(e, a0);
        ValId yb = bcast_back(e, P(e, y), xt, axis, keep);
        ValId db = bcast_back(e, d, xt, axis, keep);
        ValId m = ecmp(e, OP_EQ, x, yb);
        ValId cnt = ereduce(e, OP_SUM, ecast(e, m, (Dtype)bty(ad, d).dt), axis, true);
        ValId cb = bcast_back(e, cnt, xt, axis, true);
        if (ad->spec->mutate == AD_MUTATE_MAX)
            GIVE(0, db);
        else
            GIVE(0, ewhere(e, m, DIV(db, cb), ec(e, db, 0.0)));
        break;
    }
    case OP_CUMSUM: {
        Inst *ni = ir_emit(ad->bw, e->b, OP_CUMSUM, &d, 1, (Type[]){bty(ad, d)}, 1, e->loc);
        ni->ival = in->ival;
        ni->flags = (uint16_t)((in->flags & IF_REVERSE) ^ (ad->spec->mutate == AD_MUTATE_CUMSUM ? 0 : IF_REVERSE));
        GIVE(0, ni->res[0]);
        break;
    }
    case OP_DOT: { /* y = a@b + acc: da = d@b^T, db = a^T@d, dacc = d */
        static const int32_t tr[2] = {1, 0};
        Type at = adt(fty(ad, a0)), bt = adt(fty(ad, a1));
        at.dt = bt.dt = bty(ad, d).dt;
        if (ACT(a0)) {
            ValId z = ezero(e, at);
            ValId r = ir_op3(ad->bw, e->b, OP_DOT, at, d, epermute(e, P(e, a1), tr), z, e->loc);
            e->b->insts.v[e->b->insts.n - 1].ival = in->ival;
            GIVE(0, r);
        }
        if (ACT(a1)) {
            ValId z = ezero(e, bt);
            ValId r = ir_op3(ad->bw, e->b, OP_DOT, bt, epermute(e, P(e, a0), tr), d, z, e->loc);
            e->b->insts.v[e->b->insts.n - 1].ival = in->ival;
            GIVE(1, r);
        }
        GIVE(2, d);
        break;
    }
    default:
        /* validate_block refused every active op without a rule */
        die("no adjoint rule for '%s'", op_info[in->op].name);
    }
    merge_contribs(e, in, c);
#undef ACT
#undef GIVE
#undef MUL
#undef DIV
#undef ADD
#undef SUB
#undef NEG
#undef K
}

/* Does the adjoint of `in` (or of a region inside it) do anything? */
static bool block_needs_adj(const Ad *ad, const Block *b);
static bool inst_needs_adj(const Ad *ad, const Inst *in)
{
    for (int i = 0; i < in->nres; i++)
        if (active(ad, in->res[i]))
            return true;
    if ((in->op == OP_STORE || in->op == OP_ATOMIC_ADD) && root_role(ad, in->args[0]) == ROLE_OUT &&
        active(ad, in->args[1]))
        return true;
    if (in->op == OP_YIELD)
        for (int i = 0; i < in->nargs; i++)
            if (active(ad, in->args[i]))
                return true;
    for (int r = 0; r < in->nregions; r++)
        if (block_needs_adj(ad, in->regions[r]))
            return true;
    return false;
}
static bool block_needs_adj(const Ad *ad, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++)
        if (inst_needs_adj(ad, &b->insts.v[i]))
            return true;
    return false;
}

static void collect_uses(Ad *ad, const Block *b, int id, ValVec *out)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++) {
            ValId v = in->args[k];
            if (active(ad, v) && ad->stamp[v] != id && ad->seen[v] != id) {
                ad->seen[v] = id;
                vec_push(ad->a, *out, v);
            }
        }
        for (int r = 0; r < in->nregions; r++)
            collect_uses(ad, in->regions[r], id, out);
    }
}

/* The active values defined outside `in`'s regions and used inside them:
 * their adjoints flow out of the adjoint region as its results. */
static ValVec collect_outside(Ad *ad, const Inst *in)
{
    ValVec out = {0};
    int id = ++ad->gen;
    for (int r = 0; r < in->nregions; r++)
        mark_defs(ad, in->regions[r], id);
    for (int r = 0; r < in->nregions; r++)
        collect_uses(ad, in->regions[r], id, &out);
    return out;
}

/* The current adjoint of v, or a zero of its adjoint type. */
static ValId adj_or_zero(Em *e, ValId v)
{
    return e->ad->adj[v] ? e->ad->adj[v] : ezero(e, adt(fty(e->ad, v)));
}

/* Appends the adjoints of L (zeros where none yet) as operands and their
 * adjoint types as result types. */
static void add_adjoints(Em *e, Slots *s, ValVec L)
{
    for (int j = 0; j < L.n; j++) {
        s->args[s->na++] = adj_or_zero(e, L.v[j]);
        s->tys[s->nt++] = adt(fty(e->ad, L.v[j]));
    }
}

/* The terminating yield of an adjoint region: the carried slots as in
 * add_carried (n of them, from the forward yield yi), then the adjoints of
 * L. */
static void adjoint_yield(Em *e, const Inst *yi, int n, const bool *skip, const bool *sh, ValVec L)
{
    Slots s = slots_new(e->ad, 2 * n + L.n);
    add_carried(e->ad, &s, n ? yi->args : NULL, NULL, n, skip, sh);
    add_adjoints(e, &s, L);
    ir_emit(e->ad->bw, e->b, OP_YIELD, s.args, s.na, NULL, 0, e->loc);
}

/* The adjoints of L become the last L.n results of ni. */
static void bind_adjoints(Ad *ad, const Inst *ni, ValVec L)
{
    for (int j = 0; j < L.n; j++) {
        ValId v = ni->res[ni->nres - L.n + j];
        ad->adj[L.v[j]] = v;
        name_after(ad, v, "d", L.v[j]);
    }
}

static void adj_block(Ad *ad, const Block *fb, Block *bb);

/* if c: the adjoint is an `if` on the same condition; each side recomputes
 * its primal body, seeds the yielded values with the results' adjoints and
 * runs its adjoint; the adjoints of outside values leave as results. */
static void adj_if(Ad *ad, Block *bb, const Inst *in)
{
    if (!inst_needs_adj(ad, in))
        return;
    ValVec L = collect_outside(ad, in);
    ValId *saved = arena_alloc(ad->a, sizeof *saved * (size_t)(L.n + 1));
    Slots s = slots_new(ad, L.n);
    for (int j = 0; j < L.n; j++) {
        saved[j] = ad->adj[L.v[j]];
        s.tys[s.nt++] = adt(fty(ad, L.v[j]));
    }
    ValId c = P0(ad, in->args[0]);
    ir_emit(ad->bw, bb, OP_IF, &c, 1, s.tys, s.nt, in->loc);
    int idx = bb->insts.n - 1;
    for (int r = 0; r < 2; r++) {
        const Block *fr = in->regions[r];
        Block *reg = ir_inst_add_region(ad->bw, &bb->insts.v[idx]);
        for (int j = 0; j < L.n; j++) /* each side starts from the adjoints before the if */
            ad->adj[L.v[j]] = saved[j];
        clone_block(ad, fr, reg, 0, NULL);
        Em e = {ad, reg, in->loc};
        const Inst *yi = block_term(fr);
        for (int i = 0; i < in->nres; i++)
            if (active(ad, in->res[i]))
                accum(&e, yi->args[i], ad->adj[in->res[i]]);
        adj_block(ad, fr, reg);
        adjoint_yield(&e, yi, 0, NULL, NULL, L);
    }
    bind_adjoints(ad, &bb->insts.v[idx], L);
}

/* for and while.  A for's differentiated carried values are linear
 * accumulators (validated), a while has none.  The adjoint loop runs
 * forward over the same iterations, recomputing each iteration's body
 * (chains left out) with the non-differentiated carried values (pointers,
 * counters) carried again, and applies the body's adjoint with the
 * constant adjoint of each accumulator.  The adjoints of outside values
 * are carried too and leave as results.  A while's condition region is
 * recomputed as it is. */
static void adj_loop(Ad *ad, Block *bb, const Inst *in)
{
    if (!inst_needs_adj(ad, in))
        return;
    int n = in->nres, nfix = fixed_operands(in);
    const ValId *car = carriers(in);
    const Block *body = in->regions[in->nregions - 1];
    bool *sh = shadow_flags(ad, car, n);
    bool *diff = arena_alloc(ad->a, (size_t)n + 1);
    ValId *dres = arena_alloc(ad->a, sizeof *dres * (size_t)(n + 1));
    for (int i = 0; i < n; i++) {
        diff[i] = active(ad, car[i]) || active(ad, in->res[i]);
        dres[i] = diff[i] ? ad->adj[in->res[i]] : 0;
    }
    ValVec L = collect_outside(ad, in);
    Em eo = {ad, bb, in->loc};
    Slots s = slots_new(ad, nfix + 2 * n + L.n);
    for (int i = 0; i < nfix; i++)
        s.args[s.na++] = P0(ad, in->args[i]);
    add_carried(ad, &s, in->args + nfix, in->res, n, diff, sh);
    add_adjoints(&eo, &s, L);
    ir_emit(ad->bw, bb, (OpKind)in->op, s.args, s.na, s.tys, s.nt, in->loc);
    int idx = bb->insts.n - 1;
    for (int r = 0; r < in->nregions; r++) {
        const Block *fr = in->regions[r];
        Block *reg = ir_inst_add_region(ad->bw, &bb->insts.v[idx]);
        add_params(ad, reg, fr, lead_params(in), diff, sh);
        for (int j = 0; j < L.n; j++)
            ad->adj[L.v[j]] = param_like(ad, reg, L.v[j], "d");
        if (fr != body) {
            clone_block(ad, fr, reg, CL_YIELD, NULL); /* ends in `condition` */
            continue;
        }
        for (int k = 0; k < fr->insts.n; k++) /* chain values are never recomputed */
            if (fr->insts.v[k].nres == 1 && ad->chain[fr->insts.v[k].res[0]])
                ad->pm[fr->insts.v[k].res[0]] = 0;
        clone_block(ad, fr, reg, CL_SKIP_CHAIN, NULL);
        Em e = {ad, reg, in->loc};
        const Inst *yi = block_term(fr);
        for (int i = 0; i < n; i++)
            if (dres[i])
                accum(&e, yi->args[i], dres[i]);
        adj_block(ad, fr, reg);
        adjoint_yield(&e, yi, n, diff, sh, L);
    }
    bind_adjoints(ad, &bb->insts.v[idx], L);
    /* The initial value reaches the result through the chain: d(init) = d(result). */
    for (int i = 0; i < n; i++)
        if (dres[i])
            accum(&eo, in->args[nfix + i], dres[i]);
}

/* Memory: a store (or atomic_add) to an output reads the output's
 * gradient; a load from a differentiated input adds its adjoint into the
 * input's gradient.  store and atomic_add share the operand layout
 * (ptr, value [, mask]). */
static void adj_store(Ad *ad, Block *bb, const Inst *in)
{
    ValId p = in->args[0], v = in->args[1];
    if (root_role(ad, p) != ROLE_OUT || !active(ad, v))
        return;
    Em e = {ad, bb, in->loc};
    Type pt = fty(ad, p);
    Type lt = type_tile((Dtype)pt.elem, pt.rank, pt.shape);
    ValId args[3] = {S0(ad, p), 0, 0};
    int n = 1;
    uint16_t flags = 0;
    if (in->flags & IF_HAS_MASK) {
        args[n++] = P0(ad, in->args[2]);
        args[n++] = ezero(&e, lt); /* masked-off lanes were never written: no gradient */
        flags = IF_HAS_MASK | IF_HAS_OTHER;
    }
    Inst *ld = ir_emit(ad->bw, bb, OP_LOAD, args, n, &lt, 1, in->loc);
    ld->flags = flags;
    ValId r = ld->res[0];
    name_after(ad, r, "d", v);
    accum(&e, v, r);
}

/* Load sites of one block that share the pointer and the mask (the same
 * ValIds: the same addresses, the same live lanes) add their adjoints up
 * in registers, and only the earliest site -- the last one the reverse
 * walk reaches -- issues the atomic_add: one sweep over the gradient
 * instead of one per site. */
typedef struct PendingLoad {
    ValId p, mask; /* fw pointer and mask (0: unmasked) */
    ValId sum;     /* bw: the later sites' adjoints so far, or 0 */
} PendingLoad;
typedef Vec(PendingLoad) PendingVec;

/* Does a load before position k of fb read through p under mask m? */
static bool earlier_load(const Block *fb, int k, ValId p, ValId m)
{
    for (int j = 0; j < k; j++) {
        const Inst *o = &fb->insts.v[j];
        if (o->op == OP_LOAD && o->args[0] == p && (o->flags & IF_HAS_MASK ? o->args[1] : 0) == m)
            return true;
    }
    return false;
}

/* The load at position k of fb. */
static void adj_load(Ad *ad, Block *bb, const Block *fb, int k, PendingVec *pending)
{
    const Inst *in = &fb->insts.v[k];
    ValId p = in->args[0], x = in->res[0], d = active(ad, x) ? ad->adj[x] : 0;
    ValId m = in->flags & IF_HAS_MASK ? in->args[1] : 0;
    Em e = {ad, bb, in->loc};
    if (d && (in->flags & IF_HAS_OTHER) && active(ad, in->args[2])) /* masked-off lanes came from `other` */
        accum(&e, in->args[2], ewhere(&e, P0(ad, m), ec(&e, d, 0.0), d));
    if (root_role(ad, p) != ROLE_IN)
        return;
    PendingLoad *pl = NULL;
    for (int i = 0; i < pending->n; i++)
        if (pending->v[i].p == p && pending->v[i].mask == m)
            pl = &pending->v[i];
    ValId sum = pl ? pl->sum : 0;
    if (d)
        sum = sum ? e2(&e, OP_ADD, sum, d) : d;
    if (earlier_load(fb, k, p, m)) {
        if (pl)
            pl->sum = sum;
        else
            vec_push(ad->a, *pending, ((PendingLoad){p, m, sum}));
        return;
    }
    if (!sum)
        return;
    Type pt = fty(ad, p);
    ValId args[3] = {S0(ad, p), ecast(&e, sum, (Dtype)pt.elem), m ? P0(ad, m) : 0};
    Type rt = type_tile((Dtype)pt.elem, pt.rank, pt.shape);
    Inst *at = ir_emit(ad->bw, bb, OP_ATOMIC_ADD, args, m ? 3 : 2, &rt, 1, in->loc);
    at->flags = m ? IF_HAS_MASK : 0;
}

static void adj_block(Ad *ad, const Block *fb, Block *bb)
{
    PendingVec pending = {0};
    for (int k = fb->insts.n - 1; k >= 0; k--) {
        const Inst *in = &fb->insts.v[k];
        switch (in->op) {
        case OP_YIELD:
        case OP_CONDITION:
            break;
        case OP_STORE:
        case OP_ATOMIC_ADD:
            adj_store(ad, bb, in);
            break;
        case OP_LOAD:
            adj_load(ad, bb, fb, k, &pending);
            break;
        case OP_FOR:
        case OP_WHILE:
            adj_loop(ad, bb, in);
            break;
        case OP_IF:
            adj_if(ad, bb, in);
            break;
        default:
            if (op_info[in->op].diff == 'D' && in->nres == 1) {
                Em e = {ad, bb, in->loc};
                adj_rule(&e, in);
            }
            break;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Entry point                                                         */
/* ------------------------------------------------------------------ */

/* Resolves the names of spec to parameter roles; errors at the kernel. */
static bool assign_roles(Ad *ad)
{
    const Func *f = ad->fw;
    bool ok = true;
    for (int pass = 0; pass < 2; pass++) {
        const char *const *names = pass ? ad->spec->outs : ad->spec->wrt;
        int n = pass ? ad->spec->nouts : ad->spec->nwrt;
        for (int i = 0; i < n; i++) {
            int found = -1;
            for (int p = 0; p < f->nparams; p++) {
                const char *pn = fname(ad, f->params[p]);
                if (pn && !strcmp(pn, names[i]))
                    found = p;
            }
            if (found < 0) {
                diag_error(ad->d, f->loc, "kernel '%s' has no runtime parameter '%s' (to differentiate %s)",
                           f->name, names[i], pass ? "as an output" : "with respect to");
                ok = false;
                continue;
            }
            Type t = fty(ad, f->params[found]);
            if (t.dt != DT_PTR || !dtype_is_float((Dtype)t.elem)) {
                diag_error(ad->d, ad->fw->vals.v[f->params[found]].loc,
                           "'%s' is not a pointer to floating-point data: it cannot be differentiated",
                           names[i]);
                ok = false;
                continue;
            }
            if (ad->role[found] != ROLE_NONE) {
                diag_error(ad->d, ad->fw->vals.v[f->params[found]].loc,
                           "'%s' is named twice (a differentiated parameter is an input or an output)",
                           names[i]);
                ok = false;
                continue;
            }
            ad->role[found] = pass ? ROLE_OUT : ROLE_IN;
        }
    }
    if (ok && !ad->spec->nouts) {
        diag_error(ad->d, f->loc, "no differentiated output given");
        ok = false;
    }
    return ok;
}

Func *ad_reverse(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec)
{
    Ad ad0 = {.a = a, .d = d, .fw = fwd, .spec = spec}, *ad = &ad0;
    int nv = ad->nvals = fwd->vals.n;
    int np = fwd->nparams;
    ad->role = arena_alloc(a, sizeof(int) * (size_t)(np + 1));
    ad->stored = arena_alloc(a, (size_t)np + 1);
    ad->first_store = arena_alloc(a, sizeof(const Inst *) * (size_t)(np + 1));
    ad->first_atomic = arena_alloc(a, sizeof(const Inst *) * (size_t)(np + 1));
    ad->grad = arena_alloc(a, sizeof(ValId) * (size_t)(np + 1));
    ad->root = arena_alloc(a, sizeof(int) * (size_t)nv);
    ad->varied = arena_alloc(a, (size_t)nv);
    ad->useful = arena_alloc(a, (size_t)nv);
    ad->chain = arena_alloc(a, (size_t)nv);
    ad->nuses = arena_alloc(a, sizeof(int) * (size_t)nv);
    ad->def = arena_alloc(a, sizeof(const Inst *) * (size_t)nv);
    ad->pm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    ad->sm = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    ad->adj = arena_alloc(a, sizeof(ValId) * (size_t)nv);
    ad->stamp = arena_alloc(a, sizeof(int) * (size_t)nv);
    ad->seen = arena_alloc(a, sizeof(int) * (size_t)nv);
    int before = d->nerrors;
    if (!assign_roles(ad))
        return NULL;

    /* 1-2: analysis and validation */
    analyze(ad);
    drop_shift_invariant(ad, fwd->body);
    validate_block(ad, fwd->body, 0, NULL, NULL, 0);
    if (d->nerrors != before)
        return NULL;

    /* The backward kernel's signature. */
    Func *bw = ad->bw = ir_func_new(a, arena_printf(a, "%s_bwd", fwd->name), fwd->loc);
    for (int i = 0; i < np; i++) {
        ValId p = fwd->params[i];
        ad->pm[p] = ir_param_add(bw, fty(ad, p), fname(ad, p), fwd->vals.v[p].loc);
    }
    for (int role = ROLE_OUT; role >= ROLE_IN; role--) /* outputs' gradients first */
        for (int i = 0; i < np; i++)
            if (ad->role[i] == role) {
                ValId p = fwd->params[i];
                ad->grad[i] = ir_param_add(bw, fty(ad, p), arena_printf(a, "d_%s", fname(ad, p)),
                                           fwd->vals.v[p].loc);
                ad->sm[p] = ad->grad[i];
            }
    for (int i = 0; i < fwd->consts.n; i++)
        vec_push(a, bw->consts, fwd->consts.v[i]);

    /* 3: primal sweep, then the adjoint sweep. */
    clone_block(ad, fwd->body, bw->body, 0, NULL);
    adj_block(ad, fwd->body, bw->body);
    return bw;
}

/* Operand uses of every value in b (regions included). */
static void count_uses_in(int *uses, const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++)
            uses[in->args[k]]++;
        for (int r = 0; r < in->nregions; r++)
            count_uses_in(uses, in->regions[r]);
    }
}

static bool block_has_effect(const Block *b)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        if (in->op == OP_STORE || in->op == OP_ATOMIC_ADD || in->op == OP_ASSERT)
            return true;
        for (int r = 0; r < in->nregions; r++)
            if (block_has_effect(in->regions[r]))
                return true;
    }
    return false;
}

/* The dce pass keeps every `while` (it might not terminate).  In a backward
 * kernel each `while` recomputes one of the forward's, which terminated, so
 * a recomputation without effects whose results nobody uses (the primal
 * sweep's copy of a loop that only stored) is dead code: drop it.  Returns
 * whether something was removed. */
static bool drop_dead_whiles(Block *b, int *uses)
{
    bool removed = false;
    int n = 0;
    for (int i = 0; i < b->insts.n; i++) {
        Inst *in = &b->insts.v[i];
        bool dead = in->op == OP_WHILE;
        for (int k = 0; dead && k < in->nres; k++)
            dead = uses[in->res[k]] == 0;
        dead = dead && !block_has_effect(in->regions[0]) && !block_has_effect(in->regions[1]);
        if (dead) {
            removed = true;
            continue;
        }
        for (int r = 0; r < in->nregions; r++)
            removed = drop_dead_whiles(in->regions[r], uses) || removed;
        b->insts.v[n++] = *in;
    }
    b->insts.n = n;
    return removed;
}

Func *ad_backward(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec)
{
    Func *bw = ad_reverse(a, d, fwd, spec);
    if (!bw)
        return NULL;
    /* A backward that does not verify is a kad bug; say so plainly. */
    bool ok = ir_verify(bw, d) && pass_run(bw, "simplify", d);
    int *uses = ok ? arena_alloc(a, sizeof(int) * (size_t)bw->vals.n) : NULL;
    if (uses)
        count_uses_in(uses, bw->body);
    if (ok && drop_dead_whiles(bw->body, uses))
        ok = pass_run(bw, "dce", d);
    if (!ok || !ir_verify(bw, d)) {
        diag_note(d, fwd->loc, "kad bug: the backward kernel of '%s' is invalid", fwd->name);
        return NULL;
    }
    return bw;
}
