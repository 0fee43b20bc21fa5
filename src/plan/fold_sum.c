/* fold_sum.c: the fold's sum kernel, a companion kernel of the plan.
 *
 * Job: a folded backward (write/fold.c) leaves per-program partials of
 * each folded input's gradient; one generated kernel adds their rows in a
 * fixed order into d_<x> (Program.sum).  The kernel depends on the plan
 * data alone (each input's gradient and partials dtypes, FoldInput), not on
 * the kernel AD differentiated, and its contract (five parameters per
 * input, cdiv(span, FOLD_SUM_BLOCK) programs each) is the one plan_run's
 * STEP_FOLD and the launcher launch it with, so it lives with them: the AD
 * driver (sweep_rev.c) builds it from that data (a Program's text carries
 * it as a kernel, which plan_parse reads).
 *
 * Requires: n >= 1 inputs.  Keeps: everything (builds a new Func). */
#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"

/* store p, v [, mask m] (m == 0: unmasked) at the end of b. */
static void emit_store(Func *f, Block *b, ValId p, ValId v, ValId m, Loc loc)
{
    ValId sa[3] = {p, v, m};
    Inst *st = ir_emit(f, b, OP_STORE, sa, m ? 3 : 2, NULL, 0, loc);
    st->flags = m ? IF_HAS_MASK : 0;
}

/* The sum of one folded input, in block b for the program pid (i64) of
 * its own blocks: d[e] += part[0][e] + ... + part[P-1][e] for e < span, in
 * the partials' dtype, rounded once.  A program owns FOLD_SUM_BLOCK
 * columns and steps through the rows FOLD_SUM_ROWS at a time: each step's
 * [rows, columns] tile is summed over its rows by tl.sum (a fixed tree for
 * the compiled kernel) and added to the running sum in row order, so the
 * result depends on P alone.  Elements whose sum is exactly zero are left
 * alone (no program touched them: they may lie between a strided view's
 * elements, which belong to someone else).  dense != 0 (the launcher's
 * _kad_dense: d's elements fill its span, no gap): d = the sum, stored at
 * every e < span without reading d, so d needs no zero-fill; the value is
 * the same as 0 + the sum. */
static void sum_body(Func *f, Block *b, ValId pid, ValId part, ValId d, ValId span, ValId nfold, ValId dense,
                     Dtype dt, Dtype pdt, Loc loc)
{
    enum { R = FOLD_SUM_ROWS, C = FOLD_SUM_BLOCK };
    int32_t sc[1] = {C}, sr[1] = {R}, s2[2] = {R, C}, s1c[2] = {1, C}, sr1[2] = {R, 1};
    Type i64 = type_scalar(DT_I64), i32 = type_scalar(DT_I32), t64 = type_tile(DT_I64, 1, sc);
    Type tp = type_tile(pdt, 1, sc), t1 = type_tile(DT_I1, 1, sc);
    Type tp2 = type_tile(pdt, 2, s2), t12 = type_tile(DT_I1, 2, s2), t642 = type_tile(DT_I64, 2, s2);
    ValId start = ir_op2(f, b, OP_MUL, i64, pid, ir_const_int(f, b, i64, C, loc), loc);
    Type ta = type_tile(DT_I32, 1, sc);
    Inst *ar = ir_emit(f, b, OP_ARANGE, NULL, 0, &ta, 1, loc);
    ar->ival = 0;
    ValId lanes = ir_op1(f, b, OP_CAST, t64, ar->res[0], loc);
    ValId offs = ir_op2(f, b, OP_ADD, t64, ir_op1(f, b, OP_BROADCAST, t64, start, loc), lanes, loc);
    f->vals.v[offs].name = "offs";
    ValId m = ir_op2(f, b, OP_LT, t1, offs, ir_op1(f, b, OP_BROADCAST, t64, span, loc), loc);
    f->vals.v[m].name = "mask";
    /* the columns as a [1, C] row, the row numbers as an [R, 1] column */
    Inst *e1 = ir_emit(f, b, OP_EXPAND_DIMS, &offs, 1, (Type[]){type_tile(DT_I64, 2, s1c)}, 1, loc);
    e1->ival = 0;
    ValId cols2 = ir_op1(f, b, OP_BROADCAST, t642, e1->res[0], loc);
    Inst *e2 = ir_emit(f, b, OP_EXPAND_DIMS, &m, 1, (Type[]){type_tile(DT_I1, 2, s1c)}, 1, loc);
    e2->ival = 0;
    ValId m2 = ir_op1(f, b, OP_BROADCAST, t12, e2->res[0], loc);
    Type tr = type_tile(DT_I32, 1, sr);
    Inst *rr = ir_emit(f, b, OP_ARANGE, NULL, 0, &tr, 1, loc);
    rr->ival = 0;
    ValId rows = rr->res[0];
    ValId zero = ir_const_float(f, b, tp, 0.0, loc);
    ValId fa[4] = {ir_const_int(f, b, i32, 0, loc), nfold, ir_const_int(f, b, i32, R, loc), zero};
    ir_emit(f, b, OP_FOR, fa, 4, &tp, 1, loc);
    int idx = b->insts.n - 1;
    Block *r = ir_inst_add_region(f, &b->insts.v[idx]);
    ValId q0 = ir_block_param_add(f, r, i32, "q0", loc);
    ValId acc = ir_block_param_add(f, r, tp, "acc", loc);
    Type ti2 = type_tile(DT_I32, 2, s2);
    /* the rows q0 .. q0 + R - 1 as an [R, C] tile (1-D first: a scalar plus a range) */
    ValId q1 = ir_op2(f, r, OP_ADD, tr, ir_op1(f, r, OP_BROADCAST, tr, q0, loc), rows, loc);
    Inst *e3 = ir_emit(f, r, OP_EXPAND_DIMS, &q1, 1, (Type[]){type_tile(DT_I32, 2, sr1)}, 1, loc);
    e3->ival = 1;
    ValId q = ir_op1(f, r, OP_BROADCAST, ti2, e3->res[0], loc);
    ValId mq = ir_op2(f, r, OP_AND, t12, m2,
                      ir_op2(f, r, OP_LT, t12, q, ir_op1(f, r, OP_BROADCAST, ti2, nfold, loc), loc), loc);
    ValId at = ir_op2(f, r, OP_ADD, t642,
                      ir_op2(f, r, OP_MUL, t642, ir_op1(f, r, OP_CAST, t642, q, loc),
                             ir_op1(f, r, OP_BROADCAST, t642, span, loc), loc),
                      cols2, loc);
    Type pp = type_ptr(pdt, 2, s2);
    ValId ptr = ir_op2(f, r, OP_ADDPTR, pp, ir_op1(f, r, OP_BROADCAST, pp, part, loc), at, loc);
    ValId la[3] = {ptr, mq, ir_const_float(f, r, tp2, 0.0, loc)};
    Inst *ld = ir_emit(f, r, OP_LOAD, la, 3, &tp2, 1, loc);
    ld->flags = IF_HAS_MASK | IF_HAS_OTHER;
    Inst *sm = ir_emit(f, r, OP_SUM, &ld->res[0], 1, &tp, 1, loc);
    sm->ival = 0;
    ValId nx = ir_op2(f, r, OP_ADD, tp, acc, sm->res[0], loc);
    ir_emit(f, r, OP_YIELD, &nx, 1, NULL, 0, loc);
    ValId total = b->insts.v[idx].res[0];
    f->vals.v[total].name = "total";
    ValId nz = ir_op2(f, b, OP_NE, t1, total, ir_const_float(f, b, tp, 0.0, loc), loc);
    Type i1 = type_scalar(DT_I1);
    ValId zero32 = ir_const_int(f, b, i32, 0, loc);
    ValId isd = ir_op1(f, b, OP_BROADCAST, t1, ir_op2(f, b, OP_NE, i1, dense, zero32, loc), loc);
    ValId notd = ir_op1(f, b, OP_BROADCAST, t1, ir_op2(f, b, OP_EQ, i1, dense, zero32, loc), loc);
    /* stored: every element when dense, else those a program touched; read: only when not dense */
    ValId mm = ir_op2(f, b, OP_AND, t1, m, ir_op2(f, b, OP_OR, t1, nz, isd, loc), loc);
    ValId lm = ir_op2(f, b, OP_AND, t1, ir_op2(f, b, OP_AND, t1, m, nz, loc), notd, loc);
    Type dp = type_ptr(dt, 1, sc), td = type_tile(dt, 1, sc);
    ValId dptr = ir_op2(f, b, OP_ADDPTR, dp, ir_op1(f, b, OP_BROADCAST, dp, d, loc), offs, loc);
    ValId da[3] = {dptr, lm, ir_const_float(f, b, td, 0.0, loc)};
    Inst *dl = ir_emit(f, b, OP_LOAD, da, 3, &td, 1, loc);
    dl->flags = IF_HAS_MASK | IF_HAS_OTHER;
    ValId old = dl->res[0];
    ValId sum = ir_op2(f, b, OP_ADD, tp, dt == pdt ? old : ir_op1(f, b, OP_CAST, tp, old, loc), total, loc);
    ValId out = dt == pdt ? sum : ir_op1(f, b, OP_CAST, td, sum, loc);
    emit_store(f, b, dptr, out, mm, loc);
}

/* The one sum kernel of a plan's n inputs: parameters (part, d, span,
 * nfold, dense) per input (suffixed _<x> when n > 1); input j owns the
 * cdiv(span_j, FOLD_SUM_BLOCK) programs after those of the inputs before
 * it, chosen by an if chain on the program id. */
Func *fold_sum_kernel(Arena *a, const char *name, const FoldInput *in, int n, Loc loc)
{
    Func *f = ir_func_new(a, name, loc);
    ValId (*pv)[5] = arena_alloc(a, sizeof *pv * (size_t)(n + 1));
    static const char *const pn[5] = {"part", "d", "span", "nfold", "dense"};
    for (int j = 0; j < n; j++)
        for (int k = 0; k < 5; k++) {
            Type t = k == 0   ? type_ptr(in[j].pdt, 0, NULL)
                     : k == 1 ? type_ptr(in[j].dt, 0, NULL)
                     : k == 2 ? type_scalar(DT_I64)
                              : type_scalar(DT_I32);
            pv[j][k] = ir_param_add(f, t, n > 1 ? arena_printf(a, "%s_%s", pn[k], in[j].name) : pn[k], loc);
        }
    Block *b = f->body;
    Type i64 = type_scalar(DT_I64), i32 = type_scalar(DT_I32), i1 = type_scalar(DT_I1);
    ValId pid = ir_op1(f, b, OP_CAST, i64, ir_emit(f, b, OP_PROGRAM_ID, NULL, 0, &i32, 1, loc)->res[0], loc);
    Block **els = arena_alloc(a, sizeof *els * (size_t)(n + 1));
    for (int j = 0; j < n; j++) {
        if (j + 1 == n) {
            sum_body(f, b, pid, pv[j][0], pv[j][1], pv[j][2], pv[j][3], pv[j][4], in[j].dt, in[j].pdt, loc);
            break;
        }
        /* blocks = cdiv(span, C); pid < blocks: input j, else the rest with pid - blocks */
        ValId c = ir_const_int(f, b, i64, FOLD_SUM_BLOCK, loc);
        ValId nb = ir_op2(f, b, OP_DIV, i64,
                          ir_op2(f, b, OP_ADD, i64, pv[j][2], ir_const_int(f, b, i64, FOLD_SUM_BLOCK - 1, loc), loc),
                          c, loc);
        f->vals.v[nb].name = arena_printf(a, "blocks_%s", in[j].name);
        ValId mine = ir_op2(f, b, OP_LT, i1, pid, nb, loc);
        ir_emit(f, b, OP_IF, &mine, 1, NULL, 0, loc);
        int idx = b->insts.n - 1;
        Block *then = ir_inst_add_region(f, &b->insts.v[idx]);
        els[j] = ir_inst_add_region(f, &b->insts.v[idx]);
        sum_body(f, then, pid, pv[j][0], pv[j][1], pv[j][2], pv[j][3], pv[j][4], in[j].dt, in[j].pdt, loc);
        ir_emit(f, then, OP_YIELD, NULL, 0, NULL, 0, loc);
        b = els[j];
        pid = ir_op2(f, b, OP_SUB, i64, pid, nb, loc);
    }
    for (int j = 0; j + 1 < n; j++) /* close the else regions, innermost first */
        ir_emit(f, els[n - 2 - j], OP_YIELD, NULL, 0, NULL, 0, loc);
    return f;
}
