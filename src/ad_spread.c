/* ad_spread.c -- a backward's loop spread over more programs.
 *
 * Job: a backward runs on the forward's grid, one program per forward
 * program.  When its work is one top-level `for` loop whose iterations
 * share nothing (no carried values: cross-entropy's sweep over a row once
 * the saving forward stored its log-sum-exp), a launch with few programs
 * leaves most of the GPU idle.  ad_spread rewrites such a kernel so that the
 * launcher may run each forward program's iterations on S programs
 * (docs/AD.md, "Spreading a loop over programs"):
 *
 *   program q of the grid (G0 * S, G1, G2) is forward program q // S along
 *   axis 0 (tl.program_id(0) and tl.num_programs(0) read through // S), and
 *   runs the iterations lo + (q % S + j * S) * step, j = 0, 1, ...
 *
 * S is the parameter kad_spread (an i32 after the flags; Func.spread), 1
 * when the launch does not spread, which Triton specializes as the constant
 * 1.  Each (forward program, iteration) runs once, in one program, with the
 * same operations: the gradients are the same bits whatever S is.
 *
 * It applies when (spread_loop):
 * - the kernel writes memory only in that loop, which carries nothing;
 * - no loop or write comes before it (its prefix, which every one of the
 *   S programs runs again: scalar and tile loads, arithmetic);
 * - no load of the kernel reads a buffer the loop writes (their pointers'
 *   parameters differ), so iterations run in any order;
 * - its step is a positive constant and its bounds are expressions of the
 *   kernel's int arguments (the launcher computes its trip count);
 * - the backward has no fold, GEMM form or tape (their own grids).
 *
 * Requires: a finished backward (ad_backward, after the scatter split).
 * Fills Func.spread; adds the parameter.
 */
#include "kad_int.h"

/* The parameter (index) whose pointer v is offset from, or -1. */
static int root_of(const Func *f, const Inst *const *def, ValId v, int depth)
{
    if (v <= 0 || depth > 400)
        return -1;
    const Inst *in = def[v];
    if (!in) {
        for (int i = 0; i < func_nargs(f); i++)
            if (f->params[i] == v)
                return i;
        return -1;
    }
    switch (in->op) {
    case OP_ADDPTR:
    case OP_BROADCAST:
    case OP_EXPAND_DIMS:
    case OP_RESHAPE:
    case OP_PERMUTE:
    case OP_MULTIPLE_OF:
    case OP_MAX_CONTIGUOUS:
        return root_of(f, def, in->args[0], depth + 1);
    default:
        return -1;
    }
}

/* Marks in roots the parameters that b's stores and atomics write (regions
 * included); false when one's pointer has no known parameter. */
static bool write_roots(const Func *f, const Inst *const *def, const Block *b, uint8_t *roots)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in->op == OP_STORE || in->op == OP_ATOMIC_ADD) {
            int r = root_of(f, def, in->args[0], 0);
            if (r < 0)
                return false;
            roots[r] = 1;
        }
        for (int r = 0; r < in->nregions; r++)
            if (!write_roots(f, def, in->regions[r], roots))
                return false;
    }
    return true;
}

/* Whether every load of b reads a parameter that roots does not mark. */
static bool loads_apart(const Func *f, const Inst *const *def, const Block *b, const uint8_t *roots)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in->op == OP_LOAD) {
            int r = root_of(f, def, in->args[0], 0);
            if (r < 0 || roots[r])
                return false;
        }
        for (int r = 0; r < in->nregions; r++)
            if (!loads_apart(f, def, in->regions[r], roots))
                return false;
    }
    return true;
}

/* Whether the launcher prints e as it is (no program id, no truncating division). */
static bool plain_host(const TapeExpr *e)
{
    if (!e)
        return true;
    if (e->op == TX_PID || e->op == TX_DIV || e->op == TX_REM)
        return false;
    return plain_host(e->x) && plain_host(e->y);
}

static bool has_loop(const Inst *in)
{
    if (in->op == OP_FOR || in->op == OP_WHILE)
        return true;
    for (int r = 0; r < in->nregions; r++)
        if (ir_block_has_op(in->regions[r], OP_FOR) || ir_block_has_op(in->regions[r], OP_WHILE))
            return true;
    return false;
}

/* The position in bw's body of the loop to spread, with its trip count for
 * the host in *trips; -1 when none applies. */
static int spread_loop(Arena *a, const Func *bw, const Inst *const *def, const TapeExpr **trips)
{
    const Block *b = bw->body;
    int at = -1;
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (!ir_inst_writes(in)) {
            if (at < 0 && has_loop(in))
                return -1; /* a loop in the prefix: each program would run it again */
            continue;
        }
        if (at >= 0 || in->op != OP_FOR || in->nres || in->nargs != 3 || ir_block_has_op(in->regions[0], OP_BARRIER))
            return -1;
        at = k;
    }
    if (at < 0)
        return -1;
    const Inst *loop = &b->insts.v[at];
    uint8_t *roots = arena_alloc(a, (size_t)bw->nparams + 1);
    if (!write_roots(bw, def, loop->regions[0], roots) || !loads_apart(bw, def, b, roots))
        return -1;
    const Inst *st = def[loop->args[2]];
    if (!st || st->op != OP_CONST || st->ival <= 0 || st->ival > INT32_MAX)
        return -1;
    const char *why = NULL;
    const TapeExpr *lb = tape_expr_of(a, bw, def, loop->args[0], &why);
    const TapeExpr *ub = lb ? tape_expr_of(a, bw, def, loop->args[1], &why) : NULL;
    if (!ub)
        return -1;
    const TapeExpr *span = tape_expr_new(a, TX_MAX, 0, tape_expr_new(a, TX_SUB, 0, ub, lb),
                                         tape_expr_new(a, TX_CONST, 0, NULL, NULL));
    *trips = tape_expr_new(a, TX_CDIV, 0, span, tape_expr_new(a, TX_CONST, st->ival, NULL, NULL));
    if (!plain_host(*trips))
        return -1;
    return at;
}

/* b with every tl.program_id(0) and tl.num_programs(0) divided by s (the
 * forward's program and program count), regions included. */
static void divide_axis0(Func *f, Block *b, ValId s)
{
    int n;
    Inst *old = ir_block_detach(b, &n);
    for (int k = 0; k < n; k++) {
        Inst in = old[k];
        for (int r = 0; r < in.nregions; r++)
            divide_axis0(f, in.regions[r], s);
        if (!((in.op == OP_PROGRAM_ID || in.op == OP_NUM_PROGRAMS) && in.ival == 0)) {
            vec_push(f->a, b->insts, in);
            continue;
        }
        ValId orig = in.res[0];
        Type t = ir_type(f, orig);
        ValId *res = arena_alloc(f->a, sizeof *res);
        res[0] = ir_value_new(f, t, NULL, in.loc);
        in.res = res;
        vec_push(f->a, b->insts, in);
        ValId args[2] = {res[0], s};
        Inst *d = ir_emit(f, b, OP_DIV, args, 2, &t, 1, in.loc);
        d->res[0] = orig;
    }
}

/* v (an int scalar) as type t, appended to b. */
static ValId as_type(Func *f, Block *b, ValId v, Type t, Loc loc)
{
    return type_eq(ir_type(f, v), t) ? v : ir_op1(f, b, OP_CAST, t, v, loc);
}

void ad_spread(Arena *a, Func *bw)
{
    if (bw->fold || bw->gemm || bw->tapes.n || bw->spread || (bw->gather && bw->gather->main == 1))
        return;
    const Inst **def = arena_alloc(a, sizeof *def * (size_t)(bw->vals.n + 1));
    ir_index_defs(bw->body, def);
    const TapeExpr *trips = NULL;
    int at = spread_loop(a, bw, def, &trips);
    if (at < 0)
        return;
    Loc loc = bw->body->insts.v[at].loc;
    Type i32 = type_scalar(DT_I32);
    ValId s = ir_param_add(bw, i32, KAD_SPREAD_PARAM, loc);
    divide_axis0(bw, bw->body, s);
    /* the loop (its position is unchanged: divide_axis0 adds nothing at the top level before it
     * unless the prefix reads the program id, so find it again) */
    Block *b = bw->body;
    int n;
    Inst *old = ir_block_detach(b, &n);
    for (int k = 0; k < n; k++) {
        Inst in = old[k];
        if (in.op == OP_FOR && ir_inst_writes(&in)) {
            Type it = ir_type(bw, in.args[0]);
            Inst *pi = ir_emit(bw, b, OP_PROGRAM_ID, NULL, 0, &i32, 1, loc);
            pi->ival = 0;
            ValId q = pi->res[0];
            ValId part = as_type(bw, b, ir_op2(bw, b, OP_REM, i32, q, s, loc), it, loc);
            ValId st = in.args[2];
            ValId *args = arena_alloc(a, sizeof *args * 3);
            args[0] = ir_op2(bw, b, OP_ADD, it, in.args[0], ir_op2(bw, b, OP_MUL, it, part, st, loc), loc);
            args[1] = in.args[1];
            args[2] = ir_op2(bw, b, OP_MUL, it, st, as_type(bw, b, s, it, loc), loc);
            in.args = args;
        }
        vec_push(a, b->insts, in);
    }
    FuncSpread *sp = arena_alloc(a, sizeof *sp);
    sp->param = s;
    sp->trips = trips;
    sp->loc = loc;
    bw->spread = sp;
}

int64_t spread_cpu(const Func *f, const int64_t *iargs, const int64_t grid[3])
{
    int64_t lo = 0, hi = 0;
    if (!f->spread || !tape_expr_bound(f->spread->trips, iargs, grid, &lo, &hi))
        return 1;
    return hi >= 2 ? 2 : 1;
}
