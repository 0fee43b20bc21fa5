/* write/spread.c -- a backward's loop spread over more programs.
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
 * When the loop's body is lane by lane on one tile wider than
 * KAD_SPREAD_TILE lanes (split_parts), that tile is also split: iteration q
 * of the new loop is the old iteration q / parts on lanes (q % parts) *
 * KAD_SPREAD_TILE onwards, so a row of few wide chunks has more to deal.
 *
 * S is the parameter kad_spread (an i32 after the flags; Program.spread), 1
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
 * - no atomic's old value is used (it would depend on the order);
 * - the backward has no fold, GEMM form or tape (their own grids).
 * The split also needs (lanewise): only elementwise ops, memory accesses
 * (no tensor descriptor's), scalars broadcast, arange from 0, constants and
 * `if`s on the tile, every value from outside the loop a scalar, and a step
 * of at least the tile's width.
 *
 * First (split_lanes): a backward without loops whose work is lane by lane
 * on one tile wider than KAD_LANE_TILE lanes becomes a loop over parts of
 * that many lanes, which the rule above then takes (FuncSpread.lanes).
 *
 * Requires: a finished backward (ad_backward, after the scatter split).
 * Fills Program.spread; adds the parameter.
 */
#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "ad/ad_int.h"

/* The parameter (index) whose pointer v is offset from, or -1. */
static int root_of(const Func *f, const Inst *const *def, ValId v, int depth)
{
    if (v <= 0 || depth > 400)
        return -1;
    const Inst *in = def[v];
    if (!in) {
        for (int i = 0; i < f->nparams; i++)
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
        if (op_writes_memory(in->op)) {
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

/* Whether body (the loop's, whole) uses the result of an atomic of b. */
static bool atomic_result_used(const Block *body, const Block *b)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in->op == OP_ATOMIC_ADD && in->nres && ir_block_uses(body, in->res[0]))
            return true;
        for (int r = 0; r < in->nregions; r++)
            if (atomic_result_used(body, in->regions[r]))
                return true;
    }
    return false;
}

/* Whether body's iterations (or parts) may run in any order, on any
 * programs: no atomic's old value of body is used (it would depend on the
 * order), and no load of the kernel reads a buffer body writes (an
 * iteration would read what another wrote). */
static bool order_free(Arena *a, const Func *bw, const Inst *const *def, const Block *body)
{
    uint8_t *roots = arena_alloc(a, (size_t)bw->nparams + 1);
    return !atomic_result_used(body, body) && write_roots(bw, def, body, roots) &&
           loads_apart(bw, def, bw->body, roots);
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

/* v (an int scalar) as type t, appended to b. */
static ValId as_type(Func *f, Block *b, ValId v, Type t, Loc loc)
{
    return type_eq(ir_type(f, v), t) ? v : ir_op1(f, b, OP_CAST, t, v, loc);
}

/* ------------------------------------------------------------------ */
/* Splitting the loop's tile                                            */
/* ------------------------------------------------------------------ */

/* Marks in in_body every value b defines (results, region parameters). */
static void mark_defined(const Block *b, uint8_t *in_body)
{
    for (int i = 0; i < b->nparams; i++)
        in_body[b->params[i]] = 1;
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        for (int r = 0; r < in->nres; r++)
            in_body[in->res[r]] = 1;
        for (int r = 0; r < in->nregions; r++)
            mark_defined(in->regions[r], in_body);
    }
}

/* Whether t is a scalar or the 1-D tile [*w] (*w set by the first tile seen). */
static bool width_ok(Type t, int32_t *w)
{
    if (t.rank == 0)
        return true;
    if (t.rank != 1)
        return false;
    if (!*w)
        *w = t.shape[0];
    return t.shape[0] == *w;
}

/* Whether every value of b is a scalar or a [*w] tile computed lane by lane:
 * elementwise ops, memory accesses, scalars broadcast, arange from 0,
 * constants, `if`s; values from outside the body scalars. */
static bool lanewise(const Func *f, const Block *b, const uint8_t *in_body, int32_t *w)
{
    for (int k = 0; k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in->flags & IF_DESC)
            return false; /* a descriptor's access: its offsets and block shape are its own operands */
        bool ok = in->op == OP_CONST || in->op == OP_IF || in->op == OP_YIELD || in->op == OP_ASSERT ||
                  (in->op == OP_ARANGE && in->ival == 0) ||
                  (in->op == OP_BROADCAST && ir_type(f, in->args[0]).rank == 0) ||
                  (op_info[in->op].elementwise && in->op != OP_MULTIPLE_OF && in->op != OP_MAX_CONTIGUOUS);
        if (!ok)
            return false;
        for (int i = 0; i < in->nargs; i++) {
            Type t = ir_type(f, in->args[i]);
            if (!width_ok(t, w) || (t.rank && !in_body[in->args[i]]))
                return false;
        }
        for (int r = 0; r < in->nres; r++)
            if (!width_ok(ir_type(f, in->res[r]), w))
                return false;
        for (int r = 0; r < in->nregions; r++)
            if (!lanewise(f, in->regions[r], in_body, w))
                return false;
    }
    return true;
}

/* The parts the loop's tile splits into: width / KAD_SPREAD_TILE when every
 * value of its body is lanewise on one tile wider than KAD_SPREAD_TILE, else 1. */
static int split_parts(Arena *a, const Func *bw, const Inst *loop, int64_t step, int32_t *w)
{
    uint8_t *in_body = arena_alloc(a, (size_t)bw->vals.n + 1);
    mark_defined(loop->regions[0], in_body);
    *w = 0;
    if (!lanewise(bw, loop->regions[0], in_body, w) || *w <= KAD_SPREAD_TILE || *w % KAD_SPREAD_TILE ||
        step < *w)
        return 1; /* (a step below the tile: chunks overlap, and the parts' count could overflow) */
    return *w / KAD_SPREAD_TILE;
}

/* b's [w] tiles retyped [w / parts]; each arange offset by part * (w / parts). */
static void split_tiles(Func *f, Block *b, int32_t w, int parts, ValId part)
{
    int32_t sw = w / parts;
    for (int i = 0; i < b->nparams; i++)
        if (f->vals.v[b->params[i]].ty.rank == 1)
            f->vals.v[b->params[i]].ty.shape[0] = sw;
    int n;
    Inst *old = ir_block_detach(b, &n);
    for (int k = 0; k < n; k++) {
        Inst in = old[k];
        for (int r = 0; r < in.nregions; r++)
            split_tiles(f, in.regions[r], w, parts, part);
        for (int r = 0; r < in.nres; r++)
            if (f->vals.v[in.res[r]].ty.rank == 1)
                f->vals.v[in.res[r]].ty.shape[0] = sw;
        if (in.op != OP_ARANGE) {
            vec_push(f->a, b->insts, in);
            continue;
        }
        ValId orig = in.res[0];
        Type t = ir_type(f, orig);
        ValId *res = arena_alloc(f->a, sizeof *res);
        res[0] = ir_value_new(f, t, NULL, in.loc);
        in.res = res;
        vec_push(f->a, b->insts, in);
        ValId off = ir_op1(f, b, OP_BROADCAST, t, part, in.loc);
        ValId args[2] = {res[0], off};
        Inst *d = ir_emit(f, b, OP_ADD, args, 2, &t, 1, in.loc);
        d->res[0] = orig;
    }
}

/* The body of loop (its variable an int of type it, from lo by st) run on
 * tiles of w / parts lanes: its variable becomes q, iteration q / parts of
 * the loop as written, its lanes part q % parts of that iteration's tile. */
static void split_body(Func *f, Inst *loop, ValId lo, ValId st, int parts, int32_t w, Type it)
{
    Block *body = loop->regions[0];
    Loc loc = loop->loc;
    Type i32 = type_scalar(DT_I32);
    ValId iv = body->params[0], q = ir_value_new(f, it, NULL, loc), off = ir_value_new(f, i32, NULL, loc);
    body->params[0] = q;
    split_tiles(f, body, w, parts, off);
    int n;
    Inst *old = ir_block_detach(body, &n);
    ValId kp = ir_const_int(f, body, it, parts, loc);
    ValId at = ir_op2(f, body, OP_MUL, it, ir_op2(f, body, OP_DIV, it, q, kp, loc), st, loc);
    ValId args[2] = {lo, at};
    ir_emit(f, body, OP_ADD, args, 2, &it, 1, loc)->res[0] = iv;
    args[0] = as_type(f, body, ir_op2(f, body, OP_REM, it, q, kp, loc), i32, loc);
    args[1] = ir_const_int(f, body, i32, w / parts, loc);
    ir_emit(f, body, OP_MUL, args, 2, &i32, 1, loc)->res[0] = off;
    for (int k = 0; k < n; k++)
        vec_push(f->a, body->insts, old[k]);
}

/* ------------------------------------------------------------------ */
/* A loop-free body split into a loop over parts of its tile            */
/* ------------------------------------------------------------------ */

/* Marks in inside what in defines: its results and its regions' values. */
static void mark_inst(const Inst *in, uint8_t *inside)
{
    for (int r = 0; r < in->nres; r++)
        inside[in->res[r]] = 1;
    for (int r = 0; r < in->nregions; r++)
        mark_defined(in->regions[r], inside);
}

/* Whether in (of the body's top level) is scalar work the parts share, left
 * before the loop: results (so no store, assert or barrier), no region, no
 * write (an atomic), scalar results, arguments defined before the loop. */
static bool hoistable(const Func *f, const Inst *in, const uint8_t *inside)
{
    if (!in->nres || in->nregions || ir_inst_writes(in))
        return false;
    for (int r = 0; r < in->nres; r++)
        if (ir_type(f, in->res[r]).rank)
            return false;
    for (int i = 0; i < in->nargs; i++)
        if (inside[in->args[i]])
            return false;
    return true;
}

/* The top-level instructions insts[0..n) of a loop-free f split into the
 * scalar work a tile's parts share (hoistable: appended to pre, when not
 * NULL) and the rest (appended to body).  Returns the rest's tile width when
 * it is lane by lane (lanewise), else 0. */
static int32_t lane_split(Arena *a, const Func *f, const Inst *insts, int n, Block *pre, Block *body)
{
    uint8_t *inside = arena_alloc(a, (size_t)f->vals.n + 1);
    for (int k = 0; k < n; k++) {
        if (hoistable(f, &insts[k], inside)) {
            if (pre)
                vec_push(a, pre->insts, insts[k]);
            continue;
        }
        mark_inst(&insts[k], inside);
        vec_push(a, body->insts, insts[k]);
    }
    int32_t w = 0;
    return lanewise(f, body, inside, &w) ? w : 0;
}

/* A backward without loops whose work is lane by lane on one 1-D tile wider
 * than KAD_LANE_TILE lanes (a row-per-program elementwise kernel: GeGLU
 * with the whole row in one block) becomes a loop over the tile's parts of
 * KAD_LANE_TILE lanes, its scalar work before the loop: `for part in
 * range(0, parts)`, each arange offset by part * KAD_LANE_TILE.  A thread
 * then holds a part's lanes, not the row's (GeGLU's 4096 lanes took 106
 * registers a thread at 8 warps), and spread_loop may deal the parts to
 * more programs.  Each lane runs the same operations on the same values:
 * the same bits.  Needs order_free of the body (a part must not read what
 * an earlier part wrote), as spread_loop of a loop, and lanewise.  Returns the tile's
 * lanes; 0, bw unchanged, when it does not apply.  (Its launcher deals a
 * row's parts to at least 2 programs: emit_grad_launch.c, print_spread_plan.) */
static int32_t split_lanes(Arena *a, Program *P, const Inst *const *def)
{
    Func *bw = P->main;
    Block *b = bw->body;
    bool writes = false;
    for (int k = 0; k < b->insts.n; k++) {
        if (has_loop(&b->insts.v[k]))
            return 0;
        writes |= ir_inst_writes(&b->insts.v[k]);
    }
    if (!writes || !order_free(a, bw, def, b))
        return 0;
    int n;
    Loc loc = b->insts.v[0].loc;
    Inst *old = ir_block_detach(b, &n);
    Block body = {0};
    int32_t w = lane_split(a, bw, old, n, b, &body);
    if (w <= KAD_LANE_TILE || w % KAD_LANE_TILE) {
        b->insts.v = old; /* as it was */
        b->insts.n = b->insts.cap = n;
        return 0;
    }
    int parts = w / KAD_LANE_TILE;
    Type i32 = type_scalar(DT_I32);
    ValId fa[3] = {ir_const_int(bw, b, i32, 0, loc), ir_const_int(bw, b, i32, parts, loc),
                   ir_const_int(bw, b, i32, 1, loc)};
    ir_emit(bw, b, OP_FOR, fa, 3, NULL, 0, loc);
    Block *r = ir_inst_add_region(bw, &b->insts.v[b->insts.n - 1]);
    ValId part = ir_block_param_add(bw, r, i32, "part", loc);
    ValId off = ir_op2(bw, r, OP_MUL, i32, part, ir_const_int(bw, r, i32, KAD_LANE_TILE, loc), loc);
    for (int k = 0; k < body.insts.n; k++)
        vec_push(a, r->insts, body.insts.v[k]);
    split_tiles(bw, r, w, parts, off);
    ir_emit(bw, r, OP_YIELD, NULL, 0, NULL, 0, loc);
    vec_push(a, P->notes,
             arena_printf(a, "line %d onwards: lane by lane on one tile of %d lanes, so the backward runs it as "
                             "%d parts of %d lanes (kad's loop over `part`: a thread holds a part's lanes, not "
                             "the whole tile's; the same operations on each lane, the same bits; docs/AD.md, "
                             "\"Lanes in parts\")",
                          loc.line, (int)w, parts, KAD_LANE_TILE));
    return w;
}

int32_t spread_lane_width(const Func *f)
{
    for (int k = 0; k < f->body->insts.n; k++)
        if (has_loop(&f->body->insts.v[k]))
            return 0;
    Block body = {0};
    return lane_split(f->a, f, f->body->insts.v, f->body->insts.n, NULL, &body);
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
    if (!order_free(a, bw, def, loop->regions[0]))
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

void ad_spread(Arena *a, Program *P)
{
    Func *bw = P->main;
    if (P->fold || P->gemm || P->tapes.n || P->spread || (P->gather && P->gather->main == 1))
        return;
    const Inst **def = arena_alloc(a, sizeof *def * (size_t)(bw->vals.n + 1));
    ir_index_defs(bw->body, def);
    int32_t lanes = split_lanes(a, P, def);
    if (lanes) { /* new values: index them too */
        def = arena_alloc(a, sizeof *def * (size_t)(bw->vals.n + 1));
        ir_index_defs(bw->body, def);
    }
    const TapeExpr *trips = NULL;
    int at = spread_loop(a, bw, def, &trips);
    if (at < 0)
        return;
    Loc loc = bw->body->insts.v[at].loc;
    int32_t w = 0;
    int parts = split_parts(a, bw, &bw->body->insts.v[at], def[bw->body->insts.v[at].args[2]]->ival, &w);
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
            if (parts == 1) { /* (a step of 1 and a start of 0, as split_lanes' loop has, left out) */
                bool one = def[st] && def[st]->op == OP_CONST && def[st]->ival == 1;
                bool zero = def[in.args[0]] && def[in.args[0]]->op == OP_CONST && def[in.args[0]]->ival == 0;
                ValId first = one ? part : ir_op2(bw, b, OP_MUL, it, part, st, loc);
                args[0] = zero ? first : ir_op2(bw, b, OP_ADD, it, in.args[0], first, loc);
                args[1] = in.args[1];
                args[2] = one ? as_type(bw, b, s, it, loc) : ir_op2(bw, b, OP_MUL, it, st, as_type(bw, b, s, it, loc), loc);
            } else { /* q over the trips times the parts: ((hi - lo) / st + ((hi - lo) % st > 0)) * parts,
                      * <= 0 when hi <= lo (truncating division), no overflow past hi - lo's */
                ValId lo = in.args[0], hi = in.args[1];
                ValId span = ir_op2(bw, b, OP_SUB, it, hi, lo, loc);
                ValId zero = ir_const_int(bw, b, it, 0, loc);
                ValId more = ir_op2(bw, b, OP_GT, type_scalar(DT_I1), ir_op2(bw, b, OP_REM, it, span, st, loc), zero, loc);
                ValId t = ir_op2(bw, b, OP_ADD, it, ir_op2(bw, b, OP_DIV, it, span, st, loc),
                                 ir_op1(bw, b, OP_CAST, it, more, loc), loc);
                args[0] = part;
                args[1] = ir_op2(bw, b, OP_MUL, it, t, ir_const_int(bw, b, it, parts, loc), loc);
                args[2] = as_type(bw, b, s, it, loc);
                split_body(bw, &in, lo, st, parts, w, it);
            }
            in.args = args;
        }
        vec_push(a, b->insts, in);
    }
    FuncSpread *sp = arena_alloc(a, sizeof *sp);
    sp->param = s;
    sp->trips = tape_expr_new(a, TX_MUL, 0, trips, tape_expr_new(a, TX_CONST, parts, NULL, NULL));
    sp->parts = parts;
    sp->lanes = lanes;
    sp->loc = loc;
    P->spread = sp;
    pass_dce(bw, true); /* the bounds and step the rewrite replaced */
}
