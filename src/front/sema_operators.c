/* sema_operators.c -- the operations sema.c hands over (front.h, the
 * lower_* functions): Python's binary and unary operators, comparisons,
 * `and`/`or`, subscripts, attributes (of values, dtypes and block types),
 * conversions to a value, a dtype or a truth value; pointer arithmetic
 * (addptr).
 *
 * Constant operands are folded by sema_const.c; runtime ones are typed
 * with Triton's semantics through sema_ops.c's toolkit (promotion,
 * broadcasting, materialization), which keeps the IR explicit (see
 * sema_ops.c's invariants).
 *
 * Requires: L->f and L->b set by sema.c.  Guarantees: one located error,
 * then SV_ERROR (or ValId 0); no output and no global state.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "front/front.h"

/* ------------------------------------------------------------------ */
/* Binary operators on values                                          */
/* ------------------------------------------------------------------ */

/* ptr + int, int + ptr, ptr - int -> addptr. */
static SVal pointer_arith(Lower *L, BinOp op, SVal x, SVal y, const char *ctx, Loc loc)
{
    const char *sym = sema_binop_sym[op];
    Opnd a, b;
    if (!ops_opnd(L, x, false, &a, ctx, loc) || !ops_opnd(L, y, false, &b, ctx, loc))
        return sval_error();
    bool pa = a.ty.dt == DT_PTR, pb = b.ty.dt == DT_PTR;
    if (op != BO_ADD && op != BO_SUB)
        return ops_fail(L, loc,
                        "unsupported operand types for '%s': %s and %s (pointers only support + and - "
                        "of integer offsets)", sym, ops_tystr(L, a.ty), ops_tystr(L, b.ty));
    if (pa && pb)
        return ops_fail(L, loc, op == BO_ADD ? "cannot add two pointers (%s and %s)"
                                             : "pointer difference is not supported (%s - %s)",
                        ops_tystr(L, a.ty), ops_tystr(L, b.ty));
    if (op == BO_SUB && pb)
        return ops_fail(L, loc, "cannot subtract a pointer from %s", ops_tystr(L, a.ty));
    Opnd *p = pa ? &a : &b, *o = pa ? &b : &a;
    if (!dtype_is_int((Dtype)o->ty.dt))
        return ops_fail(L, loc, "pointer offsets must be integers, got %s in '%s'", ops_tystr(L, o->ty), sym);
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (!sema_opnd_shape(L, &a, &b, &rank, shape, ctx, loc))
        return sval_error();
    Dtype odt = (Dtype)o->ty.dt;
    if (op == BO_SUB && ops_unsigned(odt) && !o->is_const)
        return ops_fail(L, loc, "subtracting an unsigned offset (%s) from a pointer is not supported; cast "
                        "the offset to a signed type", ops_tystr(L, o->ty));
    if (op == BO_SUB && o->is_const) {
        if (o->c.i == INT64_MIN)
            return ops_overflow(L, sym, loc);
        o->c.i = -o->c.i;
        odt = const_dtype(o->c);
    }
    /* addptr treats offsets as signed: widen unsigned ones (as Triton). */
    if (ops_unsigned(odt) && dtype_bits(odt) < 64)
        odt = DT_I64;
    ValId pv = ops_materialize(L, p, DT_PTR, rank, shape, loc);
    ValId ov = ops_materialize(L, o, odt, rank, shape, loc);
    if (!pv || !ov)
        return sval_error();
    if (op == BO_SUB && !o->is_const) /* constants were negated above */
        ov = ops_emit1(L, OP_NEG, ops_type(L, ov), ov, loc);
    return sval_value(ops_emit2(L, OP_ADDPTR, ops_type(L, pv), pv, ov, loc));
}

static SVal binop_values(Lower *L, BinOp op, SVal x, SVal y, Loc loc)
{
    const char *sym = sema_binop_sym[op];
    char ctx[16];
    snprintf(ctx, sizeof ctx, "'%s'", sym);
    if (op == BO_MATMUL)
        return ops_fail(L, loc, "'@' is not supported on tiles; use tl.dot(a, b)");
    if ((x.kind == SV_VALUE && ops_type(L, x.v).dt == DT_PTR) ||
        (y.kind == SV_VALUE && ops_type(L, y.v).dt == DT_PTR))
        return pointer_arith(L, op, x, y, ctx, loc);
    Opnd a, b;
    if (!ops_opnd(L, x, true, &a, ctx, loc) || !ops_opnd(L, y, true, &b, ctx, loc))
        return sval_error();
    bool divmod = op == BO_DIV || op == BO_FLOORDIV || op == BO_MOD;
    Dtype dt = ops_unify_dtype(L, &a, &b, divmod, ctx, loc);
    if (dt == DT_VOID)
        return sval_error();
    /* Triton's __rshift__/__rrshift__ pick ashr or lshr by the tensor
     * operand's dtype before promotion. */
    Dtype shifted = (Dtype)(a.is_const ? b.ty.dt : a.ty.dt);
    switch (op) {
    case BO_DIV:
        if (dtype_is_int(dt))
            dt = DT_F32; /* int / int is fp32 true division */
        break;
    case BO_FLOORDIV:
        if (dtype_is_float(dt))
            return ops_fail(L, loc, "'//' is not supported on floating-point tiles (Triton only has integer "
                            "floor division); use tl.floor(a / b)");
        break;
    case BO_POW:
        if (!dtype_is_float(dt))
            return ops_fail(L, loc, "'**' on integer tiles is not supported (Triton has no integer power); "
                            "cast to a float type or use a constexpr exponent loop");
        break;
    case BO_LSHIFT:
    case BO_RSHIFT:
    case BO_BITAND:
    case BO_BITOR:
    case BO_BITXOR:
        if (!dtype_is_int(dt))
            return ops_fail(L, loc, "bitwise '%s' requires integer operands, got %s and %s", sym,
                            a.is_const ? ops_describe(L, x) : ops_tystr(L, a.ty),
                            b.is_const ? ops_describe(L, y) : ops_tystr(L, b.ty));
        if (op == BO_RSHIFT && ops_unsigned(shifted) != ops_unsigned(dt))
            return ops_fail(L, loc, "'>>' of %s by %s: the operands promote to %s, which changes the shift's "
                            "signedness; cast them to one type first",
                            ops_tystr(L, a.ty), ops_tystr(L, b.ty), dtype_name(dt));
        break;
    default: break;
    }
    ValId va, vb;
    if (!sema_materialize_pair(L, &a, &b, dt, ctx, loc, &va, &vb))
        return sval_error();
    static const OpKind ops[] = {OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_DIV, OP_REM, OP_POW,
                                 OP_SHL, OP_SHR, OP_AND, OP_OR, OP_XOR};
    return sval_value(ops_emit2(L, ops[op], ops_type(L, va), va, vb, loc));
}

/* ------------------------------------------------------------------ */
/* The interface (front.h, "sema_operators.c")                          */
/* ------------------------------------------------------------------ */

/* Attributes of a dtype constant. */
static SVal dtype_attr(Lower *L, SVal x, const char *name, Loc loc)
{
    Dtype dt = x.c.dt;
    if (x.c.brank) {
        /* block_type: element_ty and scalar are the elements' dtype, shape
         * and numel the tile's; a block pointer's pointer_type: element_ty
         * is the block_type, scalar the pointer_type itself (Triton's) */
        if (x.c.of_block) {
            if (strcmp(name, "element_ty") == 0) {
                SVal b = x;
                b.c.dt = (Dtype)x.c.i;
                b.c.i = 0;
                b.c.of_block = false;
                return b;
            }
            if (strcmp(name, "scalar") == 0)
                return x;
            if (strcmp(name, "is_ptr") == 0 || strcmp(name, "is_block") == 0)
                return sval_method(L, x, name);
            return ops_fail(L, loc, "%s has no attribute '%s' in kad", ops_describe(L, x), name);
        }
        if (strcmp(name, "element_ty") == 0 || strcmp(name, "scalar") == 0)
            return sema_dtype_unblock(x);
        if (strcmp(name, "shape") == 0 || strcmp(name, "numel") == 0) {
            SVal e[KAD_MAX_RANK];
            int64_t numel = 1;
            for (int i = 0; i < x.c.brank; i++) {
                e[i] = sval_int(x.c.bshape[i]);
                numel *= x.c.bshape[i];
            }
            return name[0] == 's' ? sval_tuple(L, e, x.c.brank) : sval_int(numel);
        }
        if (strcmp(name, "is_block") == 0)
            return sval_method(L, x, name);
        return ops_fail(L, loc, "%s has no attribute '%s' in kad", ops_describe(L, x), name);
    }
    if (strcmp(name, "element_ty") == 0) {
        if (dt != DT_PTR)
            return ops_fail(L, loc, "%s has no attribute 'element_ty' (it is not a pointer type)",
                            ops_describe(L, x));
        return sval_dtype((Dtype)x.c.i);
    }
    if (strcmp(name, "scalar") == 0)
        return x;
    if (strcmp(name, "primitive_bitwidth") == 0)
        return sval_int(dtype_bits(dt));
    if (strcmp(name, "int_bitwidth") == 0 && dtype_is_int(dt))
        return sval_int(dtype_bits(dt));
    if (strcmp(name, "name") == 0) {
        /* Triton's dtype.name: "fp32", "bf16" for floats, "int32", "uint8" for ints */
        if (dt != DT_PTR && dt != DT_VOID)
            return sval_str(dtype_is_float(dt) ? dtype_name(dt) : dtype_triton_name(dt));
    }
    if (strncmp(name, "is_", 3) == 0)
        return sval_method(L, x, name);
    return ops_fail(L, loc, "%s has no attribute '%s' in kad", ops_describe(L, x), name);
}

SVal lower_attr(Lower *L, SVal x, const char *name, Loc loc)
{
    switch (x.kind) {
    case SV_ERROR: return x;
    case SV_MODULE: return lower_global(L, arena_printf(L->a, "%s.%s", x.qual, name), loc);
    case SV_CONST:
        if (x.c.kind == CK_DTYPE)
            return dtype_attr(L, x, name, loc);
        break;
    case SV_VALUE: {
        Type t = ops_type(L, x.v);
        if (strcmp(name, "dtype") == 0 || (strcmp(name, "type") == 0 && t.rank == 0))
            return t.dt == DT_PTR ? sval_ptr_dtype((Dtype)t.elem) : sval_dtype((Dtype)t.dt);
        if (strcmp(name, "type") == 0)
            return sval_block_type(t, false);
        if (strcmp(name, "shape") == 0) {
            SVal e[KAD_MAX_RANK];
            for (int i = 0; i < t.rank; i++)
                e[i] = sval_int(t.shape[i]);
            return sval_tuple(L, e, t.rank);
        }
        if (strcmp(name, "numel") == 0)
            return sval_int(type_numel(t));
        if (strcmp(name, "T") == 0) {
            if (t.rank != 2)
                return ops_fail(L, loc, "'.T' requires a 2-D tile, got %s", ops_tystr(L, t));
            return sval_value(ops_permute(L, x.v, (const int32_t[]){1, 0}, loc));
        }
        if (builtin_is_method(name))
            return sval_method(L, x, name);
        return ops_fail(L, loc, "'x.%s' (attribute of a %s tensor) is not supported by kad yet", name,
                        ops_tystr(L, t));
    }
    case SV_BLOCKPTR:
        if (sval_is_tensor_desc(x)) {
            if (strcmp(name, "load") == 0 || strcmp(name, "store") == 0)
                return sval_method(L, x, name);
            if (strcmp(name, "block_shape") == 0)
                return x.elts[BP_BLOCK];
            if (strcmp(name, "shape") == 0)
                return x.elts[BP_SHAPE];
            if (strcmp(name, "strides") == 0)
                return x.elts[BP_STRIDES];
            if (strcmp(name, "dtype") == 0)
                return sval_dtype((Dtype)ops_type(L, x.elts[BP_BASE].v).elem);
            if (!strncmp(name, "atomic_", 7) || !strcmp(name, "gather") || !strcmp(name, "scatter"))
                return ops_fail(L, loc, "'desc.%s' (tensor descriptor %s) is not supported by kad yet", name,
                                name[0] == 'a' ? "reductions" : "gathers and scatters");
            break;
        }
        if (strcmp(name, "advance") == 0)
            return sval_method(L, x, name);
        if (strcmp(name, "dtype") == 0 || strcmp(name, "type") == 0) {
            /* Triton's pointer_type(block_type(elem, block_shape)) */
            Type t = {.dt = DT_PTR, .elem = ops_type(L, x.elts[BP_BASE].v).elem};
            const SVal *bs = &x.elts[BP_BLOCK];
            t.rank = bs->kind == SV_TUPLE && bs->n <= KAD_MAX_RANK ? bs->n : 0;
            for (int i = 0; i < t.rank; i++)
                t.shape[i] = bs->elts[i].kind == SV_CONST ? (int32_t)bs->elts[i].c.i : 0;
            return sval_block_type(t, true);
        }
        break;
    default: break;
    }
    return ops_fail(L, loc, "%s has no attribute '%s'", ops_describe(L, x), name);
}

SVal lower_binop(Lower *L, BinOp op, SVal x, SVal y, Loc loc)
{
    if (x.kind == SV_ERROR || y.kind == SV_ERROR)
        return sval_error();
    if (x.kind == SV_VALUE || y.kind == SV_VALUE)
        return binop_values(L, op, x, y, loc);
    return sema_fold_binop(L, op, x, y, loc);
}

SVal lower_unop(Lower *L, UnOp op, SVal x, Loc loc)
{
    if (x.kind == SV_ERROR)
        return x;
    if (op == UO_NOT && x.kind != SV_VALUE)
        return sval_bool(!sval_truthy(x));
    if (x.kind == SV_CONST && sval_is_num(x)) {
        switch (op) {
        case UO_POS: return x.c.kind == CK_BOOL ? sval_int(x.c.i) : x;
        case UO_NEG:
            if (x.c.kind == CK_FLOAT)
                return sval_float(-x.c.f);
            if (x.c.i == INT64_MIN)
                return ops_overflow(L, "-", loc);
            return sval_int(-x.c.i);
        case UO_INVERT:
            if (x.c.kind == CK_FLOAT)
                return ops_fail(L, loc, "bad operand type for unary '~': float");
            return sval_int(~x.c.i);
        default: break;
        }
    }
    if (x.kind != SV_VALUE) {
        static const char *const sym[] = {"-", "+", "~", "not"};
        return ops_fail(L, loc, "bad operand type for unary '%s': %s", sym[op], ops_describe(L, x));
    }
    Type t = ops_type(L, x.v);
    switch (op) {
    case UO_POS: return x;
    case UO_NEG:
        if (t.dt == DT_PTR)
            return ops_fail(L, loc, "cannot negate a pointer (%s)", ops_tystr(L, t));
        if (dtype_is_fp8((Dtype)t.dt))
            return ops_fail(L, loc, "'-' on %s values is computed in fp8 by Triton, which kad does not model; "
                            "convert with .to(tl.float32) first", dtype_name((Dtype)t.dt));
        return sval_value(ops_emit1(L, OP_NEG, t, x.v, loc));
    case UO_INVERT:
        if (!dtype_is_int((Dtype)t.dt))
            return ops_fail(L, loc, "'~' requires an integer or boolean tile, got %s", ops_tystr(L, t));
        return sval_value(ops_emit1(L, OP_NOT, t, x.v, loc));
    case UO_NOT:
        if (t.dt != DT_I1)
            return ops_fail(L, loc,
                            "'not' requires a boolean (i1) value, got %s; compare explicitly (x == 0)",
                            ops_tystr(L, t));
        return sval_value(ops_emit1(L, OP_NOT, t, x.v, loc));
    }
    return sval_error();
}

SVal lower_compare(Lower *L, CmpOp op, SVal x, SVal y, Loc loc)
{
    if (x.kind == SV_ERROR || y.kind == SV_ERROR)
        return sval_error();
    if (x.kind != SV_VALUE && y.kind != SV_VALUE)
        return ops_fold_compare(L, op, x, y, loc);
    if (op == CO_IS || op == CO_ISNOT) {
        /* a tensor is never None (nor any constant) */
        if (sval_is_none(x) || sval_is_none(y) || x.kind != y.kind)
            return sval_bool(op == CO_ISNOT);
        return ops_fail(L, loc, "'%s' between tensors is not supported", sema_cmp_sym[op]);
    }
    if (op == CO_IN || op == CO_NOTIN)
        return ops_fail(L, loc, "'%s' is not supported on tensors", sema_cmp_sym[op]);
    char ctx[16];
    snprintf(ctx, sizeof ctx, "'%s'", sema_cmp_sym[op]);
    Opnd a, b;
    if (!ops_opnd(L, x, false, &a, ctx, loc) || !ops_opnd(L, y, false, &b, ctx, loc))
        return sval_error();
    if (a.ty.dt == DT_PTR || b.ty.dt == DT_PTR)
        return ops_fail(L, loc, "comparing pointers is not supported by kad yet (%s %s %s)",
                        ops_tystr(L, a.ty), sema_cmp_sym[op], ops_tystr(L, b.ty));
    ValId va, vb;
    if (!sema_materialize_pair(L, &a, &b, ops_unify_dtype(L, &a, &b, false, ctx, loc), ctx, loc, &va, &vb))
        return sval_error();
    static const OpKind ops[] = {OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE};
    Type t = ops_type(L, va);
    return sval_value(ops_emit2(L, ops[op], type_tile(DT_I1, t.rank, t.shape), va, vb, loc));
}

SVal lower_boolop(Lower *L, BoolOpKind op, SVal x, SVal y, Loc loc)
{
    if (x.kind == SV_ERROR || y.kind == SV_ERROR)
        return sval_error();
    bool is_and = op == BL_AND;
    if (x.kind != SV_VALUE && y.kind != SV_VALUE) /* Python: returns an operand */
        return (sval_truthy(x) == is_and) ? y : x;
    /* A constant operand decides or drops out, as in Triton's visit_BoolOp. */
    if (x.kind != SV_VALUE || y.kind != SV_VALUE) {
        SVal k = x.kind == SV_VALUE ? y : x, v = x.kind == SV_VALUE ? x : y;
        if (k.kind == SV_TUPLE || k.kind == SV_CONST || sval_is_none(k)) {
            if (sval_truthy(k) != is_and)
                return sval_bool(!is_and);
            if (ops_type(L, v.v).dt != DT_I1)
                return ops_fail(L, loc, "'%s' requires boolean (i1) operands, got %s; use a comparison",
                                is_and ? "and" : "or", ops_tystr(L, ops_type(L, v.v)));
            return v;
        }
        return ops_fail(L, loc, "'%s' of %s and %s is not supported", is_and ? "and" : "or",
                        ops_describe(L, x), ops_describe(L, y));
    }
    Type tx = ops_type(L, x.v), ty = ops_type(L, y.v);
    if (tx.dt != DT_I1 || ty.dt != DT_I1)
        return ops_fail(L, loc,
                        "'%s' requires boolean (i1) operands, got %s and %s; use a comparison or '%s'",
                        is_and ? "and" : "or", ops_tystr(L, tx), ops_tystr(L, ty), is_and ? "&" : "|");
    ValId a, b;
    if (!ops_unify2(L, x, y, false, false, is_and ? "'and'" : "'or'", loc, &a, &b))
        return sval_error();
    return sval_value(ops_emit2(L, is_and ? OP_AND : OP_OR, ops_type(L, a), a, b, loc));
}

SVal lower_subscript(Lower *L, SVal x, const SVal *idx, int n, Loc loc)
{
    if (x.kind == SV_ERROR)
        return x;
    for (int i = 0; i < n; i++)
        if (idx[i].kind == SV_ERROR)
            return sval_error();
    if (x.kind == SV_TUPLE) {
        if (n != 1)
            return ops_fail(L, loc, "tuples take exactly one index, got %d", n);
        if (idx[0].kind == SV_SLICE)
            return x;
        if (!sval_is_int(idx[0]))
            return ops_fail(L, loc, "tuple indices must be constexpr ints, got %s", ops_describe(L, idx[0]));
        int64_t i = idx[0].c.i;
        if (i < 0)
            i += x.n;
        if (i < 0 || i >= x.n)
            return ops_fail(L, loc, "tuple index %lld is out of range for a tuple of %d elements",
                            (long long)idx[0].c.i, x.n);
        return x.elts[i];
    }
    if (x.kind != SV_VALUE)
        return ops_fail(L, loc, "%s is not subscriptable", ops_describe(L, x));
    /* Triton's tensor.__getitem__: None inserts an axis at its position;
     * ':' keeps an axis. */
    Type t = ops_type(L, x.v);
    int kept = 0, added = 0;
    for (int i = 0; i < n; i++) {
        if (sval_is_none(idx[i]))
            added++;
        else if (idx[i].kind == SV_SLICE)
            kept++;
        else
            return ops_fail(L, loc, "tile indexing supports only None and ':', got %s",
                            ops_describe(L, idx[i]));
    }
    if (kept > t.rank)
        return ops_fail(L, loc, "too many indices for %s: %d ':' for %d axes", ops_tystr(L, t), kept, t.rank);
    if (t.rank + added > KAD_MAX_RANK)
        return ops_fail(L, loc, "indexing would give a tile of rank %d (kad allows up to %d axes)",
                        t.rank + added, KAD_MAX_RANK);
    ValId v = x.v;
    for (int i = 0; i < n; i++)
        if (sval_is_none(idx[i]))
            v = ops_expand_dims(L, v, i, loc);
    return sval_value(v);
}

ValId lower_value(Lower *L, SVal x, Loc loc)
{
    if (x.kind == SV_ERROR)
        return 0;
    if (x.kind == SV_VALUE)
        return x.v;
    if (sval_is_num(x))
        return ops_emit_const(L, x.c, type_scalar(const_dtype(x.c)), loc);
    diag_error(L->d, loc, "expected a tensor or scalar, got %s", ops_describe(L, x));
    return 0;
}

ValId lower_convert(Lower *L, ValId v, Type ty, Loc loc)
{
    if (!v)
        return 0;
    Type t = ops_type(L, v);
    if (type_eq(t, ty))
        return v;
    if (t.dt == DT_PTR || ty.dt == DT_PTR) {
        if (t.dt != ty.dt || t.elem != ty.elem) {
            diag_error(L->d, loc, "cannot convert a value of type %s to %s", ops_tystr(L, t),
                       ops_tystr(L, ty));
            return 0;
        }
    }
    int rank;
    int32_t shape[KAD_MAX_RANK];
    if (t.rank > ty.rank || !ops_bcast_shape(t.rank, t.shape, ty.rank, ty.shape, &rank, shape) ||
        !type_same_shape(ty, type_with_shape(ty, rank, shape))) {
        diag_error(L->d, loc, "cannot convert a value of type %s to %s", ops_tystr(L, t), ops_tystr(L, ty));
        return 0;
    }
    if (ty.dt != DT_PTR)
        v = ops_cast(L, v, (Dtype)ty.dt, loc);
    return ops_bcast_to(L, v, ty.rank, ty.shape, loc);
}

bool lower_truth(Lower *L, SVal x, bool *is_const, bool *cval, ValId *v, Loc loc)
{
    *is_const = false, *cval = false, *v = 0;
    if (x.kind == SV_ERROR)
        return false;
    if (x.kind != SV_VALUE) {
        if (x.kind == SV_SLICE) {
            diag_error(L->d, loc, "a slice cannot be a condition");
            return false;
        }
        *is_const = true;
        *cval = sval_truthy(x);
        return true;
    }
    Type t = ops_type(L, x.v);
    if (t.rank != 0) {
        diag_error(L->d, loc, "condition must be a scalar, got %s", ops_tystr(L, t));
        return false;
    }
    if (t.dt == DT_PTR) {
        diag_error(L->d, loc, "a pointer cannot be a condition");
        return false;
    }
    *v = ops_cast(L, x.v, DT_I1, loc);
    return true;
}

