/* emit_stmt.c -- the Triton emitter's statements: one IR instruction, with
 * its regions, as lines of Python (see emit_triton.c for the passes around
 * it).
 *
 * Job: assignments, tl.store and tl.device_assert, `for ... in range()`,
 * `if`/`else` (and `if c: return` where the source returned early),
 * `while` with its condition computed before the loop and again at the end
 * of the body, and the copies that structured control flow needs where
 * coalescing left two variables: parallel moves, ordered so that no copy
 * overwrites a variable a later one still reads, a cycle as one tuple
 * assignment.
 *
 * Requires: an Emitter after the passes 1-5 of emit_passes.c (dead,
 * inlined and constant values are no statements; classes have names).
 * While measuring (emit_decide_inlining), control flow prints only its header
 * and the copies before it.  Guarantees: one statement per line, four
 * spaces per depth, `pass` in an empty body; a construct without a Triton
 * spelling is a located error (em_error).
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "emit/emit_triton.h"
#include "emit/emit.h"

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
void em_print_moves(Emitter *E, Buf *b, int depth, InstInfo *info, int first, const ValId *dsts, int n,
                    Ctx ctx)
{
    Move *mv = arena_alloc(E->a, sizeof(Move) * (size_t)(n + 1));
    int nm = 0;
    for (int k = 0; k < n; k++) {
        ValId dst = dsts[k];
        ValId src = info->eff[first + k];
        if (dst <= 0 || src <= 0)
            continue;
        int dc = E->measuring ? dst : em_find(E, dst);
        if (!E->measuring && E->vi[src].var && em_find(E, src) == dc)
            continue;
        E->reads.n = 0;
        Ex x = em_opnd(E, info, first + k, ctx);
        /* a copy into a loop-carried or yielded variable must be a tensor */
        if (em_may_be_constexpr(E, src) && (!E->vi[src].defi || E->vi[src].defi->in->op != OP_CONST))
            x.s = arena_printf(E->a, "tl.cast(%s, tl.%s)", x.s, dtype_triton_name((Dtype)em_vtype(E, dst).dt));
        Move m = {.dst = dc, .name = E->measuring ? em_var_name(E, dst) : E->vi[dc].name, .src = x.s};
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

/* The statements of a region and the copies of its yield into dsts.
 * Returns whether it printed anything. */
static bool print_region(Emitter *E, Buf *b, InstInfo *cf, int r, int depth, const ValId *dsts, int ndst)
{
    const Block *blk = cf->in->regions[r];
    InstInfo *infos = cf->reg[r];
    size_t before = b->len;
    em_print_block(E, b, blk, infos, depth);
    if (blk->insts.n > 0 && ndst > 0) {
        InstInfo *y = &infos[blk->insts.n - 1];
        if (y->in->op == OP_YIELD)
            em_print_moves(E, b, depth, y, 0, dsts, ndst < y->in->nargs ? ndst : y->in->nargs, CTX_SLOT);
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

static const char *range_args(Emitter *E, InstInfo *info)
{
    Ex lb = em_opnd(E, info, 0, CTX_RANGE), ub = em_opnd(E, info, 1, CTX_RANGE), st = em_opnd(E, info, 2, CTX_RANGE);
    const Inst *c0 = em_const_inst(E, info->eff[0]), *c2 = em_const_inst(E, info->eff[2]);
    bool step1 = c2 && c2->ival == 1 && !strcmp(st.s, "1");
    bool lb0 = c0 && c0->ival == 0 && !strcmp(lb.s, "0");
    if (step1 && lb0)
        return ub.s;
    if (step1)
        return arena_printf(E->a, "%s, %s", lb.s, ub.s);
    return arena_printf(E->a, "%s, %s, %s", lb.s, ub.s, st.s);
}

/* range(...), or tl.range(..., hints) when the loop has scheduling hints. */
static const char *range_call(Emitter *E, InstInfo *info)
{
    const Inst *in = info->in;
    if (in->nints != LH_N)
        return arena_printf(E->a, "range(%s)", range_args(E, info));
    Buf b = {.a = E->a};
    buf_printf(&b, "tl.range(%s", range_args(E, info));
    for (int h = 0; h < 6; h++) {
        int bit = ir_loop_hints[h].bit;
        if (bit && (in->ints[LH_GIVEN] & bit))
            buf_printf(&b, ", %s=%s", ir_loop_hints[h].name, (in->ints[LH_TRUE] & bit) ? "True" : "False");
        else if (!bit && in->ints[h == 0 ? LH_STAGES : LH_UNROLL] >= 0)
            buf_printf(&b, ", %s=%d", ir_loop_hints[h].name, (int)in->ints[h == 0 ? LH_STAGES : LH_UNROLL]);
    }
    buf_putc(&b, ')');
    return buf_str(&b);
}

/* The statements of one instruction (control flow: its header and inits
 * only when measuring). */
void em_print_inst(Emitter *E, Buf *b, InstInfo *info, int depth)
{
    const Inst *in = info->in;
    OpKind op = (OpKind)in->op;
    E->reads.n = 0;
    if (info->dead || (in->nres == 1 && (E->vi[in->res[0]].inl || E->vi[in->res[0]].cnst)))
        return;
    switch (op) {
    case OP_YIELD:
        if (E->opt && E->opt->combine && depth == 1) { /* a combine function's result */
            indent(b, depth);
            buf_puts(b, "return ");
            for (int i = 0; i < in->nargs; i++)
                buf_printf(b, "%s%s", i ? ", " : "", em_opnd(E, info, i, CTX_SLOT).s);
            buf_putc(b, '\n');
        }
        return; /* else printed by the parent */
    case OP_CONDITION:
        return; /* printed by the parent */
    case OP_SCAN: {
        indent(b, depth);
        for (int i = 0; i < in->nres; i++)
            buf_printf(b, "%s%s", i ? ", " : "", em_var_name(E, in->res[i]));
        buf_puts(b, " = tl.associative_scan(");
        if (in->nargs > 1)
            buf_putc(b, '(');
        for (int i = 0; i < in->nargs; i++)
            buf_printf(b, "%s%s", i ? ", " : "", em_opnd(E, info, i, CTX_SLOT).s);
        buf_printf(b, "%s, %lld, %s%s)\n", in->nargs > 1 ? ")" : "", (long long)in->ival,
                   em_combine_name(E, in), in->flags & IF_REVERSE ? ", reverse=True" : "");
        return;
    }
    case OP_REDUCE: {
        indent(b, depth);
        for (int i = 0; i < in->nres; i++)
            buf_printf(b, "%s%s", i ? ", " : "", em_var_name(E, in->res[i]));
        buf_puts(b, " = tl.reduce(");
        if (in->nargs > 1)
            buf_putc(b, '(');
        for (int i = 0; i < in->nargs; i++)
            buf_printf(b, "%s%s", i ? ", " : "", em_opnd(E, info, i, CTX_SLOT).s);
        buf_printf(b, "%s, %lld, %s)\n", in->nargs > 1 ? ")" : "", (long long)in->ival, em_combine_name(E, in));
        return;
    }
    case OP_STORE:
        if (info->desc && E->descs.v[info->desc - 1].flag) { /* a gradient's: TMA when its base is aligned */
            /* and when the last dimension's extent is a multiple of 16 bytes: an H100 wrote the
             * columns past an extent of 21 fp32 (84 bytes) through a TMA store (docs/AD.md) */
            int last = ir_desc_at(in) + ir_desc_rank(in), k = 16 / dtype_bytes(em_vtype(E, in->args[0]).elem);
            const Inst *c = em_const_inst(E, info->eff[last]);
            bool check = k > 1 && !(c && c->ival % k == 0);
            indent(b, depth);
            buf_printf(b, "if %s:\n", emit_tma_flag(E->a, E->f, E->descs.v[info->desc - 1].flag));
            if (check) {
                indent(b, depth + 1);
                buf_printf(b, "if %s %% %d == 0:\n", em_opnd(E, info, last, CTX_SLOT).s, k);
            }
            indent(b, depth + 1 + check);
            buf_printf(b, "%s\n", em_desc_access(E, info));
            if (check) {
                indent(b, depth + 1);
                buf_puts(b, "else:\n");
                indent(b, depth + 2);
                buf_printf(b, "tl.store(%s)\n", em_mem_args(E, info));
            }
            indent(b, depth);
            buf_puts(b, "else:\n");
            indent(b, depth + 1);
            buf_printf(b, "tl.store(%s)\n", em_mem_args(E, info));
            return;
        }
        indent(b, depth);
        if (info->desc)
            buf_printf(b, "%s\n", em_desc_access(E, info));
        else
            buf_printf(b, "tl.store(%s)\n", em_mem_args(E, info));
        return;
    case OP_ASSERT:
        indent(b, depth);
        buf_printf(b, "tl.device_assert(%s, %s)\n", em_opnd(E, info, 0, CTX_SLOT).s,
                   em_py_string(E, in->sattr ? in->sattr : ""));
        return;
    case OP_BARRIER:
        indent(b, depth);
        buf_printf(b, "tl.debug_barrier()\n");
        return;
    case OP_FOR: {
        const Block *body = in->regions[0];
        int nc = in->nargs - 3;
        em_print_moves(E, b, depth, info, 3, body->params + 1, nc, CTX_SLOT);
        indent(b, depth);
        buf_printf(b, "for %s in %s:\n", em_var_name(E, body->params[0]), range_call(E, info));
        if (!E->measuring)
            pass_if_empty(b, print_region(E, b, info, 0, depth + 1, body->params + 1, nc), depth + 1);
        return;
    }
    case OP_IF: {
        indent(b, depth);
        buf_printf(b, "if %s:\n", em_opnd(E, info, 0, CTX_SLOT).s);
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
        em_print_moves(E, b, depth, info, 0, cond->params, in->nargs, CTX_SLOT);
        if (E->measuring)
            return;
        /* the condition region is computed before the loop and again at
         * the end of the body; its terminator's operand is the test */
        InstInfo *ci = &cinfos[cond->insts.n - 1];
        em_print_block(E, b, cond, cinfos, depth);
        indent(b, depth);
        buf_printf(b, "while %s:\n", em_opnd(E, ci, 0, CTX_SLOT).s);
        size_t before = b->len;
        print_region(E, b, info, 1, depth + 1, cond->params, cond->nparams);
        em_print_block(E, b, cond, cinfos, depth + 1);
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
    Ex x = em_gen_inst(E, info);
    indent(b, depth);
    if (E->vi[v].nuses == 0 && op_is_atomic(op))
        buf_printf(b, "%s\n", x.s);
    else
        buf_printf(b, "%s = %s\n", em_var_name(E, v), x.s);
}

void em_print_block(Emitter *E, Buf *b, const Block *blk, InstInfo *infos, int depth)
{
    for (int i = 0; i < blk->insts.n; i++)
        em_print_inst(E, b, &infos[i], depth);
}
