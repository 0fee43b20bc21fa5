/* program.c: building a Program and ordering its host steps.
 *
 * The AD strategies fill a Program's plan data (flags, tapes, covers, the
 * fold's sum kernel, the GEMM form, gathers, the spread); plan_steps then
 * lays the host steps out in the one order the runner (run.c) and the
 * launcher (emit_grad_plan.c) follow:
 *   the GEMM form (when the launch allows it, the whole backward), private
 *   copies of cleared output gradients, the guards, the flags, the tapes and
 *   their budget, the zero-fills, the spread, the main launch (or the folded
 *   one with its sum), the gather kernels, the tapes' overflow checks.
 * Requires: the plan data final.  Keeps: everything else.  */
#include "base/base.h"
#include "ir/ir.h"
#include "plan/plan.h"

Program *plan_new(Arena *a, Func *f)
{
    Program *P = arena_alloc(a, sizeof *P);
    P->a = a;
    P->main = f;
    return P;
}

int plan_nargs(const Program *P)
{
    return (P->fold ? P->fold->nargs : P->main->nparams) - P->flags.n - P->tapes.n - !!P->spread;
}

static void step(Program *P, int kind, int j) { vec_push(P->a, P->steps, ((Step){kind, j})); }

void plan_steps(Program *P)
{
    P->steps.n = 0;
    if (P->gemm)
        step(P, STEP_GEMM, 0);
    for (int j = 0; j < P->cleared.n; j++)
        step(P, STEP_COPY, j);
    if (P->guards.n)
        step(P, STEP_GUARDS, 0);
    for (int j = 0; j < P->flags.n; j++)
        step(P, STEP_FLAG, j);
    for (int j = 0; j < P->tapes.n; j++)
        step(P, STEP_TAPE, j);
    if (P->tapes.n)
        step(P, STEP_TAPE_BUDGET, 0);
    for (int j = 0; j < P->covers.n; j++)
        step(P, STEP_ZERO, j);
    if (P->spread)
        step(P, STEP_SPREAD, 0);
    int main = P->gather ? P->gather->main : 0;
    if (P->fold)
        step(P, STEP_FOLD, 0);
    else if (main == 0)
        step(P, STEP_LAUNCH, 0);
    else if (main == 2)
        step(P, STEP_LAUNCH_UNLESS_GATHERED, 0);
    for (int j = 0; P->gather && j < P->gather->n; j++)
        step(P, STEP_GATHER, j);
    for (int j = 0; j < P->tapes.n; j++)
        if (P->tapes.v[j].bounded)
            step(P, STEP_TAPE_CHECK, j);
}

const char *plan_step_name(int kind)
{
    static const char *const names[STEP_COUNT] = {
        [STEP_GEMM] = "gemm",     [STEP_COPY] = "copy",     [STEP_GUARDS] = "guards",
        [STEP_FLAG] = "flag",     [STEP_TAPE] = "tape",     [STEP_TAPE_BUDGET] = "tape_budget",
        [STEP_ZERO] = "zero",     [STEP_SPREAD] = "spread", [STEP_LAUNCH] = "launch",
        [STEP_LAUNCH_UNLESS_GATHERED] = "launch_unless_gathered",
        [STEP_FOLD] = "fold",     [STEP_GATHER] = "gather", [STEP_TAPE_CHECK] = "tape_check",
    };
    return kind >= 0 && kind < STEP_COUNT ? names[kind] : "?";
}

int plan_find_step(const Program *P, int kind)
{
    for (int i = 0; i < P->steps.n; i++)
        if (P->steps.v[i].kind == kind)
            return i;
    return -1;
}

const Func *plan_step_kernel(const Program *P, const Step *s)
{
    switch (s->kind) {
    case STEP_LAUNCH:
    case STEP_LAUNCH_UNLESS_GATHERED:
    case STEP_FOLD: return P->main;
    case STEP_GATHER: return P->gather->in[s->j].k;
    default: return NULL;
    }
}

int plan_companions(const Program *P, const Func **out)
{
    int n = 0;
#define PUT(k) (out ? (void)(out[n] = (k)) : (void)0, n++)
    if (P->sum)
        PUT(P->sum);
    if (P->gemm) {
        PUT(P->gemm->first);
        for (int j = 0; j < P->gemm->n; j++) {
            PUT(P->gemm->op[j].k);
            if (P->gemm->op[j].single)
                PUT(P->gemm->op[j].single);
        }
    }
    for (int j = 0; P->gather && j < P->gather->n; j++)
        PUT(P->gather->in[j].k);
#undef PUT
    return n;
}

void plan_step_grid_add(const Program *P, const Step *s, int64_t out[3])
{
    for (int k = 0; k < 3; k++)
        out[k] = s->kind == STEP_GATHER ? P->gather->in[s->j].grid_add[k] : 0;
}
