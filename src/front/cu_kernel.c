/* cu_kernel.c -- device functions (inlined at each call: template arguments
 * explicit or deduced from the arguments, parameters by value or by
 * reference, the result through "$ret" merged under the mask of each
 * return) and the kernel entry point cu_lower: template arguments from the
 * signature string or the file's one explicit instantiation, the lanes
 * (tid, the active mask), the parameters (a struct by value as one IR
 * parameter per member), then the body.
 */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/cuda.h"
#include "front/cu.h"

/* ---- device functions ---- */

/* Whether e has a side effect (an assignment, ++/--, a call) or names
 * `name` (NULL: no name). */
static bool expr_effects(const CuExpr *e, const char *name)
{
    if (!e)
        return false;
    if (e->kind == CE_ASSIGN || e->kind == CE_CALL || (e->kind == CE_UNARY && strlen(e->op) > 1))
        return true;
    if (name && e->kind == CE_IDENT && !strcmp(e->name, name))
        return true;
    if (expr_effects(e->c, name) || expr_effects(e->l, name) || expr_effects(e->r, name))
        return true;
    for (int i = 0; i < e->nargs; i++)
        if (expr_effects(e->args[i], name))
            return true;
    return false;
}

/* Whether argument i of call e, for the reference parameter i of fn, is
 * one kad binds: a variable, or an element `a[idx]` of a pointer or array.
 * An element is copied in at the call and back at its end (when fn may
 * assign it), which is C++'s binding provided the binding cannot move and
 * fn cannot reach the element another way: idx has no side effects and
 * names no variable the call passes by reference, and no other argument
 * is a pointer.  Two elements of one array: elem_refs_distinct. */
static bool ref_arg_ok(Lw *L, const CuFunc *fn, const CuExpr *e, int i, const CVal *vals)
{
    const CuExpr *a = e->args[i];
    if (a->kind == CE_IDENT)
        return true;
    if (a->kind != CE_INDEX || !a->l || a->l->kind != CE_IDENT) {
        diag_error(L->d, a->loc, "a reference parameter takes a variable or an element a[i] of an array or pointer "
                                 "named by a variable: copy this value into a local variable and pass that");
        return false;
    }
    if (expr_effects(a->r, NULL)) {
        diag_error(L->d, a->r->loc, "the index of an element passed by reference has a side effect or a call: "
                                    "compute it into a local variable first");
        return false;
    }
    for (int j = 0; j < e->nargs && j < fn->nparams; j++) {
        const CuExpr *b = e->args[j];
        if (j != i && fn->params[j].type->ref && b->kind == CE_IDENT &&
            (expr_effects(a->r, b->name) || !strcmp(a->l->name, b->name))) {
            diag_error(L->d, b->loc, "'%s' is passed by reference and also names the element '%s[...]' passed by "
                                     "reference: the binding would move; pass a copy", b->name, a->l->name);
            return false;
        }
        if (j != i && !fn->params[j].type->ref && vals[j].t && vals[j].t->k == TY_PTR) {
            diag_error(L->d, b->loc, "'%s' receives a pointer and a reference to an element of memory: kad copies "
                                     "the element in and out, which C++ means only if '%s' cannot reach it through "
                                     "the pointer; pass the element's value, or its index", fn->name, fn->name);
            return false;
        }
    }
    return true;
}

/* Two elements of one array passed by reference to one call must be two
 * elements (aliases would see each other's writes, copies do not): an
 * assert, checked where the forward runs. */
static void elem_refs_distinct(Lw *L, const CuFunc *fn, const CuExpr *e, Loc loc)
{
    for (int i = 0; i < e->nargs && i < fn->nparams; i++)
        for (int j = i + 1; j < e->nargs && j < fn->nparams; j++) {
            const CuExpr *a = e->args[i], *b = e->args[j];
            if (!fn->params[i].type->ref || !fn->params[j].type->ref || a->kind != CE_INDEX ||
                b->kind != CE_INDEX || strcmp(a->l->name, b->l->name))
                continue;
            CVal ia = cu_expr(L, a->r), ib = cu_expr(L, b->r);
            if (!ia.v || !ib.v)
                continue;
            CVal ne = cu_binop(L, "!=", ia, ib, loc);
            if (!ne.v)
                continue;
            ValId c = cu_or(L, cu_truth(L, ne, loc), cu_not(L, cu_m(L), loc), loc);
            Inst *in = ir_emit(L->f, L->b, OP_ASSERT, &c, 1, NULL, 0, loc);
            in->sattr = arena_printf(L->a, "%s:%d:%d: '%s' receives '%s[...]' twice by reference, the same element", 
                                     b->loc.file, b->loc.line, b->loc.col, fn->name, a->l->name);
        }
}

/* The first `return` of s in source order (NULL if none); *top: whether it is a statement of
 * s itself (not inside a branch or a loop). */
static const CuStmt *first_return(const CuStmt *s, bool *top, bool at_top)
{
    if (!s)
        return NULL;
    if (s->kind == CS_RETURN) {
        *top = at_top;
        return s;
    }
    const CuStmt *kids[3] = {s->init, s->body, s->els};
    if (s->kind == CS_BLOCK)
        for (int i = 0; i < s->n; i++) {
            const CuStmt *r = first_return(s->list[i], top, at_top);
            if (r)
                return r;
        }
    for (int k = 0; k < 3; k++) {
        const CuStmt *r = first_return(kids[k], top, false);
        if (r)
            return r;
    }
    for (int i = 0; s->kind != CS_BLOCK && i < s->n; i++) {
        const CuStmt *r = first_return(s->list[i], top, false);
        if (r)
            return r;
    }
    return NULL;
}

CVal cu_call_device(Lw *L, const CuFunc *fn, const CuExpr *call_e)
{
    return cu_inline_call(L, fn, call_e, false);
}

/* fn inlined at the call call_e; keep_frame (a lambda): the caller's names stay visible. */
CVal cu_inline_call(Lw *L, const CuFunc *fn, const CuExpr *call_e, bool keep_frame)
{
    Loc loc = call_e->loc;
    if (L->depth > 32) {
        diag_error(L->d, loc, "'%s': device functions nested too deep (recursion is not supported)", fn->name);
        return cu_bad(L);
    }
    if (call_e->nargs != fn->nparams) {
        diag_error(L->d, loc, "'%s' takes %d arguments, %d given", fn->name, fn->nparams, call_e->nargs);
        return cu_bad(L);
    }
    /* arguments in the caller's scope */
    CVal *args = arena_alloc(L->a, sizeof *args * (size_t)(fn->nparams + 1));
    for (int i = 0; i < fn->nparams; i++)
        args[i] = fn->params[i].type->ref ? (CVal){0} : cu_expr(L, call_e->args[i]);
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].type->ref && !ref_arg_ok(L, fn, call_e, i, args)) {
            return cu_bad(L);
        } else if (fn->params[i].type->ref) {
            args[i] = cu_expr(L, call_e->args[i]);
        }
    elem_refs_distinct(L, fn, call_e, loc);
    int env0 = L->env.n, frame0 = L->frame;
    const CuFunc *fn0 = L->fn;
    const CuTy *ret0 = L->ret_ty;
    bool auto0 = L->ret_auto;
    bool deduce = !fn->ret || !strcmp(fn->ret->name, "auto");
    if (deduce) { /* a lambda without `-> T`, `auto f(...)`: the type of its first return */
        bool top = false;
        const CuStmt *r1 = first_return(fn->body, &top, true);
        if (r1 && r1->e && !top) {
            diag_error(L->d, r1->loc, "kad deduces the return type of '%s' from a return at the top of its body, "
                                      "not inside a branch or loop: give it (`-> float` after a lambda's "
                                      "parameters, or the function's type)", fn->name);
            return cu_bad(L);
        }
    }
    ValId m0 = cu_m(L);
    /* template arguments: explicit, then deduced from the arguments */
    Vec(Var) tb = {0};
    for (int i = 0; i < fn->ntparams; i++) {
        const CuTParam *tp = &fn->tparams[i];
        Var v = {.name = tp->name, .loc = tp->loc};
        if (i < call_e->ntargs) {
            const CuTArg *ta = &call_e->targs[i];
            if (tp->is_type && ta->type) {
                v.kind = VK_TYPE;
                v.t = cu_resolve_type(L, ta->type);
            } else if (!tp->is_type && ta->expr) {
                v.kind = VK_VAL;
                CVal c = cu_expr(L, ta->expr);
                v.t = cu_resolve_type(L, tp->type);
                v.val = cu_convert(L, c, v.t, loc);
                if (!v.val.cst)
                    diag_error(L->d, ta->expr->loc, "template argument '%s' must be a constant", tp->name);
            } else {
                diag_error(L->d, loc, "template argument %d of '%s' is of the wrong kind", i + 1, fn->name);
            }
        } else if (tp->is_type) {
            for (int j = 0; j < fn->nparams && !v.t; j++)
                if (!strcmp(fn->params[j].type->name, tp->name) && args[j].t) {
                    const CuTy *at = args[j].t;
                    int np = fn->params[j].type->nptr;
                    if (np == 1 && at->k == TY_PTR)
                        v.t = at->elem;
                    else if (np == 0 && at->k != TY_PTR)
                        v.t = at;
                }
            v.kind = VK_TYPE;
            if (!v.t) {
                diag_error(L->d, loc, "cannot deduce template parameter '%s' of '%s': give it, as %s<float>(...)",
                           tp->name, fn->name, fn->name);
                return cu_bad(L);
            }
        } else {
            diag_error(L->d, loc, "template parameter '%s' of '%s' needs an explicit argument", tp->name, fn->name);
            return cu_bad(L);
        }
        vec_push(L->a, tb, v);
    }
    if (!keep_frame)
        L->frame = L->env.n;
    for (int i = 0; i < tb.n; i++) {
        Var *v = cu_declare(L, tb.v[i].name, tb.v[i].kind, tb.v[i].t, tb.v[i].loc);
        v->val = tb.v[i].val;
    }
    L->fn = fn;
    L->ret_auto = deduce;
    L->ret_ty = deduce ? NULL : cu_resolve_type(L, fn->ret);
    if (!L->ret_ty && !deduce)
        L->ret_ty = cu_scalar_ty(L, TY_VOID, DT_VOID);
    L->depth++;
    for (int i = 0; i < fn->nparams; i++) {
        const CuParam *pr = &fn->params[i];
        const CuTy *pt = cu_resolve_type(L, pr->type);
        if (!pt || !args[i].t)
            continue;
        CVal a = cu_convert(L, args[i], pt, loc);
        const char *pn = pr->name ? pr->name : arena_printf(L->a, "$arg%d", i);
        if (pt->k == TY_STRUCT) {
            cu_declare(L, pn, VK_STRUCT, pt, pr->loc);
            for (int k = 0; k < pt->st->n; k++) {
                Var *fv = cu_declare(L, arena_printf(L->a, "%s.%s", pn, pt->st->fname[k]), VK_VAL, pt->st->fty[k],
                                     pr->loc);
                fv->val = a.f ? a.f[k] : cu_zero(L, pt->st->fty[k], loc);
            }
        } else {
            Var *v = cu_declare(L, pn, VK_VAL, pt, pr->loc);
            v->val = a;
        }
    }
    int retpos = -1;
    if (deduce) {
        retpos = L->env.n;
        cu_declare(L, "$ret", VK_VAL, NULL, fn->loc); /* typed by the first return */
    } else if (L->ret_ty->k != TY_VOID) {
        retpos = L->env.n;
        if (L->ret_ty->k == TY_STRUCT) {
            cu_declare(L, "$ret", VK_STRUCT, L->ret_ty, fn->loc);
            for (int k = 0; k < L->ret_ty->st->n; k++) {
                Var *fv = cu_declare(L, arena_printf(L->a, "$ret.%s", L->ret_ty->st->fname[k]), VK_VAL,
                                     L->ret_ty->st->fty[k], fn->loc);
                fv->val = cu_zero(L, L->ret_ty->st->fty[k], loc);
            }
        } else {
            Var *rv = cu_declare(L, "$ret", VK_VAL, L->ret_ty, fn->loc);
            rv->val = cu_zero(L, L->ret_ty, loc);
        }
    }
    cu_stmt(L, fn->body);
    CVal r = {.t = L->ret_ty ? L->ret_ty : cu_scalar_ty(L, TY_VOID, DT_VOID)};
    if (retpos >= 0 && L->env.v[retpos].t) {
        Var *rvv = &L->env.v[retpos];
        r = rvv->kind == VK_STRUCT ? cu_struct_value(L, rvv, loc) : rvv->val;
    }
    /* reference parameters: copy back */
    CVal *outs = arena_alloc(L->a, sizeof *outs * (size_t)(fn->nparams + 1));
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].type->ref && fn->params[i].name) {
            Var *v = cu_lookup(L, fn->params[i].name);
            outs[i] = v ? cu_var_value(L, v, loc) : (CVal){0};
        }
    L->env.n = env0;
    L->frame = frame0;
    L->fn = fn0;
    L->ret_ty = ret0;
    L->ret_auto = auto0;
    L->depth--;
    cu_set_m(L, m0);
    for (int i = 0; i < fn->nparams; i++)
        if (fn->params[i].type->ref && outs[i].t && outs[i].t->k != TY_CG) {
            /* an element goes back to memory only when fn may have changed it: a const& of an
             * input's element stores nothing */
            const CuExpr *a = call_e->args[i];
            if (a->kind == CE_IDENT ||
                (!fn->params[i].type->is_const && cu_stmt_assigns(L, fn->body, fn->params[i].name)))
                cu_assign(L, a, outs[i], loc);
        }
    return r;
}

/* ---- a thread's own stores, forwarded to its later loads ---- */

/* Whether values a and b are the same computation: one value, or pure instructions of the same
 * op, attributes and type over the same computations (the address of `a[n][c]` lowered twice). */
static bool same_calc(const Func *f, const Inst *const *def, ValId a, ValId b, int depth)
{
    if (a == b)
        return true;
    const Inst *x = def[a], *y = def[b];
    if (!x || !y || depth > 12 || x->op != y->op || !op_info[x->op].pure || x->nres != 1 || y->nres != 1 ||
        x->nregions || y->nregions || x->nargs != y->nargs || x->ival != y->ival || x->fval != y->fval ||
        x->flags != y->flags || !type_eq(f->vals.v[a].ty, f->vals.v[b].ty))
        return false;
    for (int k = 0; k < x->nargs; k++)
        if (!same_calc(f, def, x->args[k], y->args[k], depth + 1))
            return false;
    return true;
}

/* The parameter a pointer value is an offset of (through addptr and broadcast), or 0. */
static ValId ptr_base(const Inst *const *def, ValId p)
{
    for (int n = 0; n < 64 && p; n++) {
        const Inst *d = def[p];
        if (!d)
            return p;
        if (d->op != OP_ADDPTR && d->op != OP_BROADCAST)
            return 0;
        p = d->args[0];
    }
    return 0;
}

typedef struct OwnStore {
    ValId ptr, mask, val, base;
} OwnStore;

/* In CUDA C a thread's loads see its own earlier stores (program order): a load of the address a
 * store of the same block wrote under the same mask, with no other write of that buffer, barrier
 * or atomic between, is the stored value (the masked-off lanes its `other`).  Reading back an
 * output the thread just wrote (`new_cell[n][c]` after storing it) then needs no load of an
 * output, which the backward could not recompute.  repl: the loads' replacements. */
static void forward_block(Func *f, const Inst *const *def, Block *b, ValId *repl)
{
    Vec(OwnStore) st = {0};
    for (int i = 0; i < b->insts.n; i++) {
        Inst *in = &b->insts.v[i];
        for (int k = 0; k < in->nargs; k++)
            while (repl[in->args[k]])
                in->args[k] = repl[in->args[k]];
        for (int r = 0; r < in->nregions; r++)
            forward_block(f, def, in->regions[r], repl);
        if (in->op == OP_STORE) {
            ValId base = ptr_base(def, in->args[0]);
            int w = 0; /* another address of the same buffer may be this one: forget those */
            for (int k = 0; k < st.n; k++)
                if (base && st.v[k].base != base)
                    st.v[w++] = st.v[k];
            st.n = w;
            if (base)
                vec_push(f->a, st, ((OwnStore){in->args[0], in->flags & IF_HAS_MASK ? in->args[2] : 0, in->args[1],
                                                base}));
            continue;
        }
        if (in->op == OP_LOAD && st.n) {
            ValId m = in->flags & IF_HAS_MASK ? in->args[1] : 0;
            for (int k = st.n - 1; k >= 0; k--) {
                const OwnStore *o = &st.v[k];
                if (!same_calc(f, def, o->ptr, in->args[0], 0) || (m != o->mask && !(m && o->mask &&
                                                                                   same_calc(f, def, m, o->mask, 0))) ||
                    !type_eq(f->vals.v[o->val].ty, f->vals.v[in->res[0]].ty))
                    continue;
                if (!m) {
                    repl[in->res[0]] = o->val;
                } else { /* where(mask, stored, other): the load's lanes, and its masked-off ones */
                    ValId other = in->flags & IF_HAS_OTHER ? in->args[2] : 0;
                    if (!other)
                        break; /* (a masked load without `other`: left as it is) */
                    in->op = OP_WHERE;
                    in->args[0] = m;
                    in->args[1] = o->val;
                    in->args[2] = other;
                    in->nargs = 3;
                    in->flags = 0;
                }
                break;
            }
            continue;
        }
        if (ir_inst_writes(in)) /* an atomic, a barrier, a region that writes */
            st.n = 0;
    }
}

static void forward_own_stores(Func *f)
{
    const Inst **def = arena_alloc(f->a, sizeof *def * (size_t)(f->vals.n + 1));
    ValId *repl = arena_alloc(f->a, sizeof *repl * (size_t)(f->vals.n + 1));
    ir_index_defs(f->body, def);
    forward_block(f, (const Inst *const *)def, f->body, repl);
}

/* ---- the kernel ---- */

/* The value of "NAME=VALUE" in a template-argument string, or NULL. */
const char *cu_targ(Lw *L, const char *name)
{
    const char *s = L->targs;
    size_t n = strlen(name);
    while (s && *s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > n && !strncmp(s, name, n) && s[n] == '=')
            return arena_strndup(L->a, s + n + 1, len - n - 1);
        s = e ? e + 1 : NULL;
    }
    return NULL;
}

static const CuTy *sig_type(Lw *L, const char *s)
{
    static const struct { const char *n; int k; Dtype dt; } m[] = {
        {"fp32", TY_FLOAT, DT_F32}, {"float", TY_FLOAT, DT_F32}, {"fp64", TY_FLOAT, DT_F64},
        {"double", TY_FLOAT, DT_F64}, {"fp16", TY_FLOAT, DT_F16}, {"half", TY_FLOAT, DT_F16},
        {"bf16", TY_FLOAT, DT_BF16}, {"i32", TY_INT, DT_I32}, {"int", TY_INT, DT_I32}, {"i64", TY_INT, DT_I64},
        {"u32", TY_INT, DT_U32}, {"u64", TY_INT, DT_U64},
    };
    for (size_t k = 0; k < sizeof m / sizeof *m; k++)
        if (!strcmp(s, m[k].n))
            return cu_scalar_ty(L, m[k].k, m[k].dt);
    return cu_base_type(L, s, (Loc){"<sig>", 1, 1});
}

Func *cu_lower(Arena *a, Diags *d, CuUnit **units, int nunits, const char *name, const CuSpec *spec)
{
    Lw Lv = {.a = a, .d = d, .units = units, .nunits = nunits, .targs = spec->targs};
    Lw *L = &Lv;
    const CuFunc *fn = cu_find_func(L, name);
    Loc nl = {"<kernel>", 1, 1};
    if (!fn && cu_report_broken(L, name, (Loc){0}))
        return NULL;
    if (!fn || !fn->is_global) {
        Buf b = {.a = a};
        for (int u = 0; u < nunits; u++)
            for (int i = 0; i < units[u]->funcs.n; i++)
                if (units[u]->funcs.v[i]->is_global)
                    buf_printf(&b, "%s%s", b.len ? ", " : "", units[u]->funcs.v[i]->name);
        diag_error(d, fn ? fn->loc : nl, "no __global__ function '%s' in the file (its kernels: %s)", name,
                   b.len ? buf_str(&b) : "none");
        return NULL;
    }
    for (int k = 0; k < 3; k++)
        L->bdim[k] = spec->block[k] > 0 ? spec->block[k] : 1;
    L->nl = L->bdim[0] * L->bdim[1] * L->bdim[2];
    if (L->nl > 4096) {
        diag_error(d, fn->loc, "a block of %d threads: kad lowers blocks of at most 4096 threads", L->nl);
        return NULL;
    }
    L->lp = 1;
    while (L->lp < L->nl)
        L->lp *= 2;
    L->warp = 32;
    const char *w = strrchr(fn->loc.file, '.');
    if (w && !strcmp(w, ".hip"))
        L->warp = 64;
    Func *f = ir_func_new(a, fn->name, fn->loc);
    L->f = f;
    L->b = L->top = f->body;
    L->fn = fn;
    L->ret_ty = cu_scalar_ty(L, TY_VOID, DT_VOID);
    L->tru = ir_const_int(f, f->body, type_scalar(DT_I1), 1, fn->loc);
    L->fls = ir_const_int(f, f->body, type_scalar(DT_I1), 0, fn->loc);
    /* the file-scope constants, visible from every function (cu_lookup); one that does not lower
     * (it calls host code, say) is left out: a kernel that uses it gets an unknown name */
    L->g0 = L->env.n;
    for (int u = 0; u < nunits; u++)
        for (int i = 0; i < units[u]->consts.n; i++) {
            Diags quiet;
            diag_init(&quiet, a);
            L->d = &quiet;
            int n0 = L->env.n;
            cu_declare_stmt(L, units[u]->consts.v[i]);
            L->d = d;
            if (!quiet.nerrors)
                continue;
            L->env.n = n0;
            const CuStmt *cs = units[u]->consts.v[i];
            for (int k = 0; k < cs->ndecls; k++) /* kept, so that a kernel using one is told why */
                vec_push(a, L->bad_consts, ((CuBroken){cs->decls[k].name, quiet.list.v, quiet.list.n ? 1 : 0}));
        }
    L->g1 = L->env.n;
    /* template parameters: --sig NAME=VALUE, else the one explicit instantiation */
    const CuInst *inst = NULL;
    int ninst = 0;
    for (int u = 0; u < nunits; u++)
        for (int i = 0; i < units[u]->insts.n; i++)
            if (!strcmp(units[u]->insts.v[i].name, name))
                inst = &units[u]->insts.v[i], ninst++;
    int before = d->nerrors;
    for (int i = 0; i < fn->ntparams; i++) {
        const CuTParam *tp = &fn->tparams[i];
        const char *given = tp->name ? cu_targ(L, tp->name) : NULL;
        Var v = {.name = tp->name, .loc = tp->loc};
        if (given) {
            if (tp->is_type) {
                v.kind = VK_TYPE;
                v.t = sig_type(L, given);
            } else {
                v.kind = VK_VAL;
                v.t = cu_resolve_type(L, tp->type);
                char *end;
                long long x = strtoll(given, &end, 0);
                if (*end || end == given) {
                    if (!strcmp(given, "true") || !strcmp(given, "false"))
                        x = given[0] == 't';
                    else
                        diag_error(d, tp->loc, "template parameter '%s' takes an integer, --sig gives '%s'", tp->name,
                                   given);
                }
                v.val = cu_const_int(L, v.t, x, tp->loc);
            }
        } else if (inst && ninst == 1 && i < inst->ntargs) {
            const CuTArg *ta = &inst->targs[i];
            if (tp->is_type && ta->type) {
                v.kind = VK_TYPE;
                v.t = cu_resolve_type(L, ta->type);
            } else if (!tp->is_type && ta->expr) {
                v.kind = VK_VAL;
                v.t = cu_resolve_type(L, tp->type);
                int64_t x = 0;
                if (!cu_const_eval(L, ta->expr, &x))
                    diag_error(d, ta->expr->loc, "template argument '%s' must be an integer constant", tp->name);
                v.val = cu_const_int(L, v.t, x, tp->loc);
            } else
                diag_error(d, inst->loc, "template argument %d is of the wrong kind", i + 1);
        } else {
            diag_error(d, tp->loc,
                       ninst > 1 ? "template parameter '%s': the file instantiates '%s' several times; choose one "
                                   "with --sig %s=..."
                                 : "template parameter '%s' of '%s' has no value: give it with --sig %s=...",
                       tp->name, name, tp->name);
            continue;
        }
        if (!tp->is_type && v.t) {
            ConstParam cp = {.name = tp->name, .value = arena_printf(a, "%lld", (long long)v.val.ci), .pos = 0};
            vec_push(a, f->consts, cp);
        }
        Var *dv = cu_declare(L, v.name, v.kind, v.t, v.loc);
        dv->val = v.val;
    }
    if (d->nerrors != before)
        return NULL;
    /* lanes: tid = arange(0, Lp); lanes >= nl are off */
    int32_t s = L->lp;
    Inst *ar = ir_emit(f, f->body, OP_ARANGE, NULL, 0, (Type[]){type_tile(DT_I32, 1, &s)}, 1, fn->loc);
    ar->ival = 0;
    L->tid = ar->res[0];
    f->vals.v[L->tid].name = "tid";
    if (L->nl < L->lp)
        L->active = cu_op2(L, OP_LT, L->tid, cu_cint(L, DT_I32, L->nl, fn->loc), fn->loc);
    if (L->nl < L->lp && L->nl % L->warp == 0)
        cu_warp_mark(L, L->active, CU_W_UNIFORM); /* whole warps are on or off */
    else
        L->active = L->tru;
    Var *mv = cu_declare(L, "$m", VK_VAL, cu_ty_bool(L), fn->loc);
    mv->val = (CVal){.t = cu_ty_bool(L), .v = L->active};
    mv->decl_m = L->active;
    /* parameters: pointers and numbers; structs by value become one parameter per member */
    for (int i = 0; i < fn->nparams; i++) {
        const CuParam *pr = &fn->params[i];
        const CuTy *t = cu_resolve_type(L, pr->type);
        if (!t || !pr->name)
            continue;
        if (pr->type->ref) {
            diag_error(d, pr->loc, "a kernel's parameter cannot be a reference");
            continue;
        }
        if (t->k == TY_STRUCT) {
            cu_declare(L, pr->name, VK_STRUCT, t, pr->loc);
            for (int k = 0; k < t->st->n; k++) {
                const CuTy *ft = t->st->fty[k];
                if (ft->k == TY_STRUCT) {
                    diag_error(d, pr->loc, "a kernel's struct parameter with nested structs is not supported");
                    continue;
                }
                const char *pn = arena_printf(a, "%s_%s", pr->name, t->st->fname[k]);
                ValId pv = ir_param_add(f, type_scalar(ft->dt), pn, pr->loc);
                Var *fv = cu_declare(L, arena_printf(a, "%s.%s", pr->name, t->st->fname[k]), VK_VAL, ft, pr->loc);
                fv->val = (CVal){.t = ft, .v = pv};
            }
            continue;
        }
        if (t->k == TY_ACC) {
            /* a PackedTensorAccessor: its data pointer `NAME`, then NAME_size<k> and NAME_stride<k> */
            const CuTy *ptr = cu_ptr_ty(L, t->elem);
            Var *av = cu_declare(L, pr->name, VK_ACC, t, pr->loc);
            av->val = (CVal){.t = ptr, .v = ir_param_add(f, cu_ir_type(L, ptr, false), pr->name, pr->loc)};
            const CuTy *it = cu_scalar_ty(L, TY_INT, t->dt);
            for (int side = 0; side < 2; side++)
                for (int k = 0; k < t->cub_threads; k++) {
                    const char *what = side ? "stride" : "size";
                    ValId pv = ir_param_add(f, type_scalar(t->dt), arena_printf(a, "%s_%s%d", pr->name, what, k),
                                            pr->loc);
                    Var *fv = cu_declare(L, arena_printf(a, "%s.%s%d", pr->name, what, k), VK_VAL, it, pr->loc);
                    fv->val = (CVal){.t = it, .v = pv};
                }
            continue;
        }
        if (t->k == TY_VOID) {
            diag_error(d, pr->loc, "a void parameter");
            continue;
        }
        if (t->k == TY_PTR && t->elem->k == TY_STRUCT) {
            for (int k = 0; k < t->elem->st->n; k++)
                if (t->elem->st->fty[k]->k == TY_STRUCT || t->elem->st->fty[k]->dt != t->dt)
                    diag_error(d, pr->loc, "a pointer to struct '%s' needs members of one number type",
                               t->elem->st->name);
        }
        ValId pv = ir_param_add(f, cu_ir_type(L, t, false), pr->name, pr->loc);
        Var *v = cu_declare(L, pr->name, VK_VAL, t, pr->loc);
        v->val = (CVal){.t = t, .v = pv};
    }
    if (d->nerrors != before)
        return NULL;
    L->frame = 0;
    cu_stmt(L, fn->body);
    if (d->nerrors != before)
        return NULL;
    forward_own_stores(f);
    return f;
}
