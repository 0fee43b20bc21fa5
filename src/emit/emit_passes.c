/* emit_passes.c -- the Triton emitter's passes 1-5 over a Func (see
 * emit_triton.c's file comment for what each decides): the names in use
 * and fresh ones, the union-find of values into Python variables, the
 * scan (print order, definitions, implicit broadcasts, dead pure
 * instructions, use counts), inlining, liveness, coalescing, and the
 * names of the classes.
 *
 * Requires: a Func that passes ir_verify, and an Emitter set up by
 * emit_triton.c's driver.  Keeps: the Func.  Guarantees: deterministic
 * decisions (every order is the print order or the values' order); two
 * values share a variable only when their live intervals do not overlap
 * or the IR makes them one (loop-carried values, region results).  All
 * state in the Emitter, all memory in its arena.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "emit/emit.h"

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

/* Python keywords and the names the emitted code itself refers to. */
static const char *const reserved[] = {
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class",
    "continue", "def", "del", "elif", "else", "except", "finally", "for", "from", "global",
    "if", "import", "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return",
    "try", "while", "with", "yield", "match", "case", "type", "_",
    "tl", "triton", "libdevice", "range", "float", "int", "bool", "min", "max", "abs", "len",
    "print", "object", "str", "list", "tuple",
};

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

bool emit_name_used(const Emitter *E, const char *s)
{
    for (uint32_t i = hash_str(s) & E->mask;; i = (i + 1) & E->mask) {
        if (!E->set[i])
            return false;
        if (!strcmp(E->set[i], s))
            return true;
    }
}

void emit_name_add(Emitter *E, const char *s)
{
    uint32_t i = hash_str(s) & E->mask;
    while (E->set[i])
        i = (i + 1) & E->mask;
    E->set[i] = s;
}

/* A hint as a Python identifier: characters outside [A-Za-z0-9_] become
 * '_' (so the printer's `acc.1` reads `acc_1`), a leading digit gets a
 * 'v' in front.  NULL when there is no hint or it is purely numeric
 * (the IR parser's anonymous values). */
const char *em_py_ident(Arena *a, const char *h)
{
    if (!h || !*h)
        return NULL;
    bool numeric = true;
    for (const char *p = h; *p; p++)
        if (*p < '0' || *p > '9')
            numeric = false;
    if (numeric)
        return NULL;
    size_t n = strlen(h);
    char *s = arena_alloc(a, n + 2), *q = s;
    if (h[0] >= '0' && h[0] <= '9')
        *q++ = 'v';
    for (const char *p = h; *p; p++) {
        unsigned char c = (unsigned char)*p;
        bool ok = c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        *q++ = ok ? (char)c : '_';
    }
    *q = 0;
    return s;
}

/* A fresh name from base: base itself, else base_1, base_2, ... */
const char *emit_unique_name(Emitter *E, const char *base)
{
    const char *s = base;
    if (emit_name_used(E, s)) {
        uint32_t i = hash_str(base) & E->mask;
        while (E->ubase[i] && strcmp(E->ubase[i], base))
            i = (i + 1) & E->mask;
        int n = E->ubase[i] ? E->unext[i] : 1;
        do
            s = arena_printf(E->a, "%s_%d", base, n++);
        while (emit_name_used(E, s));
        E->ubase[i] = base;
        E->unext[i] = n;
    }
    emit_name_add(E, s);
    return s;
}

static const char *fresh_tmp(Emitter *E)
{
    for (;;) {
        const char *s = arena_printf(E->a, "tmp%d", E->ntmp++);
        if (!emit_name_used(E, s)) {
            emit_name_add(E, s);
            return s;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Union-find over values: a class is one Python variable               */
/* ------------------------------------------------------------------ */

int em_find(Emitter *E, int v)
{
    while (E->vi[v].cls != v) {
        E->vi[v].cls = E->vi[E->vi[v].cls].cls;
        v = E->vi[v].cls;
    }
    return v;
}

/* Whether a var member of the class is a kernel parameter (param) or a
 * loop variable: kept on the root by liveness and unite. */
static bool class_has(Emitter *E, int root, bool param)
{
    return param ? E->vi[root].cparam : E->vi[root].civ;
}

/* Two classes may share a variable when no member of one is live while a
 * member of the other is.  Touching intervals are fine: `x = f(x)` reads
 * the old value before the statement writes the new one.  Each interval y
 * of the class with fewer looks up the other's: the intervals starting
 * before y ends (a prefix, sorted by lo) overlap y when the largest hi
 * among them passes y's lo. */
static bool interferes(Emitter *E, int ra, int rb)
{
    const ValInfo *A = &E->vi[ra], *B = &E->vi[rb];
    if (A->ihi <= B->ilo || B->ihi <= A->ilo)
        return false; /* every interval of one ends before any of the other starts */
    if (A->ivals.n < B->ivals.n) {
        const ValInfo *t = A;
        A = B;
        B = t;
    }
    for (int j = 0; j < B->ivals.n; j++) {
        Ival y = B->ivals.v[j];
        int lo = 0, hi = A->ivals.n; /* the first interval of A with lo >= y.hi */
        while (lo < hi) {
            int mid = lo + (hi - lo) / 2;
            if (A->ivals.v[mid].lo < y.hi)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && A->imax.v[lo - 1] > y.lo)
            return true;
    }
    return false;
}

/* imax.v[from..] again after ivals.v[from..] changed. */
static void ivals_max_from(Emitter *E, ValInfo *x, int from)
{
    vec_reserve(E->a, x->imax, x->ivals.n);
    for (int i = from; i < x->ivals.n; i++)
        x->imax.v[i] = i && x->imax.v[i - 1] > x->ivals.v[i].hi ? x->imax.v[i - 1] : x->ivals.v[i].hi;
    x->imax.n = x->ivals.n;
}

static int ival_cmp(const void *a, const void *b)
{
    const Ival *x = a, *y = b;
    return x->lo != y->lo ? (x->lo < y->lo ? -1 : 1) : (x->hi > y->hi) - (x->hi < y->hi);
}

/* A's intervals and B's, sorted by lo: appended when B's start after
 * A's (straight-line code), else merged from the back in place. */
static void ivals_merge(Emitter *E, ValInfo *A, ValInfo *B)
{
    if (B->ivals.n > A->ivals.n) { /* keep the longer list (the set is the same) */
        Ival *v = A->ivals.v;
        int n = A->ivals.n, cap = A->ivals.cap;
        int *m = A->imax.v, mn = A->imax.n, mcap = A->imax.cap;
        A->ivals = B->ivals;
        A->imax = B->imax;
        B->ivals.v = v;
        B->ivals.n = n;
        B->ivals.cap = cap;
        B->imax.v = m;
        B->imax.n = mn;
        B->imax.cap = mcap;
    }
    int na = A->ivals.n, nb = B->ivals.n;
    if (!nb)
        return;
    vec_reserve(E->a, A->ivals, na + nb);
    int from = na;
    if (!na || B->ivals.v[0].lo >= A->ivals.v[na - 1].lo) {
        memcpy(A->ivals.v + na, B->ivals.v, sizeof(Ival) * (size_t)nb);
    } else {
        int i = na - 1, j = nb - 1, k = na + nb - 1;
        while (j >= 0) {
            if (i >= 0 && ival_cmp(&A->ivals.v[i], &B->ivals.v[j]) > 0)
                A->ivals.v[k--] = A->ivals.v[i--];
            else
                A->ivals.v[k--] = B->ivals.v[j--];
        }
        from = i + 1;
    }
    A->ivals.n = na + nb;
    ivals_max_from(E, A, from);
}

static void unite(Emitter *E, int ra, int rb)
{
    if (ra == rb)
        return;
    ValInfo *A = &E->vi[ra], *B = &E->vi[rb];
    /* the root keeps the stronger hint; on a tie the earlier definition's */
    if (B->prio > A->prio || (B->prio == A->prio && B->hint && !A->hint)) {
        A->prio = B->prio;
        A->hint = B->hint;
    }
    ivals_merge(E, A, B);
    if (B->ilo < A->ilo)
        A->ilo = B->ilo;
    if (B->ihi > A->ihi)
        A->ihi = B->ihi;
    A->civ |= B->civ;
    A->cparam |= B->cparam;
    B->cls = ra;
}

static bool may_be_constexpr(const Emitter *E, ValId v)
{
    Type t = em_vtype(E, v);
    if (v <= 0 || t.rank != 0)
        return false;
    const ValInfo *x = &E->vi[v];
    if (x->param)
        return dtype_is_int((Dtype)t.dt) && t.dt != DT_I1;
    if (!x->defi)
        return false; /* region parameters are variables (tensors) */
    const Inst *in = x->defi->in;
    if (in->op == OP_CONST)
        return true;
    if (!op_info[in->op].pure || !op_info[in->op].elementwise || in->nregions || in->op == OP_CAST ||
        in->op == OP_BITCAST)
        return false;
    for (int i = 0; i < in->nargs; i++)
        if (!em_may_be_constexpr(E, in->args[i]))
            return false;
    return true;
}

/* Memoized on the value (a chain of scalar ops would be walked from every
 * link again); emit_triton asks in print order, operands first, so the
 * recursion stays shallow however long the chain. */
bool em_may_be_constexpr(const Emitter *E, ValId v)
{
    if (v <= 0 || v >= E->nvals)
        return may_be_constexpr(E, v);
    if (!E->vi[v].cx)
        E->vi[v].cx = may_be_constexpr(E, v) ? 2 : 1;
    return E->vi[v].cx == 2;
}

/* Joins the classes of a and b when that is safe (see the header). */
static void try_unite(Emitter *E, ValId a, ValId b)
{
    if (a <= 0 || b <= 0 || !E->vi[a].var || !E->vi[b].var)
        return;
    if (em_may_be_constexpr(E, a) || em_may_be_constexpr(E, b))
        return; /* copied with tl.cast (em_print_moves) */
    int ra = em_find(E, a), rb = em_find(E, b);
    if (ra == rb)
        return;
    if (class_has(E, ra, false) || class_has(E, rb, false))
        return; /* a loop variable is assigned by `for` alone */
    if (class_has(E, ra, true) && class_has(E, rb, true))
        return; /* two kernel parameters keep their names */
    if (interferes(E, ra, rb))
        return;
    if (E->vi[rb].def_pos < E->vi[ra].def_pos)
        unite(E, rb, ra);
    else
        unite(E, ra, rb);
}

/* ------------------------------------------------------------------ */
/* Pass 1: scan                                                        */
/* ------------------------------------------------------------------ */

/* Binary-like elementwise ops whose operands Triton broadcasts itself. */
static bool broadcasts_operands(OpKind op)
{
    switch (op) {
    case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_REM:
    case OP_MAXIMUM: case OP_MINIMUM: case OP_AND: case OP_OR: case OP_XOR:
    case OP_SHL: case OP_SHR: case OP_UMULHI:
    case OP_LT: case OP_LE: case OP_GT: case OP_GE: case OP_EQ: case OP_NE:
    case OP_WHERE: case OP_ADDPTR:
        return true;
    default:
        return false;
    }
}

static ValId strip_bcast(const Emitter *E, ValId v)
{
    const InstInfo *di = v > 0 ? E->vi[v].defi : NULL;
    return di && di->in->op == OP_BROADCAST ? di->in->args[0] : v;
}

/* Whether printing operands eff[0..n) with Triton's implicit broadcasting
 * gives the result shape rs.  Constants count as scalars: they may print
 * as literals. */
static bool bcast_ok(const Emitter *E, const ValId *eff, int n, Type rs)
{
    int32_t got[KAD_MAX_RANK] = {0};
    int rank = 0;
    for (int i = 0; i < n; i++) {
        Type t = em_vtype(E, eff[i]);
        if (t.rank == 0 || E->vi[eff[i]].cnst)
            continue;
        if (t.rank != rs.rank)
            return false;
        rank = t.rank;
        for (int k = 0; k < t.rank; k++)
            if (t.shape[k] > got[k])
                got[k] = t.shape[k];
    }
    if (rank != rs.rank)
        return false;
    for (int k = 0; k < rank; k++)
        if (got[k] != rs.shape[k])
            return false;
    return true;
}

/* Chooses the printed operands of info (see InstInfo.eff). */
static void choose_operands(Emitter *E, InstInfo *info)
{
    const Inst *in = info->in;
    OpKind op = (OpKind)in->op;
    info->eff = arena_alloc(E->a, sizeof(ValId) * (size_t)(in->nargs + 1));
    if (in->nargs > 0) /* args is NULL for ops without operands */
        memcpy(info->eff, in->args, sizeof(ValId) * (size_t)in->nargs);
    if (broadcasts_operands(op) && in->nres == 1) {
        Type rs = em_vtype(E, in->res[0]);
        for (int i = 0; i < in->nargs; i++)
            info->eff[i] = strip_bcast(E, in->args[i]);
        /* keep broadcasts explicit while the operands would come out smaller */
        for (int i = 0; i < in->nargs && !bcast_ok(E, info->eff, in->nargs, rs); i++)
            info->eff[i] = in->args[i];
    } else if ((op == OP_LOAD || op_writes_memory(op)) && in->nargs > 0 &&
               em_vtype(E, in->args[0]).rank > 0) {
        /* mask, other and the stored value broadcast to the pointer tile (a descriptor's
         * operands are scalars; desc.store wants the value as a whole tile) */
        for (int i = 1; i < ir_desc_at(in); i++)
            if (!(i == 1 && op == OP_STORE && (in->flags & IF_DESC)))
                info->eff[i] = strip_bcast(E, in->args[i]);
    }
}

static void define(Emitter *E, ValId v, InstInfo *di, const Block *b, InstInfo *scope, int depth)
{
    if (v <= 0 || v >= E->nvals)
        return;
    ValInfo *x = &E->vi[v];
    x->defi = di;
    x->blk = b;
    x->scope = scope;
    x->depth = depth;
}

void emit_scan_block(Emitter *E, const Block *b, InstInfo *infos, InstInfo *parent, int region, int depth)
{
    for (int i = 0; i < b->insts.n; i++) {
        InstInfo *info = &infos[i];
        const Inst *in = &b->insts.v[i];
        info->in = in;
        info->blk = b;
        info->idx = i;
        info->parent = parent;
        info->region = region;
        info->depth = depth;
        info->pos = E->counter++;
        vec_push(E->a, E->order, info);
        OpKind op = (OpKind)in->op;
        if (op >= OP_COUNT) {
            em_error(E, in->loc, "Triton emitter: unknown IR operation %d", (int)op);
            return;
        }
        choose_operands(E, info);
        emit_desc_choose(E, info);
        info->effects = op_writes_memory(op) || op == OP_ASSERT || op == OP_BARRIER;
        if (op == OP_SCAN || op == OP_REDUCE) /* the combine region prints as its own function (emit_combines) */
            vec_push(E->a, E->scans, in);
        else if (in->nregions) {
            info->reg = arena_alloc(E->a, sizeof(InstInfo *) * (size_t)in->nregions);
            for (int r = 0; r < in->nregions; r++) {
                const Block *rb = in->regions[r];
                if (!rb)
                    continue;
                info->reg[r] = arena_alloc(E->a, sizeof(InstInfo) * (size_t)(rb->insts.n + 1));
                if (op == OP_WHILE && r == 1)
                    info->mid = E->counter++;
                if (r < 2)
                    info->rstart[r] = E->counter;
                for (int k = 0; k < rb->nparams; k++)
                    define(E, rb->params[k], NULL, rb, info, depth + 1);
                if (op == OP_FOR && rb->nparams > 0)
                    E->vi[rb->params[0]].iv = true;
                emit_scan_block(E, rb, info->reg[r], info, r, depth + 1);
                for (int k = 0; k < rb->insts.n; k++)
                    info->effects |= info->reg[r][k].effects;
            }
        }
        info->end = in->nregions && op != OP_SCAN && op != OP_REDUCE ? E->counter++ : info->pos;
        for (int r = 0; r < in->nres; r++)
            define(E, in->res[r], info, b, parent, depth);
        if (in->nres == 1 && (op == OP_CONST || (op == OP_BROADCAST && E->vi[in->args[0]].cnst)))
            E->vi[in->res[0]].cnst = true;
    }
}

/* Counts the uses of live instructions (a dead instruction's operands are
 * not used by anything printed). */
static void count_uses(Emitter *E)
{
    for (int v = 0; v < E->nvals; v++) {
        E->vi[v].nuses = 0;
        E->vi[v].useri = NULL;
    }
    for (int k = 0; k < E->order.n; k++) {
        InstInfo *info = E->order.v[k];
        if (info->dead)
            continue;
        for (int i = 0; i < info->in->nargs; i++) {
            ValId v = info->eff[i];
            if (v <= 0 || v >= E->nvals)
                continue;
            E->vi[v].nuses++;
            E->vi[v].useri = info;
            E->vi[v].uarg = i;
        }
    }
}

/* Pure instructions whose results nothing printed uses are not printed
 * (broadcasts that every user performs implicitly, constants, and dead
 * code the IR may still hold).  Users come after their operands in print
 * order, so one backward sweep finds chains of dead code. */
void emit_mark_dead(Emitter *E)
{
    count_uses(E);
    for (int k = E->order.n - 1; k >= 0; k--) {
        InstInfo *info = E->order.v[k];
        const Inst *in = info->in;
        if (!op_info[in->op].pure || in->nres != 1 || E->vi[in->res[0]].nuses > 0)
            continue;
        info->dead = true;
        for (int i = 0; i < in->nargs; i++)
            if (info->eff[i] > 0)
                E->vi[info->eff[i]].nuses--;
    }
    count_uses(E);
}

/* ------------------------------------------------------------------ */
/* Pass 2: inlining                                                    */
/* ------------------------------------------------------------------ */

static bool inline_candidate(Emitter *E, ValId v, InstInfo *user)
{
    const ValInfo *x = &E->vi[v];
    if (x->cnst || !x->defi || x->nuses != 1 || x->blk != user->blk || x->param)
        return false;
    const Inst *d = x->defi->in;
    if (d->nres != 1 || emit_is_cf((OpKind)d->op) || d->nregions || op_is_atomic(d->op))
        return false; /* scan and reduce print as statements */
    if (!op_info[d->op].pure && d->op != OP_LOAD)
        return false;
    if (em_py_ident(E->a, E->f->vals.v[v].name) && user->in->op != OP_CONDITION)
        return false; /* the author named it: keep the statement (a while test
                       * goes into the header rather than being printed twice) */
    if (user->in->op == OP_ISNAN)
        return false; /* printed twice (x != x) */
    return true;
}

static size_t longest_line(const char *s)
{
    size_t best = 0, cur = 0;
    for (; *s; s++) {
        if (*s == '\n') {
            best = cur > best ? cur : best;
            cur = 0;
        } else {
            cur++;
        }
    }
    return cur > best ? cur : best;
}

/* Decides, in print order, which operands are printed inside their user;
 * a user whose line would pass LINE_LIMIT names its longest inlined
 * operand instead, until it fits. */
void emit_decide_inlining(Emitter *E)
{
    E->measuring = true;
    for (int k = 0; k < E->order.n; k++) {
        InstInfo *info = E->order.v[k];
        if (info->dead)
            continue;
        const Inst *in = info->in;
        bool any = false;
        for (int i = 0; i < in->nargs; i++) {
            ValId v = info->eff[i];
            if (v > 0 && inline_candidate(E, v, info)) {
                E->vi[v].inl = true;
                any = true;
            }
        }
        /* yields and conditions are measured as part of their parent's lines */
        InstInfo *stmt = info;
        if (in->op == OP_YIELD || in->op == OP_CONDITION)
            stmt = info->parent;
        while (any && stmt) {
            Buf b = {.a = E->a};
            if (in->op == OP_YIELD && stmt != info) {
                const Inst *p = stmt->in;
                const ValId *dst = p->op == OP_IF ? p->res : p->regions[0]->params + (p->op == OP_FOR);
                em_print_moves(E, &b, info->depth, info, 0, dst, in->nargs, CTX_SLOT);
            } else if (in->op == OP_CONDITION) {
                buf_printf(&b, "%*swhile %s:", 4 * stmt->depth, "", em_opnd(E, info, 0, CTX_SLOT).s);
            } else {
                em_print_inst(E, &b, info, info->depth);
            }
            if (longest_line(buf_str(&b)) <= LINE_LIMIT)
                break;
            /* un-inline the longest inlined operand */
            int best = -1;
            size_t blen = 0;
            for (int i = 0; i < in->nargs; i++) {
                ValId v = info->eff[i];
                if (v > 0 && E->vi[v].inl && E->vi[v].useri == info) {
                    size_t l = strlen(em_gen_inst(E, E->vi[v].defi).s);
                    if (best < 0 || l > blen) {
                        best = i;
                        blen = l;
                    }
                }
            }
            if (best < 0)
                break;
            E->vi[info->eff[best]].inl = false;
        }
    }
    E->measuring = false;

    /* A load must not move past a store (or atomic, assert, or a loop or
     * if containing one) on its way to where its user is evaluated.  Later
     * instructions first, so that a user's final place is known. */
    for (int k = E->order.n - 1; k >= 0; k--) {
        InstInfo *info = E->order.v[k];
        const Inst *in = info->in;
        if (info->dead || in->op != OP_LOAD || !E->vi[in->res[0]].inl)
            continue;
        InstInfo *u = E->vi[in->res[0]].useri;
        while (u->in->nres == 1 && E->vi[u->in->res[0]].inl)
            u = E->vi[u->in->res[0]].useri;
        int to = u->blk == info->blk ? u->idx : info->blk->insts.n;
        for (int i = info->idx + 1; i < to; i++) {
            InstInfo *mid = info + (i - info->idx);
            if (!mid->dead && mid->effects) {
                E->vi[in->res[0]].inl = false;
                break;
            }
        }
    }
}

/* ------------------------------------------------------------------ */
/* Pass 3: liveness                                                    */
/* ------------------------------------------------------------------ */

/* Where operand i of info is read, in positions four per instruction:
 * 4p the statement (and the init copies before a loop header), 4p+1 the
 * region parameters, 4p+2 the header's own operands (range bounds, if
 * conditions), which Python evaluates after the init copies. */
static int read_pos(Emitter *E, InstInfo *info, int i)
{
    const Inst *in = info->in;
    if (in->nres == 1 && E->vi[in->res[0]].inl) {
        const ValInfo *x = &E->vi[in->res[0]];
        return read_pos(E, x->useri, x->uarg);
    }
    if ((in->op == OP_FOR && i < 3) || in->op == OP_IF)
        return 4 * info->pos + 2;
    return 4 * info->pos;
}

/* Records that v is read at pos by user (an inlined user is evaluated
 * where its own user is: same block, same enclosing constructs).  Walking
 * out from the use to v's block: a value read inside a loop that does not
 * define it stays live to the loop's end (the next iteration reads it
 * again); a value read in the else branch of an if that does not define
 * it is not live during the then branch, so a then-branch value may share
 * its variable. */
static void note_use(Emitter *E, ValId v, InstInfo *user, int pos)
{
    ValInfo *x = &E->vi[v];
    InstInfo *c = user;
    for (InstInfo *p = user->parent; p && p->depth >= x->depth; c = p, p = p->parent) {
        if (emit_is_loop((OpKind)p->in->op)) {
            if (4 * p->end > pos)
                pos = 4 * p->end;
        } else if (p->in->op == OP_IF && c->region == 1) {
            vec_push(E->a, x->ivals, ((Ival){4 * p->rstart[1], pos}));
            pos = 4 * p->pos + 2;
        }
    }
    vec_push(E->a, x->ivals, ((Ival){x->def_pos, pos}));
    if (pos > x->last_pos)
        x->last_pos = pos;
}

void emit_liveness(Emitter *E)
{
    for (int i = 0; i < E->f->nparams; i++) {
        ValId p = E->f->params[i];
        E->vi[p].param = true;
        E->vi[p].def_pos = E->vi[p].last_pos = 0;
    }
    for (int k = 0; k < E->order.n; k++) {
        InstInfo *info = E->order.v[k];
        const Inst *in = info->in;
        for (int r = 0; r < in->nres; r++) {
            ValInfo *x = &E->vi[in->res[r]];
            x->def_pos = x->last_pos = 4 * (in->nregions ? info->end : info->pos);
        }
        for (int r = 0; r < in->nregions; r++) {
            const Block *rb = in->regions[r];
            int at = in->op == OP_WHILE && r == 1 ? 4 * info->mid + 1 : 4 * info->pos + 1;
            for (int j = 0; rb && j < rb->nparams; j++) {
                ValInfo *x = &E->vi[rb->params[j]];
                x->def_pos = x->last_pos = at;
            }
        }
    }
    for (int k = 0; k < E->order.n; k++) {
        InstInfo *info = E->order.v[k];
        if (info->dead)
            continue;
        for (int i = 0; i < info->in->nargs; i++) {
            ValId v = info->eff[i];
            if (v > 0 && !E->vi[v].cnst && !E->vi[v].inl)
                note_use(E, v, info, read_pos(E, info, i));
        }
    }
    for (int v = 1; v < E->nvals; v++) {
        ValInfo *x = &E->vi[v];
        x->cls = v;
        x->var = !x->cnst && !x->inl && (x->param || x->defi || x->blk) && !(x->defi && x->defi->dead);
        if (x->var)
            vec_push(E->a, x->ivals, ((Ival){x->def_pos, x->def_pos}));
        x->civ = x->var && x->iv;
        x->cparam = x->var && x->param;
        x->ilo = INT_MAX;
        x->ihi = INT_MIN;
        for (int i = 0; i < x->ivals.n; i++) {
            if (x->ivals.v[i].lo < x->ilo)
                x->ilo = x->ivals.v[i].lo;
            if (x->ivals.v[i].hi > x->ihi)
                x->ihi = x->ivals.v[i].hi;
        }
        if (x->ivals.n > 1)
            qsort(x->ivals.v, (size_t)x->ivals.n, sizeof(Ival), ival_cmp);
        ivals_max_from(E, x, 0);
    }
}

/* ------------------------------------------------------------------ */
/* Pass 4: coalescing                                                  */
/* ------------------------------------------------------------------ */

static void set_hint(Emitter *E, ValId v, int prio)
{
    ValInfo *x = &E->vi[v];
    const char *h = em_py_ident(E->a, E->f->vals.v[v].name);
    x->prio = h ? prio : 0;
    x->hint = h;
}

/* A name for an unnamed pointer or mask that got its own line (too long to
 * inline) from the load it feeds: `x = tl.load(x_ptrs, mask=x_mask)`, as
 * an author splitting the line would write it. */
static void hint_from_load(Emitter *E, ValId v)
{
    ValInfo *x = &E->vi[v];
    if (x->hint || x->param || x->nuses != 1 || !x->useri || x->useri->in->op != OP_LOAD || x->uarg > 1)
        return;
    const char *h = em_py_ident(E->a, E->f->vals.v[x->useri->in->res[0]].name);
    if (!h)
        return;
    x->hint = arena_printf(E->a, "%s_%s", h, x->uarg == 0 ? "ptrs" : "mask");
    x->prio = 1;
}

void emit_coalesce(Emitter *E)
{
    for (int v = 1; v < E->nvals; v++)
        if (E->vi[v].var) {
            set_hint(E, v, E->vi[v].param ? 3 : 1);
            hint_from_load(E, v);
        }
    /* a mask shared by a load and its gradient's atomic_add: `x_mask` */
    for (int k = 0; k < E->order.n; k++) {
        InstInfo *info = E->order.v[k];
        const Inst *in = info->in;
        if (info->dead || in->op != OP_LOAD || !(in->flags & IF_HAS_MASK))
            continue;
        ValInfo *m = &E->vi[info->eff[1] ? info->eff[1] : in->args[1]]; /* a descriptor load prints none */
        const char *h = em_py_ident(E->a, E->f->vals.v[in->res[0]].name);
        if (h && m->var && !m->hint && !m->param) {
            m->hint = arena_printf(E->a, "%s_mask", h);
            m->prio = 1;
        }
    }
    /* a loop's carried value is one variable: region params and results */
    for (int k = 0; k < E->order.n; k++) {
        const Inst *in = E->order.v[k]->in;
        if (in->op == OP_FOR) {
            const Block *body = in->regions[0];
            for (int j = 1; j < body->nparams; j++) {
                set_hint(E, body->params[j], 2);
                if (j - 1 < in->nres)
                    unite(E, em_find(E, body->params[j]), em_find(E, in->res[j - 1]));
            }
        } else if (in->op == OP_IF) {
            for (int j = 0; j < in->nres; j++)
                set_hint(E, in->res[j], 2);
        } else if (in->op == OP_WHILE) {
            const Block *c = in->regions[0], *body = in->regions[1];
            for (int j = 0; j < c->nparams; j++) {
                set_hint(E, c->params[j], 2);
                if (j < body->nparams)
                    unite(E, em_find(E, c->params[j]), em_find(E, body->params[j]));
                if (j < in->nres)
                    unite(E, em_find(E, c->params[j]), em_find(E, in->res[j]));
            }
        }
    }
    /* inits and yields join when they can, outer copies first (pre-order) */
    for (int k = 0; k < E->order.n; k++) {
        InstInfo *info = E->order.v[k];
        const Inst *in = info->in;
        if (info->dead)
            continue;
        if (in->op == OP_FOR) {
            const Block *body = in->regions[0];
            for (int j = 3; j < in->nargs && j - 2 < body->nparams; j++)
                try_unite(E, info->eff[j], body->params[j - 2]);
            InstInfo *y = &info->reg[0][body->insts.n - 1];
            for (int j = 0; j < y->in->nargs && j + 1 < body->nparams; j++)
                try_unite(E, y->eff[j], body->params[j + 1]);
        } else if (in->op == OP_WHILE) {
            const Block *c = in->regions[0], *body = in->regions[1];
            for (int j = 0; j < in->nargs && j < c->nparams; j++)
                try_unite(E, info->eff[j], c->params[j]);
            InstInfo *y = &info->reg[1][body->insts.n - 1];
            for (int j = 0; j < y->in->nargs && j < body->nparams; j++)
                try_unite(E, y->eff[j], body->params[j]);
        } else if (in->op == OP_IF) {
            for (int r = 0; r < 2; r++) {
                const Block *rb = in->regions[r];
                InstInfo *y = &info->reg[r][rb->insts.n - 1];
                for (int j = 0; j < y->in->nargs && j < in->nres; j++)
                    try_unite(E, y->eff[j], in->res[j]);
            }
        }
    }
}

/* Whether block a is b or encloses it (b is defined in scope). */
static bool block_encloses(const Block *a, const Block *b, const InstInfo *scope)
{
    if (a == b)
        return true;
    for (; scope; scope = scope->parent)
        if (scope->blk == a)
            return true;
    return false;
}

/* Values with the same source name share a variable, as in the source
 * (`X += off` stays `X`), when their types agree, they are never live at
 * once, and no later member sits inside an if or loop that an earlier
 * member's variable is visible to: Triton would make that variable a
 * loop-carried value or an if result (semantically harmless, but a cost
 * the source did not have).
 *
 * The rule, as a greedy pass: for each value v in id order, for each
 * earlier value w whose class has v's class's hint, v's and w's classes
 * join when same_name_ok.  Done literally that is cubic in a long
 * straight line of `x = x * c` (every pair of x's, and each test walks
 * all values), so the pass keeps per class what the test reads (its
 * member list, flags, block) and visits each other class once per v, at
 * its smallest member (its head): within v's turn only v's class grows,
 * every part of the test can only turn false as a class grows, and the
 * classes with no member below v are never tested -- the same joins in
 * the same order as the literal loops.  A class that may be a constexpr
 * joins nothing and is left out.  The heads of one hint sit in a tree
 * (HeadTree) that skips, a subtree at a time, the classes that surely
 * interfere with v's: while both classes are "spanned" (one interval
 * covers all the others), they interfere exactly when those two
 * intervals overlap -- so values all live at once (a chain whose every
 * link the reverse sweep reads) cost a lookup per value, not a test
 * against every earlier one. */

/* The live heads of one hint's classes, by position in id order, as a
 * segment tree of keys (lo, hi): a spanned class's span, (INT_MAX,
 * INT_MIN) for another (never skipped), (INT_MIN, INT_MAX) for a head
 * that left (always skipped).  A query (a, b) skips the leaves with
 * lo < b && a < hi; a node holds the largest lo and the smallest hi
 * below it, so it is skipped exactly when all its leaves are. */
typedef struct HeadTree {
    int m, size;   /* heads; leaves (a power of two >= m) */
    int *head;     /* by position: the head value, ascending */
    int *lo, *hi;  /* by node: 1 the root, size + p the leaf of position p */
} HeadTree;

static void ht_set(HeadTree *t, int p, int lo, int hi)
{
    p += t->size;
    t->lo[p] = lo;
    t->hi[p] = hi;
    for (p >>= 1; p; p >>= 1) {
        t->lo[p] = t->lo[2 * p] > t->lo[2 * p + 1] ? t->lo[2 * p] : t->lo[2 * p + 1];
        t->hi[p] = t->hi[2 * p] < t->hi[2 * p + 1] ? t->hi[2 * p] : t->hi[2 * p + 1];
    }
}

/* The first position in [from, lim) of a leaf the query (a, b) does not
 * skip, below node (covering [nl, nr)); -1 if none. */
static int ht_next(const HeadTree *t, int node, int nl, int nr, int from, int lim, int a, int b)
{
    if (nr <= from || nl >= lim || (t->lo[node] < b && a < t->hi[node]))
        return -1;
    if (nr - nl == 1)
        return nl;
    int mid = nl + (nr - nl) / 2;
    int r = ht_next(t, 2 * node, nl, mid, from, lim, a, b);
    return r >= 0 ? r : ht_next(t, 2 * node + 1, mid, nr, from, lim, a, b);
}

typedef struct NameClasses {
    int *next;           /* by value: the next var member of its class (0: last) */
    int *head, *tail;    /* by root: the first and last var member */
    int *min;            /* by root: the smallest var member (the class's head) */
    bool *cx;            /* by root: a member may be a constexpr */
    bool *span;          /* by root: one interval [ilo, ihi] covers all the class's */
    const Block **blk;   /* by root: the block of every member, NULL when they differ */
    int *bucket;         /* by value: its class's hint's HeadTree (var values with a hint) */
    int *pos;            /* by head: its position there */
    HeadTree *trees;
} NameClasses;

/* Whether a member of a and a member of b sit as same_name_ok forbids. */
static bool nested_members(Emitter *E, const NameClasses *C, int ra, int rb)
{
    if (C->blk[ra] && C->blk[ra] == C->blk[rb])
        return false; /* all in one block: x->blk != y->blk never holds */
    for (int a = C->head[ra]; a; a = C->next[a])
        for (int b = C->head[rb]; b; b = C->next[b])
            for (int k = 0; k < 2; k++) {
                const ValInfo *x = &E->vi[k ? b : a], *y = &E->vi[k ? a : b];
                if (x->def_pos < y->def_pos && x->blk != y->blk && block_encloses(x->blk, y->blk, y->scope))
                    return true;
            }
    return false;
}

static bool same_name_ok(Emitter *E, const NameClasses *C, int ra, int rb)
{
    if (!type_eq(em_vtype(E, ra), em_vtype(E, rb)))
        return false;
    if (interferes(E, ra, rb))
        return false;
    if (class_has(E, ra, false) != class_has(E, rb, false))
        return false; /* loop variables share names only with each other */
    if (class_has(E, ra, true) && class_has(E, rb, true))
        return false;
    if (C->cx[ra] || C->cx[rb])
        return false; /* a constexpr's variable must not be reassigned in a loop or branch */
    return !nested_members(E, C, ra, rb);
}

/* The key of root r's head in its HeadTree. */
static void head_key(Emitter *E, NameClasses *C, int r)
{
    HeadTree *t = &C->trees[C->bucket[C->min[r]]];
    if (C->span[r])
        ht_set(t, C->pos[C->min[r]], E->vi[r].ilo, E->vi[r].ihi);
    else
        ht_set(t, C->pos[C->min[r]], INT_MAX, INT_MIN);
}

/* Joins the classes of roots ra and rb (unite's choice of root) and their
 * NameClasses data; the larger of the two heads leaves the tree. */
static void join_named(Emitter *E, NameClasses *C, int ra, int rb)
{
    int root = E->vi[rb].def_pos < E->vi[ra].def_pos ? rb : ra, other = root == ra ? rb : ra;
    const ValInfo *R = &E->vi[root], *O = &E->vi[other];
    bool span = (C->span[root] && R->ilo <= O->ilo && O->ihi <= R->ihi) ||
                (C->span[other] && O->ilo <= R->ilo && R->ihi <= O->ihi);
    unite(E, root, other);
    int gone = C->min[ra] > C->min[rb] ? C->min[ra] : C->min[rb];
    ht_set(&C->trees[C->bucket[gone]], C->pos[gone], INT_MIN, INT_MAX);
    C->next[C->tail[root]] = C->head[other];
    C->tail[root] = C->tail[other];
    if (C->min[other] < C->min[root])
        C->min[root] = C->min[other];
    C->cx[root] |= C->cx[other];
    C->span[root] = span;
    if (C->blk[root] != C->blk[other])
        C->blk[root] = NULL;
    head_key(E, C, root);
}

void emit_coalesce_names(Emitter *E)
{
    int n = E->nvals;
    NameClasses C;
    C.next = arena_alloc(E->a, sizeof(int) * (size_t)n);
    C.head = arena_alloc(E->a, sizeof(int) * (size_t)n);
    C.tail = arena_alloc(E->a, sizeof(int) * (size_t)n);
    C.min = arena_alloc(E->a, sizeof(int) * (size_t)n);
    C.cx = arena_alloc(E->a, sizeof(bool) * (size_t)n);
    C.span = arena_alloc(E->a, sizeof(bool) * (size_t)n);
    C.blk = arena_alloc(E->a, sizeof(const Block *) * (size_t)n);
    C.bucket = arena_alloc(E->a, sizeof(int) * (size_t)n);
    C.pos = arena_alloc(E->a, sizeof(int) * (size_t)n);
    for (int v = 1; v < n; v++) {
        const ValInfo *x = &E->vi[v];
        if (!x->var)
            continue;
        int r = em_find(E, v);
        if (!C.head[r]) {
            C.head[r] = C.min[r] = v;
            C.blk[r] = x->blk;
            const ValInfo *R = &E->vi[r];
            for (int i = 0; i < R->ivals.n && !C.span[r]; i++)
                C.span[r] = R->ivals.v[i].lo == R->ilo && R->ivals.v[i].hi == R->ihi;
        } else {
            C.next[C.tail[r]] = v;
            if (C.blk[r] != x->blk)
                C.blk[r] = NULL;
        }
        C.tail[r] = v;
        C.cx[r] |= em_may_be_constexpr(E, v);
    }
    /* one tree per hint (compared as strings) of the heads of the classes
     * that may join: counted, then filled in id order */
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)n + 16)
        cap *= 2;
    const char **key = arena_alloc(E->a, cap * sizeof *key);
    int *id = arena_alloc(E->a, cap * sizeof *id), nb = 0;
    for (int v = 1; v < n; v++) {
        const char *h = E->vi[v].var ? E->vi[em_find(E, v)].hint : NULL;
        if (!h)
            continue;
        uint32_t i = hash_str(h) & (cap - 1);
        while (key[i] && strcmp(key[i], h))
            i = (i + 1) & (cap - 1);
        if (!key[i]) {
            key[i] = h;
            id[i] = nb++;
        }
        C.bucket[v] = id[i];
    }
    C.trees = arena_alloc(E->a, sizeof(HeadTree) * (size_t)(nb + 1));
    for (int v = 1; v < n; v++) {
        int r = E->vi[v].var ? em_find(E, v) : 0;
        if (r && E->vi[r].hint && C.min[r] == v && !C.cx[r])
            C.trees[C.bucket[v]].m++;
    }
    for (int b = 0; b < nb; b++) {
        HeadTree *t = &C.trees[b];
        t->size = 1;
        while (t->size < t->m)
            t->size *= 2;
        t->head = arena_alloc(E->a, sizeof(int) * (size_t)t->size);
        t->lo = arena_alloc(E->a, sizeof(int) * (size_t)(2 * t->size));
        t->hi = arena_alloc(E->a, sizeof(int) * (size_t)(2 * t->size));
        for (int i = 0; i < 2 * t->size; i++) {
            t->lo[i] = INT_MIN;
            t->hi[i] = INT_MAX;
        }
        t->m = 0;
    }
    for (int v = 1; v < n; v++) {
        int r = E->vi[v].var ? em_find(E, v) : 0;
        if (r && E->vi[r].hint && C.min[r] == v && !C.cx[r]) {
            HeadTree *t = &C.trees[C.bucket[v]];
            C.pos[v] = t->m;
            t->head[t->m++] = v;
            head_key(E, &C, r);
        }
    }
    for (int v = 1; v < n; v++) {
        if (!E->vi[v].var || !E->vi[em_find(E, v)].hint || C.cx[em_find(E, v)])
            continue;
        const HeadTree *t = &C.trees[C.bucket[v]];
        int lim = 0, hi = t->m; /* the heads below v: positions [0, lim) */
        while (lim < hi) {
            int mid = lim + (hi - lim) / 2;
            if (t->head[mid] < v)
                lim = mid + 1;
            else
                hi = mid;
        }
        for (int p = 0;; p++) {
            int rv = em_find(E, v);
            const ValInfo *V = &E->vi[rv];
            /* a spanned class skips the spanned classes it interferes with */
            p = C.span[rv] ? ht_next(t, 1, 0, t->size, p, lim, V->ilo, V->ihi)
                           : ht_next(t, 1, 0, t->size, p, lim, INT_MAX - 1, INT_MIN + 1);
            if (p < 0)
                break;
            int rw = em_find(E, t->head[p]);
            if (rv != rw && same_name_ok(E, &C, rw, rv))
                join_named(E, &C, rw, rv);
        }
    }
}

/* ------------------------------------------------------------------ */
/* Pass 5: names                                                       */
/* ------------------------------------------------------------------ */

static void name_class(Emitter *E, ValId v)
{
    if (v <= 0 || !E->vi[v].var)
        return;
    ValInfo *r = &E->vi[em_find(E, v)];
    if (r->name)
        return;
    r->name = r->hint ? emit_unique_name(E, r->hint) : fresh_tmp(E);
}

static void name_block(Emitter *E, const Block *b, InstInfo *infos)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions && in->op != OP_SCAN && in->op != OP_REDUCE; r++) {
            for (int j = 0; j < in->regions[r]->nparams; j++)
                name_class(E, in->regions[r]->params[j]);
            name_block(E, in->regions[r], infos[i].reg[r]);
        }
        for (int r = 0; r < in->nres; r++)
            name_class(E, in->res[r]);
    }
}

void emit_assign_names(Emitter *E, const char *kname)
{
    uint32_t cap = 64;
    while (cap < 4u * (uint32_t)E->nvals + 256)
        cap *= 2;
    E->set = arena_alloc(E->a, cap * sizeof *E->set);
    E->ubase = arena_alloc(E->a, cap * sizeof *E->ubase);
    E->unext = arena_alloc(E->a, cap * sizeof *E->unext);
    E->mask = cap - 1;
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        emit_name_add(E, reserved[i]);
    emit_name_add(E, kname);
    for (int i = 0; i < E->f->consts.n; i++) {
        const char *c = em_py_ident(E->a, E->f->consts.v[i].name);
        if (c && !emit_name_used(E, c))
            emit_name_add(E, c);
    }
    /* kernel parameters keep their names (launches pass them by keyword) */
    for (int i = 0; i < E->f->nparams; i++) {
        ValId p = E->f->params[i];
        ValInfo *r = &E->vi[em_find(E, p)];
        const char *h = em_py_ident(E->a, E->f->vals.v[p].name);
        r->name = emit_unique_name(E, h ? h : arena_printf(E->a, "arg%d", i));
    }
    name_block(E, E->f->body, E->body);
}

