/* emit_triton.c -- prints an IR Func as readable Triton source.
 *
 * Job: turn any verified Func (a specialized forward kernel today, a
 * derivative kernel later) into a Python module holding one @triton.jit
 * function that computes exactly what the IR computes, and that a kernel
 * author would be glad to read and edit: source names kept, one statement
 * per line, single-use temporaries folded into their user, constants
 * inline, the broadcasts that Triton performs implicitly left out, and
 * structured control flow as Python `for`/`if`/`while` over plain
 * variables.
 *
 * Requires: a Func that passes ir_verify (operand types of elementwise ops
 * identical, regions ending in their terminators).  Guarantees: the output
 * is deterministic; every construct either prints with Triton semantics
 * equal to the IR's or is reported as a located error (nothing is emitted
 * silently wrong).  docs/EMIT.md lists the mapping of every op.
 *
 * How it works, in passes over the Func (all state lives in one Em):
 *   1. scan      numbers every instruction in print order, records where
 *                each value is defined, decides which IR broadcasts Triton
 *                does implicitly (the operand is printed without them),
 *                drops dead pure instructions and counts the uses left.
 *   2. inline    a value used once, in the same block, without a source
 *                name, whose instruction is pure (or a load that no store
 *                separates from its user) is printed inside its user's
 *                expression -- unless that makes a line too long.
 *   3. liveness  each printed variable gets a live interval in the print
 *                order; a use inside a loop keeps the value live to the
 *                loop's end.
 *   4. coalesce  Python variables are shared by "classes" of values: a
 *                loop's carried value, region parameters and results must
 *                share one name; inits, yields and if-branch values join
 *                the class when their live intervals do not overlap, so
 *                that `acc = acc + x` needs no copies.  Remaining copies are
 *                printed as parallel moves (sequenced, or a tuple
 *                assignment when they form a cycle).
 *   5. names     classes get unique valid identifiers from the source-name
 *                hints (`acc.1` -> `acc_1`), kernel parameters keep theirs.
 *   6. print     the module text.
 *
 * Backward kernels (emit_triton_backward, docs/GRAD.md) go through the
 * same passes with EmitOptions.backward: parameters in the forward def's
 * order, the body split into "recompute the forward" and "reverse sweep",
 * then the host launcher launch_<kernel>_bwd after the function.
 *
 * Triton typing is modelled where it differs from the IR's explicit
 * types: Python literals are weak scalars in Triton's binary operators but
 * become fp32/i32 tensors elsewhere, fp16/bf16 division and remainder run
 * in fp32, tl.max/tl.sum widen small types, and tl math functions accept
 * only fp32/fp64.  The emitter prints a constant as a literal only where
 * the literal provably yields the IR's value and type, and appends
 * `.to(tl.<dtype>)` where Triton's result type differs from the IR's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kad_int.h"

/* Lines longer than this stop inlining into them. */
enum { LINE_LIMIT = 100 };

/* Python operator precedence, loosest to tightest (the language reference,
 * "Operator precedence").  Comparisons chain, so a comparison operand of a
 * comparison is always parenthesized. */
enum {
    PR_CMP = 1, PR_BOR, PR_BXOR, PR_BAND, PR_SHIFT, PR_ADD, PR_MUL, PR_UNARY, PR_POW, PR_ATOM
};

/* A printed expression and the precedence of its outermost operator. */
typedef struct Ex {
    const char *s;
    int prec;
} Ex;

/* How an operand position treats a Python literal (see const_literal_ok). */
typedef enum Ctx {
    CTX_ANY,     /* no literal: a typed constant (tl.full) */
    CTX_BIN,     /* weak scalar of a binary operator: converted straight to the peer's dtype */
    CTX_TT,      /* to_tensor first (fp32/i32/...), then promoted with the peer tensor */
    CTX_CONVERT, /* to_tensor, then cast to the pointee dtype (load other, store value) */
    CTX_SLOT,    /* assigned to a variable: to_tensor's dtype must be the IR dtype */
    CTX_RANGE,   /* a bound of range(): the loop variable's dtype comes from it */
} Ctx;

typedef struct InstInfo InstInfo;

/* Per instruction, mirroring the IR's region tree. */
struct InstInfo {
    const Inst *in;
    const Block *blk;  /* the block holding it */
    int idx;           /* its index in blk */
    InstInfo *parent;  /* the control-flow instruction whose region holds it, or NULL */
    int depth;         /* number of enclosing control-flow instructions */
    InstInfo **reg;    /* per region, the infos of its instructions */
    ValId *eff;        /* operands as printed: implicit broadcasts skipped */
    int pos, end;      /* print-order numbers: the instruction, and after its regions */
    int mid;           /* while: the number between the condition and the body */
    int region;        /* index of the region of parent holding it */
    int rstart[2];     /* if: print-order number where each region starts */
    bool effects;      /* writes memory or asserts (itself or inside its regions) */
    bool dead;         /* pure and unused: not printed */
};

/* A live interval [lo, hi] in print-order positions (see liveness). */
typedef struct Ival {
    int lo, hi;
} Ival;

/* Per value. */
typedef struct ValInfo {
    InstInfo *defi;    /* defining instruction; NULL for kernel and region params */
    const Block *blk;  /* block where it becomes visible */
    InstInfo *scope;   /* the control-flow instruction whose region blk is, or NULL */
    int depth;         /* control-flow depth of that block */
    int nuses;         /* uses as printed (live instructions, after stripping) */
    InstInfo *useri;   /* the user when nuses == 1 */
    int uarg;          /* its operand index there */
    bool cnst;         /* a constant (or broadcast of one): printed at each use */
    bool inl;          /* printed inside its single user's expression */
    bool param;        /* a kernel parameter */
    bool iv;           /* a for loop's induction variable */
    bool var;          /* printed as a Python variable */
    int def_pos, last_pos;
    /* coalescing (meaningful on class roots) */
    int cls;           /* union-find parent */
    int prio;          /* how strongly hint names the class: 3 param, 2 loop slot, 1 other */
    const char *hint;  /* sanitized preferred name, or NULL */
    const char *name;  /* the Python name, once assigned */
    Vec(Ival) ivals;   /* live intervals of all members */
} ValInfo;

typedef struct Em {
    Arena *a;
    const Func *f;
    Diags *d;
    const EmitOptions *opt;
    ValInfo *vi;
    int nvals;
    InstInfo *body;         /* infos of f->body */
    Vec(InstInfo *) order;  /* every instruction in print order */
    int counter;            /* next print-order number */
    bool measuring;         /* rendering only to measure line lengths: placeholder names */
    Vec(int) reads;         /* classes read by the expression being rendered */
    bool libdevice;         /* some op printed through libdevice */
    bool failed;
    const InstInfo *early_return; /* the last top-level `if`, without results: an
                                     empty then-branch prints as `return` */
    /* the names in use (open addressing) */
    const char **set;
    uint32_t mask;
    int ntmp;
} Em;

static void em_error(Em *E, Loc loc, const char *fmt, ...)
{
    if (E->measuring)
        return; /* the final print reports it once */
    va_list ap;
    va_start(ap, fmt);
    diag_verror(E->d, loc, fmt, ap);
    va_end(ap);
    E->failed = true;
}

static const char *dtn(Dtype dt) { return dtype_triton_name(dt); }

static Type vtype(const Em *E, ValId v) { return E->f->vals.v[v].ty; }

static bool is_loop(OpKind op) { return op == OP_FOR || op == OP_WHILE; }

static bool is_cf(OpKind op) { return op == OP_FOR || op == OP_IF || op == OP_WHILE; }

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

static bool name_used(const Em *E, const char *s)
{
    for (uint32_t i = hash_str(s) & E->mask;; i = (i + 1) & E->mask) {
        if (!E->set[i])
            return false;
        if (!strcmp(E->set[i], s))
            return true;
    }
}

static void name_add(Em *E, const char *s)
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
static const char *py_ident(Arena *a, const char *h)
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
static const char *unique_name(Em *E, const char *base)
{
    const char *s = base;
    for (int n = 1; name_used(E, s); n++)
        s = arena_printf(E->a, "%s_%d", base, n);
    name_add(E, s);
    return s;
}

static const char *fresh_tmp(Em *E)
{
    for (;;) {
        const char *s = arena_printf(E->a, "tmp%d", E->ntmp++);
        if (!name_used(E, s)) {
            name_add(E, s);
            return s;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Union-find over values: a class is one Python variable               */
/* ------------------------------------------------------------------ */

static int find(Em *E, int v)
{
    while (E->vi[v].cls != v) {
        E->vi[v].cls = E->vi[E->vi[v].cls].cls;
        v = E->vi[v].cls;
    }
    return v;
}

static bool class_has(Em *E, int root, bool param)
{
    for (int v = 1; v < E->nvals; v++)
        if (E->vi[v].var && find(E, v) == root && (param ? E->vi[v].param : E->vi[v].iv))
            return true;
    return false;
}

/* Two classes may share a variable when no member of one is live while a
 * member of the other is.  Touching intervals are fine: `x = f(x)` reads
 * the old value before the statement writes the new one. */
static bool interferes(Em *E, int ra, int rb)
{
    const ValInfo *A = &E->vi[ra], *B = &E->vi[rb];
    for (int i = 0; i < A->ivals.n; i++)
        for (int j = 0; j < B->ivals.n; j++) {
            Ival x = A->ivals.v[i], y = B->ivals.v[j];
            if (x.lo < y.hi && y.lo < x.hi)
                return true;
        }
    return false;
}

static void unite(Em *E, int ra, int rb)
{
    if (ra == rb)
        return;
    ValInfo *A = &E->vi[ra], *B = &E->vi[rb];
    /* the root keeps the stronger hint; on a tie the earlier definition's */
    if (B->prio > A->prio || (B->prio == A->prio && B->hint && !A->hint)) {
        A->prio = B->prio;
        A->hint = B->hint;
    }
    for (int j = 0; j < B->ivals.n; j++)
        vec_push(E->a, A->ivals, B->ivals.v[j]);
    B->cls = ra;
}

/* Joins the classes of a and b when that is safe (see the header). */
static void try_unite(Em *E, ValId a, ValId b)
{
    if (a <= 0 || b <= 0 || !E->vi[a].var || !E->vi[b].var)
        return;
    int ra = find(E, a), rb = find(E, b);
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

static const Inst *const_inst(const Em *E, ValId v)
{
    if (v <= 0 || !E->vi[v].cnst)
        return NULL;
    const Inst *in = E->vi[v].defi->in;
    while (in->op == OP_BROADCAST)
        in = E->vi[in->args[0]].defi->in;
    return in;
}

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

static ValId strip_bcast(const Em *E, ValId v)
{
    const InstInfo *di = v > 0 ? E->vi[v].defi : NULL;
    return di && di->in->op == OP_BROADCAST ? di->in->args[0] : v;
}

/* Whether printing operands eff[0..n) with Triton's implicit broadcasting
 * gives the result shape rs.  Constants count as scalars: they may print
 * as literals. */
static bool bcast_ok(const Em *E, const ValId *eff, int n, Type rs)
{
    int32_t got[KAD_MAX_RANK] = {0};
    int rank = 0;
    for (int i = 0; i < n; i++) {
        Type t = vtype(E, eff[i]);
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
static void choose_operands(Em *E, InstInfo *info)
{
    const Inst *in = info->in;
    OpKind op = (OpKind)in->op;
    info->eff = arena_alloc(E->a, sizeof(ValId) * (size_t)(in->nargs + 1));
    if (in->nargs > 0) /* args is NULL for ops without operands */
        memcpy(info->eff, in->args, sizeof(ValId) * (size_t)in->nargs);
    if (broadcasts_operands(op) && in->nres == 1) {
        Type rs = vtype(E, in->res[0]);
        for (int i = 0; i < in->nargs; i++)
            info->eff[i] = strip_bcast(E, in->args[i]);
        /* keep broadcasts explicit while the operands would come out smaller */
        for (int i = 0; i < in->nargs && !bcast_ok(E, info->eff, in->nargs, rs); i++)
            info->eff[i] = in->args[i];
    } else if ((op == OP_LOAD || op == OP_STORE || op == OP_ATOMIC_ADD) && in->nargs > 0 &&
               vtype(E, in->args[0]).rank > 0) {
        /* mask, other and the stored value broadcast to the pointer tile */
        for (int i = 1; i < in->nargs; i++)
            info->eff[i] = strip_bcast(E, in->args[i]);
    }
}

static void scan_block(Em *E, const Block *b, InstInfo *infos, InstInfo *parent, int region, int depth);

static void define(Em *E, ValId v, InstInfo *di, const Block *b, InstInfo *scope, int depth)
{
    if (v <= 0 || v >= E->nvals)
        return;
    ValInfo *x = &E->vi[v];
    x->defi = di;
    x->blk = b;
    x->scope = scope;
    x->depth = depth;
}

static void scan_block(Em *E, const Block *b, InstInfo *infos, InstInfo *parent, int region, int depth)
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
        info->effects = op == OP_STORE || op == OP_ATOMIC_ADD || op == OP_ASSERT;
        if (in->nregions) {
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
                scan_block(E, rb, info->reg[r], info, r, depth + 1);
                for (int k = 0; k < rb->insts.n; k++)
                    info->effects |= info->reg[r][k].effects;
            }
        }
        info->end = in->nregions ? E->counter++ : info->pos;
        for (int r = 0; r < in->nres; r++)
            define(E, in->res[r], info, b, parent, depth);
        if (in->nres == 1 && (op == OP_CONST || (op == OP_BROADCAST && E->vi[in->args[0]].cnst)))
            E->vi[in->res[0]].cnst = true;
    }
}

/* Counts the uses of live instructions (a dead instruction's operands are
 * not used by anything printed). */
static void count_uses(Em *E)
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
static void mark_dead(Em *E)
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
/* Constants                                                           */
/* ------------------------------------------------------------------ */

/* Whether x is exactly representable in a binary format with p significand
 * bits and normal exponents emin..emax (subnormals below). */
static bool exact_in(double x, int p, int emin, int emax)
{
    if (x == 0 || isinf(x) || isnan(x))
        return true;
    int e;
    double m = frexp(fabs(x), &e); /* x = m * 2^e, m in [0.5, 1) */
    int E1 = e - 1;                 /* x = 1.f * 2^E1 */
    if (E1 > emax)
        return false;
    int bits = E1 >= emin ? p : p - (emin - E1);
    if (bits <= 0)
        return false;
    double s = ldexp(m, bits);
    return s == floor(s);
}

static bool float_exact(double x, Dtype dt)
{
    switch (dt) {
    case DT_F16: return exact_in(x, 11, -14, 15);
    case DT_BF16: return exact_in(x, 8, -126, 127);
    case DT_F32: return exact_in(x, 24, -126, 127);
    default: return true;
    }
}

/* The dtype Triton's to_tensor gives a Python float literal (semantic.py):
 * fp32 for zero, inf, nan and the normal fp32 range, else fp64. */
static Dtype float_literal_dtype(double x)
{
    x = fabs(x);
    if (isinf(x) || isnan(x) || x == 0 || (x >= ldexp(1, -126) && x <= ldexp(2 - ldexp(1, -23), 127)))
        return DT_F32;
    return DT_F64;
}

/* The integer value of c in dtype dt: wrapped to dt's width, signed or
 * unsigned, so that the literal fits dt. */
static void int_value(const Inst *c, Dtype dt, int64_t *sv, uint64_t *uv, bool *neg)
{
    int bits = dtype_bits(dt);
    uint64_t u = (uint64_t)c->ival;
    if (bits < 64)
        u &= (UINT64_C(1) << bits) - 1;
    if (dtype_is_signed(dt) && bits < 64 && (u >> (bits - 1)) & 1)
        u |= ~((UINT64_C(1) << bits) - 1);
    *uv = u;
    *sv = (int64_t)u;
    *neg = dtype_is_signed(dt) && *sv < 0;
}

static Dtype int_literal_dtype(const Inst *c, Dtype dt)
{
    int64_t s;
    uint64_t u;
    bool neg;
    int_value(c, dt, &s, &u, &neg);
    if (neg)
        return s >= INT32_MIN ? DT_I32 : DT_I64;
    if (u <= INT32_MAX)
        return DT_I32;
    if (u <= UINT32_MAX)
        return DT_U32;
    return u <= INT64_MAX ? DT_I64 : DT_U64;
}

/* Whether the constant c, of IR dtype dt, may print as a Python literal in
 * an operand position of kind ctx of op (Triton's rules, semantic.py:
 * binary_op_type_checking_impl, to_tensor, cast). */
static bool const_literal_ok(const Inst *c, Type t, Ctx ctx, OpKind op)
{
    Dtype dt = (Dtype)t.dt;
    if (t.rank > 0 && (ctx == CTX_ANY || ctx == CTX_SLOT || ctx == CTX_RANGE))
        return false; /* a literal is a scalar: only broadcasting positions take it for a tile */
    bool fl = dtype_is_float(dt);
    Dtype lt = fl ? float_literal_dtype(c->fval) : dt == DT_I1 ? DT_I1 : int_literal_dtype(c, dt);
    switch (ctx) {
    case CTX_ANY:
        return false;
    case CTX_BIN:
        /* converted straight to dt, except that fp16/bf16 `/` and `%` run in fp32 */
        if (fl && (op == OP_DIV || op == OP_REM) && (dt == DT_F16 || dt == DT_BF16))
            return float_exact(c->fval, dt);
        return true;
    case CTX_TT:
        if (lt == dt)
            return true;
        if (dt == DT_F64 && lt == DT_F32)
            return float_exact(c->fval, DT_F32);
        return dt == DT_I64 && lt == DT_I32;
    case CTX_CONVERT:
        if (fl && lt == DT_F32 && dt != DT_F32)
            return float_exact(c->fval, DT_F32);
        return true;
    case CTX_SLOT:
        return lt == dt;
    case CTX_RANGE:
        return dt == DT_I32;
    }
    return false;
}

static Ex ex(const char *s, int prec) { return (Ex){s, prec}; }

static Ex literal(Em *E, const Inst *c, Dtype dt)
{
    if (dt == DT_I1)
        return ex((c->ival & 1) ? "True" : "False", PR_ATOM);
    if (dtype_is_float(dt)) {
        double x = c->fval;
        if (isnan(x))
            return ex("float(\"nan\")", PR_ATOM);
        if (isinf(x))
            return ex(x < 0 ? "float(\"-inf\")" : "float(\"inf\")", PR_ATOM);
        if (dt == DT_F32 && (double)(float)x == x) {
            /* the shortest decimal that rounds to the same fp32 value: Triton
             * converts the literal to fp32 directly (0.1, not 0.10000000149011612) */
            char tmp[40];
            for (int prec = 1; prec <= 9; prec++) {
                snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
                if ((float)strtod(tmp, NULL) == (float)x) {
                    x = strtod(tmp, NULL);
                    break;
                }
            }
        }
        Buf b = {.a = E->a};
        ir_format_float(&b, x);
        return ex(buf_str(&b), signbit(x) ? PR_UNARY : PR_ATOM);
    }
    int64_t s;
    uint64_t u;
    bool neg;
    int_value(c, dt, &s, &u, &neg);
    if (neg)
        return ex(arena_printf(E->a, "%lld", (long long)s), PR_UNARY);
    return ex(arena_printf(E->a, "%llu", (unsigned long long)u), PR_ATOM);
}

static const char *shape_list(Em *E, Type t)
{
    Buf b = {.a = E->a};
    buf_putc(&b, '[');
    for (int i = 0; i < t.rank; i++)
        buf_printf(&b, i ? ", %d" : "%d", (int)t.shape[i]);
    buf_putc(&b, ']');
    return buf_str(&b);
}

/* A constant as a Triton tensor of exactly its IR type. */
static Ex typed_const(Em *E, const Inst *c, Type t)
{
    Dtype dt = (Dtype)t.dt;
    bool zero = dtype_is_float(dt) ? (c->fval == 0 && !signbit(c->fval)) : c->ival == 0;
    if (t.rank > 0 && zero)
        return ex(arena_printf(E->a, "tl.zeros(%s, dtype=tl.%s)", shape_list(E, t), dtn(dt)), PR_ATOM);
    return ex(arena_printf(E->a, "tl.full(%s, %s, tl.%s)", shape_list(E, t), literal(E, c, dt).s, dtn(dt)),
              PR_ATOM);
}

/* ------------------------------------------------------------------ */
/* Expressions                                                         */
/* ------------------------------------------------------------------ */

static Ex gen_inst(Em *E, InstInfo *info);

static const char *paren(Em *E, Ex x, bool need)
{
    return need ? arena_printf(E->a, "(%s)", x.s) : x.s;
}

/* x as the receiver of a method call or subscript. */
static const char *atom(Em *E, Ex x) { return paren(E, x, x.prec < PR_ATOM); }

static Ex bin(Em *E, Ex l, const char *op, Ex r, int prec)
{
    bool cmp = prec == PR_CMP;
    const char *ls = paren(E, l, cmp ? l.prec <= prec : l.prec < prec);
    const char *rs = paren(E, r, r.prec <= prec);
    return ex(arena_printf(E->a, "%s %s %s", ls, op, rs), prec);
}

static Ex unary(Em *E, const char *op, Ex x)
{
    return ex(arena_printf(E->a, "%s%s", op, paren(E, x, x.prec <= PR_UNARY)), PR_UNARY);
}

static Ex call(Em *E, const char *fn, const char *args)
{
    return ex(arena_printf(E->a, "%s(%s)", fn, args), PR_ATOM);
}

static Ex cast_to(Em *E, Ex x, Dtype dt)
{
    return ex(arena_printf(E->a, "%s.to(tl.%s)", atom(E, x), dtn(dt)), PR_ATOM);
}

/* The printed name of a variable value. */
static const char *var_name(Em *E, ValId v)
{
    if (E->measuring) {
        const char *h = py_ident(E->a, E->f->vals.v[v].name);
        return h ? h : "tmp00";
    }
    int r = find(E, v);
    vec_push(E->a, E->reads, r);
    return E->vi[r].name ? E->vi[r].name : "?";
}

/* Operand i of info as printed in a position of kind ctx.  lit says
 * whether a constant there may be a literal (see operand_lits). */
static Ex operand(Em *E, InstInfo *info, int i, bool lit)
{
    ValId v = info->eff[i];
    if (v <= 0 || v >= E->nvals)
        return ex("?", PR_ATOM);
    const ValInfo *x = &E->vi[v];
    if (x->cnst) {
        const Inst *c = const_inst(E, v);
        Type t = vtype(E, v);
        return lit ? literal(E, c, (Dtype)t.dt) : typed_const(E, c, t);
    }
    if (x->inl)
        return gen_inst(E, x->defi);
    return ex(var_name(E, v), PR_ATOM);
}

/* Whether operand i, if a constant, may print as a literal in context
 * ctx.  For CTX_BIN and CTX_TT a literal needs a non-literal peer among
 * the operands [g0, g1) (all-constant groups print their first member as
 * a typed tensor). */
static bool lit_ok(Em *E, InstInfo *info, int i, Ctx ctx, int g0, int g1)
{
    ValId v = info->eff[i];
    const Inst *c = const_inst(E, v);
    if (!c)
        return false;
    if (!const_literal_ok(c, vtype(E, v), ctx, (OpKind)info->in->op))
        return false;
    if (ctx != CTX_BIN && ctx != CTX_TT)
        return true;
    int first_const = -1;
    for (int j = g0; j < g1; j++) {
        if (j != i && !E->vi[info->eff[j]].cnst)
            return true;
        if (first_const < 0 && E->vi[info->eff[j]].cnst)
            first_const = j;
    }
    return i != first_const;
}

static Ex opnd(Em *E, InstInfo *info, int i, Ctx ctx)
{
    int n = info->in->nargs;
    int g0 = 0, g1 = n;
    if (info->in->op == OP_WHERE)
        g0 = 1;
    return operand(E, info, i, lit_ok(E, info, i, ctx, g0, g1));
}

typedef struct MathFn {
    OpKind op;
    const char *name;
    bool libdevice;
} MathFn;

/* Float functions: tl.* where Triton has them, else libdevice.  All of them
 * accept only fp32/fp64 (math.py _check_dtype, libdevice's tables). */
static const MathFn math_fns[] = {
    {OP_EXP, "exp", false},     {OP_EXP2, "exp2", false},   {OP_LOG, "log", false},
    {OP_LOG2, "log2", false},   {OP_SQRT, "sqrt", false},   {OP_RSQRT, "rsqrt", false},
    {OP_SIN, "sin", false},     {OP_COS, "cos", false},     {OP_ERF, "erf", false},
    {OP_FLOOR, "floor", false}, {OP_CEIL, "ceil", false},   {OP_SIGMOID, "sigmoid", false},
    {OP_EXPM1, "expm1", true},  {OP_LOG1P, "log1p", true},  {OP_TAN, "tan", true},
    {OP_ASIN, "asin", true},    {OP_ACOS, "acos", true},    {OP_ATAN, "atan", true},
    {OP_SINH, "sinh", true},    {OP_COSH, "cosh", true},    {OP_TANH, "tanh", true},
    {OP_TRUNC, "trunc", true},  {OP_RINT, "rint", true},    {OP_ATAN2, "atan2", true},
    {OP_POW, "pow", true},
};

static const MathFn *math_fn(OpKind op)
{
    for (size_t i = 0; i < sizeof math_fns / sizeof *math_fns; i++)
        if (math_fns[i].op == op)
            return &math_fns[i];
    return NULL;
}

static const char *binop_token(OpKind op, Dtype dt, int *prec)
{
    bool fl = dtype_is_float(dt);
    switch (op) {
    case OP_ADD: case OP_ADDPTR: *prec = PR_ADD; return "+";
    case OP_SUB: *prec = PR_ADD; return "-";
    case OP_MUL: *prec = PR_MUL; return "*";
    case OP_DIV: *prec = PR_MUL; return fl ? "/" : "//"; /* Triton's // on ints is C division */
    case OP_REM: *prec = PR_MUL; return "%";              /* srem/urem/frem: C fmod semantics */
    case OP_AND: *prec = PR_BAND; return "&";
    case OP_OR: *prec = PR_BOR; return "|";
    case OP_XOR: *prec = PR_BXOR; return "^";
    case OP_SHL: *prec = PR_SHIFT; return "<<";
    case OP_SHR: *prec = PR_SHIFT; return ">>";
    case OP_LT: *prec = PR_CMP; return "<";
    case OP_LE: *prec = PR_CMP; return "<=";
    case OP_GT: *prec = PR_CMP; return ">";
    case OP_GE: *prec = PR_CMP; return ">=";
    case OP_EQ: *prec = PR_CMP; return "==";
    case OP_NE: *prec = PR_CMP; return "!=";
    default: return NULL;
    }
}

static const char *reduce_name(OpKind op)
{
    switch (op) {
    case OP_SUM: return "sum";
    case OP_MAX: return "max";
    case OP_MIN: return "min";
    case OP_ARGMAX: return "argmax";
    case OP_ARGMIN: return "argmin";
    case OP_CUMSUM: return "cumsum";
    case OP_CUMPROD: return "cumprod";
    default: return NULL;
    }
}

/* The dtype Triton gives the result of op as printed, when it differs
 * from the IR's (standard.py, core.py); DT_VOID when it is the same. */
static Dtype triton_widens(OpKind op, Dtype in, Dtype out)
{
    bool small_int = dtype_is_int(in) && dtype_bits(in) < 32;
    Dtype wide_int = dtype_is_signed(in) || in == DT_I1 ? DT_I32 : DT_U32;
    Dtype t = out;
    switch (op) {
    case OP_DIV: case OP_REM:
        if (in == DT_F16 || in == DT_BF16)
            t = DT_F32;
        break;
    case OP_MAXIMUM: case OP_MINIMUM: case OP_CUMPROD:
        if (in == DT_BF16)
            t = DT_F32;
        break;
    case OP_MAX: case OP_MIN:
        if (in == DT_F16 || in == DT_BF16)
            t = DT_F32;
        else if (small_int)
            t = DT_I32;
        break;
    case OP_SUM:
        if (small_int)
            t = wide_int;
        break;
    case OP_CUMSUM:
        if (in == DT_BF16)
            t = DT_F32;
        else if (small_int)
            t = wide_int;
        break;
    default:
        break;
    }
    return t == out ? DT_VOID : t;
}

static const char *int_list(Em *E, const int32_t *v, int n, bool scalar_if_one)
{
    if (n == 1 && scalar_if_one)
        return arena_printf(E->a, "%d", (int)v[0]);
    Buf b = {.a = E->a};
    buf_putc(&b, '[');
    for (int i = 0; i < n; i++)
        buf_printf(&b, i ? ", %d" : "%d", (int)v[i]);
    buf_putc(&b, ']');
    return buf_str(&b);
}

/* The Python string literal of s. */
static const char *py_string(Em *E, const char *s)
{
    Buf b = {.a = E->a};
    buf_putc(&b, '"');
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        if (*q == '"' || *q == '\\')
            buf_printf(&b, "\\%c", *q);
        else if (*q == '\n')
            buf_puts(&b, "\\n");
        else if (*q == '\t')
            buf_puts(&b, "\\t");
        else if (*q < 0x20 || *q == 0x7f)
            buf_printf(&b, "\\x%02x", *q);
        else
            buf_putc(&b, (char)*q);
    }
    buf_putc(&b, '"');
    return buf_str(&b);
}

/* load/store/atomic_add: "ptr[, value][, mask=m][, other=o]". */
static const char *mem_args(Em *E, InstInfo *info)
{
    const Inst *in = info->in;
    int nfixed = in->op == OP_LOAD ? 1 : 2;
    Buf b = {.a = E->a};
    buf_puts(&b, opnd(E, info, 0, CTX_ANY).s);
    if (nfixed == 2 && in->nargs > 1)
        buf_printf(&b, ", %s", opnd(E, info, 1, CTX_CONVERT).s);
    int i = nfixed;
    if ((in->flags & IF_HAS_MASK) && i < in->nargs)
        buf_printf(&b, ", mask=%s", opnd(E, info, i++, CTX_SLOT).s);
    if ((in->flags & IF_HAS_OTHER) && i < in->nargs)
        buf_printf(&b, ", other=%s", opnd(E, info, i++, CTX_CONVERT).s);
    return buf_str(&b);
}

/* The expression computing the (single) result of info. */
static Ex gen_inst(Em *E, InstInfo *info)
{
    const Inst *in = info->in;
    OpKind op = (OpKind)in->op;
    Type rt = in->nres ? vtype(E, in->res[0]) : type_scalar(DT_VOID);
    Dtype rd = (Dtype)rt.dt;
    Dtype ad = in->nargs ? (Dtype)vtype(E, in->args[0]).dt : DT_VOID;
    int prec;
    const char *tok = binop_token(op, ad, &prec);
    const MathFn *mf = math_fn(op);
    Ex r;

    if (tok) {
        Ctx ctx = op == OP_ADDPTR ? CTX_CONVERT : CTX_BIN;
        Ex l = opnd(E, info, 0, op == OP_ADDPTR ? CTX_ANY : ctx), rr = opnd(E, info, 1, ctx);
        r = bin(E, l, tok, rr, prec);
    } else if (mf) {
        /* fp16/bf16 go through fp32: Triton has these functions for fp32/fp64 only */
        bool up = ad == DT_F16 || ad == DT_BF16;
        Buf b = {.a = E->a};
        for (int i = 0; i < in->nargs; i++) {
            Ex x = opnd(E, info, i, CTX_ANY);
            buf_printf(&b, "%s%s", i ? ", " : "", up ? cast_to(E, x, DT_F32).s : x.s);
        }
        if (mf->libdevice)
            E->libdevice = true;
        r = call(E, arena_printf(E->a, "%s.%s", mf->libdevice ? "libdevice" : "tl", mf->name), buf_str(&b));
        if (up)
            r = cast_to(E, r, rd);
        return r;
    } else {
        switch (op) {
        case OP_CONST:
            return typed_const(E, in, rt);
        case OP_PROGRAM_ID:
            return call(E, "tl.program_id", arena_printf(E->a, "%lld", (long long)in->ival));
        case OP_NUM_PROGRAMS:
            return call(E, "tl.num_programs", arena_printf(E->a, "%lld", (long long)in->ival));
        case OP_ARANGE:
            return call(E, "tl.arange", arena_printf(E->a, "%lld, %lld", (long long)in->ival,
                                                     (long long)in->ival + (rt.rank ? rt.shape[0] : 1)));
        case OP_MAXIMUM: case OP_MINIMUM: case OP_UMULHI: {
            const char *fn = op == OP_MAXIMUM ? "tl.maximum" : op == OP_MINIMUM ? "tl.minimum" : "tl.umulhi";
            if (op == OP_UMULHI && ad != DT_I32 && ad != DT_I64 && ad != DT_U32 && ad != DT_U64)
                em_error(E, in->loc, "Triton emitter: umulhi on %s has no Triton spelling (tl.umulhi "
                         "takes 32- and 64-bit integers)", dtype_name(ad));
            r = call(E, fn, arena_printf(E->a, "%s, %s", opnd(E, info, 0, CTX_TT).s, opnd(E, info, 1, CTX_TT).s));
            break;
        }
        case OP_NEG:
            r = unary(E, "-", opnd(E, info, 0, CTX_ANY));
            break;
        case OP_NOT:
            r = unary(E, "~", opnd(E, info, 0, CTX_ANY));
            break;
        case OP_ABS:
            r = call(E, "tl.abs", opnd(E, info, 0, CTX_ANY).s);
            break;
        case OP_ISNAN: {
            /* NaN is the one value unequal to itself (the operand is a variable) */
            Ex x = opnd(E, info, 0, CTX_ANY);
            r = bin(E, x, "!=", x, PR_CMP);
            break;
        }
        case OP_ISINF:
            r = bin(E, call(E, "tl.abs", opnd(E, info, 0, CTX_ANY).s), "==", ex("float(\"inf\")", PR_ATOM), PR_CMP);
            break;
        case OP_FMA:
            r = call(E, "tl.fma", arena_printf(E->a, "%s, %s, %s", opnd(E, info, 0, CTX_ANY).s,
                                               opnd(E, info, 1, CTX_ANY).s, opnd(E, info, 2, CTX_ANY).s));
            break;
        case OP_WHERE:
            r = call(E, "tl.where", arena_printf(E->a, "%s, %s, %s", opnd(E, info, 0, CTX_SLOT).s,
                                                 opnd(E, info, 1, CTX_BIN).s, opnd(E, info, 2, CTX_BIN).s));
            break;
        case OP_CAST: case OP_BITCAST: {
            Ex x = opnd(E, info, 0, CTX_ANY);
            const char *to = rd == DT_PTR
                                 ? arena_printf(E->a, "tl.pointer_type(tl.%s)", dtn((Dtype)rt.elem))
                                 : arena_printf(E->a, "tl.%s", dtn(rd));
            return ex(arena_printf(E->a, "%s.to(%s%s)", atom(E, x), to, op == OP_BITCAST ? ", bitcast=True" : ""),
                      PR_ATOM);
        }
        case OP_MULTIPLE_OF: case OP_MAX_CONTIGUOUS:
            return call(E, op == OP_MULTIPLE_OF ? "tl.multiple_of" : "tl.max_contiguous",
                        arena_printf(E->a, "%s, %s", opnd(E, info, 0, CTX_ANY).s,
                                     int_list(E, in->ints, in->nints, true)));
        case OP_BROADCAST:
            return call(E, "tl.broadcast_to",
                        arena_printf(E->a, "%s, %s", opnd(E, info, 0, CTX_ANY).s, shape_list(E, rt)));
        case OP_EXPAND_DIMS: {
            Ex x = opnd(E, info, 0, CTX_ANY);
            Type xt = vtype(E, in->args[0]);
            if (xt.rank == 0)
                return call(E, "tl.expand_dims", arena_printf(E->a, "%s, %lld", x.s, (long long)in->ival));
            Buf b = {.a = E->a};
            buf_printf(&b, "%s[", atom(E, x));
            for (int k = 0; k < rt.rank; k++)
                buf_printf(&b, "%s%s", k ? ", " : "", k == in->ival ? "None" : ":");
            buf_putc(&b, ']');
            return ex(buf_str(&b), PR_ATOM);
        }
        case OP_RESHAPE: {
            Ex x = opnd(E, info, 0, CTX_ANY);
            if (rt.rank == 0) {
                em_error(E, in->loc, "Triton emitter: reshape to a scalar has no Triton spelling");
                return ex("?", PR_ATOM);
            }
            const char *fn = vtype(E, in->args[0]).rank == 0 ? "tl.broadcast_to" : "tl.reshape";
            return call(E, fn, arena_printf(E->a, "%s, %s", x.s, shape_list(E, rt)));
        }
        case OP_PERMUTE: {
            Ex x = opnd(E, info, 0, CTX_ANY);
            if (in->nints == 2 && in->ints[0] == 1 && in->ints[1] == 0)
                return call(E, "tl.trans", x.s);
            Buf b = {.a = E->a};
            buf_printf(&b, "%s, (", x.s);
            for (int k = 0; k < in->nints; k++)
                buf_printf(&b, k ? ", %d" : "%d", (int)in->ints[k]);
            buf_putc(&b, ')');
            return call(E, "tl.permute", buf_str(&b));
        }
        case OP_SUM: case OP_MAX: case OP_MIN: case OP_ARGMAX: case OP_ARGMIN:
        case OP_CUMSUM: case OP_CUMPROD: {
            const char *flag = "";
            if ((op == OP_CUMSUM || op == OP_CUMPROD) && (in->flags & IF_REVERSE))
                flag = ", reverse=True";
            else if (op != OP_CUMSUM && op != OP_CUMPROD && (in->flags & IF_KEEP_DIMS))
                flag = ", keep_dims=True";
            r = call(E, arena_printf(E->a, "tl.%s", reduce_name(op)),
                     arena_printf(E->a, "%s, axis=%lld%s", opnd(E, info, 0, CTX_ANY).s, (long long)in->ival, flag));
            break;
        }
        case OP_DOT: {
            Ex a = opnd(E, info, 0, CTX_ANY), b = opnd(E, info, 1, CTX_ANY);
            const Inst *acc0 = const_inst(E, info->eff[2]);
            bool zero = acc0 && (dtype_is_float(rd) ? acc0->fval == 0 && !signbit(acc0->fval) : acc0->ival == 0);
            Buf args = {.a = E->a};
            buf_printf(&args, "%s, %s", a.s, b.s);
            if (!zero)
                buf_printf(&args, ", %s", opnd(E, info, 2, CTX_ANY).s);
            if (in->ival != DP_DEFAULT)
                buf_printf(&args, ", input_precision=\"%s\"", ir_dot_prec_name((int)in->ival));
            /* Triton checks that the accumulator's dtype is out_dtype (default fp32) */
            if (rd == DT_BF16)
                em_error(E, in->loc, "Triton emitter: tl.dot has no bf16 accumulator (out_dtype=bfloat16 "
                         "is unsupported by Triton)");
            if (rd == DT_F16 || (!zero && rd != DT_F32))
                buf_printf(&args, ", out_dtype=tl.%s", dtn(rd));
            return call(E, "tl.dot", buf_str(&args));
        }
        case OP_RAND: case OP_RANDN: case OP_RANDINT: {
            const char *fn = op == OP_RAND ? "tl.rand" : op == OP_RANDN ? "tl.randn" : "tl.randint";
            r = call(E, fn, arena_printf(E->a, "%s, %s", opnd(E, info, 0, CTX_ANY).s, opnd(E, info, 1, CTX_ANY).s));
            Dtype td = op == OP_RANDINT ? DT_U32 : DT_F32;
            if (td != rd)
                r = ex(arena_printf(E->a, "%s.to(tl.%s, bitcast=True)", atom(E, r), dtn(rd)), PR_ATOM);
            return r;
        }
        case OP_LOAD:
            return call(E, "tl.load", mem_args(E, info));
        case OP_ATOMIC_ADD:
            return call(E, "tl.atomic_add", mem_args(E, info));
        default:
            em_error(E, in->loc, "Triton emitter: '%s' is not an expression", op_info[op].name);
            return ex("?", PR_ATOM);
        }
    }
    /* where Triton's result type differs from the IR's, convert back */
    Dtype w = triton_widens(op, ad, rd);
    if (w != DT_VOID)
        r = cast_to(E, r, rd);
    return r;
}

/* ------------------------------------------------------------------ */
/* Statements                                                          */
/* ------------------------------------------------------------------ */

static void indent(Buf *b, int depth)
{
    for (int i = 0; i < depth; i++)
        buf_puts(b, "    ");
}

/* One pending copy `dst = src` of a parallel move. */
typedef struct Move {
    int dst;          /* destination class */
    const char *name; /* its variable */
    const char *src;  /* the expression */
    int *reads;       /* classes the expression reads */
    int nreads;
    bool done;
} Move;

/* A parallel assignment of values to the classes of dsts: copies whose
 * source is already the destination vanish; the rest are printed one per
 * line in an order where no copy overwrites a variable that a later one
 * still reads, and a cycle becomes one tuple assignment. */
static void print_moves(Em *E, Buf *b, int depth, InstInfo *info, int first, const ValId *dsts, int n,
                        Ctx ctx)
{
    Move *mv = arena_alloc(E->a, sizeof(Move) * (size_t)(n + 1));
    int nm = 0;
    for (int k = 0; k < n; k++) {
        ValId dst = dsts[k];
        ValId src = info->eff[first + k];
        if (dst <= 0 || src <= 0)
            continue;
        int dc = E->measuring ? dst : find(E, dst);
        if (!E->measuring && E->vi[src].var && find(E, src) == dc)
            continue;
        E->reads.n = 0;
        Ex x = opnd(E, info, first + k, ctx);
        Move m = {.dst = dc, .name = E->measuring ? var_name(E, dst) : E->vi[dc].name, .src = x.s};
        m.nreads = E->reads.n;
        m.reads = arena_alloc(E->a, sizeof(int) * (size_t)(m.nreads + 1));
        if (m.nreads > 0)
            memcpy(m.reads, E->reads.v, sizeof(int) * (size_t)m.nreads);
        mv[nm++] = m;
    }
    int left = nm;
    while (left > 0) {
        bool progress = false;
        for (int k = 0; k < nm; k++) {
            if (mv[k].done)
                continue;
            bool blocked = false;
            for (int j = 0; j < nm && !blocked; j++)
                if (j != k && !mv[j].done)
                    for (int r = 0; r < mv[j].nreads; r++)
                        if (mv[j].reads[r] == mv[k].dst)
                            blocked = true;
            if (blocked)
                continue;
            indent(b, depth);
            buf_printf(b, "%s = %s\n", mv[k].name, mv[k].src);
            mv[k].done = true;
            left--;
            progress = true;
        }
        if (!progress) {
            /* a cycle: Python evaluates the right-hand side first */
            indent(b, depth);
            bool first_out = true;
            for (int k = 0; k < nm; k++)
                if (!mv[k].done) {
                    buf_printf(b, "%s%s", first_out ? "" : ", ", mv[k].name);
                    first_out = false;
                }
            buf_puts(b, " = ");
            first_out = true;
            for (int k = 0; k < nm; k++)
                if (!mv[k].done) {
                    buf_printf(b, "%s%s", first_out ? "" : ", ", mv[k].src);
                    first_out = false;
                    mv[k].done = true;
                }
            buf_putc(b, '\n');
            left = 0;
        }
    }
}

static void print_block(Em *E, Buf *b, const Block *blk, InstInfo *infos, int depth);

/* The statements of a region and the copies of its yield into dsts.
 * Returns whether it printed anything. */
static bool print_region(Em *E, Buf *b, InstInfo *cf, int r, int depth, const ValId *dsts, int ndst)
{
    const Block *blk = cf->in->regions[r];
    InstInfo *infos = cf->reg[r];
    size_t before = b->len;
    print_block(E, b, blk, infos, depth);
    if (blk->insts.n > 0 && ndst > 0) {
        InstInfo *y = &infos[blk->insts.n - 1];
        if (y->in->op == OP_YIELD)
            print_moves(E, b, depth, y, 0, dsts, ndst < y->in->nargs ? ndst : y->in->nargs, CTX_SLOT);
    }
    return b->len != before;
}

static void pass_if_empty(Buf *b, bool printed, int depth)
{
    if (!printed) {
        indent(b, depth);
        buf_puts(b, "pass\n");
    }
}

static const char *range_args(Em *E, InstInfo *info)
{
    Ex lb = opnd(E, info, 0, CTX_RANGE), ub = opnd(E, info, 1, CTX_RANGE), st = opnd(E, info, 2, CTX_RANGE);
    const Inst *c0 = const_inst(E, info->eff[0]), *c2 = const_inst(E, info->eff[2]);
    bool step1 = c2 && c2->ival == 1 && !strcmp(st.s, "1");
    bool lb0 = c0 && c0->ival == 0 && !strcmp(lb.s, "0");
    if (step1 && lb0)
        return ub.s;
    if (step1)
        return arena_printf(E->a, "%s, %s", lb.s, ub.s);
    return arena_printf(E->a, "%s, %s, %s", lb.s, ub.s, st.s);
}

/* The statements of one instruction (control flow: its header and inits
 * only when measuring). */
static void print_inst(Em *E, Buf *b, InstInfo *info, int depth)
{
    const Inst *in = info->in;
    OpKind op = (OpKind)in->op;
    E->reads.n = 0;
    if (info->dead || (in->nres == 1 && (E->vi[in->res[0]].inl || E->vi[in->res[0]].cnst)))
        return;
    switch (op) {
    case OP_YIELD: case OP_CONDITION:
        return; /* printed by the parent */
    case OP_STORE:
        indent(b, depth);
        buf_printf(b, "tl.store(%s)\n", mem_args(E, info));
        return;
    case OP_ASSERT:
        indent(b, depth);
        buf_printf(b, "tl.device_assert(%s, %s)\n", opnd(E, info, 0, CTX_SLOT).s,
                   py_string(E, in->sattr ? in->sattr : ""));
        return;
    case OP_FOR: {
        const Block *body = in->regions[0];
        int nc = in->nargs - 3;
        print_moves(E, b, depth, info, 3, body->params + 1, nc, CTX_SLOT);
        indent(b, depth);
        buf_printf(b, "for %s in range(%s):\n", var_name(E, body->params[0]), range_args(E, info));
        if (!E->measuring)
            pass_if_empty(b, print_region(E, b, info, 0, depth + 1, body->params + 1, nc), depth + 1);
        return;
    }
    case OP_IF: {
        indent(b, depth);
        buf_printf(b, "if %s:\n", opnd(E, info, 0, CTX_SLOT).s);
        if (E->measuring)
            return;
        bool then_printed = print_region(E, b, info, 0, depth + 1, in->res, in->nres);
        if (!then_printed && info == E->early_return) {
            /* nothing follows the if: `if c: return`, the else-branch
             * unindented after it, as the source's early return read */
            indent(b, depth + 1);
            buf_puts(b, "return\n");
            print_region(E, b, info, 1, depth, in->res, in->nres);
            return;
        }
        pass_if_empty(b, then_printed, depth + 1);
        Buf els = {.a = E->a};
        if (print_region(E, &els, info, 1, depth + 1, in->res, in->nres)) {
            indent(b, depth);
            buf_printf(b, "else:\n%s", buf_str(&els));
        }
        return;
    }
    case OP_WHILE: {
        const Block *cond = in->regions[0];
        InstInfo *cinfos = info->reg[0];
        print_moves(E, b, depth, info, 0, cond->params, in->nargs, CTX_SLOT);
        if (E->measuring)
            return;
        /* the condition region is computed before the loop and again at
         * the end of the body; its terminator's operand is the test */
        InstInfo *ci = &cinfos[cond->insts.n - 1];
        print_block(E, b, cond, cinfos, depth);
        indent(b, depth);
        buf_printf(b, "while %s:\n", opnd(E, ci, 0, CTX_SLOT).s);
        size_t before = b->len;
        print_region(E, b, info, 1, depth + 1, cond->params, cond->nparams);
        print_block(E, b, cond, cinfos, depth + 1);
        pass_if_empty(b, b->len != before, depth + 1);
        return;
    }
    default:
        break;
    }
    if (in->nres != 1) {
        em_error(E, in->loc, "Triton emitter: cannot print '%s' with %d results", op_info[op].name, in->nres);
        return;
    }
    ValId v = in->res[0];
    Ex x = gen_inst(E, info);
    indent(b, depth);
    if (E->vi[v].nuses == 0 && op == OP_ATOMIC_ADD)
        buf_printf(b, "%s\n", x.s);
    else
        buf_printf(b, "%s = %s\n", var_name(E, v), x.s);
}

static void print_block(Em *E, Buf *b, const Block *blk, InstInfo *infos, int depth)
{
    for (int i = 0; i < blk->insts.n; i++)
        print_inst(E, b, &infos[i], depth);
}

/* ------------------------------------------------------------------ */
/* Pass 2: inlining                                                    */
/* ------------------------------------------------------------------ */

static bool inline_candidate(Em *E, ValId v, InstInfo *user)
{
    const ValInfo *x = &E->vi[v];
    if (x->cnst || !x->defi || x->nuses != 1 || x->blk != user->blk || x->param)
        return false;
    const Inst *d = x->defi->in;
    if (d->nres != 1 || is_cf((OpKind)d->op) || d->op == OP_ATOMIC_ADD)
        return false;
    if (!op_info[d->op].pure && d->op != OP_LOAD)
        return false;
    if (py_ident(E->a, E->f->vals.v[v].name) && user->in->op != OP_CONDITION)
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
static void decide_inlining(Em *E)
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
                print_moves(E, &b, info->depth, info, 0, dst, in->nargs, CTX_SLOT);
            } else if (in->op == OP_CONDITION) {
                buf_printf(&b, "%*swhile %s:", 4 * stmt->depth, "", opnd(E, info, 0, CTX_SLOT).s);
            } else {
                print_inst(E, &b, info, info->depth);
            }
            if (longest_line(buf_str(&b)) <= LINE_LIMIT)
                break;
            /* un-inline the longest inlined operand */
            int best = -1;
            size_t blen = 0;
            for (int i = 0; i < in->nargs; i++) {
                ValId v = info->eff[i];
                if (v > 0 && E->vi[v].inl && E->vi[v].useri == info) {
                    size_t l = strlen(gen_inst(E, E->vi[v].defi).s);
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
static int read_pos(Em *E, InstInfo *info, int i)
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
static void note_use(Em *E, ValId v, InstInfo *user, int pos)
{
    ValInfo *x = &E->vi[v];
    InstInfo *c = user;
    for (InstInfo *p = user->parent; p && p->depth >= x->depth; c = p, p = p->parent) {
        if (is_loop((OpKind)p->in->op)) {
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

static void liveness(Em *E)
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
    }
}

/* ------------------------------------------------------------------ */
/* Pass 4: coalescing                                                  */
/* ------------------------------------------------------------------ */

static void set_hint(Em *E, ValId v, int prio)
{
    ValInfo *x = &E->vi[v];
    const char *h = py_ident(E->a, E->f->vals.v[v].name);
    x->prio = h ? prio : 0;
    x->hint = h;
}

/* A name for an unnamed pointer or mask that got its own line (too long to
 * inline) from the load it feeds: `x = tl.load(x_ptrs, mask=x_mask)`, as
 * an author splitting the line would write it. */
static void hint_from_load(Em *E, ValId v)
{
    ValInfo *x = &E->vi[v];
    if (x->hint || x->param || x->nuses != 1 || !x->useri || x->useri->in->op != OP_LOAD || x->uarg > 1)
        return;
    const char *h = py_ident(E->a, E->f->vals.v[x->useri->in->res[0]].name);
    if (!h)
        return;
    x->hint = arena_printf(E->a, "%s_%s", h, x->uarg == 0 ? "ptrs" : "mask");
    x->prio = 1;
}

static void coalesce(Em *E)
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
        ValInfo *m = &E->vi[info->eff[1]];
        const char *h = py_ident(E->a, E->f->vals.v[in->res[0]].name);
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
                    unite(E, find(E, body->params[j]), find(E, in->res[j - 1]));
            }
        } else if (in->op == OP_IF) {
            for (int j = 0; j < in->nres; j++)
                set_hint(E, in->res[j], 2);
        } else if (in->op == OP_WHILE) {
            const Block *c = in->regions[0], *body = in->regions[1];
            for (int j = 0; j < c->nparams; j++) {
                set_hint(E, c->params[j], 2);
                if (j < body->nparams)
                    unite(E, find(E, c->params[j]), find(E, body->params[j]));
                if (j < in->nres)
                    unite(E, find(E, c->params[j]), find(E, in->res[j]));
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
 * the source did not have). */
static bool same_name_ok(Em *E, int ra, int rb)
{
    if (!type_eq(vtype(E, ra), vtype(E, rb)) || interferes(E, ra, rb))
        return false;
    if (class_has(E, ra, false) != class_has(E, rb, false))
        return false; /* loop variables share names only with each other */
    if (class_has(E, ra, true) && class_has(E, rb, true))
        return false;
    for (int a = 1; a < E->nvals; a++) {
        if (!E->vi[a].var || (find(E, a) != ra && find(E, a) != rb))
            continue;
        for (int b = 1; b < E->nvals; b++) {
            if (!E->vi[b].var || find(E, b) == find(E, a) || (find(E, b) != ra && find(E, b) != rb))
                continue;
            const ValInfo *x = &E->vi[a], *y = &E->vi[b];
            if (x->def_pos < y->def_pos && x->blk != y->blk && block_encloses(x->blk, y->blk, y->scope))
                return false;
        }
    }
    return true;
}

static void coalesce_names(Em *E)
{
    for (int v = 1; v < E->nvals; v++) {
        if (!E->vi[v].var || !E->vi[find(E, v)].hint)
            continue;
        for (int w = 1; w < v; w++) {
            if (!E->vi[w].var)
                continue;
            int rv = find(E, v), rw = find(E, w);
            if (rv == rw || !E->vi[rw].hint || strcmp(E->vi[rv].hint, E->vi[rw].hint))
                continue;
            if (same_name_ok(E, rw, rv)) {
                if (E->vi[rv].def_pos < E->vi[rw].def_pos)
                    unite(E, rv, rw);
                else
                    unite(E, rw, rv);
            }
        }
    }
}

/* ------------------------------------------------------------------ */
/* Pass 5: names                                                       */
/* ------------------------------------------------------------------ */

static void name_class(Em *E, ValId v)
{
    if (v <= 0 || !E->vi[v].var)
        return;
    ValInfo *r = &E->vi[find(E, v)];
    if (r->name)
        return;
    r->name = r->hint ? unique_name(E, r->hint) : fresh_tmp(E);
}

static void name_block(Em *E, const Block *b, InstInfo *infos)
{
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions; r++) {
            for (int j = 0; j < in->regions[r]->nparams; j++)
                name_class(E, in->regions[r]->params[j]);
            name_block(E, in->regions[r], infos[i].reg[r]);
        }
        for (int r = 0; r < in->nres; r++)
            name_class(E, in->res[r]);
    }
}

static void assign_names(Em *E, const char *kname)
{
    uint32_t cap = 64;
    while (cap < 4u * (uint32_t)E->nvals + 256)
        cap *= 2;
    E->set = arena_alloc(E->a, cap * sizeof *E->set);
    E->mask = cap - 1;
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        name_add(E, reserved[i]);
    name_add(E, kname);
    for (int i = 0; i < E->f->consts.n; i++) {
        const char *c = py_ident(E->a, E->f->consts.v[i].name);
        if (c && !name_used(E, c))
            name_add(E, c);
    }
    /* kernel parameters keep their names (launches pass them by keyword) */
    for (int i = 0; i < E->f->nparams; i++) {
        ValId p = E->f->params[i];
        ValInfo *r = &E->vi[find(E, p)];
        const char *h = py_ident(E->a, E->f->vals.v[p].name);
        r->name = unique_name(E, h ? h : arena_printf(E->a, "arg%d", i));
    }
    name_block(E, E->f->body, E->body);
}

/* ------------------------------------------------------------------ */
/* Pass 6: the module                                                  */
/* ------------------------------------------------------------------ */

static void comment_lines(Buf *b, const char *text)
{
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        buf_puts(b, n ? "# " : "#");
        for (size_t i = 0; i < n; i++)
            buf_putc(b, p[i]);
        buf_putc(b, '\n');
        p += n + (nl ? 1 : 0);
    }
}

DefParam *def_order(Arena *a, const Func *f, int nfwd)
{
    int n = nfwd + f->consts.n;
    DefParam *o = arena_alloc(a, sizeof *o * (size_t)(n + 1));
    bool *taken = arena_alloc(a, (size_t)(n + 1));
    bool known = true;
    for (int i = 0; i < f->consts.n; i++) {
        int at = f->consts.v[i].pos - 1;
        if (at < 0 || at >= n || taken[at])
            known = false;
        else
            taken[at] = true;
    }
    if (!known) {
        for (int i = 0; i < n; i++)
            o[i] = i < nfwd ? (DefParam){false, i} : (DefParam){true, i - nfwd};
        return o;
    }
    for (int i = 0; i < f->consts.n; i++)
        o[f->consts.v[i].pos - 1] = (DefParam){true, i};
    for (int at = 0, r = 0; at < n; at++)
        if (!taken[at])
            o[at] = (DefParam){false, r++};
    return o;
}

static void print_module(Em *E, Buf *out, const char *kname, const char *body)
{
    const Func *f = E->f;
    const EmitOptions *opt = E->opt;
    bool bwd = opt && opt->backward;
    if (bwd) {
        /* emit_triton_backward wrote the whole module comment */
        comment_lines(out, opt->header ? opt->header : "");
    } else {
        Buf sig = {.a = E->a};
        for (int i = 0; i < f->nparams; i++) {
            buf_printf(&sig, "%s%s=", i ? ", " : "", E->vi[find(E, f->params[i])].name);
            type_print(&sig, vtype(E, f->params[i]));
        }
        for (int i = 0; i < f->consts.n; i++)
            buf_printf(&sig, "%s%s=%s", sig.len ? ", " : "", f->consts.v[i].name, f->consts.v[i].value);

        if (opt && opt->header && *opt->header)
            comment_lines(out, opt->header);
        else
            buf_printf(out, "# Triton kernel %s.\n", f->name ? f->name : kname);
        /* the signature, wrapped at commas */
        const char *p = sig.len ? buf_str(&sig) : "(no parameters)";
        const char *lead = "# Specialized for: ";
        while (*p) {
            size_t room = LINE_LIMIT - strlen(lead), n = strlen(p);
            if (n > room) {
                n = room;
                while (n > 0 && p[n - 1] != ',')
                    n--;
                if (n == 0)
                    n = strlen(p);
            }
            buf_puts(out, lead);
            for (size_t i = 0; i < n; i++)
                buf_putc(out, p[i]);
            buf_putc(out, '\n');
            p += n;
            while (*p == ' ')
                p++;
            lead = "#   ";
        }
        buf_printf(out, "# Generated by kad %s from the specialized IR.\n", KAD_VERSION_STRING);
        if (f->consts.n)
            buf_puts(out, "# The body has the constexpr values built in; the constexpr parameters remain\n"
                          "# so that launches written for the original kernel keep working.\n");
    }
    buf_puts(out, "import triton\nimport triton.language as tl\n");
    if (E->libdevice)
        buf_puts(out, "from triton.language.extra import libdevice\n");
    buf_puts(out, "\n\n@triton.jit\n");

    /* parameters.  Forward: runtime ones, then the constexprs with their
     * values.  Backward: the def's order, constexprs without defaults (a
     * default cannot precede the gradient pointers), then the gradients. */
    Vec(const char *) ps = {0};
    if (bwd) {
        DefParam *o = def_order(E->a, f, opt->nfwd);
        for (int k = 0; k < opt->nfwd + f->consts.n; k++) {
            if (o[k].cnst) {
                const char *c = py_ident(E->a, f->consts.v[o[k].i].name);
                vec_push(E->a, ps, arena_printf(E->a, "%s: tl.constexpr", c ? c : "_"));
            } else {
                vec_push(E->a, ps, E->vi[find(E, f->params[o[k].i])].name);
            }
        }
        for (int i = opt->nfwd; i < f->nparams; i++)
            vec_push(E->a, ps, E->vi[find(E, f->params[i])].name);
    } else {
        for (int i = 0; i < f->nparams; i++)
            vec_push(E->a, ps, E->vi[find(E, f->params[i])].name);
        for (int i = 0; i < f->consts.n; i++) {
            const char *c = py_ident(E->a, f->consts.v[i].name);
            vec_push(E->a, ps, arena_printf(E->a, "%s: tl.constexpr = %s", c ? c : "_", f->consts.v[i].value));
        }
    }
    size_t len = strlen(kname) + 7;
    for (int i = 0; i < ps.n; i++)
        len += strlen(ps.v[i]) + 2;
    if (len <= LINE_LIMIT) {
        buf_printf(out, "def %s(", kname);
        for (int i = 0; i < ps.n; i++)
            buf_printf(out, "%s%s", i ? ", " : "", ps.v[i]);
        buf_puts(out, "):\n");
    } else {
        buf_printf(out, "def %s(\n", kname);
        for (int i = 0; i < ps.n; i++)
            buf_printf(out, "    %s,\n", ps.v[i]);
        buf_puts(out, "):\n");
    }
    buf_puts(out, *body ? body : "    pass\n");
}

/* Whether in reads a marked value, itself or inside its regions; marks
 * its results (and its regions' parameters) when it does.  Values are
 * marked in definition order, so one walk finds every reader of the seeds
 * that matters for the top-level split (a value carried around a loop is
 * marked only after something inside already read a seed). */
static bool reads_marked(const Inst *in, bool *mark)
{
    bool t = false;
    for (int i = 0; i < in->nargs; i++)
        if (in->args[i] > 0 && mark[in->args[i]])
            t = true;
    for (int r = 0; r < in->nregions; r++) {
        const Block *rb = in->regions[r];
        if (t)
            for (int j = 0; j < rb->nparams; j++)
                mark[rb->params[j]] = true;
        for (int k = 0; k < rb->insts.n; k++)
            if (reads_marked(&rb->insts.v[k], mark))
                t = true;
    }
    if (t)
        for (int r = 0; r < in->nres; r++)
            mark[in->res[r]] = true;
    return t;
}

/* The body of a backward kernel in its two sections: the top-level
 * statements before the first one that reads an output gradient's data
 * (the forward recomputed, with the pointer arithmetic of the gradients
 * that ad_rev replays next to the forward's), and the rest (the reverse
 * sweep). */
static void print_backward_body(Em *E, Buf *text)
{
    const Func *f = E->f;
    const Block *body = f->body;
    bool *mark = arena_alloc(E->a, (size_t)f->vals.n + 1);
    for (int i = E->opt->nfwd; i < E->opt->nfwd + E->opt->nouts && i < f->nparams; i++)
        mark[f->params[i]] = true;
    int split = body->insts.n;
    for (int i = 0; i < body->insts.n && split == body->insts.n; i++) {
        const Inst *in = &body->insts.v[i];
        if (!reads_marked(in, mark))
            continue;
        /* the output gradients' pointers are set up with the forward's
         * (the same offsets): the sweep starts where data is read */
        bool ptrs = in->nres > 0 && !in->nregions;
        for (int r = 0; r < in->nres; r++)
            if (ir_type(f, in->res[r]).dt != DT_PTR)
                ptrs = false;
        if (!ptrs)
            split = i;
    }
    Buf fwd = {.a = E->a}, rev = {.a = E->a};
    for (int i = 0; i < body->insts.n; i++)
        print_inst(E, i < split ? &fwd : &rev, &E->body[i], 1);
    if (fwd.len)
        buf_printf(text, "    # recompute the forward, its stores left out (d_*: the gradients' pointers)\n%s", buf_str(&fwd));
    if (fwd.len && rev.len)
        buf_putc(text, '\n');
    if (rev.len)
        buf_printf(text, "    # reverse sweep: from the output gradients back to the inputs\n%s", buf_str(&rev));
}

bool emit_triton(Buf *out, const Func *f, const EmitOptions *opt, Diags *d)
{
    Em E0 = {0}, *E = &E0;
    E->a = out->a;
    E->f = f;
    E->d = d;
    E->opt = opt;
    E->nvals = f->vals.n;
    E->vi = arena_alloc(E->a, sizeof(ValInfo) * (size_t)(E->nvals + 1));
    for (int i = 0; i < f->nparams; i++)
        if (f->params[i] > 0 && f->params[i] < E->nvals) {
            E->vi[f->params[i]].blk = f->body;
            E->vi[f->params[i]].param = true;
        }
    const char *kname = py_ident(E->a, opt && opt->name ? opt->name : f->name);
    if (!kname)
        kname = "kernel";
    const Block *body = f->body;
    E->body = arena_alloc(E->a, sizeof(InstInfo) * (size_t)((body ? body->insts.n : 0) + 1));
    E->counter = 1;
    if (body)
        scan_block(E, body, E->body, NULL, 0, 0);
    if (E->failed)
        return false;
    mark_dead(E);
    decide_inlining(E);
    liveness(E);
    coalesce(E);
    coalesce_names(E);
    assign_names(E, kname);
    for (int i = body ? body->insts.n - 1 : -1; i >= 0; i--) {
        const InstInfo *info = &E->body[i];
        if (info->dead || info->in->op == OP_YIELD)
            continue;
        if (info->in->op == OP_IF && info->in->nres == 0)
            E->early_return = info;
        break;
    }
    Buf text = {.a = E->a};
    if (body && opt && opt->backward)
        print_backward_body(E, &text);
    else if (body)
        print_block(E, &text, body, E->body, 1);
    if (E->failed)
        return false;
    print_module(E, out, kname, buf_str(&text));
    return !E->failed;
}
