/* sema_stmt.c -- statements and control flow of a specialization.
 *
 * Job: run a kernel's or helper's statements the way Triton's JIT does
 * (sema.c evaluates the expressions in them): assignment and tuple
 * unpacking; `if` on a constexpr (only the taken branch runs) or on a
 * runtime scalar (an IR `if` whose regions yield the merged variables);
 * `for` over range/tl.range (an IR `for` whose iter_args carry the
 * variables the body assigns), over tl.static_range, constexpr ranges under
 * --unroll, or a constexpr tuple (unrolled); `while` (an IR `while` whose
 * condition region re-evaluates the condition); `return`; `assert` on
 * constexprs.  The conditional expression `a if c else b` lives here too:
 * on a runtime condition it is an IR `if` merged like the statement.
 *
 * Invariant: control flow never mutates an environment shared with another
 * path: each branch or loop body runs on a copy of the Env, and the copies
 * are merged afterwards into the values the IR region yields (two values
 * must have one type; a constant meeting a value becomes a constant of the
 * value's type).  So an SSA value defined inside a region can never be
 * named outside it.
 *
 * Early return: when a statement list holds an `if` one of whose branches
 * may return, the statements after the `if` (and the continuations of the
 * enclosing lists of the same function) run inside each branch that falls
 * through (Cont).  A branch that returns never reaches them, so the rest
 * runs exactly when Python would run it; code is duplicated only when a
 * branch returns on some paths and not on others.
 *
 * Requires: sema.c (the state, environments, names, sema_eval_expr) and
 * sema_ops.c (lower_*).  Guarantees: every region it creates ends in its
 * terminator (yield, or condition for a while's condition region); errors
 * are located at the statement or expression that caused them.
 */
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "front/front.h"

/* Upper bound on the iterations of an unrolled loop (static_range, --unroll). */
#define MAX_UNROLL 65536

/* ------------------------------------------------------------------ */
/* SVal helpers                                                        */
/* ------------------------------------------------------------------ */

static bool const_eq(ConstVal a, ConstVal b)
{
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case CK_NONE: return true;
    case CK_INT:
    case CK_BOOL: return a.i == b.i;
    case CK_FLOAT: return !memcmp(&a.f, &b.f, sizeof a.f); /* -0.0 and 0.0 differ */
    case CK_STR: return !strcmp(a.s, b.s);
    case CK_DTYPE:
        return a.dt == b.dt && a.i == b.i && a.brank == b.brank && a.of_block == b.of_block &&
               !memcmp(a.bshape, b.bshape, sizeof a.bshape);
    }
    return false;
}

/* Whether a and b are the same value (so a merge needs no IR). */
static bool sval_same(SVal a, SVal b)
{
    if (a.kind != b.kind)
        return false;
    switch (a.kind) {
    case SV_ERROR:
    case SV_NONE:
    case SV_SLICE: return true;
    case SV_CONST: return const_eq(a.c, b.c);
    case SV_VALUE: return a.v == b.v;
    case SV_TUPLE:
    case SV_BLOCKPTR:
        if (a.n != b.n)
            return false;
        for (int i = 0; i < a.n; i++)
            if (!sval_same(a.elts[i], b.elts[i]))
                return false;
        return true;
    case SV_MODULE:
    case SV_BUILTIN: return !strcmp(a.qual, b.qual);
    case SV_FUNC: return a.fn == b.fn;
    case SV_METHOD: return !strcmp(a.qual, b.qual) && sval_same(a.elts[0], b.elts[0]);
    }
    return false;
}

static bool is_numconst(SVal x)
{
    return x.kind == SV_CONST && (x.c.kind == CK_INT || x.c.kind == CK_BOOL || x.c.kind == CK_FLOAT);
}

/* ------------------------------------------------------------------ */
/* Merging the values of two paths into region results                 */
/* ------------------------------------------------------------------ */

/* While two regions are merged, the values each yields and the result
 * types.  Merged SVals hold placeholders for results not yet created:
 * SV_VALUE with v = -(index + 1), replaced by fill() once the
 * instruction exists. */
typedef struct Merge {
    Vec(ValId) tv, ev; /* yielded by the first (then) and the second (else) region */
    Vec(Type) ty;      /* result types */
} Merge;

static SVal placeholder(int k) { return sval_value(-(k + 1)); }

/* Replaces the placeholders of x by res[...], naming them `hint`. */
static SVal fill(Sema *S, SVal x, const ValId *res, const char *hint)
{
    if (x.kind == SV_VALUE && x.v < 0) {
        SVal r = sval_value(res[-x.v - 1]);
        if (hint)
            sema_name_value(S, r, hint);
        return r;
    }
    if (x.kind == SV_TUPLE || x.kind == SV_BLOCKPTR) {
        SVal t = x;
        t.elts = arena_alloc(S->a, sizeof *t.elts * (size_t)(x.n ? x.n : 1));
        for (int i = 0; i < x.n; i++)
            t.elts[i] = fill(S, x.elts[i], res, hint);
        return t;
    }
    return x;
}

static bool int_fits(int64_t v, Dtype dt)
{
    if (dt == DT_I1)
        return v == 0 || v == 1;
    int bits = dtype_bits(dt);
    if (!dtype_is_signed(dt))
        return v >= 0 && (bits >= 64 || v < ((int64_t)1 << bits));
    return bits >= 64 || (v >= -((int64_t)1 << (bits - 1)) && v < ((int64_t)1 << (bits - 1)));
}

/* Materializes the numeric constant c directly with type ty into b (a
 * constant of the variable's type, not a cast of an i32 constant).  0 when
 * c cannot be represented exactly (a float as an int, an int out of
 * range, anything as a pointer). */
static ValId const_as(Sema *S, Block *b, ConstVal c, Type ty, Loc loc)
{
    Dtype dt = (Dtype)ty.dt;
    if (dt == DT_PTR || dt == DT_VOID || (c.kind != CK_INT && c.kind != CK_BOOL && c.kind != CK_FLOAT))
        return 0;
    if (dtype_is_float(dt))
        return ir_const_float(S->L.f, b, ty, c.kind == CK_FLOAT ? c.f : (double)c.i, loc);
    if (c.kind == CK_FLOAT || !int_fits(c.i, dt))
        return 0;
    return ir_const_int(S->L.f, b, ty, c.i, loc);
}

/* The type a lone constant materializes as (lower_value's rule). */
static Type const_natural_type(ConstVal c)
{
    if (c.kind == CK_BOOL)
        return type_scalar(DT_I1);
    if (c.kind == CK_FLOAT)
        return type_scalar(DT_F32);
    return type_scalar(int_fits(c.i, DT_I32) ? DT_I32 : DT_I64);
}

/* Merges t (from region tb) and e (from region eb) into one SVal.  Equal
 * values need no IR; tuples merge elementwise; a constant meeting a value
 * becomes a constant of the value's type; two values must have one type
 * (Triton does not promote across branches).  `what` names the thing in
 * messages ("variable 'x'"). */
static SVal merge_one(Sema *S, Merge *m, SVal t, SVal e, Block *tb, Block *eb, const char *what, Loc loc)
{
    if (t.kind == SV_ERROR || e.kind == SV_ERROR)
        return sval_error();
    if (sval_same(t, e))
        return t;
    if ((t.kind == SV_TUPLE || t.kind == SV_BLOCKPTR) && e.kind == t.kind && t.n == e.n) {
        SVal r = t;
        r.elts = arena_alloc(S->a, sizeof *r.elts * (size_t)(t.n ? t.n : 1));
        for (int i = 0; i < t.n; i++)
            r.elts[i] = merge_one(S, m, t.elts[i], e.elts[i], tb, eb, what, loc);
        return r;
    }
    bool tok = t.kind == SV_VALUE || is_numconst(t), eok = e.kind == SV_VALUE || is_numconst(e);
    if (!tok || !eok) {
        diag_error(S->d, loc, "%s is %s in the then branch and %s in the else branch", what, sema_describe(S, t),
                   sema_describe(S, e));
        return sval_error();
    }
    Func *f = S->L.f;
    ValId tv, ev;
    Type ty;
    if (t.kind == SV_VALUE && e.kind == SV_VALUE) {
        Type a = ir_type(f, t.v), b = ir_type(f, e.v);
        if (!type_eq(a, b)) {
            diag_error(S->d, loc, "%s has type %s in the then branch and %s in the else branch", what,
                       sema_type_str(S, a), sema_type_str(S, b));
            return sval_error();
        }
        ty = a;
        tv = t.v;
        ev = e.v;
    } else {
        if (t.kind == SV_VALUE)
            ty = ir_type(f, t.v);
        else if (e.kind == SV_VALUE)
            ty = ir_type(f, e.v);
        else { /* two different constants: the wider of their natural types */
            Type a = const_natural_type(t.c), b = const_natural_type(e.c);
            bool af = dtype_is_float((Dtype)a.dt), bf = dtype_is_float((Dtype)b.dt);
            ty = af != bf ? (af ? a : b) : dtype_bits((Dtype)a.dt) >= dtype_bits((Dtype)b.dt) ? a : b;
        }
        tv = t.kind == SV_VALUE ? t.v : const_as(S, tb, t.c, ty, loc);
        ev = e.kind == SV_VALUE ? e.v : const_as(S, eb, e.c, ty, loc);
        if (!tv || !ev) {
            diag_error(S->d, loc, "%s is %s in the then branch and %s in the else branch", what,
                       sema_describe(S, t), sema_describe(S, e));
            return sval_error();
        }
    }
    vec_push(S->a, m->tv, tv);
    vec_push(S->a, m->ev, ev);
    vec_push(S->a, m->ty, ty);
    return placeholder(m->ty.n - 1);
}

/* Ends regions tb and eb with yields of m and appends the `if` on cond to
 * the current block.  Returns the results (NULL when there is nothing to
 * emit: no results and two empty regions). */
static ValId *emit_if(Sema *S, ValId cond, Block *tb, Block *eb, Merge *m, Loc loc)
{
    Func *f = S->L.f;
    int n = m->ty.n;
    if (n == 0 && tb->insts.n == 0 && eb->insts.n == 0)
        return NULL;
    ir_emit(f, tb, OP_YIELD, m->tv.v, n, NULL, 0, loc);
    ir_emit(f, eb, OP_YIELD, m->ev.v, n, NULL, 0, loc);
    Inst *in = ir_emit(f, S->L.b, OP_IF, &cond, 1, m->ty.v, n, loc);
    *ir_inst_add_region(f, in) = *tb;
    *ir_inst_add_region(f, in) = *eb;
    return in->res;
}

/* ------------------------------------------------------------------ */
/* Conditional expressions                                             */
/* ------------------------------------------------------------------ */

/* a if c else b: a constexpr c evaluates one side only; a runtime scalar c
 * becomes an IR `if` yielding the value (both sides of one type). */
SVal sema_eval_ifexp(Sema *S, const Expr *e)
{
    SVal c = sema_eval_expr(S, e->ifexp.cond);
    if (c.kind == SV_ERROR)
        return c;
    bool is_const = true, cval = sval_truthy(c);
    ValId cv = 0;
    if (c.kind == SV_VALUE && !lower_truth(&S->L, c, &is_const, &cval, &cv, e->ifexp.cond->loc))
        return sval_error();
    if (is_const)
        return sema_eval_expr(S, cval ? e->ifexp.then : e->ifexp.els);
    Func *f = S->L.f;
    Block *outer = S->L.b, *tb = ir_block_new(f), *eb = ir_block_new(f);
    S->L.b = tb;
    SVal t = sema_eval_expr(S, e->ifexp.then);
    S->L.b = eb;
    SVal x = sema_eval_expr(S, e->ifexp.els);
    S->L.b = outer;
    Merge m = {0};
    SVal r = merge_one(S, &m, t, x, tb, eb, "the conditional expression", e->loc);
    ValId *res = emit_if(S, cv, tb, eb, &m, e->loc);
    return res ? fill(S, r, res, NULL) : r;
}

/* ------------------------------------------------------------------ */
/* Assignment                                                          */
/* ------------------------------------------------------------------ */

static void assign_target(Sema *S, const Expr *t, SVal v)
{
    switch (t->kind) {
    case EX_NAME: sema_bind(S, t->name, v); return;
    case EX_TUPLE:
    case EX_LIST: {
        int n = t->seq.n;
        if (v.kind == SV_ERROR) {
            for (int i = 0; i < n; i++)
                assign_target(S, t->seq.xs[i], v);
            return;
        }
        if (v.kind != SV_TUPLE || v.n != n) {
            diag_error(S->d, t->loc, "cannot unpack %s into %d name%s", sema_describe(S, v), n, n == 1 ? "" : "s");
            for (int i = 0; i < n; i++)
                assign_target(S, t->seq.xs[i], sval_error());
            return;
        }
        for (int i = 0; i < n; i++)
            assign_target(S, t->seq.xs[i], v.elts[i]);
        return;
    }
    case EX_SUBSCRIPT:
        diag_error(S->d, t->loc, "assignment to a subscript is not supported (tensors are immutable in Triton)");
        return;
    case EX_ATTR: diag_error(S->d, t->loc, "assignment to an attribute is not supported"); return;
    default: diag_error(S->d, t->loc, "cannot assign to this expression"); return;
    }
}

/* ------------------------------------------------------------------ */
/* Statements                                                          */
/* ------------------------------------------------------------------ */

typedef Vec(const char *) Names;

/* Names assigned anywhere in s (nested ifs and loops included): the
 * candidates for loop-carried variables. */
static void scan_target(Arena *a, const Expr *t, Names *out)
{
    if (t->kind == EX_NAME) {
        for (int i = 0; i < out->n; i++)
            if (!strcmp(out->v[i], t->name))
                return;
        vec_push(a, *out, t->name);
    } else if (t->kind == EX_TUPLE || t->kind == EX_LIST) {
        for (int i = 0; i < t->seq.n; i++)
            scan_target(a, t->seq.xs[i], out);
    }
}

static void scan_assigned(Arena *a, const Stmts *s, Names *out)
{
    for (int i = 0; i < s->n; i++) {
        const Stmt *st = s->v[i];
        switch (st->kind) {
        case ST_ASSIGN:
            for (int k = 0; k < st->assign.ntargets; k++)
                scan_target(a, st->assign.targets[k], out);
            break;
        case ST_AUGASSIGN: scan_target(a, st->aug.target, out); break;
        case ST_ANNASSIGN:
            if (st->ann.value)
                scan_target(a, st->ann.target, out);
            break;
        case ST_IF:
            scan_assigned(a, &st->if_.then, out);
            scan_assigned(a, &st->if_.els, out);
            break;
        case ST_FOR:
            scan_target(a, st->for_.target, out);
            scan_assigned(a, &st->for_.body, out);
            break;
        case ST_WHILE: scan_assigned(a, &st->while_.body, out); break;
        default: break;
        }
    }
}

/* Whether running s may execute a `return` (loops excluded: a return in a
 * loop is an error of its own). */
static bool stmts_may_return(const Stmts *s)
{
    for (int i = 0; i < s->n; i++) {
        const Stmt *st = s->v[i];
        if (st->kind == ST_RETURN)
            return true;
        if (st->kind == ST_IF && (stmts_may_return(&st->if_.then) || stmts_may_return(&st->if_.els)))
            return true;
    }
    return false;
}

/* An `if` on a runtime scalar.  Without a continuation, the variables
 * assigned in a branch that exist after the if (defined before it or in
 * both branches) become the results; with one (k: a branch may return),
 * both branches run to the end of the function and the only result is a
 * helper's return value. */
static void runtime_if(Sema *S, const Stmt *st, ValId cond, const Cont *k)
{
    Frame *fr = S->fr;
    Func *f = S->L.f;
    Block *outer = S->L.b, *tb = ir_block_new(f), *eb = ir_block_new(f);
    Env before = fr->env;

    fr->env = sema_env_copy(S->a, &before);
    S->L.b = tb;
    sema_exec_list(S, &st->if_.then, 0, k);
    Env tenv = fr->env;
    SVal tret = fr->has_ret ? fr->ret : sval_none();

    fr->env = sema_env_copy(S->a, &before);
    fr->done = fr->has_ret = false;
    S->L.b = eb;
    sema_exec_list(S, &st->if_.els, 0, k);
    Env eenv = fr->env;
    SVal eret = fr->has_ret ? fr->ret : sval_none();
    fr->done = fr->has_ret = false;
    S->L.b = outer;

    Merge m = {0};
    if (k) {
        SVal r = sval_none();
        if (!fr->is_kernel)
            r = merge_one(S, &m, tret, eret, tb, eb,
                          arena_printf(S->a, "the return value of '%s'", fr->fn ? fr->fn->name : "?"), st->loc);
        ValId *res = emit_if(S, cond, tb, eb, &m, st->loc);
        fr->env = before;
        fr->done = fr->has_ret = true;
        fr->ret = res ? fill(S, r, res, NULL) : r;
        return;
    }
    Binding *merged = arena_alloc(S->a, sizeof *merged * (size_t)(tenv.n + 1));
    int nm = 0;
    for (int i = 0; i < tenv.n; i++) {
        const char *name = tenv.v[i].name;
        Binding *eb2 = sema_env_find(&eenv, name);
        if (!eb2)
            continue; /* defined in the then branch only: not visible after the if */
        merged[nm].name = name;
        merged[nm++].val = merge_one(S, &m, tenv.v[i].val, eb2->val, tb, eb,
                                     arena_printf(S->a, "variable '%s'", name), st->loc);
    }
    ValId *res = emit_if(S, cond, tb, eb, &m, st->loc);
    fr->env = before;
    for (int i = 0; i < nm; i++)
        sema_bind(S, merged[i].name, res ? fill(S, merged[i].val, res, merged[i].name) : merged[i].val);
}

static void exec_if(Sema *S, const Stmt *st, const Cont *k)
{
    const Expr *ce = st->if_.cond;
    SVal c = sema_eval_expr(S, ce);
    bool is_const = true, cval = false;
    ValId cv = 0;
    if (c.kind == SV_ERROR ||
        (c.kind == SV_VALUE && !lower_truth(&S->L, c, &is_const, &cval, &cv, ce->loc))) {
        if (k) /* the rest of the function hangs on this if: stop here */
            S->fr->done = true;
        return;
    }
    if (c.kind != SV_VALUE)
        cval = sval_truthy(c);
    if (is_const)
        sema_exec_list(S, cval ? &st->if_.then : &st->if_.els, 0, k);
    else
        runtime_if(S, st, cv, k);
}

/* Loop-carried variables.  A carried variable's value before the loop is
 * turned into a template: its runtime leaves (values, and numeric
 * constants, materialized) become placeholders numbered like the loop's
 * iter_args; other leaves (None, strings, dtypes, functions) stay fixed
 * and must not change in the loop. */
typedef struct Carry {
    const char *name;
    SVal tmpl;
} Carry;
typedef struct Carried {
    Vec(Carry) vars;
    Vec(ValId) inits;        /* iter_arg initial values */
    Vec(const char *) leaf;  /* the variable of each iter_arg (name hint) */
} Carried;

static SVal carry_template(Sema *S, Carried *c, SVal init, const char *name, Loc loc)
{
    if (init.kind == SV_VALUE || is_numconst(init)) {
        ValId v = init.kind == SV_VALUE ? init.v : lower_value(&S->L, init, loc);
        if (!v)
            return sval_error();
        vec_push(S->a, c->inits, v);
        vec_push(S->a, c->leaf, name);
        return placeholder(c->inits.n - 1);
    }
    if (init.kind == SV_TUPLE) {
        SVal t = init;
        t.elts = arena_alloc(S->a, sizeof *t.elts * (size_t)(init.n ? init.n : 1));
        for (int i = 0; i < init.n; i++)
            t.elts[i] = carry_template(S, c, init.elts[i], name, loc);
        return t;
    }
    if (init.kind == SV_BLOCKPTR) { /* only the offsets may change (tl.advance) */
        SVal t = init;
        t.elts = arena_alloc(S->a, sizeof *t.elts * BP_N);
        memcpy(t.elts, init.elts, sizeof *t.elts * BP_N);
        t.elts[BP_OFFSETS] = carry_template(S, c, init.elts[BP_OFFSETS], name, loc);
        return t;
    }
    return init;
}

/* The carried variables of a loop with body `body` (excluding `skip`, the
 * loop variable): names assigned in the body that exist before it. */
static void collect_carried(Sema *S, Carried *c, const Stmts *body, const char *skip, Loc loc)
{
    Names assigned = {0};
    scan_assigned(S->a, body, &assigned);
    for (int i = 0; i < assigned.n; i++) {
        const char *name = assigned.v[i];
        Binding *b = sema_env_find(&S->fr->env, name);
        if (!b || (skip && !strcmp(name, skip)))
            continue;
        Carry cy = {name, carry_template(S, c, b->val, name, loc)};
        vec_push(S->a, c->vars, cy);
    }
}

static Type *carried_types(Sema *S, const Carried *c)
{
    Type *t = arena_alloc(S->a, sizeof *t * (size_t)(c->inits.n + 1));
    for (int i = 0; i < c->inits.n; i++)
        t[i] = ir_type(S->L.f, c->inits.v[i]);
    return t;
}

/* Region parameters of block b for the carried values. */
static ValId *carried_params(Sema *S, const Carried *c, Block *b, Loc loc)
{
    ValId *p = arena_alloc(S->a, sizeof *p * (size_t)(c->inits.n + 1));
    for (int i = 0; i < c->inits.n; i++)
        p[i] = ir_block_param_add(S->L.f, b, ir_type(S->L.f, c->inits.v[i]), c->leaf.v[i], loc);
    return p;
}

/* Binds the carried variables to their template filled with ids. */
static void bind_carried(Sema *S, const Carried *c, const ValId *ids)
{
    for (int i = 0; i < c->vars.n; i++)
        sema_bind(S, c->vars.v[i].name, fill(S, c->vars.v[i].tmpl, ids, c->vars.v[i].name));
}

/* Sets ys[k] to the new value of each placeholder of tmpl, found in the
 * variable's value after an iteration (nv), converted to the parameter's
 * type (params[k]).  ys starts as the parameters themselves, so after an
 * error the IR stays well-formed. */
static void carry_yield(Sema *S, SVal tmpl, SVal nv, const ValId *params, ValId *ys, const char *name, Loc loc)
{
    Func *f = S->L.f;
    if (nv.kind == SV_ERROR || tmpl.kind == SV_ERROR)
        return;
    if (tmpl.kind == SV_VALUE && tmpl.v < 0) {
        int k = -tmpl.v - 1;
        Type pt = ir_type(f, params[k]);
        if (nv.kind == SV_VALUE) {
            Type nt = ir_type(f, nv.v);
            if (type_eq(nt, pt))
                ys[k] = nv.v;
            else
                diag_error(S->d, loc,
                           "loop-carried variable '%s' has type %s before the loop and %s after an iteration",
                           name, sema_type_str(S, pt), sema_type_str(S, nt));
        } else if (is_numconst(nv)) {
            ValId v = const_as(S, S->L.b, nv.c, pt, loc);
            if (v)
                ys[k] = v;
            else
                diag_error(S->d, loc,
                           "loop-carried variable '%s' has type %s before the loop and is set to %s in the loop",
                           name, sema_type_str(S, pt), sema_describe(S, nv));
        } else {
            diag_error(S->d, loc, "loop-carried variable '%s' has type %s before the loop and is %s after an iteration",
                       name, sema_type_str(S, pt), sema_describe(S, nv));
        }
        return;
    }
    if (tmpl.kind == SV_BLOCKPTR) {
        if (nv.kind != SV_BLOCKPTR) {
            diag_error(S->d, loc, "loop-carried variable '%s' is a block pointer before the loop and %s after an "
                       "iteration", name, sema_describe(S, nv));
            return;
        }
        for (int i = 0; i < BP_N; i++)
            if (i != BP_OFFSETS && !sval_same(tmpl.elts[i], nv.elts[i])) {
                diag_error(S->d, loc, "block pointer '%s' changes its %s in the loop; only its offsets can change "
                           "(tl.advance)", name, i == BP_BASE ? "base" : i == BP_SHAPE ? "shape"
                           : i == BP_STRIDES ? "strides" : i == BP_BLOCK ? "block shape" : "order");
                return;
            }
        carry_yield(S, tmpl.elts[BP_OFFSETS], nv.elts[BP_OFFSETS], params, ys, name, loc);
        return;
    }
    if (tmpl.kind == SV_TUPLE) {
        if (nv.kind != SV_TUPLE || nv.n != tmpl.n) {
            diag_error(S->d, loc, "loop-carried variable '%s' is a tuple of %d elements before the loop and %s after an iteration",
                       name, tmpl.n, sema_describe(S, nv));
            return;
        }
        for (int i = 0; i < tmpl.n; i++)
            carry_yield(S, tmpl.elts[i], nv.elts[i], params, ys, name, loc);
        return;
    }
    if (!sval_same(tmpl, nv))
        diag_error(S->d, loc,
                   "variable '%s' is %s before the loop and %s after an iteration; only tensors and numbers "
                   "can change in a loop",
                   name, sema_describe(S, tmpl), sema_describe(S, nv));
}

/* The values yielded at the end of a loop body whose region params are params. */
static ValId *carried_yields(Sema *S, const Carried *c, const ValId *params, Loc loc)
{
    ValId *ys = arena_alloc(S->a, sizeof *ys * (size_t)(c->inits.n + 1));
    for (int i = 0; i < c->inits.n; i++)
        ys[i] = params[i];
    for (int i = 0; i < c->vars.n; i++) {
        Binding *b = sema_env_find(&S->fr->env, c->vars.v[i].name);
        if (b)
            carry_yield(S, c->vars.v[i].tmpl, b->val, params, ys, c->vars.v[i].name, loc);
    }
    return ys;
}

/* Runs body once per constant in vals, binding target: static_range,
 * --unroll, tuples. */
static void exec_unrolled(Sema *S, const Stmt *st, const SVal *vals, int64_t n, int64_t start, int64_t step)
{
    Frame *fr = S->fr;
    fr->loop_depth++;
    for (int64_t i = 0; i < n; i++) {
        SVal v = vals ? vals[i] : sval_int((int64_t)((uint64_t)start + (uint64_t)i * (uint64_t)step));
        int errs = S->d->nerrors;
        assign_target(S, st->for_.target, v);
        sema_exec_list(S, &st->for_.body, 0, NULL);
        if (S->d->nerrors > errs)
            break; /* one report, not one per iteration */
    }
    fr->loop_depth--;
}

/* The trips of range(start, stop, step), step > 0. */
static int64_t range_trips(int64_t start, int64_t stop, int64_t step)
{
    return stop > start ? (int64_t)(((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1) : 0;
}

/* range(start, n, step) with constant start and step > 0 and n a runtime
 * int parameter: when the signature gives n a range (Func.ranges) over
 * which the loop runs the same 0 or 1 times, runs the body that many times
 * as straight-line code, the variable an IR constant of the type the loop's
 * would have (so the body's arithmetic is typed as in the loop), and
 * returns true.  Without a range for n, records the range that would make
 * it one trip (Func.hints) and returns false. */
static bool range_once(Sema *S, const Stmt *st, const SVal *b, const Loc *bl)
{
    Func *f = S->L.f;
    if (b[0].kind != SV_CONST || b[2].kind != SV_CONST || b[1].kind != SV_VALUE || b[2].c.i <= 0)
        return false;
    int k = 0;
    while (k < f->nparams && f->params[k] != b[1].v)
        k++;
    Type nt = ir_type(f, b[1].v);
    if (k == f->nparams || nt.rank != 0 || !dtype_is_int((Dtype)nt.dt) || !dtype_is_signed((Dtype)nt.dt) ||
        nt.dt == DT_I1)
        return false;
    int64_t start = b[0].c.i, step = b[2].c.i;
    const ParamRange *r = NULL;
    for (int i = 0; i < f->ranges.n; i++)
        if (f->ranges.v[i].param == k)
            r = &f->ranges.v[i];
    if (!r) {
        if (start > INT64_MAX - step || !int_fits(start + 1, (Dtype)nt.dt) || !int_fits(start + step, (Dtype)nt.dt))
            return false;
        int64_t hi = start + step;
        const char *name = f->vals.v[b[1].v].name;
        for (int i = 0; i < f->hints.n; i++)
            if (!strcmp(f->hints.v[i].name, name) && f->hints.v[i].lo == start + 1 && f->hints.v[i].hi == hi)
                return false;
        RangeHint h = {name, start + 1, hi};
        vec_push(S->a, f->hints, h);
        return false;
    }
    int64_t n = range_trips(start, r->lo, step);
    if (n > 1 || n != range_trips(start, r->hi, step))
        return false;
    Dtype ivt = dtype_bits((Dtype)nt.dt) == 64 || !int_fits(start, DT_I32) || !int_fits(step, DT_I32) ? DT_I64 : DT_I32;
    /* Scoped as exec_ir_for scopes the loop: the carried variables keep
     * their types, and names the body defines end with it. */
    Frame *fr = S->fr;
    Carried c = {0};
    collect_carried(S, &c, &st->for_.body, st->for_.target->name, st->loc);
    Env before = fr->env;
    fr->env = sema_env_copy(S->a, &before);
    bind_carried(S, &c, c.inits.v);
    const ValId *ys = c.inits.v;
    fr->loop_depth++;
    if (n) {
        ValId iv = const_as(S, S->L.b, b[0].c, type_scalar(ivt), bl[0]);
        if (iv) {
            sema_bind(S, st->for_.target->name, sval_value(iv));
            sema_exec_list(S, &st->for_.body, 0, NULL);
            ys = carried_yields(S, &c, c.inits.v, st->loc);
        }
    }
    fr->loop_depth--;
    fr->env = before;
    bind_carried(S, &c, ys);
    return true;
}

/* A `for` over range/tl.range with bounds b[0..2] (start, stop, step) as
 * an IR for: bounds materialized in the iv type (i64 if a bound needs it,
 * else i32), carried variables as iter_args. */
static void exec_ir_for(Sema *S, const Stmt *st, const SVal *b, const Loc *bl, const int32_t *hints)
{
    Frame *fr = S->fr;
    Func *f = S->L.f;
    Block *outer = S->L.b;
    const char *var = st->for_.target->name;
    Dtype ivt = DT_I32;
    for (int i = 0; i < 3; i++) {
        if (b[i].kind == SV_VALUE) {
            Type t = ir_type(f, b[i].v);
            if (t.rank != 0 || !dtype_is_int((Dtype)t.dt)) {
                diag_error(S->d, bl[i], "range() bounds must be integer scalars, got %s", sema_type_str(S, t));
                return;
            }
            if (dtype_bits((Dtype)t.dt) == 64)
                ivt = DT_I64;
        } else if (!int_fits(b[i].c.i, DT_I32)) {
            ivt = DT_I64;
        }
    }
    Type ivty = type_scalar(ivt);
    ValId ids[3];
    for (int i = 0; i < 3; i++) {
        if (b[i].kind == SV_CONST)
            ids[i] = const_as(S, outer, b[i].c, ivty, bl[i]);
        else if (ir_type(f, b[i].v).dt == ivt)
            ids[i] = b[i].v;
        else
            ids[i] = lower_convert(&S->L, b[i].v, ivty, bl[i]);
        if (!ids[i])
            return;
    }

    Carried c = {0};
    collect_carried(S, &c, &st->for_.body, var, st->loc);
    int n = c.inits.n;
    ValId *args = arena_alloc(S->a, sizeof *args * (size_t)(n + 3));
    memcpy(args, ids, sizeof ids);
    if (n)
        memcpy(args + 3, c.inits.v, sizeof *args * (size_t)n);
    Inst *in = ir_emit(f, outer, OP_FOR, args, n + 3, carried_types(S, &c), n, st->loc);
    if (hints) {
        memcpy(in->ints, hints, sizeof(int32_t) * LH_N);
        in->nints = LH_N;
    }
    int idx = outer->insts.n - 1;
    Block *body = ir_inst_add_region(f, in);
    ValId iv = ir_block_param_add(f, body, ivty, var, st->for_.target->loc);
    ValId *params = carried_params(S, &c, body, st->loc);

    Env before = fr->env;
    fr->env = sema_env_copy(S->a, &before);
    bind_carried(S, &c, params);
    sema_bind(S, var, sval_value(iv));
    S->L.b = body;
    fr->loop_depth++;
    sema_exec_list(S, &st->for_.body, 0, NULL);
    fr->loop_depth--;
    ValId *ys = carried_yields(S, &c, params, st->loc);
    ir_emit(f, body, OP_YIELD, ys, n, NULL, 0, st->loc);
    S->L.b = outer;

    in = &outer->insts.v[idx];
    fr->env = before;
    bind_carried(S, &c, in->res);
}

/* The index of a tl.range scheduling hint in ir_loop_hints, or -1. */
static int loop_hint_index(const char *name)
{
    for (int h = 0; h < 6; h++)
        if (!strcmp(ir_loop_hints[h].name, name))
            return h;
    return -1;
}

/* for NAME in range(...) / tl.range(...) / tl.static_range(...) */
static void exec_range_for(Sema *S, const Stmt *st, int rk)
{
    const Expr *call = st->for_.iter;
    const char *fname = sema_range_name(rk);
    SVal a[3] = {0};
    Loc al[3] = {call->loc, call->loc, call->loc};
    bool have[3] = {false, false, false}, bad = false;
    int na = call->call.nargs;
    if (na > 3) {
        diag_error(S->d, call->call.args[3]->loc, "%s() takes at most 3 positional arguments, got %d", fname, na);
        return;
    }
    for (int i = 0; i < na; i++) {
        a[i] = sema_eval_expr(S, call->call.args[i]);
        al[i] = call->call.args[i]->loc;
        have[i] = true;
        bad |= a[i].kind == SV_ERROR;
    }
    static const char *const slot_names[3] = {"arg1", "arg2", "step"};
    int32_t hints[LH_N] = {-1, -1, 0, 0};
    bool has_hints = false;
    for (int k = 0; k < call->call.nkw; k++) {
        const Keyword *kw = &call->call.kw[k];
        int slot = -1;
        for (int i = 0; i < 3 && rk != RK_RANGE && kw->name; i++)
            if (!strcmp(kw->name, slot_names[i]))
                slot = i;
        if (slot >= 0 && !have[slot]) {
            a[slot] = sema_eval_expr(S, kw->value);
            al[slot] = kw->loc;
            have[slot] = true;
            bad |= a[slot].kind == SV_ERROR;
        } else if (rk == RK_TL_RANGE && kw->name && loop_hint_index(kw->name) >= 0) {
            /* scheduling hints: kept on the IR loop, emitted again (tl.range) */
            int h = loop_hint_index(kw->name);
            SVal v = sema_eval_expr(S, kw->value);
            if (v.kind == SV_ERROR) {
                bad = true;
            } else if (sval_is_none(v)) {
                /* None: Triton's default */
            } else if (v.kind != SV_CONST || (v.c.kind != CK_INT && v.c.kind != CK_BOOL) ||
                       (!ir_loop_hints[h].bit && (v.c.i < 0 || v.c.i > INT32_MAX))) {
                diag_error(S->d, kw->loc, "%s(): '%s' must be a constexpr %s, got %s", fname, kw->name,
                           ir_loop_hints[h].bit ? "bool" : "int >= 0", sema_describe(S, v));
                bad = true;
            } else {
                has_hints = true;
                if (!ir_loop_hints[h].bit) {
                    hints[h == 0 ? LH_STAGES : LH_UNROLL] = (int32_t)v.c.i;
                } else {
                    hints[LH_GIVEN] |= ir_loop_hints[h].bit;
                    if (v.c.i)
                        hints[LH_TRUE] |= ir_loop_hints[h].bit;
                }
            }
        } else {
            diag_error(S->d, kw->loc, "%s() got an unexpected keyword argument '%s'", fname,
                       kw->name ? kw->name : "**");
            bad = true;
        }
    }
    if (!have[0]) {
        diag_error(S->d, call->loc, "%s() expects 1 to 3 arguments (start, end, step)", fname);
        return;
    }
    if (bad)
        return;
    /* range(end) or range(start, end[, step]) */
    SVal b[3];
    Loc bl[3];
    if (have[1]) {
        b[0] = a[0], bl[0] = al[0];
        b[1] = a[1], bl[1] = al[1];
    } else {
        b[0] = sval_int(0), bl[0] = call->loc;
        b[1] = a[0], bl[1] = al[0];
    }
    b[2] = have[2] ? a[2] : sval_int(1);
    bl[2] = have[2] ? al[2] : call->loc;
    bool all_const = true;
    for (int i = 0; i < 3; i++) {
        if (b[i].kind == SV_VALUE) {
            if (rk == RK_STATIC) {
                diag_error(S->d, bl[i], "tl.static_range bounds must be constexpr ints, got %s", sema_describe(S, b[i]));
                return;
            }
            all_const = false;
        } else if (b[i].kind != SV_CONST || (b[i].c.kind != CK_INT && b[i].c.kind != CK_BOOL)) {
            diag_error(S->d, bl[i], "%s() bounds must be integers, got %s", fname, sema_describe(S, b[i]));
            return;
        }
    }
    if (b[2].kind == SV_CONST && b[2].c.i == 0) {
        diag_error(S->d, bl[2], "%s() step must not be zero", fname);
        return;
    }
    if (st->for_.target->kind != EX_NAME) {
        diag_error(S->d, st->for_.target->loc, "the variable of a %s() loop must be a single name", fname);
        return;
    }
    if (rk == RK_STATIC || (all_const && S->opt->unroll_const_loops)) {
        int64_t start = b[0].c.i, stop = b[1].c.i, step = b[2].c.i;
        uint64_t n = 0;
        if (step > 0 && start < stop)
            n = ((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1;
        else if (step < 0 && start > stop)
            n = ((uint64_t)start - (uint64_t)stop - 1) / (0 - (uint64_t)step) + 1;
        if (n <= MAX_UNROLL) {
            exec_unrolled(S, st, NULL, (int64_t)n, start, step);
            return;
        }
        if (rk == RK_STATIC) {
            diag_error(S->d, call->loc, "unrolling %llu iterations exceeds kad's limit of %d", (unsigned long long)n,
                       MAX_UNROLL);
            return;
        }
        /* --unroll is an optimization: a huge range stays a loop */
    }
    if (rk != RK_STATIC && range_once(S, st, b, bl))
        return;
    exec_ir_for(S, st, b, bl, has_hints ? hints : NULL);
}

static void exec_for(Sema *S, const Stmt *st)
{
    if (st->for_.orelse.n) {
        diag_error(S->d, st->loc, "for/else is not supported");
        return;
    }
    const Expr *it = st->for_.iter;
    if (it->kind == EX_CALL) {
        int rk = sema_range_kind(sema_qual_of(S, S->fr->mod, &S->fr->env, it->call.func));
        if (rk) {
            exec_range_for(S, st, rk);
            return;
        }
    }
    SVal v = sema_eval_expr(S, it);
    if (v.kind == SV_ERROR)
        return;
    if (v.kind != SV_TUPLE) {
        diag_error(S->d, it->loc,
                   "for loops must iterate over range(...), tl.range(...), tl.static_range(...) or a "
                   "constexpr tuple, not %s",
                   sema_describe(S, v));
        return;
    }
    exec_unrolled(S, st, v.elts, v.n, 0, 0);
}

/* while cond: body -- an IR while whose cond region re-evaluates cond on
 * the carried variables. */
static void exec_while(Sema *S, const Stmt *st)
{
    if (st->while_.orelse.n) {
        diag_error(S->d, st->loc, "while/else is not supported");
        return;
    }
    Frame *fr = S->fr;
    Func *f = S->L.f;
    Block *outer = S->L.b, *cb = ir_block_new(f), *bb = ir_block_new(f);
    const Expr *ce = st->while_.cond;
    Carried c = {0};
    collect_carried(S, &c, &st->while_.body, NULL, st->loc);
    int n = c.inits.n;
    ValId *cparams = carried_params(S, &c, cb, st->loc);
    ValId *bparams = carried_params(S, &c, bb, st->loc);
    Env before = fr->env;

    fr->env = sema_env_copy(S->a, &before);
    bind_carried(S, &c, cparams);
    S->L.b = cb;
    SVal cond = sema_eval_expr(S, ce);
    bool is_const = true, cval = false;
    ValId cv = 0;
    bool ok = cond.kind != SV_ERROR &&
              (cond.kind != SV_VALUE || lower_truth(&S->L, cond, &is_const, &cval, &cv, ce->loc));
    if (ok && cond.kind != SV_VALUE)
        cval = sval_truthy(cond);
    if (!ok || is_const) {
        /* the condition does not depend on anything the loop changes */
        S->L.b = outer;
        fr->env = before;
        if (ok && cval)
            diag_error(S->d, ce->loc, "while loop condition is constant True: the loop would never end "
                                      "(break is not supported)");
        return;
    }
    ir_emit(f, cb, OP_CONDITION, &cv, 1, NULL, 0, ce->loc);

    fr->env = sema_env_copy(S->a, &before);
    bind_carried(S, &c, bparams);
    S->L.b = bb;
    fr->loop_depth++;
    sema_exec_list(S, &st->while_.body, 0, NULL);
    fr->loop_depth--;
    ValId *ys = carried_yields(S, &c, bparams, st->loc);
    ir_emit(f, bb, OP_YIELD, ys, n, NULL, 0, st->loc);
    S->L.b = outer;

    Inst *in = ir_emit(f, outer, OP_WHILE, c.inits.v, n, carried_types(S, &c), n, st->loc);
    *ir_inst_add_region(f, in) = *cb;
    *ir_inst_add_region(f, in) = *bb;
    fr->env = before;
    bind_carried(S, &c, in->res);
}

static void exec_return(Sema *S, const Stmt *st)
{
    Frame *fr = S->fr;
    if (fr->loop_depth > 0) {
        diag_error(S->d, st->loc, "return inside a loop is not supported");
        return;
    }
    SVal v = st->expr ? sema_eval_expr(S, st->expr) : sval_none();
    if (fr->is_kernel && v.kind != SV_NONE && v.kind != SV_ERROR) {
        diag_error(S->d, st->expr->loc, "a kernel cannot return a value");
        v = sval_error();
    }
    fr->done = fr->has_ret = true;
    fr->ret = v;
}

static void exec_assert(Sema *S, const Stmt *st)
{
    SVal t = sema_eval_expr(S, st->assert_.test);
    if (t.kind == SV_ERROR)
        return;
    if (sval_has_value(t)) {
        diag_error(S->d, st->loc, "assert on a runtime value is not supported: use tl.device_assert(cond, msg)");
        return;
    }
    if (sval_truthy(t))
        return;
    SVal msg = st->assert_.msg ? sema_eval_expr(S, st->assert_.msg) : sval_none();
    if (msg.kind == SV_CONST && msg.c.kind == CK_STR)
        diag_error(S->d, st->loc, "assertion failed: %s", msg.c.s);
    else if (msg.kind == SV_CONST)
        diag_error(S->d, st->loc, "assertion failed: %s", const_repr(S->a, msg.c));
    else
        diag_error(S->d, st->loc, "assertion failed");
}

static void exec_stmt(Sema *S, const Stmt *st)
{
    switch (st->kind) {
    case ST_EXPR:
        if (st->expr->kind != EX_STR) /* docstrings */
            sema_eval_expr(S, st->expr);
        return;
    case ST_ASSIGN: {
        SVal v = sema_eval_expr(S, st->assign.value);
        for (int i = 0; i < st->assign.ntargets; i++)
            assign_target(S, st->assign.targets[i], v);
        return;
    }
    case ST_AUGASSIGN: {
        const Expr *t = st->aug.target;
        if (t->kind != EX_NAME) {
            assign_target(S, t, sval_error()); /* reports subscripts and attributes */
            return;
        }
        SVal cur = sema_lookup(S, t->name, t->loc);
        SVal y = sema_eval_expr(S, st->aug.value);
        SVal r = cur.kind == SV_ERROR || y.kind == SV_ERROR ? sval_error()
                                                              : lower_binop(&S->L, st->aug.op, cur, y, st->loc);
        sema_bind(S, t->name, r);
        return;
    }
    case ST_ANNASSIGN: {
        if (!st->ann.value)
            return;
        SVal v = sema_eval_expr(S, st->ann.value);
        if (sema_is_constexpr_ann(S, S->fr->mod, st->ann.ann) && sval_has_value(v)) {
            diag_error(S->d, st->ann.value->loc, "a tl.constexpr variable needs a compile-time constant, got %s",
                       sema_describe(S, v));
            v = sval_error();
        }
        assign_target(S, st->ann.target, v);
        return;
    }
    case ST_IF: exec_if(S, st, NULL); return;
    case ST_FOR: exec_for(S, st); return;
    case ST_WHILE: exec_while(S, st); return;
    case ST_RETURN: exec_return(S, st); return;
    case ST_PASS: return;
    case ST_BREAK: diag_error(S->d, st->loc, "break is not supported in Triton kernels"); return;
    case ST_CONTINUE: diag_error(S->d, st->loc, "continue is not supported in Triton kernels"); return;
    case ST_ASSERT: exec_assert(S, st); return;
    case ST_FUNCDEF:
        diag_error(S->d, st->loc, "nested function definitions are not supported: define helpers at module "
                                  "level with @triton.jit");
        return;
    }
    die("unknown statement kind %d", (int)st->kind);
}

/* Runs s[from..] and then the continuation k, until the function is done.
 * An `if` that may return takes over the rest (see the header comment);
 * inside loops a return is an error, so no restructuring happens there. */
void sema_exec_list(Sema *S, const Stmts *s, int from, const Cont *k)
{
    Frame *fr = S->fr;
    for (int i = from; i < s->n && !fr->done; i++) {
        const Stmt *st = s->v[i];
        if (st->kind == ST_IF && fr->loop_depth == 0 &&
            (stmts_may_return(&st->if_.then) || stmts_may_return(&st->if_.els))) {
            Cont rest = {s, i + 1, k};
            exec_if(S, st, &rest);
            return;
        }
        exec_stmt(S, st);
    }
    if (!fr->done && k)
        sema_exec_list(S, k->s, k->from, k->next);
}
