/* text.c: a Program in the IR's textual form.
 *
 * The text of a backward is its main kernel's IR, whose header carries the
 * plan that names the kernel's values: `tape(...)`, `spread(...)` (printed
 * and read by ir.c and irparse.c from an IrPlanText) and `fold(...)`
 * (Program.fold).  The companion kernels are not part of it: the parser
 * builds the fold's sum kernel from its annotation, and a backward's GEMM
 * form, gathers, flags, covers and cleared gradients, which the text does
 * not state, are those of a Program rebuilt by kad grad.
 * Keeps: print(parse(print(P))) == print(P). */
#include "plan/plan.h"

void plan_print(Buf *b, const Program *P)
{
    IrPlanText pt = {.spread = P->spread, .fold = P->fold};
    pt.tapes.v = P->tapes.v;
    pt.tapes.n = pt.tapes.cap = P->tapes.n;
    ir_print_plan(b, P->main, &pt);
}

char *plan_to_string(Arena *a, const Program *P)
{
    Buf b = {.a = a};
    plan_print(&b, P);
    return (char *)buf_str(&b);
}

Program *plan_parse(Arena *a, Diags *d, const char *file, const char *text)
{
    IrPlanText pt;
    Func *f = ir_parse_plan(a, d, file, text, &pt);
    if (!f)
        return NULL;
    Program *P = plan_new(a, f);
    P->tapes.v = pt.tapes.v;
    P->tapes.n = P->tapes.cap = pt.tapes.n;
    P->spread = pt.spread;
    P->fold = pt.fold;
    if (P->fold && P->fold->n) /* the partials' one sum kernel follows from the fold annotation */
        P->sum = fold_sum_kernel(a, arena_printf(a, "%s_sum", f->name), P->fold->in, P->fold->n, pt.fold_loc);
    plan_steps(P);
    return P;
}
