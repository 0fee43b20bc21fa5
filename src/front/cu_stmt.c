/* cu_stmt.c -- statements, control flow and shared memory of CUDA C / HIP
 * kernels (see cu_lower.c for values and expressions).
 *
 * Control flow on a condition that is the same in every thread (an IR
 * scalar) lowers to the IR's structured `if`/`for`/`while`; control flow
 * that depends on the thread becomes masks: a divergent `if` runs both
 * sides under $m & c and $m & !c (assignments to outer variables merge
 * with `where`, cu_set), `return`, `break` and `continue` clear lanes of
 * $m ($brk and $cnt give them back at the loop's end and the iteration's).
 *
 * Loops: a `for` over constants with at most 64 iterations is unrolled; a
 * canonical `for (T i = a; i < b; i += s)` with uniform a, b, s is an IR
 * `for`; one with a per-thread a or b (a grid-stride loop) is an IR `for`
 * over k in [0, max over the lanes of the trip count) with i = a + k*s and
 * the lane mask i < b, which keeps addresses affine in k for kad's access
 * analysis; everything else is an IR `while` on "some lane still runs".
 * Which variables a loop carries, and whether they are per thread, comes
 * from lowering the body until nothing changes (each attempt in a region
 * of its own, its diagnostics kept only for the accepted one).
 *
 * `__shared__` arrays are a value of the block: one tile [len] carried like
 * a variable.  A read at a per-thread index is a `gather`; a write merges
 * each written element with `where` (by lane when the index is the lane's
 * own, else through a [len, lanes] one-hot, with an assert that no two
 * threads write one element: a data race is reported, never
 * differentiated).  A read of an array written since the last
 * `__syncthreads()` at another index than the reader's own is refused.
 */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/cu.h"

static Type tile_of(Lw *L, Dtype dt)
{
    int32_t s = L->lp;
    return type_tile(dt, 1, &s);
}
static bool tiled(Lw *L, ValId v) { return v && ir_type(L->f, v).rank > 0; }

/* ---- syntactic scans ---- */

static bool expr_assigns(Lw *L, const CuExpr *e, const char *name)
{
    if (!e)
        return false;
    if ((e->kind == CE_ASSIGN || (e->kind == CE_UNARY && (strchr(e->op, '+') || strchr(e->op, '-')) &&
                                  strlen(e->op) > 1) ||
         (e->kind == CE_UNARY && !strcmp(e->op, "&"))) &&
        e->l && e->l->kind == CE_IDENT && !strcmp(e->l->name, name))
        return true;
    if (e->kind == CE_CALL)
        for (int u = 0; u < L->nunits; u++)
            for (int k = 0; k < L->units[u]->funcs.n; k++) {
                const CuFunc *fn = L->units[u]->funcs.v[k];
                if (strcmp(fn->name, e->name))
                    continue;
                for (int i = 0; i < e->nargs && i < fn->nparams; i++)
                    if (fn->params[i].type->ref && e->args[i]->kind == CE_IDENT && !strcmp(e->args[i]->name, name))
                        return true; /* a reference parameter */
            }
    if (expr_assigns(L, e->c, name) || expr_assigns(L, e->l, name) || expr_assigns(L, e->r, name))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (expr_assigns(L, e->args[i], name))
            return true;
    return false;
}

bool cu_stmt_assigns(Lw *L, const CuStmt *s, const char *name)
{
    if (!s)
        return false;
    if (expr_assigns(L, s->e, name) || expr_assigns(L, s->step, name) || cu_stmt_assigns(L, s->init, name) ||
        cu_stmt_assigns(L, s->body, name) || cu_stmt_assigns(L, s->els, name))
        return true;
    for (int i = 0; i < s->n; i++)
        if (cu_stmt_assigns(L, s->list[i], name))
            return true;
    for (int i = 0; i < s->ndecls; i++)
        if (expr_assigns(L, s->decls[i].init, name))
            return true;
    return false;
}

/* Whether some expression of s (its statements' expressions, steps and initializers, nested
 * statements included) satisfies pred(e, name); pred looks into e's own operands itself. */
static bool stmt_any(const CuStmt *s, bool (*pred)(const CuExpr *, const char *), const char *name)
{
    if (!s)
        return false;
    if (pred(s->e, name) || pred(s->step, name) || stmt_any(s->init, pred, name) || stmt_any(s->body, pred, name) ||
        stmt_any(s->els, pred, name))
        return true;
    for (int i = 0; i < s->n; i++)
        if (stmt_any(s->list[i], pred, name))
            return true;
    for (int i = 0; i < s->ndecls; i++)
        if (pred(s->decls[i].init, name))
            return true;
    return false;
}

/* Whether e, or an operand of e, satisfies here(x, name). */
static bool expr_any(const CuExpr *e, bool (*here)(const CuExpr *, const char *), const char *name)
{
    if (!e)
        return false;
    if (here(e, name) || expr_any(e->c, here, name) || expr_any(e->l, here, name) || expr_any(e->r, here, name))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (expr_any(e->args[i], here, name))
            return true;
    return false;
}

static bool names(const CuExpr *e, const char *name)
{
    return ((e->kind == CE_IDENT || e->kind == CE_CALL) && e->name && !strcmp(e->name, name)) ||
           (e->kind == CE_LAMBDA && e->fn && cu_stmt_mentions(e->fn->body, name));
}

static bool expr_mentions(const CuExpr *e, const char *name) { return expr_any(e, names, name); }

bool cu_stmt_mentions(const CuStmt *s, const char *name) { return stmt_any(s, expr_mentions, name); }

bool cu_stmt_declares(const CuStmt *s, const char *name)
{
    if (!s)
        return false;
    if (s->kind == CS_DECL)
        for (int i = 0; i < s->ndecls; i++)
            if (s->decls[i].name && !strcmp(s->decls[i].name, name))
                return true;
    if (cu_stmt_declares(s->init, name) || cu_stmt_declares(s->body, name) || cu_stmt_declares(s->els, name))
        return true;
    for (int i = 0; i < s->n; i++)
        if (cu_stmt_declares(s->list[i], name))
            return true;
    return false;
}

/* Whether e itself assigns an element or member of name (name[i] = ..., name.x += ..., ++name[i]). */
static bool assigns_part(const CuExpr *e, const char *name)
{
    bool wr = e->kind == CE_ASSIGN || (e->kind == CE_UNARY && strlen(e->op) > 1 && (strchr(e->op, '+') || strchr(e->op, '-')));
    if (!wr || !e->l || (e->l->kind != CE_INDEX && e->l->kind != CE_MEMBER))
        return false;
    const CuExpr *b = e->l;
    while (b && (b->kind == CE_INDEX || (b->kind == CE_MEMBER && !b->arrow)))
        b = b->l;
    return b && b->kind == CE_IDENT && !strcmp(b->name, name);
}

static bool expr_assigns_part(const CuExpr *e, const char *name) { return expr_any(e, assigns_part, name); }

static bool stmt_assigns_part(const CuStmt *s, const char *name) { return stmt_any(s, expr_assigns_part, name); }

/* A call of the lambda lam (a VK_LAMBDA variable): its body inlined where the enclosing
 * function's names stay visible (captures read at the call), refused where that would not be
 * C++'s meaning: the body assigns a variable of the enclosing function (kad's syntactic scans
 * would not see it), or a variable captured by value changed after the lambda was made. */
CVal cu_call_lambda(Lw *L, Var *lam, const CuExpr *call_e)
{
    const CuFunc *fn = lam->lam->fn;
    int self = (int)(lam - L->env.v);
    for (int i = L->frame; i < self; i++) {
        const Var *ov = &L->env.v[i];
        if (!ov->name || strchr(ov->name, '[') || strchr(ov->name, '.') || ov->name[0] == '$' ||
            ov->kind == VK_TYPE || cu_stmt_declares(fn->body, ov->name))
            continue;
        bool param = false;
        for (int k = 0; k < fn->nparams; k++)
            param |= fn->params[k].name && !strcmp(fn->params[k].name, ov->name);
        if (param)
            continue;
        if (cu_stmt_assigns(L, fn->body, ov->name) || stmt_assigns_part(fn->body, ov->name)) {
            diag_error(L->d, call_e->loc, "the lambda '%s' (line %d) assigns '%s' of the enclosing function: kad "
                                          "inlines lambdas that compute values (and write memory); return the new "
                                          "value instead", lam->name, lam->loc.line, ov->name);
            return cu_bad(L);
        }
    }
    for (int k = 0; k < lam->nsnap; k++) {
        const Var *ov = &L->env.v[lam->snap0 + k];
        if (ov->kind == VK_VAL && ov->val.v != lam->snap[k] && ov->name && cu_stmt_mentions(fn->body, ov->name)) {
            diag_error(L->d, call_e->loc, "the lambda '%s' (line %d) captures '%s' by value, and '%s' changed after "
                                          "the lambda was made: kad reads captured variables at the call; capture "
                                          "by reference ([&]), or make the lambda after the change",
                       lam->name, lam->loc.line, ov->name, ov->name);
            return cu_bad(L);
        }
    }
    return cu_inline_call(L, fn, call_e, true);
}

/* Whether any name of e is assigned in s. */
static bool names_assigned(Lw *L, const CuExpr *e, const CuStmt *s)
{
    if (!e)
        return false;
    if (e->kind == CE_IDENT && cu_stmt_assigns(L, s, e->name))
        return true;
    if (names_assigned(L, e->c, s) || names_assigned(L, e->l, s) || names_assigned(L, e->r, s))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (names_assigned(L, e->args[i], s))
            return true;
    if (e->kind != CE_CALL)
        return false;
    for (int u = 0; u < L->nunits; u++) /* a device function may read memory the body writes */
        for (int k = 0; k < L->units[u]->funcs.n; k++)
            if (!strcmp(L->units[u]->funcs.v[k]->name, e->name))
                return true;
    return !strcmp(e->name, "__ldg") || !strncmp(e->name, "atomic", 6);
}

/* break/continue of this loop (not of nested ones), or a return. */
static bool has_jump(const CuStmt *s, bool nested)
{
    if (!s)
        return false;
    if (s->kind == CS_RETURN)
        return true;
    if ((s->kind == CS_BREAK || s->kind == CS_CONTINUE) && !nested)
        return true;
    bool loop = s->kind == CS_FOR || s->kind == CS_WHILE || s->kind == CS_DO;
    if (has_jump(s->body, nested || loop) || has_jump(s->els, nested))
        return true;
    for (int i = 0; i < s->n; i++)
        if (has_jump(s->list[i], nested))
            return true;
    return false;
}

static bool pure(const CuExpr *e)
{
    if (!e)
        return true;
    if (e->kind == CE_ASSIGN || (e->kind == CE_UNARY && strlen(e->op) > 2))
        return false;
    if (!pure(e->c) || !pure(e->l) || !pure(e->r))
        return false;
    for (int i = 0; i < e->nargs; i++)
        if (!pure(e->args[i]))
            return false;
    return true;
}

/* ---- env snapshots ---- */

static Var *snap(Lw *L, int n)
{
    Var *v = arena_alloc(L->a, sizeof *v * (size_t)(n + 1));
    memcpy(v, L->env.v, sizeof *v * (size_t)n);
    return v;
}
static void restore(Lw *L, const Var *v, int n)
{
    L->env.n = n;
    memcpy(L->env.v, v, sizeof *v * (size_t)n);
}
/* A variable with an IR value: not a cooperative group (a name, no value) nor a deduced return
 * type not known yet. */
static bool valued(const Var *v) { return v->kind == VK_VAL && v->t && v->t->k != TY_CG; }
static bool carries(const Var *v) { return valued(v) || v->kind == VK_SHARED; }

/* v converted to type t (a broadcast of a scalar to lanes) in the current block. */
static ValId to_type(Lw *L, ValId v, Type t, Loc loc)
{
    if (ir_type(L->f, v).rank == t.rank)
        return v;
    return cu_bcast(L, v, loc);
}

static ValId ensure(Lw *L, Var *v, Loc loc)
{
    if (!v->val.v)
        v->val = cu_zero(L, v->t, loc);
    return v->val.v;
}

/* ---- if ---- */

static void uniform_if(Lw *L, ValId c, const CuStmt *s)
{
    Func *f = L->f;
    Block *outer = L->b;
    int n0 = L->env.n;
    for (int i = 0; i < n0; i++) /* uninitialized variables get their value before the branches */
        if (valued(&L->env.v[i]) && !L->env.v[i].val.v && L->env.v[i].t->k != TY_STRUCT &&
            L->env.v[i].t->k != TY_PTR)
            ensure(L, &L->env.v[i], s->loc);
    Var *e0 = snap(L, n0);
    Block *bt = ir_block_new(f), *be = ir_block_new(f);
    L->b = bt;
    cu_stmt(L, s->body);
    Var *et = snap(L, n0);
    restore(L, e0, n0);
    L->b = be;
    if (s->els)
        cu_stmt(L, s->els);
    Var *ee = snap(L, n0);
    restore(L, e0, n0);
    Vec(int) res = {0};
    Vec(Type) tys = {0};
    for (int i = 0; i < n0; i++) {
        if (!carries(&e0[i]) || !e0[i].val.v)
            continue;
        if (et[i].val.v == e0[i].val.v && ee[i].val.v == e0[i].val.v)
            continue;
        Type t = ir_type(f, et[i].val.v);
        if (ir_type(f, ee[i].val.v).rank > t.rank)
            t = ir_type(f, ee[i].val.v);
        vec_push(L->a, res, i);
        vec_push(L->a, tys, t);
    }
    ValId *yt = arena_alloc(L->a, sizeof *yt * (size_t)(res.n + 1));
    ValId *ye = arena_alloc(L->a, sizeof *ye * (size_t)(res.n + 1));
    L->b = bt;
    for (int k = 0; k < res.n; k++)
        yt[k] = to_type(L, et[res.v[k]].val.v, tys.v[k], s->loc);
    ir_emit(f, bt, OP_YIELD, yt, res.n, NULL, 0, s->loc);
    L->b = be;
    for (int k = 0; k < res.n; k++)
        ye[k] = to_type(L, ee[res.v[k]].val.v, tys.v[k], s->loc);
    ir_emit(f, be, OP_YIELD, ye, res.n, NULL, 0, s->loc);
    L->b = outer;
    Inst *in = ir_emit(f, outer, OP_IF, &c, 1, tys.v, res.n, s->loc);
    in->regions = arena_alloc(L->a, sizeof(Block *) * 2);
    in->regions[0] = bt;
    in->regions[1] = be;
    in->nregions = 2;
    for (int k = 0; k < res.n; k++) {
        Var *v = &L->env.v[res.v[k]];
        v->val.v = in->res[k];
        v->val.cst = false;
        f->vals.v[in->res[k]].name = v->name[0] == '$' ? NULL : v->name;
    }
    for (int i = 0; i < n0; i++)
        if (L->env.v[i].kind == VK_SHARED) {
            Var *v = &L->env.v[i];
            v->dirty = et[i].dirty || ee[i].dirty;
            v->dirty_idx = et[i].dirty_idx == ee[i].dirty_idx || !ee[i].dirty ? et[i].dirty_idx
                           : !et[i].dirty ? ee[i].dirty_idx : 0;
        }
}

static void lower_if(Lw *L, const CuStmt *s)
{
    ValId c = cu_truth(L, cu_expr(L, s->e), s->e->loc);
    int n0 = L->env.n;
    if (c == L->tru || c == L->fls) {
        if (c == L->tru)
            cu_stmt(L, s->body);
        else if (s->els)
            cu_stmt(L, s->els);
        L->env.n = n0;
        return;
    }
    if (!tiled(L, c)) {
        uniform_if(L, c, s);
        return;
    }
    ValId m0 = cu_m(L);
    ValId mt = cu_and(L, m0, c, s->loc);
    cu_set_m(L, mt);
    cu_stmt(L, s->body);
    L->env.n = n0;
    ValId mt_exit = cu_m(L);
    ValId me = cu_and(L, m0, cu_not(L, c, s->loc), s->loc);
    cu_set_m(L, me);
    if (s->els)
        cu_stmt(L, s->els);
    L->env.n = n0;
    ValId me_exit = cu_m(L);
    cu_set_m(L, mt_exit == mt && me_exit == me ? m0 : cu_or(L, mt_exit, me_exit, s->loc));
}

/* ---- loops ---- */

enum { LD_FOR, LD_WHILE };
typedef struct LoopDesc {
    int kind;
    const CuStmt *body;
    bool jumps;
    Loc loc;
    /* LD_FOR: IR for iv = lb to ub step st; the C variable var is iv, or
     * with varying: a + iv * s under the lane mask var < b (or <=) */
    ValId lb, ub, st;
    const char *var;
    const CuTy *vty;
    Loc vloc;
    bool varying, le;
    CVal a, s, b;
    /* LD_WHILE */
    const CuExpr *cond, *step;
    bool is_do;
} LoopDesc;

/* The condition of a while attempt, evaluated in the current block. */
static ValId while_cond(Lw *L, const LoopDesc *ld)
{
    if (ld->varying) { /* i = a + k * s < b, k counting the iterations */
        CVal k = cu_lookup(L, "$k")->val;
        CVal i = cu_convert(L, cu_binop(L, "+", ld->a, cu_binop(L, "*", k, ld->s, ld->loc), ld->loc), ld->vty, ld->loc);
        return cu_truth(L, cu_binop(L, ld->le ? "<=" : "<", i, ld->b, ld->loc), ld->loc);
    }
    ValId c = ld->cond ? cu_truth(L, cu_expr(L, ld->cond), ld->cond->loc) : L->tru;
    if (ld->is_do)
        c = cu_or(L, cu_lookup(L, "$first")->val.v, c, ld->loc);
    return c;
}

/* The end of an iteration's body: lanes that continued run again. */
static void end_iteration(Lw *L, const LoopDesc *ld)
{
    Var *cnt = cu_lookup(L, "$cnt");
    if (ld->jumps && cnt)
        cu_set_m(L, cu_or(L, cu_m(L), cnt->val.v, ld->loc));
}

/* Per-lane masks (i1 tiles: $m, $brk, bool variables) are carried through
 * loops as fp32 tiles of 0.0 and 1.0: an exact encoding that a backward's
 * tape records like any float (an int on a tape would make it float64), so
 * that a loop with a per-thread break stays differentiable.  phys_type: the carried type. */
static Type phys_type(Type t) { return t.dt == DT_I1 && t.rank ? type_with_dtype(t, DT_F32) : t; }
static ValId to_phys(Lw *L, ValId v, Type t, Loc loc)
{
    return phys_type(t).dt == t.dt ? v : ir_op1(L->f, L->b, OP_CAST, phys_type(t), v, loc);
}
static ValId from_phys(Lw *L, ValId v, Type t, Loc loc)
{
    if (phys_type(t).dt == t.dt)
        return v;
    ValId z = ir_const_float(L->f, L->b, phys_type(t), 0.0, loc);
    return ir_op2(L->f, L->b, OP_NE, t, v, z, loc);
}

/* One attempt: the loop's regions with the carried variables car[0..n)
 * of types ty as parameters.  Leaves the env at the body's end. */
static void attempt(Lw *L, const LoopDesc *ld, const bool *car, const Type *ty, int n0, Block **regs, ValId *params)
{
    Func *f = L->f;
    Loc loc = ld->loc;
    int nr = ld->kind == LD_WHILE ? 2 : 1;
    for (int r = 0; r < nr; r++) {
        Block *b = ir_block_new(f);
        regs[r] = b;
        if (ld->kind == LD_FOR)
            (void)ir_block_param_add(f, b, ir_type(f, ld->lb), ld->varying ? NULL : ld->var, ld->vloc);
        L->b = b;
        for (int i = 0; i < n0; i++)
            if (car[i]) {
                Var *v = &L->env.v[i];
                ValId p = ir_block_param_add(f, b, phys_type(ty[i]), v->name[0] == '$' ? NULL : v->name, loc);
                v->val.v = from_phys(L, p, ty[i], loc);
                v->val.cst = false;
                params[i] = v->val.v;
            }
        if (ld->kind == LD_WHILE && r == 0) {
            ValId c = while_cond(L, ld);
            ValId cc = cu_any(L, cu_and(L, cu_m(L), c, loc), loc);
            ir_emit(f, b, OP_CONDITION, &cc, 1, NULL, 0, loc);
            continue;
        }
        ValId mcar = cu_m(L), mit = mcar;
        if (ld->kind == LD_WHILE && ld->varying) {
            ValId c = while_cond(L, ld);
            mit = cu_and(L, mcar, c, loc);
            cu_set_m(L, mit);
        } else if (ld->kind == LD_WHILE) {
            ValId c = while_cond(L, ld);
            if (tiled(L, c)) {
                Var *brk = cu_lookup(L, "$brk");
                brk->val.v = cu_or(L, brk->val.v, cu_and(L, mcar, cu_not(L, c, loc), loc), loc);
            }
            if (tiled(L, c)) /* a uniform condition held, or the body would not run */
                mit = cu_and(L, mcar, c, loc);
            cu_set_m(L, mit);
        }
        bool uniform_c = ld->kind == LD_WHILE && mit != mcar && !tiled(L, while_cond(L, ld));
        int nb = L->env.n;
        if (ld->kind == LD_WHILE && ld->varying) {
            CVal k = cu_lookup(L, "$k")->val;
            CVal i = cu_convert(L, cu_binop(L, "+", ld->a, cu_binop(L, "*", k, ld->s, loc), loc), ld->vty, loc);
            Var *v = cu_declare(L, ld->var, VK_VAL, ld->vty, ld->vloc);
            v->val = i;
        }
        if (ld->kind == LD_FOR) {
            ValId iv = b->params[0];
            CVal i = {.t = ld->vty, .v = iv};
            if (ld->varying) {
                CVal k = {.t = ld->vty, .v = iv};
                i = cu_binop(L, "+", ld->a, cu_binop(L, "*", k, ld->s, loc), loc);
                i = cu_convert(L, i, ld->vty, loc);
                if (!f->vals.v[i.v].name)
                    f->vals.v[i.v].name = ld->var;
                ValId in = cu_truth(L, cu_binop(L, ld->le ? "<=" : "<", i, ld->b, loc), loc);
                mit = cu_and(L, mcar, in, loc);
                cu_set_m(L, mit);
            }
            Var *v = cu_declare(L, ld->var, VK_VAL, ld->vty, ld->vloc);
            v->val = i;
        }
        Var *cnt = cu_declare(L, "$cnt", VK_VAL, cu_scalar_ty(L, TY_BOOL, DT_I1), loc);
        cnt->val = (CVal){.t = cnt->t, .v = L->fls};
        cu_stmt(L, ld->body);
        end_iteration(L, ld);
        L->env.n = nb;
        if (ld->kind == LD_WHILE && ld->step) {
            (void)cu_expr(L, ld->step);
        }
        if (ld->is_do)
            cu_lookup(L, "$first")->val.v = L->fls;
        if (uniform_c && cu_m(L) == mit)
            cu_set_m(L, mcar); /* the condition held in every lane that ran */
        if (ld->kind == LD_WHILE && ld->varying) {
            Var *k = cu_lookup(L, "$k");
            k->val = cu_convert(L, cu_binop(L, "+", k->val, cu_const_int(L, ld->vty, 1, loc), loc), ld->vty, loc);
        }
        if (ld->varying) {
            /* lanes past their bound stay in $m (they come back after the loop) */
            ValId mend = cu_m(L);
            cu_set_m(L, mend == mit ? mcar : cu_and(L, mcar, cu_or(L, cu_not(L, mit, loc), mend, loc), loc));
        }
    }
}

static void lower_loop(Lw *L, LoopDesc *ld)
{
    Func *f = L->f;
    Loc loc = ld->loc;
    Block *outer = L->b;
    int nbase = L->env.n;
    Var *brk = cu_declare(L, "$brk", VK_VAL, cu_scalar_ty(L, TY_BOOL, DT_I1), loc);
    brk->val = (CVal){.t = brk->t, .v = L->fls};
    if (ld->is_do) {
        Var *first = cu_declare(L, "$first", VK_VAL, brk->t, loc);
        first->val = (CVal){.t = brk->t, .v = L->tru};
    }
    if (ld->kind == LD_WHILE && ld->varying) {
        Var *k = cu_declare(L, "$k", VK_VAL, ld->vty, loc);
        k->val = cu_const_int(L, ld->vty, 0, loc);
    }
    int n0 = L->env.n;
    for (int i = 0; i < n0; i++)
        if (valued(&L->env.v[i]) && !L->env.v[i].val.v && L->env.v[i].t->k != TY_STRUCT &&
            L->env.v[i].t->k != TY_PTR)
            ensure(L, &L->env.v[i], loc);
    Var *e0 = snap(L, n0);
    bool *car = arena_alloc(L->a, (size_t)n0 + 1);
    Type *ty = arena_alloc(L->a, sizeof *ty * (size_t)(n0 + 1));
    ValId *params = arena_alloc(L->a, sizeof *params * (size_t)(n0 + 1));
    Diags *d = L->d;
    Block *regs[2] = {0};
    Var *end = NULL;
    Diags trial;
    for (int round = 0; round < 16; round++) {
        diag_init(&trial, L->a);
        L->d = &trial;
        restore(L, e0, n0);
        attempt(L, ld, car, ty, n0, regs, params);
        L->d = d;
        end = snap(L, n0);
        bool grew = false;
        for (int i = 0; i < n0; i++) {
            if (!carries(&e0[i]) || !e0[i].val.v || !end[i].val.v)
                continue;
            ValId start = car[i] ? params[i] : e0[i].val.v;
            Type et = ir_type(f, end[i].val.v);
            if (end[i].val.v != start && !car[i]) {
                car[i] = true;
                ty[i] = ir_type(f, e0[i].val.v);
                if (et.rank > ty[i].rank)
                    ty[i] = et;
                grew = true;
            } else if (car[i] && et.rank > ty[i].rank) {
                ty[i] = et;
                grew = true;
            }
            if (e0[i].kind == VK_SHARED && end[i].dirty && !e0[i].dirty) {
                e0[i].dirty = true;
                e0[i].dirty_idx = 0;
                grew = true;
            }
        }
        if (!grew || round == 15)
            break;
    }
    for (int k = 0; k < trial.list.n; k++) {
        if (trial.list.v[k].kind == DG_ERROR)
            diag_error(d, trial.list.v[k].loc, "%s", trial.list.v[k].msg);
        else
            diag_note(d, trial.list.v[k].loc, "%s", trial.list.v[k].msg);
    }
    /* yields at the end of the body region */
    Block *body = regs[ld->kind == LD_WHILE ? 1 : 0];
    L->b = body;
    Vec(ValId) ys = {0};
    Vec(ValId) inits = {0};
    Vec(Type) tys = {0};
    Vec(int) idx = {0};
    for (int i = 0; i < n0; i++)
        if (car[i]) {
            vec_push(L->a, ys, to_phys(L, to_type(L, end[i].val.v, ty[i], loc), ty[i], loc));
            vec_push(L->a, tys, phys_type(ty[i]));
            vec_push(L->a, idx, i);
        }
    ir_emit(f, body, OP_YIELD, ys.v, ys.n, NULL, 0, loc);
    L->b = outer;
    restore(L, e0, n0);
    for (int k = 0; k < idx.n; k++)
        vec_push(L->a, inits, to_phys(L, to_type(L, e0[idx.v[k]].val.v, ty[idx.v[k]], loc), ty[idx.v[k]], loc));
    Inst *in;
    if (ld->kind == LD_FOR) {
        ValId *args = arena_alloc(L->a, sizeof *args * (size_t)(inits.n + 3));
        args[0] = ld->lb, args[1] = ld->ub, args[2] = ld->st;
        for (int k = 0; k < inits.n; k++)
            args[3 + k] = inits.v[k];
        in = ir_emit(f, outer, OP_FOR, args, inits.n + 3, tys.v, tys.n, loc);
    } else {
        in = ir_emit(f, outer, OP_WHILE, inits.v, inits.n, tys.v, tys.n, loc);
    }
    int nr = ld->kind == LD_WHILE ? 2 : 1;
    in->regions = arena_alloc(L->a, sizeof(Block *) * 2);
    for (int r = 0; r < nr; r++)
        in->regions[r] = regs[r];
    in->nregions = nr;
    ValId *res = in->res; /* in moves when the block grows below */
    for (int k = 0; k < idx.n; k++) {
        Var *v = &L->env.v[idx.v[k]];
        f->vals.v[res[k]].name = v->name[0] == '$' ? NULL : v->name;
        v->val.v = from_phys(L, res[k], ty[idx.v[k]], loc);
        v->val.cst = false;
        if (v->kind == VK_SHARED) {
            v->dirty = end[idx.v[k]].dirty;
            v->dirty_idx = 0;
        }
    }
    for (int i = 0; i < n0; i++)
        if (L->env.v[i].kind == VK_SHARED && end[i].dirty)
            L->env.v[i].dirty = true, L->env.v[i].dirty_idx = 0;
    /* lanes that left by break (or a while's condition) run on */
    ValId bv = cu_lookup(L, "$brk")->val.v;
    cu_set_m(L, cu_or(L, cu_m(L), bv, loc));
    L->env.n = nbase;
}

/* A for loop's shape: for (T i = a; i < b; i += s) with i not assigned in
 * the body and b, s not changed by it. */
typedef struct Canon {
    const CuDecl *dc;
    const CuTy *t;
    const char *cmp; /* "<", "<=", ">", ">=", "!=" */
    const CuExpr *bound, *step;
    bool neg;        /* i -= s / i-- */
    bool outer;      /* for (; i < b; i += s) over a variable declared before: it gets its exit value */
} Canon;

/* for (; i < b; i += s) (or <=, ++i) with i an int variable of the enclosing code and no jump out
 * of the body: the canonical loop from i's value; a declarator `i = i` made for it, or NULL. */
static const CuDecl *outer_var_loop(Lw *L, const CuStmt *s, const CuTy **t)
{
    const CuExpr *e = s->e;
    if (s->init || !e || !s->step || e->kind != CE_BINARY || e->l->kind != CE_IDENT ||
        (strcmp(e->op, "<") && strcmp(e->op, "<=")) || has_jump(s->body, false))
        return NULL;
    Var *v = cu_lookup(L, e->l->name);
    if (!v || v->kind != VK_VAL || !v->t || v->t->k != TY_INT || !v->val.v)
        return NULL;
    const CuExpr *st = s->step;
    bool up = (st->kind == CE_UNARY && strstr(st->op, "++")) || (st->kind == CE_ASSIGN && !strcmp(st->op, "+="));
    if (!up)
        return NULL;
    CuExpr *self = arena_alloc(L->a, sizeof *self);
    *self = (CuExpr){.kind = CE_IDENT, .loc = e->l->loc, .name = e->l->name};
    CuDecl *dc = arena_alloc(L->a, sizeof *dc);
    *dc = (CuDecl){.name = e->l->name, .init = self, .loc = e->l->loc};
    *t = v->t;
    return dc;
}

static bool canonical(Lw *L, const CuStmt *s, Canon *c)
{
    const CuTy *ot = NULL;
    const CuDecl *od = outer_var_loop(L, s, &ot);
    bool outer = od != NULL;
    if (!outer && (!s->init || s->init->kind != CS_DECL || s->init->ndecls != 1 || !s->init->decls[0].init ||
                   s->init->decls[0].ndims || !s->e || !s->step))
        return false;
    const CuDecl *dc = outer ? od : &s->init->decls[0];
    const CuTy *t = outer ? ot : cu_resolve_type(L, s->init->type);
    if (!t || t->k != TY_INT)
        return false;
    const CuExpr *e = s->e;
    if (e->kind != CE_BINARY || e->l->kind != CE_IDENT || strcmp(e->l->name, dc->name))
        return false;
    if (strcmp(e->op, "<") && strcmp(e->op, "<=") && strcmp(e->op, ">") && strcmp(e->op, ">=") && strcmp(e->op, "!="))
        return false;
    const CuExpr *st = s->step, *sv = NULL;
    bool neg = false;
    if (st->kind == CE_UNARY && st->l->kind == CE_IDENT && !strcmp(st->l->name, dc->name) && strlen(st->op) > 2) {
        neg = strchr(st->op, '-') != NULL;
    } else if (st->kind == CE_ASSIGN && st->l->kind == CE_IDENT && !strcmp(st->l->name, dc->name) &&
               (!strcmp(st->op, "+=") || !strcmp(st->op, "-="))) {
        sv = st->r;
        neg = st->op[0] == '-';
    } else
        return false;
    if (cu_stmt_assigns(L, s->body, dc->name) || names_assigned(L, e->r, s->body) || (sv && names_assigned(L, sv, s->body)))
        return false;
    *c = (Canon){dc, t, e->op, e->r, sv, neg, outer};
    return true;
}

/* After a canonical loop over an outer variable (Canon.outer, counting up from a to b, b + 1 for
 * `<=`, by st > 0): the variable's value at the loop's exit, a + max(cdiv(b - a, st), 0) * st, as C
 * leaves it (no jump leaves the body early). */
static void outer_exit(Lw *L, const Canon *c, CVal a, CVal b, CVal st, bool le, Loc loc)
{
    if (!c->outer)
        return;
    CVal one = cu_const_int(L, c->t, 1, loc), zero = cu_const_int(L, c->t, 0, loc);
    CVal bb = le ? cu_binop(L, "+", b, one, loc) : b;
    CVal n = cu_binop(L, "/", cu_binop(L, "-", cu_binop(L, "+", cu_binop(L, "-", bb, a, loc), st, loc), one, loc), st, loc);
    CVal run = cu_binop(L, "<", a, bb, loc);
    n = (CVal){.t = n.t, .v = cu_where(L, cu_truth(L, run, loc), cu_convert(L, n, c->t, loc).v, zero.v, loc)};
    CVal x = cu_convert(L, cu_binop(L, "+", a, cu_binop(L, "*", n, st, loc), loc), c->t, loc);
    cu_assign(L, &(CuExpr){.kind = CE_IDENT, .loc = loc, .name = c->dc->name}, x, loc);
}

/* Whether e's value is at least 0 in every lane and depends on the lane:
 * threadIdx (unsigned), a variable holding the lane index, their casts and
 * products with nonnegative constants. */
static bool nonneg_lane(Lw *L, const CuExpr *e)
{
    if (e->kind == CE_MEMBER && !e->arrow && e->l->kind == CE_IDENT && !strcmp(e->l->name, "threadIdx") &&
        !cu_lookup(L, "threadIdx"))
        return true;
    if (e->kind == CE_IDENT && !strncmp(e->name, "hipThreadIdx_", 13) && !cu_lookup(L, e->name))
        return true;
    if (e->kind == CE_IDENT) {
        Var *v = cu_lookup(L, e->name);
        return v && v->kind == VK_VAL && v->val.v && cu_is_lane(L, v->val.v);
    }
    if (e->kind == CE_CAST && e->l && !e->args)
        return nonneg_lane(L, e->l);
    if (e->kind == CE_BINARY && !strcmp(e->op, "*")) {
        int64_t k;
        return (nonneg_lane(L, e->l) && cu_const_eval(L, e->r, &k) && k >= 0) ||
               (nonneg_lane(L, e->r) && cu_const_eval(L, e->l, &k) && k >= 0);
    }
    return false;
}

/* A loop start a = u + t with u the same in every thread and t >= 0 in
 * every lane (nonneg_lane): u, converted to type t, so that the loop's
 * trip count bounds every lane's by a scalar expression. */
static bool split_start(Lw *L, const CuExpr *e, const CuTy *t, CVal *u)
{
    if (nonneg_lane(L, e)) {
        *u = cu_const_int(L, t, 0, e->loc);
        return true;
    }
    if (e->kind == CE_CAST && e->l && !e->args) {
        const CuTy *ct = cu_resolve_type(L, e->type);
        return ct && ct->k == TY_INT && dtype_bits(ct->dt) >= 32 && split_start(L, e->l, t, u);
    }
    if (e->kind == CE_BINARY && !strcmp(e->op, "+")) {
        const CuExpr *lane = nonneg_lane(L, e->r) ? e->r : nonneg_lane(L, e->l) ? e->l : NULL;
        if (!lane)
            return false;
        CVal x = cu_expr(L, lane == e->r ? e->l : e->r);
        if (!x.v || tiled(L, x.v) || x.t->k != TY_INT)
            return false;
        *u = cu_convert(L, x, t, e->loc);
        return true;
    }
    return false;
}

/* for (T i = CONST; cond; step) whose condition and step fold to constants
 * for at most 64 iterations (a tree reduction's `s >>= 1` too): unrolled,
 * the variable a constant in each copy.  False when the loop is not one. */
static bool try_unroll(Lw *L, const CuStmt *s)
{
    if (!s->init || s->init->kind != CS_DECL || s->init->ndecls != 1 || s->init->decls[0].ndims ||
        !s->init->decls[0].init || !s->e || !s->step)
        return false;
    const CuDecl *dc = &s->init->decls[0];
    Loc loc = s->loc;
    const CuTy *t = cu_resolve_type(L, s->init->type);
    int64_t v;
    if (!t || t->k != TY_INT || cu_stmt_assigns(L, s->body, dc->name) || !cu_const_eval(L, dc->init, &v))
        return false;
    int64_t vals[64];
    int n = 0, nb = L->env.n;
    bool ok = true;
    Diags quiet, *d = L->d;
    diag_init(&quiet, L->a);
    L->d = &quiet;
    Var *iv = cu_declare(L, dc->name, VK_VAL, t, dc->loc);
    iv->val = cu_const_int(L, t, v, loc);
    for (;;) {
        int64_t c;
        L->env.v[nb].val = cu_const_int(L, t, v, loc);
        if (!cu_const_eval(L, s->e, &c)) {
            ok = false;
            break;
        }
        if (!c)
            break;
        if (n == 64) {
            ok = false;
            break;
        }
        vals[n++] = v;
        (void)cu_expr(L, s->step);
        if (quiet.nerrors || !L->env.v[nb].val.cst) {
            ok = false;
            break;
        }
        v = L->env.v[nb].val.ci;
    }
    L->d = d;
    L->env.n = nb;
    if (!ok)
        return false;
    bool jumps = has_jump(s->body, false);
    const CuTy *bt = cu_scalar_ty(L, TY_BOOL, DT_I1);
    Var *brk = cu_declare(L, "$brk", VK_VAL, bt, loc);
    brk->val = (CVal){.t = bt, .v = L->fls};
    int nb2 = L->env.n;
    for (int k = 0; k < n; k++) {
        Var *x = cu_declare(L, dc->name, VK_VAL, t, dc->loc);
        x->val = cu_const_int(L, t, vals[k], loc);
        Var *cnt = cu_declare(L, "$cnt", VK_VAL, bt, loc);
        cnt->val = (CVal){.t = bt, .v = L->fls};
        cu_stmt(L, s->body);
        if (jumps)
            cu_set_m(L, cu_or(L, cu_m(L), cu_lookup(L, "$cnt")->val.v, loc));
        L->env.n = nb2;
    }
    cu_set_m(L, cu_or(L, cu_m(L), cu_lookup(L, "$brk")->val.v, loc));
    L->env.n = nb;
    return true;
}

static void lower_for(Lw *L, const CuStmt *s)
{
    int nbase = L->env.n;
    Canon c;
    Loc loc = s->loc;
    if (try_unroll(L, s))
        return;
    if (canonical(L, s, &c)) {
        CVal a = cu_convert(L, cu_expr(L, c.dc->init), c.t, c.dc->loc);
        CVal b = cu_expr(L, c.bound);
        CVal st = c.step ? cu_expr(L, c.step) : cu_const_int(L, c.t, 1, loc);
        if (c.step && st.t)
            st = cu_convert(L, st, c.t, loc);
        if (c.neg)
            st = cu_binop(L, "-", cu_const_int(L, c.t, 0, loc), st, loc), st = cu_convert(L, st, c.t, loc);
        const CuTy *ct = b.t && b.t->k == TY_INT ? b.t : c.t;
        (void)ct;
        bool up = !strcmp(c.cmp, "<") || !strcmp(c.cmp, "<="), le = !strcmp(c.cmp, "<=");
        bool st_ok = st.v && !tiled(L, st.v) && (st.cst ? (up ? st.ci > 0 : st.ci < 0) : up && !c.neg);
        if (b.v && b.t->k != TY_STRUCT && b.t->k != TY_PTR && st_ok && (up || !strcmp(c.cmp, ">") || !strcmp(c.cmp, ">="))) {
            b = cu_convert(L, b, c.t, loc);
            LoopDesc ld = {.kind = LD_FOR, .body = s->body, .jumps = has_jump(s->body, false), .loc = loc,
                           .var = c.dc->name, .vty = c.t, .vloc = c.dc->loc};
            if (!tiled(L, a.v) && !tiled(L, b.v)) {
                ld.lb = a.v;
                ld.st = st.v;
                ld.ub = b.v;
                if (le)
                    ld.ub = cu_binop(L, "+", b, cu_const_int(L, c.t, 1, loc), loc).v;
                else if (!strcmp(c.cmp, ">="))
                    ld.ub = cu_binop(L, "-", b, cu_const_int(L, c.t, 1, loc), loc).v;
                lower_loop(L, &ld);
                L->env.n = nbase;
                outer_exit(L, &c, a, b, st, le, loc);
                return;
            }
            if (up) {
                /* per-thread start or bound: k over the largest trip count of the block's lanes */
                CVal bb = le ? cu_binop(L, "+", b, cu_const_int(L, c.t, 1, loc), loc) : b;
                CVal one = cu_const_int(L, c.t, 1, loc);
                CVal u;
                bool scalar_bound = !tiled(L, bb.v) && dtype_is_signed(c.t->dt) && split_start(L, c.dc->init, c.t, &u);
                CVal from = scalar_bound ? u : a;
                CVal n = cu_binop(L, "/", cu_binop(L, "-", cu_binop(L, "+", cu_binop(L, "-", bb, from, loc), st, loc), one, loc),
                                  st, loc);
                n = cu_convert(L, n, c.t, loc);
                if (!scalar_bound) {
                    /* no scalar bound of the lanes' trip counts: a while loop counting k (its tape's
                       capacity is AdSpec.while_cap), the lane mask recomputed from k */
                    ld.kind = LD_WHILE;
                    ld.varying = true;
                    ld.le = le;
                    ld.a = a;
                    ld.s = st;
                    ld.b = b;
                    lower_loop(L, &ld);
                    L->env.n = nbase;
                    outer_exit(L, &c, a, b, st, le, loc);
                    return;
                }
                ValId t;
                if (scalar_bound) {
                    /* the lanes start at u or later: max((b - u + s - 1) / s, 0) iterations bound them all */
                    /* (n is a tile when the block's padding lanes are masked: their divisor kept nonzero) */
                    t = cu_op2(L, OP_MAXIMUM, n.v, cu_cint(L, c.t->dt, 0, loc), loc);
                } else {
                    ValId run = cu_and(L, cu_m(L), cu_truth(L, cu_binop(L, "<", a, bb, loc), loc), loc);
                    t = cu_where(L, run, n.v, cu_cint(L, c.t->dt, 0, loc), loc);
                }
                if (tiled(L, t)) {
                    Inst *mx = ir_emit(L->f, L->b, OP_MAX, &t, 1, (Type[]){type_scalar(c.t->dt)}, 1, loc);
                    mx->ival = 0;
                    t = mx->res[0];
                }
                ld.lb = cu_cint(L, c.t->dt, 0, loc);
                ld.ub = t;
                ld.st = cu_cint(L, c.t->dt, 1, loc);
                ld.varying = true;
                ld.le = le;
                ld.a = a;
                ld.s = st;
                ld.b = b;
                lower_loop(L, &ld);
                L->env.n = nbase;
                outer_exit(L, &c, a, b, st, le, loc);
                return;
            }
        }
    }
    /* the general form: init; while (cond) { body; step } */
    if (!pure(s->e)) {
        diag_error(L->d, s->e->loc, "a loop condition with side effects is not supported: move them into the body");
        return;
    }
    if (s->init)
        cu_stmt(L, s->init);
    LoopDesc ld = {.kind = LD_WHILE, .body = s->body, .jumps = has_jump(s->body, false), .loc = loc, .cond = s->e,
                   .step = s->step};
    lower_loop(L, &ld);
    L->env.n = nbase;
}

/* ---- shared memory ---- */

static ValId arange_n(Lw *L, int n, Loc loc)
{
    int32_t s = n;
    Inst *in = ir_emit(L->f, L->b, OP_ARANGE, NULL, 0, (Type[]){type_tile(DT_I32, 1, &s)}, 1, loc);
    in->ival = 0;
    return in->res[0];
}

static ValId expand(Lw *L, ValId x, int axis, Type t, Loc loc)
{
    Inst *in = ir_emit(L->f, L->b, OP_EXPAND_DIMS, &x, 1, &t, 1, loc);
    in->ival = axis;
    return in->res[0];
}

static bool same_index(Lw *L, ValId a, ValId b) { return a == b || (cu_is_lane(L, a) && cu_is_lane(L, b)); }

CVal cu_shared_read(Lw *L, Var *v, CVal idx, Loc loc)
{
    CVal r = {.t = v->t};
    if (!idx.v)
        return r;
    /* without a barrier a thread sees only its own writes: the same per-thread index */
    if (v->dirty && !(v->dirty_idx && tiled(L, idx.v) && same_index(L, idx.v, v->dirty_idx))) {
        diag_error(L->d, loc,
                   "this read of __shared__ '%s' needs a __syncthreads() after the writes to it: other threads' "
                   "writes are not visible yet (a read of shared memory without the barrier it needs)", v->name);
        return r;
    }
    idx = cu_convert(L, idx, cu_scalar_ty(L, TY_INT, DT_I32), loc);
    if (idx.cst && (idx.ci < 0 || idx.ci >= v->len)) {
        diag_error(L->d, loc, "index %lld is out of bounds of '%s' (%d elements)", (long long)idx.ci, v->name, v->len);
        return r;
    }
    Func *f = L->f;
    if (!tiled(L, idx.v)) {
        ValId ar = arange_n(L, v->len, loc);
        int32_t s = v->len;
        ValId hit = ir_op2(f, L->b, OP_EQ, type_tile(DT_I1, 1, &s), ar,
                           ir_op1(f, L->b, OP_BROADCAST, type_tile(DT_I32, 1, &s), idx.v, loc), loc);
        Type vt = ir_type(f, v->val.v);
        ValId z = ir_op1(f, L->b, OP_BROADCAST, vt,
                         dtype_is_float(v->t->dt) ? ir_const_float(f, L->b, type_scalar(v->t->dt), 0.0, loc)
                                                  : cu_cint(L, v->t->dt, 0, loc), loc);
        ValId sel = ir_op3(f, L->b, OP_WHERE, vt, hit, v->val.v, z, loc);
        Inst *sum = ir_emit(f, L->b, OP_SUM, &sel, 1, (Type[]){type_scalar(v->t->dt)}, 1, loc);
        sum->ival = 0;
        r.v = sum->res[0];
        return r;
    }
    if (cu_is_lane(L, idx.v) && v->len == L->lp) {
        r.v = v->val.v; /* each thread reads its own element */
        return r;
    }
    ValId j = cu_where(L, cu_m(L), idx.v, cu_cint(L, DT_I32, 0, loc), loc);
    Inst *g = ir_emit(f, L->b, OP_GATHER, (ValId[]){v->val.v, j}, 2, (Type[]){tile_of(L, v->t->dt)}, 1, loc);
    g->ival = 0;
    r.v = g->res[0];
    return r;
}

void cu_shared_write(Lw *L, Var *v, CVal idx, CVal x, Loc loc)
{
    x = cu_convert(L, x, v->t, loc);
    if (!idx.v || !x.v)
        return;
    idx = cu_convert(L, idx, cu_scalar_ty(L, TY_INT, DT_I32), loc);
    if (idx.cst && (idx.ci < 0 || idx.ci >= v->len)) {
        diag_error(L->d, loc, "index %lld is out of bounds of '%s' (%d elements)", (long long)idx.ci, v->name, v->len);
        return;
    }
    Func *f = L->f;
    Type vt = ir_type(f, v->val.v);
    int32_t n = v->len;
    ValId m = cu_m(L);
    const char *race = arena_printf(L->a, "%s:%d:%d: data race: two threads of a block write one element of __shared__ '%s'",
                                    loc.file, loc.line, loc.col, v->name);
    ValId s_new;
    if (!tiled(L, idx.v)) {
        ValId ar = arange_n(L, v->len, loc);
        ValId hit = ir_op2(f, L->b, OP_EQ, type_tile(DT_I1, 1, &n), ar,
                           ir_op1(f, L->b, OP_BROADCAST, type_tile(DT_I32, 1, &n), idx.v, loc), loc);
        ValId val = x.v;
        if (tiled(L, x.v)) {
            /* one thread's value: exactly one thread may write */
            ValId mt = cu_bcast(L, m, loc);
            int32_t s = L->lp;
            ValId ci = ir_op1(f, L->b, OP_CAST, type_tile(DT_I32, 1, &s), mt, loc);
            Inst *cs = ir_emit(f, L->b, OP_SUM, &ci, 1, (Type[]){type_scalar(DT_I32)}, 1, loc);
            cs->ival = 0;
            ValId nw = cs->res[0], one = cu_cint(L, DT_I32, 1, loc);
            ValId ok = ir_op2(f, L->b, OP_LE, type_scalar(DT_I1), nw, one, loc);
            Inst *as = ir_emit(f, L->b, OP_ASSERT, &ok, 1, NULL, 0, loc);
            as->sattr = race;
            ValId z = dtype_is_float(v->t->dt) ? ir_const_float(f, L->b, type_scalar(v->t->dt), 0.0, loc)
                                               : cu_cint(L, v->t->dt, 0, loc);
            ValId sel = cu_where(L, mt, x.v, cu_bcast(L, z, loc), loc);
            Inst *sm = ir_emit(f, L->b, OP_SUM, &sel, 1, (Type[]){type_scalar(v->t->dt)}, 1, loc);
            sm->ival = 0;
            val = sm->res[0];
        }
        ValId any = cu_any(L, m, loc);
        if (any != L->tru)
            hit = ir_op2(f, L->b, OP_AND, type_tile(DT_I1, 1, &n), hit,
                         ir_op1(f, L->b, OP_BROADCAST, type_tile(DT_I1, 1, &n), any, loc), loc);
        s_new = ir_op3(f, L->b, OP_WHERE, vt, hit, ir_op1(f, L->b, OP_BROADCAST, vt, val, loc), v->val.v, loc);
    } else if (cu_is_lane(L, idx.v) && v->len == L->lp) {
        s_new = cu_where(L, m, cu_bcast(L, x.v, loc), v->val.v, loc);
    } else {
        /* [lanes, len]: element e takes the value of the thread writing it (the lanes first, as every
           per-thread tile: thread i's row i says which element it writes) */
        int32_t sh[2] = {L->lp, n};
        Type t2 = type_tile(DT_I32, 2, sh), b2 = type_tile(DT_I1, 2, sh);
        Block *b = L->b;
        ValId ar = arange_n(L, v->len, loc);
        ValId e1 = expand(L, ar, 0, type_tile(DT_I32, 2, (int32_t[]){1, n}), loc);
        ValId j = cu_bcast(L, cu_where(L, m, idx.v, cu_cint(L, DT_I32, -1, loc), loc), loc);
        ValId j1 = expand(L, j, 1, type_tile(DT_I32, 2, (int32_t[]){L->lp, 1}), loc);
        ValId eb = ir_op1(f, b, OP_BROADCAST, t2, e1, loc), jb = ir_op1(f, b, OP_BROADCAST, t2, j1, loc);
        ValId hit = ir_op2(f, b, OP_EQ, b2, jb, eb, loc);
        Type xt2 = type_tile(v->t->dt, 2, sh);
        ValId xv = cu_bcast(L, x.v, loc);
        ValId x1 = expand(L, xv, 1, type_tile(v->t->dt, 2, (int32_t[]){L->lp, 1}), loc);
        ValId z = dtype_is_float(v->t->dt) ? ir_const_float(f, b, type_scalar(v->t->dt), 0.0, loc)
                                           : cu_cint(L, v->t->dt, 0, loc);
        ValId xb = ir_op1(f, b, OP_BROADCAST, xt2, x1, loc), zb = ir_op1(f, b, OP_BROADCAST, xt2, z, loc);
        ValId sel = ir_op3(f, b, OP_WHERE, xt2, hit, xb, zb, loc);
        Inst *sm = ir_emit(f, b, OP_SUM, &sel, 1, &vt, 1, loc);
        sm->ival = 0;
        ValId vals = sm->res[0];
        ValId hc = ir_op1(f, b, OP_CAST, t2, hit, loc);
        Inst *cn = ir_emit(f, b, OP_SUM, &hc, 1, (Type[]){type_tile(DT_I32, 1, &n)}, 1, loc);
        cn->ival = 0;
        ValId cnt = cn->res[0];
        if (!cu_is_lane(L, idx.v)) {
            ValId ok = ir_op2(f, b, OP_LE, type_tile(DT_I1, 1, &n), cnt,
                              ir_op1(f, b, OP_BROADCAST, type_tile(DT_I32, 1, &n), cu_cint(L, DT_I32, 1, loc), loc), loc);
            Inst *as = ir_emit(f, b, OP_ASSERT, &ok, 1, NULL, 0, loc);
            as->sattr = race;
        }
        ValId any = ir_op2(f, b, OP_GT, type_tile(DT_I1, 1, &n), cnt,
                           ir_op1(f, b, OP_BROADCAST, type_tile(DT_I32, 1, &n), cu_cint(L, DT_I32, 0, loc), loc), loc);
        s_new = ir_op3(f, b, OP_WHERE, vt, any, vals, v->val.v, loc);
    }
    v->val.v = s_new;
    v->dirty_idx = !v->dirty ? idx.v : same_index(L, idx.v, v->dirty_idx) ? v->dirty_idx : 0;
    v->dirty = true;
}

void cu_syncthreads(Lw *L, Loc loc)
{
    ValId m = cu_m(L);
    if (tiled(L, m) && m != L->active) {
        diag_error(L->d, loc,
                   "__syncthreads() in code that only some threads of the block run (it depends on threadIdx, or "
                   "follows a per-thread return): every thread must reach it");
        return;
    }
    for (int i = 0; i < L->env.n; i++)
        if (L->env.v[i].kind == VK_SHARED || L->env.v[i].kind == VK_CUB)
            L->env.v[i].dirty = false, L->env.v[i].dirty_idx = 0;
}

/* ---- declarations ---- */

void cu_declare_stmt(Lw *L, const CuStmt *s)
{
    const CuTy *t0 = cu_resolve_type(L, s->type);
    for (int k = 0; k < s->ndecls; k++) {
        const CuDecl *dc = &s->decls[k];
        const CuTy *t = t0;
        if (s->is_static && !s->shared) {
            diag_error(L->d, dc->loc, "static local variables are not supported in kernels");
            continue;
        }
        if (t && t->k == TY_CUB) { /* __shared__ BlockReduce::TempStorage temp;: no memory of kad's */
            if (t->cub != CUB_TEMP || dc->ndims || dc->init)
                diag_error(L->d, dc->loc, "'%s': a cub::BlockReduce is made in an expression, "
                                          "BlockReduce(temp).Sum(v), from a __shared__ TempStorage", dc->name);
            else
                cu_declare(L, dc->name, VK_CUB, t, dc->loc);
            continue;
        }
        if (s->shared) {
            if (!t || (t->k != TY_INT && t->k != TY_FLOAT && t->k != TY_BOOL)) {
                diag_error(L->d, dc->loc, "__shared__ '%s': only arrays of numbers are supported", dc->name);
                continue;
            }
            int dims[2] = {1, 1}, nd = dc->ndims;
            int64_t len = 1;
            if (dc->unsized) {
                if (L->ext && L->ext != dc) {
                    diag_error(L->d, dc->loc,
                               "a second extern __shared__ array ('%s', the first '%s' at line %d): CUDA starts every "
                               "extern __shared__ array at the same address, so the two alias; declare one array and "
                               "index it at offsets", dc->name, L->ext->name, L->ext->loc.line);
                    continue;
                }
                L->ext = dc;
                const char *given = cu_targ(L, dc->name);
                if (!given || atoi(given) <= 0) {
                    diag_error(L->d, dc->loc,
                               "extern __shared__ '%s' is sized at launch: give its number of elements with --sig %s=N",
                               dc->name, dc->name);
                    continue;
                }
                len = atoi(given);
                nd = 1;
                dims[0] = (int)len;
            } else {
                if (nd > 2) {
                    /* (nd == 0: a scalar, `__shared__ float s_rstd;`, one element) */
                    diag_error(L->d, dc->loc, "__shared__ '%s': a scalar, or one- or two-dimensional arrays only",
                               dc->name);
                    continue;
                }
                for (int i = 0; i < nd; i++) {
                    int64_t x;
                    if (!cu_const_eval(L, dc->dims[i], &x) || x <= 0 || x > 65536) {
                        diag_error(L->d, dc->dims[i]->loc, "an array size must be a positive constant");
                        x = 1;
                    }
                    dims[i] = (int)x;
                    len *= x;
                }
            }
            if (len > 65536) {
                diag_error(L->d, dc->loc, "__shared__ '%s' of %lld elements: at most 65536", dc->name, (long long)len);
                continue;
            }
            Var *v = cu_declare(L, dc->name, VK_SHARED, t, dc->loc);
            v->len = (int)len;
            v->ndims = nd;
            v->dims[0] = dims[0];
            v->dims[1] = dims[1];
            int32_t n = (int32_t)len;
            ValId z = dtype_is_float(t->dt) ? ir_const_float(L->f, L->b, type_tile(t->dt, 1, &n), 0.0, dc->loc)
                                            : ir_const_int(L->f, L->b, type_tile(t->dt, 1, &n), 0, dc->loc);
            v->val = (CVal){.t = t, .v = z};
            if (dc->init)
                diag_error(L->d, dc->loc, "__shared__ variables cannot be initialized");
            continue;
        }
        if (dc->ndims) {
            if (!t || t->k == TY_STRUCT || t->k == TY_PTR || t->k == TY_VOID) {
                diag_error(L->d, dc->loc, "local arrays of numbers only");
                continue;
            }
            int dims[2] = {1, 1};
            int64_t len = 1;
            if (dc->ndims > 2) {
                diag_error(L->d, dc->loc, "local arrays of one or two dimensions only");
                continue;
            }
            for (int i = 0; i < dc->ndims; i++) {
                int64_t x;
                if (!dc->dims[i] || !cu_const_eval(L, dc->dims[i], &x) || x <= 0 || x > 256) {
                    diag_error(L->d, dc->dims[i] ? dc->dims[i]->loc : dc->loc,
                               "a local array's size must be a constant from 1 to 256");
                    x = 1;
                }
                dims[i] = (int)x;
                len *= x;
            }
            Var *head = cu_declare(L, dc->name, VK_ARRAY, t, dc->loc);
            head->len = (int)len;
            head->ndims = dc->ndims;
            head->dims[0] = dims[0];
            head->dims[1] = dims[1];
            const CuExpr *init = dc->init;
            for (int i = 0; i < len; i++) {
                Var *el = cu_declare(L, arena_printf(L->a, "%s[%d]", dc->name, i), VK_VAL, t, dc->loc);
                if (init && init->kind == CE_INIT)
                    el->val = i < init->nargs ? cu_convert(L, cu_expr(L, init->args[i]), t, dc->loc)
                                              : cu_zero(L, t, dc->loc);
            }
            if (init && init->kind != CE_INIT)
                diag_error(L->d, init->loc, "an array is initialized with a braced list");
            continue;
        }
        if (dc->init && dc->init->kind == CE_LAMBDA) {
            if (t0 || dc->ndims) {
                diag_error(L->d, dc->loc, "a lambda is held by an `auto` variable: auto %s = [...](...) { ... };",
                           dc->name);
                continue;
            }
            Var *lv = cu_declare(L, dc->name, VK_LAMBDA, NULL, dc->loc);
            lv->lam = dc->init;
            if (dc->init->by_copy) { /* the values it captures, as they are now */
                lv->snap0 = L->frame;
                lv->nsnap = (int)(lv - L->env.v) - L->frame;
                lv->snap = arena_alloc(L->a, sizeof *lv->snap * (size_t)(lv->nsnap + 1));
                for (int i = 0; i < lv->nsnap; i++)
                    lv->snap[i] = L->env.v[L->frame + i].val.v;
            }
            continue;
        }
        /* `auto x = f(...)` is evaluated once, here: it may make a cooperative group */
        CVal pre = {0};
        bool have = !t && dc->init && dc->init->kind == CE_CALL;
        if (have)
            pre = cu_expr(L, dc->init);
        if ((t && t->k == TY_CG) || (have && pre.t && pre.t->k == TY_CG)) {
            /* a cooperative group: cg::this_thread_block(), cg::tiled_partition<N>(block) */
            CVal g = have ? pre : dc->init ? cu_expr(L, dc->init) : (CVal){0};
            if (!g.t || g.t->k != TY_CG || (t && (t->cg_tile != g.t->cg_tile || t->cub_threads != g.t->cub_threads))) {
                diag_error(L->d, dc->loc, "'%s': a cooperative group is made by cg::this_thread_block() or "
                                          "cg::tiled_partition<N>(block), of its declared size", dc->name);
                continue;
            }
            Var *v = cu_declare(L, dc->name, VK_VAL, g.t, dc->loc);
            v->val = g;
            continue;
        }
        CVal x = {0};
        if (dc->init) {
            if (dc->init->kind == CE_INIT && t && t->k == TY_STRUCT) {
                CuExpr e = {.kind = CE_CAST, .loc = dc->init->loc, .op = "{}", .type = s->type,
                            .args = dc->init->args, .nargs = dc->init->nargs};
                x = cu_expr(L, &e);
            } else if (dc->init->kind == CE_INIT) {
                if (dc->init->nargs == 1)
                    x = cu_expr(L, dc->init->args[0]);
                else if (dc->init->nargs == 0 && t)
                    x = cu_zero(L, t, dc->loc);
                else
                    diag_error(L->d, dc->init->loc, "a braced list with %d values for one variable", dc->init->nargs);
            } else
                x = have ? pre : cu_expr(L, dc->init);
            if (!t)
                t = x.t;
            if (t && x.t)
                x = cu_convert(L, x, t, dc->loc);
        }
        if (!t) {
            diag_error(L->d, dc->loc, "'auto' needs an initializer");
            continue;
        }
        if (t->k == TY_VOID) {
            diag_error(L->d, dc->loc, "a void variable");
            continue;
        }
        if (t->k == TY_STRUCT) {
            cu_declare(L, dc->name, VK_STRUCT, t, dc->loc);
            for (int i = 0; i < t->st->n; i++) {
                Var *fv = cu_declare(L, arena_printf(L->a, "%s.%s", dc->name, t->st->fname[i]), VK_VAL, t->st->fty[i],
                                     dc->loc);
                fv->val = x.f ? x.f[i] : (CVal){0};
            }
            continue;
        }
        Var *v = cu_declare(L, dc->name, VK_VAL, t, dc->loc);
        v->val = x;
        if (x.v && L->f->vals.v[x.v].name == NULL && !x.cst)
            L->f->vals.v[x.v].name = dc->name;
    }
}

/* ---- statements ---- */

/* switch: the threads run from the label their value matches (default: none
 * does) to a `break` or the body's end, falling through labels, as masks:
 * $m starts empty and each label adds the threads it matches; `break` clears
 * threads into a $brk of the switch's own (continue and return act on the
 * enclosing loop and function as anywhere).  After the body, $m is the
 * threads that ran to the end, broke, or matched no label without a default. */
static void lower_switch(Lw *L, const CuStmt *s)
{
    CVal v = cu_expr(L, s->e);
    if (!v.t || (v.t->k != TY_INT && v.t->k != TY_BOOL)) {
        if (v.t && v.v)
            diag_error(L->d, s->e->loc, "a switch needs an integer value");
        return;
    }
    v = cu_convert(L, v, cu_promote(L, v.t), s->e->loc);
    const CuStmt *body = s->body;
    int n = body ? body->n : 0;
    ValId *match = arena_alloc(L->a, sizeof *match * (size_t)(n + 1));
    int64_t *vals = arena_alloc(L->a, sizeof *vals * (size_t)(n + 1));
    ValId any = L->fls;
    bool has_default = false;
    for (int i = 0; i < n; i++) {
        const CuStmt *c = body->list[i];
        if (c->kind != CS_CASE)
            continue;
        if (!c->e) {
            if (has_default)
                diag_error(L->d, c->loc, "a second 'default' label in one switch");
            has_default = true;
            continue;
        }
        int64_t k;
        if (!cu_const_eval(L, c->e, &k)) {
            diag_error(L->d, c->e->loc, "a case label must be an integer constant");
            return;
        }
        for (int j = 0; j < i; j++)
            if (match[j] && vals[j] == k)
                diag_error(L->d, c->e->loc, "case %lld appears twice in one switch", (long long)k);
        vals[i] = k;
        match[i] = cu_truth(L, cu_binop(L, "==", v, cu_const_int(L, v.t, k, c->e->loc), c->e->loc), c->e->loc);
        any = cu_or(L, any, match[i], c->e->loc);
    }
    int n0 = L->env.n;
    ValId m0 = cu_m(L);
    Var *brk = cu_declare(L, "$brk", VK_VAL, cu_ty_bool(L), s->loc);
    brk->val = (CVal){.t = cu_ty_bool(L), .v = L->fls};
    cu_set_m(L, L->fls);
    for (int i = 0; i < n; i++) {
        const CuStmt *c = body->list[i];
        if (c->kind == CS_CASE) {
            ValId in = c->e ? match[i] : cu_not(L, any, c->loc);
            cu_set_m(L, cu_or(L, cu_m(L), cu_and(L, m0, in, c->loc), c->loc));
        } else {
            cu_stmt(L, c);
        }
    }
    ValId out = cu_or(L, cu_m(L), cu_lookup(L, "$brk")->val.v, s->loc);
    if (!has_default)
        out = cu_or(L, out, cu_and(L, m0, cu_not(L, any, s->loc), s->loc), s->loc);
    L->env.n = n0;
    cu_set_m(L, out);
}

void cu_stmt(Lw *L, const CuStmt *s)
{
    if (!s)
        return;
    switch (s->kind) {
    case CS_EMPTY:
        return;
    case CS_BLOCK: {
        int n0 = L->env.n;
        for (int i = 0; i < s->n; i++)
            cu_stmt(L, s->list[i]);
        L->env.n = n0;
        return;
    }
    case CS_DECL:
        cu_declare_stmt(L, s);
        return;
    case CS_EXPR:
        (void)cu_expr(L, s->e);
        return;
    case CS_IF:
        lower_if(L, s);
        return;
    case CS_FOR: {
        int n0 = L->env.n;
        lower_for(L, s);
        L->env.n = n0;
        return;
    }
    case CS_WHILE:
    case CS_DO: {
        if (!pure(s->e)) {
            diag_error(L->d, s->e->loc, "a loop condition with side effects is not supported: move them into the body");
            return;
        }
        LoopDesc ld = {.kind = LD_WHILE, .body = s->body, .jumps = has_jump(s->body, false), .loc = s->loc,
                       .cond = s->e, .is_do = s->kind == CS_DO};
        lower_loop(L, &ld);
        return;
    }
    case CS_SWITCH:
        lower_switch(L, s);
        return;
    case CS_TYPEDEF: {
        const CuTy *ty = cu_resolve_type(L, s->type);
        if (ty)
            cu_declare(L, s->decls[0].name, VK_TYPE, ty, s->loc);
        return;
    }
    case CS_CASE:
        diag_error(L->d, s->loc, "'%s' outside the body of a switch (a label inside a nested block is not supported)",
                   s->e ? "case" : "default");
        return;
    case CS_BREAK:
    case CS_CONTINUE: {
        Var *t = cu_lookup(L, s->kind == CS_BREAK ? "$brk" : "$cnt");
        if (!t || (L->depth && (int)(t - L->env.v) < L->frame)) {
            diag_error(L->d, s->loc, "'%s' outside a loop", s->kind == CS_BREAK ? "break" : "continue");
            return;
        }
        t->val.v = cu_or(L, t->val.v, cu_m(L), s->loc);
        cu_set_m(L, L->fls);
        return;
    }
    case CS_RETURN:
        if (s->e) {
            if (!L->depth) {
                diag_error(L->d, s->e->loc, "a kernel returns nothing");
                return;
            }
            CVal v = cu_expr(L, s->e);
            if (!L->ret_ty && L->ret_auto && v.t) { /* the first return (at the body's top): its type */
                Var *rv = cu_lookup(L, "$ret");
                L->ret_ty = rv->t = v.t;
                if (v.t->k == TY_STRUCT) {
                    diag_error(L->d, s->e->loc, "'%s' returns a struct: give its return type", L->fn->name);
                    return;
                }
                rv->val = cu_zero(L, v.t, s->loc);
            }
            if (!L->ret_ty)
                return;
            if (L->ret_ty->k == TY_VOID) {
                diag_error(L->d, s->e->loc, "'%s' returns void", L->fn->name);
                return;
            }
            cu_assign(L, &(CuExpr){.kind = CE_IDENT, .loc = s->loc, .name = "$ret"}, v, s->loc);
        } else if (L->depth && L->ret_ty && L->ret_ty->k != TY_VOID) {
            diag_error(L->d, s->loc, "'%s' must return a value", L->fn->name);
        }
        cu_set_m(L, L->fls);
        return;
    }
}
