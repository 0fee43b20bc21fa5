/* interp.c -- runs a Func over a grid of programs on host buffers.
 *
 * Job: execute a specialized kernel the way Triton would on an NVIDIA GPU,
 * program by program (x fastest, then y, then z), so that kernels and their
 * derivatives can be checked on the CPU.  One kernel on one grid: a
 * backward's host steps (flags, tapes, its other kernels) are the plan
 * stage's runner's (src/plan/run.c, plan_run), which calls interp_run once
 * per launch.  docs/INTERPRETER.md states the
 * semantics and every choice made where the GPU is not exactly reproducible.
 *
 * Requires: a verified Func (ir_verify): operand counts, types, shapes,
 * region structure and dominance are trusted and only ASSERTed here.
 *
 * Guarantees: deterministic results; every access through a pointer is
 * bounds- and alignment-checked against the buffer its pointer parameter
 * was given; every user-visible failure (out-of-bounds access, failed
 * device_assert, integer division by zero, runaway while loop, ...) is
 * reported once through diag_error at the instruction's Loc, naming the
 * program id and the first offending lane, and stops the run.
 *
 * Representation:
 *   - one slot per SSA value, allocated once per run from its Type and
 *     reused by every program and loop iteration (values are SSA, so a
 *     slot is written only by its defining instruction or, for region
 *     parameters, by the copies of inits and yields);
 *   - float lanes are doubles holding the value exactly as rounded to the
 *     value's dtype (IM_AS_WRITTEN) or unrounded (IM_F64);
 *   - integer lanes are int64 normalized to the dtype: signed types sign-
 *     extended, unsigned types and i1 zero-extended (u64 as its bit pattern);
 *   - pointer lanes are (byte offset, buffer) pairs; the buffer is the
 *     pointer parameter the lane derives from (1-based, 0 = invalid).
 *
 * Speed: the Func is first translated into XBlocks of XInsts holding the
 * resolved slot addresses and the rounding/int formats of each instruction,
 * so executing an instruction is one switch and a tight loop over lanes;
 * constants, aranges and num_programs are filled once per run; nothing is
 * allocated while executing.
 *
 * Errors: a runtime failure reports its diagnostic and longjmps out of the
 * run (the scratch arena is then freed in one piece); this keeps the inner
 * loops free of error plumbing.
 *
 * Files: this one holds the state's helpers and errors, the preparation
 * (XBlocks, slots), the control flow (for, scan and reduce regions, if,
 * while, assert), the constants filled once per run and the run over the
 * grid; interp_ops.c the number formats, Philox and the operations
 * (interp_exec_inst, the switch the blocks run); ir_int.h the state they share.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "ir/ir_int.h"

/* Tiles larger than this are refused (a located error) instead of being
 * allocated: no Triton kernel has such tiles, a typo in a shape does. */
#define MAX_TILE_NUMEL ((int64_t)1 << 24)
/* A while loop running longer than this is reported instead of hanging. */
#define MAX_WHILE_ITERS ((int64_t)1 << 31)
/* Byte limit of the scratch arena of one run. */
#define SCRATCH_LIMIT ((size_t)2 << 30)

/* ------------------------------------------------------------------ */
/* The interpreter state                                               */
/* ------------------------------------------------------------------ */

/* Bytes per lane of a value of type t. */
size_t interp_lane_bytes(Type t) { return t.dt == DT_PTR ? sizeof(PtrLane) : 8; }

/* Storage bytes of one element of dtype dt in a buffer (float buffers hold
 * doubles in IM_F64). */
int access_size(const Interp *S, Dtype dt)
{
    return S->f64 && dtype_is_float((Dtype)dt) ? 8 : dtype_bytes(dt);
}

int interp_rk_of(const Interp *S, Dtype dt)
{
    if (S->f64)
        return R_NONE;
    switch (dt) {
    case DT_F32: return R_F32;
    case DT_F16: return R_F16;
    case DT_BF16: return R_BF16;
    case DT_F8E5: return R_F8E5;
    case DT_F8E4NV: return R_F8E4NV;
    case DT_F8E4B15: return R_F8E4B15;
    default: return R_NONE;
    }
}

int interp_cls_of(Type t)
{
    if (t.dt == DT_PTR)
        return C_PTR;
    if (dtype_is_float((Dtype)t.dt))
        return C_FLOAT;
    return t.dt == DT_U64 ? C_U64 : C_INT;
}

Type interp_vtype(const Interp *S, ValId v) { return S->f->vals.v[v].ty; }

/* Writes " (program (x, y, z), lane L)" for lane `lane` of a value of type
 * t; lanes of 2-D and larger tiles as multi-indices; no lane for scalars. */
static void where_str(Buf *b, const Interp *S, Type t, int64_t lane)
{
    buf_printf(b, " (program (%lld, %lld, %lld)", (long long)S->pid[0], (long long)S->pid[1],
               (long long)S->pid[2]);
    if (t.rank == 1) {
        buf_printf(b, ", lane %lld", (long long)lane);
    } else if (t.rank > 1) {
        int64_t idx[KAD_MAX_RANK];
        for (int k = t.rank - 1; k >= 0; k--) {
            idx[k] = lane % t.shape[k];
            lane /= t.shape[k];
        }
        buf_puts(b, ", lane (");
        for (int k = 0; k < t.rank; k++)
            buf_printf(b, "%s%lld", k ? ", " : "", (long long)idx[k]);
        buf_putc(b, ')');
    }
    buf_putc(b, ')');
}

/* Reports an error at loc and leaves the run.  With lane >= 0 the message
 * ends with the program id and the lane of a value of type t. */
_Noreturn void interp_fail(Interp *S, Loc loc, Type t, int64_t lane, const char *fmt, ...)
{
    Buf b = {.a = S->d->a};
    va_list ap;
    va_start(ap, fmt);
    buf_puts(&b, arena_vprintf(S->d->a, fmt, ap));
    va_end(ap);
    if (lane >= 0)
        where_str(&b, S, t, lane);
    diag_error(S->d, loc, "%s", buf_str(&b));
    longjmp(*S->jb, 2);
}

/* An operation the verifier should have refused. */
_Noreturn void interp_unsupported(Interp *S, const XInst *xi)
{
    Buf b = {.a = S->d->a};
    const Inst *in = xi->in;
    buf_printf(&b, "interpreter: '%s' on ", op_info[in->op].name);
    type_print(&b, in->nargs ? interp_vtype(S, in->args[0]) : interp_vtype(S, in->res[0]));
    buf_puts(&b, " is not supported");
    diag_error(S->d, in->loc, "%s", buf_str(&b));
    longjmp(*S->jb, 2);
}

/* ------------------------------------------------------------------ */
/* Preparation                                                         */
/* ------------------------------------------------------------------ */

static XBlock *prepare_block(Interp *S, const Block *b);

static void prepare_inst(Interp *S, XInst *xi, const Inst *in)
{
    xi->in = in;
    xi->op = in->op;
    xi->rdt = DT_VOID;
    if (in->nres >= 1) {
        Type rt = interp_vtype(S, in->res[0]);
        xi->rdt = (Dtype)rt.dt;
        xi->rk = (uint8_t)interp_rk_of(S, (Dtype)rt.dt);
        if (dtype_is_int((Dtype)rt.dt))
            xi->ifmt = interp_int_fmt((Dtype)rt.dt);
        xi->r = S->slot[in->res[0]];
        xi->n = type_numel(rt);
    }
    if (in->nargs >= 1) {
        Type t0 = interp_vtype(S, in->args[0]);
        xi->cls = (uint8_t)interp_cls_of(t0);
        if (in->nres < 1)
            xi->n = type_numel(t0);
        if (in->nres < 1 && dtype_is_int((Dtype)t0.dt))
            xi->ifmt = interp_int_fmt((Dtype)t0.dt);
        xi->x = S->slot[in->args[0]];
    }
    if (in->nargs >= 2)
        xi->y = S->slot[in->args[1]];
    if (in->nargs >= 3)
        xi->z = S->slot[in->args[2]];
    for (int k = 0; k < in->nregions && k < 2; k++)
        xi->reg[k] = prepare_block(S, in->regions[k]);
}

/* True when the yield ending b assigns one of b's params from another of
 * b's params (a swap or rotation), so the copy needs temporaries. */
static bool yield_needs_tmp(const Block *b, const Inst *y)
{
    for (int j = 0; j < y->nargs; j++)
        for (int k = 0; k < b->nparams; k++)
            if (y->args[j] == b->params[k] && k != j + (b->nparams - y->nargs))
                return true;
    return false;
}

static XBlock *prepare_block(Interp *S, const Block *b)
{
    XBlock *xb = arena_alloc(S->a, sizeof *xb);
    xb->b = b;
    int n = b->insts.n;
    const Inst *last = n ? &b->insts.v[n - 1] : NULL;
    if (last && (last->op == OP_YIELD || last->op == OP_CONDITION)) {
        xb->term = last;
        n--;
    }
    xb->v = arena_alloc(S->a, sizeof *xb->v * (size_t)(n ? n : 1));
    xb->n = n;
    for (int i = 0; i < n; i++)
        prepare_inst(S, &xb->v[i], &b->insts.v[i]);
    if (xb->term && xb->term->op == OP_YIELD && b->nparams && yield_needs_tmp(b, xb->term)) {
        xb->tmp = arena_alloc(S->a, sizeof *xb->tmp * (size_t)b->nparams);
        for (int k = 0; k < b->nparams; k++) {
            Type t = interp_vtype(S, b->params[k]);
            xb->tmp[k] = arena_alloc(S->a, interp_lane_bytes(t) * (size_t)type_numel(t));
        }
    }
    return xb;
}

/* Allocates every value's slot; refuses absurd tiles. */
static bool alloc_slots(Interp *S)
{
    const Func *f = S->f;
    S->slot = arena_alloc(S->a, sizeof *S->slot * (size_t)f->vals.n);
    for (int v = 1; v < f->vals.n; v++) {
        Type t = f->vals.v[v].ty;
        int64_t n = type_numel(t);
        if (n > MAX_TILE_NUMEL) {
            Buf b = {.a = S->d->a};
            type_print(&b, t);
            diag_error(S->d, f->vals.v[v].loc,
                       "interpreter: tile %s has %lld elements, more than the limit of %lld",
                       buf_str(&b), (long long)n, (long long)MAX_TILE_NUMEL);
            return false;
        }
        S->slot[v] = arena_alloc(S->a, interp_lane_bytes(t) * (size_t)n);
    }
    return true;
}

/* Constants and execution                                             */
/* ------------------------------------------------------------------ */

/* Fills the results of instructions whose value is the same in every
 * program: const, arange, num_programs.  Returns true for those. */
static bool fill_invariant(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    switch (xi->op) {
    case OP_CONST:
        if (dtype_is_float(xi->rdt)) {
            double v = interp_round_rk(xi->rk, in->fval);
            LOOP(xi->n) ((double *)xi->r)[i] = v;
        } else if (xi->rdt != DT_PTR) {
            int64_t v = xi->rdt == DT_I1 ? in->ival != 0 : iwrap((uint64_t)in->ival, xi->ifmt);
            LOOP(xi->n) ((int64_t *)xi->r)[i] = v;
        }
        return true;
    case OP_ARANGE:
        LOOP(xi->n) ((int64_t *)xi->r)[i] = iwrap((uint64_t)in->ival + (uint64_t)i, xi->ifmt);
        return true;
    case OP_NUM_PROGRAMS:
        *(int64_t *)xi->r = S->grid[in->ival >= 0 && in->ival < 3 ? in->ival : 0];
        return true;
    default: return false;
    }
}

static void fill_invariants(Interp *S, const XBlock *xb)
{
    for (int i = 0; i < xb->n; i++) {
        const XInst *xi = &xb->v[i];
        if (xi->op == OP_CONST && xi->rdt == DT_PTR)
            interp_unsupported(S, xi);
        fill_invariant(S, xi);
        for (int k = 0; k < 2; k++)
            if (xi->reg[k])
                fill_invariants(S, xi->reg[k]);
    }
}

static void copy_value(Interp *S, ValId dst, ValId src)
{
    Type t = interp_vtype(S, dst);
    interp_copy_lanes(S->slot[dst], S->slot[src], type_numel(t), interp_lane_bytes(t));
}

/* Assigns the yield of xb to the params dst[first..] as one parallel
 * assignment (through temporaries when the yield permutes params). */
static void assign_yield(Interp *S, const XBlock *xb, const ValId *dst, int ndst)
{
    const Inst *y = xb->term;
    ASSERT(y && y->nargs == ndst);
    if (!xb->tmp) {
        for (int j = 0; j < ndst; j++)
            if (dst[j] != y->args[j])
                copy_value(S, dst[j], y->args[j]);
        return;
    }
    int first = xb->b->nparams - ndst; /* tmp is indexed by block param */
    for (int j = 0; j < ndst; j++) {
        Type t = interp_vtype(S, dst[j]);
        interp_copy_lanes(xb->tmp[first + j], S->slot[y->args[j]], type_numel(t), interp_lane_bytes(t));
    }
    for (int j = 0; j < ndst; j++) {
        Type t = interp_vtype(S, dst[j]);
        interp_copy_lanes(S->slot[dst[j]], xb->tmp[first + j], type_numel(t), interp_lane_bytes(t));
    }
}

static void exec_block(Interp *S, const XBlock *xb);

void interp_for_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const XBlock *body = xi->reg[0];
    const Block *b = body->b;
    Type it = interp_vtype(S, in->args[0]);
    bool u64 = it.dt == DT_U64;
    int64_t lb = *(int64_t *)xi->x, ub = *(int64_t *)xi->y, st = *(int64_t *)xi->z;
    if (st == 0)
        interp_fail(S, in->loc, it, -1, "for loop step is zero (program (%lld, %lld, %lld))",
                    (long long)S->pid[0], (long long)S->pid[1], (long long)S->pid[2]);
    int nc = in->nargs - 3;
    ASSERT(b->nparams == nc + 1 && in->nres == nc);
    for (int j = 0; j < nc; j++)
        copy_value(S, b->params[1 + j], in->args[3 + j]);
    int64_t *iv = S->slot[b->params[0]];
    /* Python range semantics, computed exactly in 64 bits: the loop runs
     * while iv < ub (step > 0) or iv > ub (step < 0) and stops before iv
     * would leave the 64-bit range. */
    for (int64_t i = lb;;) {
        bool go = u64 ? (st > 0 ? (uint64_t)i < (uint64_t)ub : (uint64_t)i > (uint64_t)ub)
                      : (st > 0 ? i < ub : i > ub);
        if (!go)
            break;
        *iv = i;
        exec_block(S, body);
        assign_yield(S, body, b->params + 1, nc);
        uint64_t next = (uint64_t)i + (uint64_t)st;
        if (u64 ? (st > 0 ? next < (uint64_t)i : next > (uint64_t)i)
                : (st > 0 ? (int64_t)next < i : (int64_t)next > i))
            break; /* wrapped around: past the end */
        i = (int64_t)next;
    }
    for (int j = 0; j < nc; j++)
        copy_value(S, in->res[j], b->params[1 + j]);
}

/* scan with a combine region: per lane across the axis, the running
 * values (params 0..n-1) and the next element (params n..2n-1) go through
 * the region; the first element along the scan's direction is itself.
 * Every lane is 8 bytes (no pointers: verified). */
void interp_scan_region_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const XBlock *cb = xi->reg[0];
    const Block *b = cb->b;
    const Inst *y = cb->term;
    int n = in->nargs;
    ASSERT(y && y->nargs == n && b->nparams == 2 * n);
    int64_t O, L, I;
    interp_axis_view(interp_vtype(S, in->args[0]), (int)in->ival, &O, &L, &I);
    bool rev = (in->flags & IF_REVERSE) != 0;
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            int64_t prev = 0;
            for (int64_t j = 0; j < L; j++) {
                int64_t k = rev ? L - 1 - j : j;
                int64_t at = o * L * I + k * I + i;
                if (j == 0) {
                    for (int q = 0; q < n; q++)
                        memcpy((char *)S->slot[in->res[q]] + 8 * at, (char *)S->slot[in->args[q]] + 8 * at, 8);
                } else {
                    for (int q = 0; q < n; q++) {
                        memcpy(S->slot[b->params[q]], (char *)S->slot[in->res[q]] + 8 * prev, 8);
                        memcpy(S->slot[b->params[n + q]], (char *)S->slot[in->args[q]] + 8 * at, 8);
                    }
                    exec_block(S, cb);
                    for (int q = 0; q < n; q++)
                        memcpy((char *)S->slot[in->res[q]] + 8 * at, S->slot[y->args[q]], 8);
                }
                prev = at;
            }
        }
}

/* reduce with a combine region: per lane across the axis, a left fold in
 * order (the value so far, params 0..n-1, then the next element, params
 * n..2n-1); the first element is itself.  Triton combines in a tree: the
 * same, up to rounding, for a combine_fn that is associative and
 * commutative (docs/LANGUAGE.md). */
void interp_reduce_region_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const XBlock *cb = xi->reg[0];
    const Block *b = cb->b;
    const Inst *y = cb->term;
    int n = in->nargs;
    ASSERT(y && y->nargs == n && b->nparams == 2 * n);
    int64_t O, L, I;
    interp_axis_view(interp_vtype(S, in->args[0]), (int)in->ival, &O, &L, &I);
    for (int64_t o = 0; o < O; o++)
        for (int64_t i = 0; i < I; i++) {
            char *acc[16], *src[16];
            ASSERT(n <= 16);
            for (int q = 0; q < n; q++) {
                acc[q] = (char *)S->slot[in->res[q]] + 8 * (o * I + i);
                src[q] = (char *)S->slot[in->args[q]] + 8 * (o * L * I + i);
                memcpy(acc[q], src[q], 8);
            }
            for (int64_t k = 1; k < L; k++) {
                for (int q = 0; q < n; q++) {
                    memcpy(S->slot[b->params[q]], acc[q], 8);
                    memcpy(S->slot[b->params[n + q]], src[q] + 8 * k * I, 8);
                }
                exec_block(S, cb);
                for (int q = 0; q < n; q++)
                    memcpy(acc[q], S->slot[y->args[q]], 8);
            }
        }
}

void interp_if_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const XBlock *taken = *(const int64_t *)xi->x ? xi->reg[0] : xi->reg[1];
    exec_block(S, taken);
    const Inst *y = taken->term;
    ASSERT(y && y->nargs == in->nres);
    for (int j = 0; j < in->nres; j++)
        copy_value(S, in->res[j], y->args[j]);
}

void interp_while_op(Interp *S, const XInst *xi)
{
    const Inst *in = xi->in;
    const XBlock *cond = xi->reg[0], *body = xi->reg[1];
    const Block *cb = cond->b, *bb = body->b;
    int nc = in->nargs;
    ASSERT(cb->nparams == nc && bb->nparams == nc && in->nres == nc);
    for (int j = 0; j < nc; j++)
        copy_value(S, cb->params[j], in->args[j]);
    for (int64_t iter = 0;; iter++) {
        exec_block(S, cond);
        ASSERT(cond->term && cond->term->op == OP_CONDITION);
        if (!*(const int64_t *)S->slot[cond->term->args[0]])
            break;
        if (iter >= MAX_WHILE_ITERS)
            interp_fail(S, in->loc, interp_vtype(S, cond->term->args[0]), -1,
                        "while loop ran more than %lld iterations (program (%lld, %lld, %lld))",
                        (long long)MAX_WHILE_ITERS, (long long)S->pid[0], (long long)S->pid[1],
                        (long long)S->pid[2]);
        for (int j = 0; j < nc; j++)
            copy_value(S, bb->params[j], cb->params[j]);
        exec_block(S, body);
        /* The body's yield cannot name the cond region's params (they are
         * not visible there), so a direct copy is a parallel assignment. */
        const Inst *y = body->term;
        ASSERT(y && y->nargs == nc);
        for (int j = 0; j < nc; j++)
            copy_value(S, cb->params[j], y->args[j]);
    }
    for (int j = 0; j < nc; j++)
        copy_value(S, in->res[j], cb->params[j]);
}

void interp_assert_op(Interp *S, const XInst *xi)
{
    const int64_t *c = xi->x;
    const Inst *in = xi->in;
    LOOP(xi->n) {
        if (!c[i]) {
            Type t = interp_vtype(S, in->args[0]);
            if (in->sattr && *in->sattr)
                interp_fail(S, in->loc, t, i, "device_assert failed: %s", in->sattr);
            interp_fail(S, in->loc, t, i, "device_assert failed");
        }
    }
}
static void exec_block(Interp *S, const XBlock *xb)
{
    for (int i = 0; i < xb->n; i++)
        interp_exec_inst(S, &xb->v[i]);
}

/* ------------------------------------------------------------------ */
/* Entry                                                               */
/* ------------------------------------------------------------------ */

/* Binds the runtime arguments to the parameters' slots and buffers. */
static bool bind_args(Interp *S, const InterpArg *args)
{
    const Func *f = S->f;
    S->bufs = arena_alloc(S->a, sizeof *S->bufs * (size_t)(f->nparams ? f->nparams : 1));
    for (int i = 0; i < f->nparams; i++) {
        ValId v = f->params[i];
        const Value *pv = &f->vals.v[v];
        Type t = pv->ty;
        int64_t n = type_numel(t);
        if (t.dt == DT_PTR) {
            if (args[i].nbytes < 0 || (!args[i].data && args[i].nbytes > 0)) {
                diag_error(S->d, pv->loc, "argument %d ('%s'): invalid buffer (%lld bytes at %p)",
                           i, pv->name ? pv->name : "", (long long)args[i].nbytes, args[i].data);
                return false;
            }
            S->bufs[i] = (Buffer){pv->name ? pv->name : arena_printf(S->d->a, "parameter %d", i),
                                  args[i].data, args[i].nbytes};
            PtrLane *p = S->slot[v];
            for (int64_t k = 0; k < n; k++)
                p[k] = (PtrLane){0, i + 1};
        } else if (dtype_is_float((Dtype)t.dt)) {
            double x = interp_round_rk(interp_rk_of(S, (Dtype)t.dt), args[i].f);
            for (int64_t k = 0; k < n; k++)
                ((double *)S->slot[v])[k] = x;
        } else {
            int64_t x = t.dt == DT_I1 ? args[i].i != 0
                                      : iwrap((uint64_t)args[i].i, interp_int_fmt((Dtype)t.dt));
            for (int64_t k = 0; k < n; k++)
                ((int64_t *)S->slot[v])[k] = x;
        }
    }
    return true;
}

static void run_grid(Interp *S, const XBlock *body)
{
    fill_invariants(S, body);
    for (int64_t z = 0; z < S->grid[2]; z++)
        for (int64_t y = 0; y < S->grid[1]; y++)
            for (int64_t x = 0; x < S->grid[0]; x++) {
                S->pid[0] = x, S->pid[1] = y, S->pid[2] = z;
                exec_block(S, body);
            }
}

bool interp_ranges_hold(const Func *f, const InterpArg *args, Diags *d)
{
    for (int i = 0; i < f->ranges.n; i++) { /* the ranges the kernel was specialized for */
        const ParamRange *r = &f->ranges.v[i];
        int64_t v = args[r->param].i;
        if (v < r->lo || v > r->hi) {
            const Value *pv = &f->vals.v[f->params[r->param]];
            diag_error(d, pv->loc, "%s = %lld is outside [%lld, %lld], the range kernel '%s' was specialized for",
                       pv->name ? pv->name : "a parameter", (long long)v, (long long)r->lo, (long long)r->hi,
                       f->name);
            return false;
        }
    }
    return true;
}

bool interp_run(const Func *f, const int64_t grid[3], const InterpArg *args, int nargs, InterpMode mode,
                Diags *d)
{
    if (nargs != f->nparams) {
        diag_error(d, f->loc, "kernel '%s' takes %d runtime arguments, %d given", f->name,
                   f->nparams, nargs);
        return false;
    }
    if (!interp_ranges_hold(f, args, d))
        return false;
    for (int k = 0; k < 3; k++)
        if (grid[k] < 0 || grid[k] > INT32_MAX) {
            diag_error(d, f->loc, "grid dimension %d is %lld: must be in 0..%d", k,
                       (long long)grid[k], INT32_MAX);
            return false;
        }
    Arena *a = arena_new(SCRATCH_LIMIT);
    if (!a) {
        diag_error(d, f->loc, "interpreter: out of memory");
        return false;
    }
    jmp_buf jb;
    Interp S = {.f = f, .d = d, .a = a, .f64 = mode == IM_F64, .jb = &jb};
    for (int k = 0; k < 3; k++)
        S.grid[k] = grid[k];
    arena_set_oom(a, &jb);
    switch (setjmp(jb)) {
    case 0:
        if (alloc_slots(&S) && bind_args(&S, args)) {
            const XBlock *body = prepare_block(&S, f->body);
            run_grid(&S, body);
            arena_free(a);
            return true;
        }
        break;
    case 1: /* the scratch arena is exhausted */
        diag_error(d, f->loc, "interpreter: out of memory (more than %lld MiB of tiles)",
                   (long long)(SCRATCH_LIMIT >> 20));
        break;
    default: /* a runtime error, already reported */
        break;
    }
    arena_free(a);
    return false;
}
