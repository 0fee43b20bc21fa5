/* sema_memory.c -- the builtins that make tiles and touch memory:
 * tl.program_id / num_programs, tl.arange, tl.full / zeros / zeros_like,
 * tl.load and tl.store (with masks, `other`, eviction policies), the
 * atomics, block pointers (tl.make_block_ptr, tl.advance) and tensor
 * descriptors (tl.make_tensor_descriptor, desc.load / desc.store).
 *
 * A block pointer (SV_BLOCKPTR) lives only in sema: each load or store
 * through one is rewritten into a tile of pointers and the mask of its
 * boundary checks; a tensor descriptor is the same SVal with every
 * dimension checked.  No IR op knows either.
 *
 * Requires: front.h (the Call of sema_builtins.c's binding, the argument
 * helpers) and sema_ops.c's ops_* helpers.  Guarantees: as every handler
 * (sema_builtins.c): one located error, then SV_ERROR.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "front/front.h"

/* ------------------------------------------------------------------ */
/* Builtins: program structure, creation, memory                        */
/* ------------------------------------------------------------------ */

SVal b_program_id(Call *c)
{
    int64_t axis;
    if (!arg_int(c, 0, &axis))
        return sval_error();
    if (axis < 0 || axis > 2)
        return ops_fail(c->L, c->loc, "%s axis must be 0, 1 or 2, got %lld", c->fname, (long long)axis);
    return sval_value(ops_emit_attr(c->L, (OpKind)c->def->aux, type_scalar(DT_I32), 0, axis, 0, c->loc));
}

SVal b_arange(Call *c)
{
    Lower *L = c->L;
    if (!sval_is_int(c->a[0]) || !sval_is_int(c->a[1])) {
        const char *d[2];
        for (int i = 0; i < 2; i++)
            d[i] = c->a[i].kind == SV_VALUE ? arena_printf(L->a, "a runtime %s", ops_describe(L, c->a[i]))
                                            : ops_describe(L, c->a[i]);
        return ops_fail(L, c->loc, "tl.arange bounds must be constexpr ints, got %s and %s", d[0], d[1]);
    }
    int64_t s = c->a[0].c.i, e = c->a[1].c.i;
    if (s < INT32_MIN || s > INT32_MAX || e < INT32_MIN || e > INT32_MAX)
        return ops_fail(L, c->loc, "tl.arange bounds must fit in int32, got %lld and %lld", (long long)s,
                        (long long)e);
    if (e <= s)
        return ops_fail(L, c->loc, "tl.arange end must be greater than start, got %lld and %lld",
                        (long long)s, (long long)e);
    int64_t n = e - s;
    if ((n & (n - 1)) != 0)
        return ops_fail(L, c->loc, "tl.arange range must be a power of 2, got %lld (%lld to %lld)",
                        (long long)n, (long long)s, (long long)e);
    if (!sema_check_shape(c, 1, &n))
        return sval_error();
    int32_t shape[1] = {(int32_t)n};
    return sval_value(ops_emit_attr(L, OP_ARANGE, type_tile(DT_I32, 1, shape), 0, s, 0, c->loc));
}

/* A tile of dtype dt and the given shape holding v (a number or a scalar). */
static SVal fill(Call *c, SVal v, Dtype dt, int rank, const int32_t *shape)
{
    Lower *L = c->L;
    if (dt == DT_PTR || dt == DT_VOID)
        return ops_fail(L, c->loc, "%s: cannot create a tile of pointers", c->fname);
    if (sval_is_num(v))
        return sval_value(ops_emit_const(L, v.c, type_tile(dt, rank, shape), c->loc));
    if (v.kind == SV_VALUE) {
        Type t = ops_type(L, v.v);
        if (type_numel(t) != 1 || t.dt == DT_PTR)
            return ops_fail(L, c->loc, "%s: the fill value must be a number or a scalar, got %s", c->fname,
                            ops_tystr(L, t));
        ValId x = ops_cast(L, v.v, dt, c->loc);
        if (ops_type(L, x).rank > 0)
            x = ops_emit1(L, OP_RESHAPE, type_tile(dt, 0, NULL), x, c->loc);
        return sval_value(ops_bcast_to(L, x, rank, shape, c->loc));
    }
    return ops_fail(L, c->loc, "%s: the fill value must be a number or a scalar, got %s", c->fname,
                    ops_describe(L, v));
}

/* tl.full(shape, value, dtype) and tl.zeros(shape, dtype) (no value). */
SVal b_full(Call *c)
{
    bool zeros = c->np == 2;
    int rank;
    int32_t shape[KAD_MAX_RANK];
    Dtype dt;
    if (!arg_shape(c, c->a[0], &rank, shape) || !arg_dtype(c, zeros ? 1 : 2, &dt, NULL))
        return sval_error();
    return fill(c, zeros ? sval_int(0) : c->a[1], dt, rank, shape);
}

SVal b_zeros_like(Call *c)
{
    ValId x = arg_tile(c, 0);
    if (!x)
        return sval_error();
    Type t = ops_type(c->L, x);
    return fill(c, sval_int(0), (Dtype)t.dt, t.rank, t.shape);
}

static bool check_hint(Call *c, int i, const char *const *allowed)
{
    const char *s;
    if (!arg_str(c, i, "", &s))
        return false;
    if (!*s)
        return true;
    for (int k = 0; allowed[k]; k++)
        if (strcmp(s, allowed[k]) == 0)
            return true;
    diag_error(c->L->d, c->loc, "%s: unsupported %s '%s'", c->fname, c->pname[i], s);
    return false;
}

/* A pointer operand (scalar pointer or tile of pointers). */
static ValId arg_pointer(Call *c, int i)
{
    Lower *L = c->L;
    SVal p = c->a[i];
    if (p.kind == SV_VALUE && ops_type(L, p.v).dt == DT_PTR)
        return p.v;
    diag_error(L->d, c->loc, "%s requires a pointer or a tile of pointers, got %s", c->fname,
               ops_describe(L, p));
    return 0;
}

/* A mask operand: i1 value or a bool constant. */
bool arg_mask(Call *c, int i, Opnd *o)
{
    Lower *L = c->L;
    SVal m = c->a[i];
    if (m.kind == SV_CONST && m.c.kind == CK_BOOL) {
        memset(o, 0, sizeof *o);
        o->is_const = true;
        o->c = m.c;
        o->ty = type_scalar(DT_I1);
        return true;
    }
    if (m.kind == SV_VALUE && ops_type(L, m.v).dt == DT_I1) {
        memset(o, 0, sizeof *o);
        o->v = m.v;
        o->ty = ops_type(L, m.v);
        return true;
    }
    diag_error(L->d, c->loc, "%s: the mask must be a boolean (i1) tile or scalar, got %s", c->fname,
               ops_describe(L, m));
    return false;
}

/* tl.load's and tl.store's eviction_policy. */
static const char *const evict_policies[] = {"evict_last", "evict_first", NULL};

/* ------------------------------------------------------------------ */
/* Block pointers                                                      */
/* ------------------------------------------------------------------ */

/* A block pointer (SV_BLOCKPTR, front.h) lives only in sema: tl.load and
 * tl.store lower it to the tile of pointers
 *     base + sum_d (offsets[d] + arange(0, block[d])) * strides[d]
 * (axis d of the block along axis d of the tile) and, for the dimensions in
 * boundary_check, the mask  0 <= offsets[d] + arange(0, block[d]) < shape[d],
 * so that the access analysis, the interpreter, AD and the emitter see
 * ordinary pointer arithmetic.  `order` is a layout hint and only checked.
 * Types follow Triton's semantic.make_block_ptr: shape and strides are
 * int64, offsets int32 (an int64 offset value is refused, as Triton does);
 * offsets stay constants where they are, so `(0, 0)` costs nothing. */

static SVal sval_blockptr(Lower *L, const SVal *parts)
{
    SVal s = {.kind = SV_BLOCKPTR, .n = BP_N};
    s.elts = arena_alloc(L->a, sizeof *s.elts * BP_N);
    memcpy(s.elts, parts, sizeof *s.elts * BP_N);
    return s;
}

/* Argument i as a tuple of block pointer coordinates (Triton accepts one
 * element for a 1-D block): int constants in range, or integer scalars,
 * converted to int64 (wide) or int32 (refusing int64, as Triton does). */
static bool bp_coords(Call *c, int i, bool wide, SVal *out)
{
    Lower *L = c->L;
    SVal x = c->a[i];
    const SVal *e = &x;
    int n = 1;
    if (x.kind == SV_TUPLE)
        e = x.elts, n = x.n;
    if (n > KAD_MAX_RANK)
        return arg_wrong(c, i, arena_printf(L->a, "a tuple of at most %d entries", KAD_MAX_RANK));
    SVal *r = arena_alloc(L->a, sizeof *r * (size_t)(n ? n : 1));
    for (int k = 0; k < n; k++) {
        SVal v = e[k];
        if (sval_is_int(v)) {
            int64_t lim = wide ? INT64_MAX : INT32_MAX;
            if (!wide && (v.c.i < INT32_MIN || v.c.i > lim)) {
                diag_error(L->d, c->loc, "%s: block pointers only support 32-bit '%s', got %lld", c->fname,
                           c->pname[i], (long long)v.c.i);
                return false;
            }
            r[k] = sval_int(v.c.i);
            continue;
        }
        Type t = v.kind == SV_VALUE ? ops_type(L, v.v) : type_scalar(DT_VOID);
        if (v.kind != SV_VALUE || t.rank != 0 || !dtype_is_int((Dtype)t.dt) || t.dt == DT_I1) {
            diag_error(L->d, c->loc, "%s: '%s' must hold integer scalars or constexpr ints, got %s", c->fname,
                       c->pname[i], ops_describe(L, v));
            return false;
        }
        if (!wide && t.dt == DT_I64) {
            diag_error(L->d, c->loc, "%s: block pointers only support 32-bit '%s'; add a `.to(tl.int32)` or use "
                       "a tile of pointers for 64-bit offsets", c->fname, c->pname[i]);
            return false;
        }
        r[k] = sval_value(ops_cast(L, v.v, wide ? DT_I64 : DT_I32, c->loc));
    }
    *out = sval_tuple(L, r, n);
    return true;
}

/* The parts tl.make_block_ptr and tl.make_tensor_descriptor share: the
 * base (argument 0, a scalar pointer), shape and strides (1 and 2, int64
 * coordinates). */
static bool bp_base_shape_strides(Call *c, SVal *parts)
{
    Lower *L = c->L;
    SVal base = c->a[0];
    if (base.kind != SV_VALUE || ops_type(L, base.v).dt != DT_PTR || ops_type(L, base.v).rank != 0) {
        ops_fail(L, c->loc, "%s: 'base' must be a scalar pointer, got %s", c->fname, ops_describe(L, base));
        return false;
    }
    parts[BP_BASE] = base;
    return bp_coords(c, 1, true, &parts[BP_SHAPE]) && bp_coords(c, 2, true, &parts[BP_STRIDES]);
}

SVal b_make_block_ptr(Call *c)
{
    Lower *L = c->L;
    SVal parts[BP_N];
    if (!bp_base_shape_strides(c, parts) || !bp_coords(c, 3, false, &parts[BP_OFFSETS]))
        return sval_error();
    int64_t blk[KAD_MAX_RANK + 1], ord[KAD_MAX_RANK + 1];
    int nb, no;
    if (!sema_int_list(c, c->a[4], true, blk, KAD_MAX_RANK, &nb, "'block_shape'") || !sema_check_shape(c, nb, blk) ||
        !sema_int_list(c, c->a[5], true, ord, KAD_MAX_RANK, &no, "'order'"))
        return sval_error();
    if (nb == 0)
        return ops_fail(L, c->loc, "%s: 'block_shape' must not be empty", c->fname);
    bool seen[KAD_MAX_RANK] = {0};
    for (int k = 0; k < no; k++) {
        if (ord[k] < 0 || ord[k] >= no || seen[ord[k]])
            return ops_fail(L, c->loc, "%s: 'order' must be a permutation of 0..%d", c->fname, no - 1);
        seen[ord[k]] = true;
    }
    if (parts[BP_SHAPE].n != nb || parts[BP_STRIDES].n != nb || parts[BP_OFFSETS].n != nb || no != nb)
        return ops_fail(L, c->loc, "%s: shape, strides, offsets, block_shape and order must have the same length "
                        "(got %d, %d, %d, %d and %d)", c->fname, parts[BP_SHAPE].n, parts[BP_STRIDES].n,
                        parts[BP_OFFSETS].n, nb, no);
    SVal b[KAD_MAX_RANK], o[KAD_MAX_RANK];
    for (int k = 0; k < nb; k++)
        b[k] = sval_int(blk[k]), o[k] = sval_int(ord[k]);
    parts[BP_BLOCK] = sval_tuple(L, b, nb);
    parts[BP_ORDER] = sval_tuple(L, o, nb);
    return sval_blockptr(L, parts);
}

/* tl.advance(bp, offsets) and bp.advance(offsets): the offsets added (int32). */
SVal b_advance(Call *c)
{
    Lower *L = c->L;
    SVal bp = c->a[0];
    if (bp.kind != SV_BLOCKPTR || sval_is_tensor_desc(bp))
        return ops_fail(L, c->loc, "%s: 'base' must be a block pointer (tl.make_block_ptr), got %s", c->fname,
                        ops_describe(L, bp));
    SVal d;
    if (!bp_coords(c, 1, false, &d))
        return sval_error();
    SVal off = bp.elts[BP_OFFSETS];
    if (d.n != off.n)
        return ops_fail(L, c->loc, "%s: %d offsets given for a block pointer of %d dimensions", c->fname, d.n, off.n);
    SVal r[KAD_MAX_RANK];
    for (int k = 0; k < off.n; k++) {
        if (sval_is_int(off.elts[k]) && sval_is_int(d.elts[k])) {
            int64_t v = off.elts[k].c.i + d.elts[k].c.i; /* both in int32: no overflow in int64 */
            r[k] = v >= INT32_MIN && v <= INT32_MAX ? sval_int(v)
                                                     : sval_value(ops_emit_const(L, (ConstVal){.kind = CK_INT, .i = v},
                                                                                 type_scalar(DT_I32), c->loc));
        } else if (sval_is_int(d.elts[k]) && d.elts[k].c.i == 0) {
            r[k] = off.elts[k];
        } else {
            /* int32 + int32 (a constant fits): int32, wrapping as Triton's does */
            ValId a = sval_is_int(off.elts[k]) ? ops_emit_const(L, off.elts[k].c, type_scalar(DT_I32), c->loc)
                                                : off.elts[k].v;
            ValId b = sval_is_int(d.elts[k]) ? ops_emit_const(L, d.elts[k].c, type_scalar(DT_I32), c->loc)
                                              : d.elts[k].v;
            if (!a || !b)
                return sval_error();
            r[k] = sval_value(ops_emit2(L, OP_ADD, type_scalar(DT_I32), a, b, c->loc));
        }
    }
    SVal parts[BP_N];
    memcpy(parts, bp.elts, sizeof parts);
    parts[BP_OFFSETS] = sval_tuple(L, r, off.n);
    return sval_blockptr(L, parts);
}

/* tl.load's and tl.store's boundary_check (argument i) for a block of rank
 * dims: check[d] set for each dimension listed (an int or a tuple of ints,
 * each once, as Triton's _canonicalize_boundary_check). */
static bool bp_boundary_check(Call *c, int i, int rank, bool *check)
{
    memset(check, 0, sizeof *check * (size_t)rank);
    if (sema_absent(c, i) || (c->a[i].kind == SV_TUPLE && c->a[i].n == 0))
        return true;
    int64_t d[KAD_MAX_RANK + 1];
    int n;
    if (!sema_int_list(c, c->a[i], true, d, KAD_MAX_RANK, &n, "'boundary_check'"))
        return false;
    for (int k = 0; k < n; k++) {
        if (d[k] < 0 || d[k] >= rank) {
            diag_error(c->L->d, c->loc, "%s: boundary_check dimension %lld is out of range for a block of %d "
                       "dimensions", c->fname, (long long)d[k], rank);
            return false;
        }
        if (check[d[k]]) {
            diag_error(c->L->d, c->loc, "%s: duplicate dimension %lld in boundary_check", c->fname,
                       (long long)d[k]);
            return false;
        }
        check[d[k]] = true;
    }
    return true;
}

/* The tile of pointers a block pointer addresses and the mask of its
 * boundary checks (*mask = none when check selects no dimension). */
static bool bp_lower(Call *c, SVal bp, const bool *check, SVal *ptr, SVal *mask)
{
    Lower *L = c->L;
    int rank = bp.elts[BP_BLOCK].n;
    SVal p = bp.elts[BP_BASE], m = sval_none();
    for (int d = 0; d < rank; d++) {
        SVal off = bp.elts[BP_OFFSETS].elts[d], stride = bp.elts[BP_STRIDES].elts[d];
        int32_t blk[1] = {(int32_t)bp.elts[BP_BLOCK].elts[d].c.i};
        SVal idx = sval_value(ops_emit_attr(L, OP_ARANGE, type_tile(DT_I32, 1, blk), 0, 0, 0, c->loc));
        if (!(sval_is_int(off) && off.c.i == 0))
            idx = lower_binop(L, BO_ADD, off, idx, c->loc);
        if (idx.kind == SV_ERROR)
            return false;
        for (int k = 0; k < rank; k++) /* axis d of the block on axis d of the tile */
            if (k != d)
                idx = sval_value(ops_expand_dims(L, idx.v, k, c->loc));
        SVal term = idx;
        if (sval_is_int(stride)) {
            if (stride.c.i != 1) /* in int64, as Triton computes block pointer addresses */
                term = lower_binop(L, BO_MUL, sval_value(ops_cast(L, idx.v, DT_I64, c->loc)), stride, c->loc);
        } else {
            term = lower_binop(L, BO_MUL, idx, stride, c->loc); /* stride is int64 */
        }
        p = lower_binop(L, BO_ADD, p, term, c->loc);
        if (term.kind == SV_ERROR || p.kind == SV_ERROR)
            return false;
        if (!check[d])
            continue;
        SVal in = lower_compare(L, CO_LT, idx, bp.elts[BP_SHAPE].elts[d], c->loc);
        if (!(sval_is_int(off) && off.c.i >= 0)) /* a constant offset >= 0 needs no lower bound */
            in = lower_binop(L, BO_BITAND, lower_compare(L, CO_GE, idx, sval_int(0), c->loc), in, c->loc);
        m = sval_is_none(m) ? in : lower_binop(L, BO_BITAND, m, in, c->loc);
        if (m.kind == SV_ERROR)
            return false;
    }
    *ptr = p;
    *mask = m;
    return true;
}

/* boundary_check=() or None is the default; anything else asks for block
 * pointer semantics. */
static bool boundary_check_given(Call *c, int i)
{
    SVal x = c->a[i];
    return c->has[i] && !(x.kind == SV_TUPLE && x.n == 0) && !sval_is_none(x);
}

/* Refuses argument i (boundary_check, padding_option) on a tile of
 * pointers: it only means something for block pointers. */
static SVal block_ptr_only(Call *c, int i)
{
    return ops_fail(c->L, c->loc, "%s: '%s' is only valid with block pointers (tl.make_block_ptr), not with a "
                    "tile of pointers", c->fname, c->pname[i]);
}

/* tl.load/tl.store on a block pointer: rewrites the call's pointer (slot
 * 0), mask (slot mslot) and, for a load, other (slot 2) into their tile of
 * pointers form; boundary_check and padding_option are consumed. */
static bool bp_rewrite(Call *c, int mslot, int bcslot, int padslot)
{
    Lower *L = c->L;
    SVal bp = c->a[0];
    bool is_load = padslot >= 0;
    if (!sema_absent(c, mslot) || (is_load && !sema_absent(c, 2))) {
        diag_error(L->d, c->loc, "%s: 'mask' and 'other' cannot be given with a block pointer; use "
                   "boundary_check and padding_option", c->fname);
        return false;
    }
    int rank = bp.elts[BP_BLOCK].n;
    bool check[KAD_MAX_RANK];
    if (!bp_boundary_check(c, bcslot, rank, check))
        return false;
    Dtype elem = (Dtype)ops_type(L, bp.elts[BP_BASE].v).elem;
    const char *pad = "";
    if (is_load) {
        if (!arg_str(c, padslot, "", &pad))
            return false;
        if (*pad && strcmp(pad, "zero") != 0 && strcmp(pad, "nan") != 0) {
            diag_error(L->d, c->loc, "%s: padding option '%s' is not supported (\"zero\", \"nan\" or \"\")",
                       c->fname, pad);
            return false;
        }
        if (!strcmp(pad, "nan") && !dtype_is_float(elem)) {
            diag_error(L->d, c->loc, "%s: padding option \"nan\" is not supported for integer block pointers",
                       c->fname);
            return false;
        }
    }
    SVal p, m;
    if (!bp_lower(c, bp, check, &p, &m))
        return false;
    c->a[0] = p;
    c->has[bcslot] = false;
    if (!sval_is_none(m)) {
        c->a[mslot] = m, c->has[mslot] = true;
        /* no padding: Triton leaves the lanes undefined; kad's load gives 0 there */
        if (*pad)
            c->a[2] = !strcmp(pad, "nan") ? sval_float(NAN) : sval_int(0), c->has[2] = true;
    }
    if (is_load)
        c->has[padslot] = false;
    return true;
}

/* tl.store on a block pointer: the value must have the block's shape (or
 * be a scalar) and the pointee's dtype, as Triton's _store_block_pointer
 * asserts (a constant counts with Triton's to_tensor dtype). */
static bool bp_store_value(Call *c)
{
    Lower *L = c->L;
    SVal bp = c->a[0], v = c->a[1];
    Dtype elem = (Dtype)ops_type(L, bp.elts[BP_BASE].v).elem;
    Opnd o;
    if (!ops_opnd(L, v, false, &o, "tl.store value", c->loc))
        return false;
    SVal blk = bp.elts[BP_BLOCK];
    bool shape_ok = o.ty.rank == 0;
    if (o.ty.rank == blk.n) {
        shape_ok = true;
        for (int k = 0; k < blk.n; k++)
            shape_ok &= o.ty.shape[k] == blk.elts[k].c.i;
    }
    if (!shape_ok) {
        int32_t bs[KAD_MAX_RANK];
        for (int k = 0; k < blk.n; k++)
            bs[k] = (int32_t)blk.elts[k].c.i;
        diag_error(L->d, c->loc, "%s: the value's shape %s is not the block shape %s", c->fname,
                   ops_shapestr(L, o.ty.rank, o.ty.shape), ops_shapestr(L, blk.n, bs));
        return false;
    }
    if (o.ty.dt != elem) {
        diag_error(L->d, c->loc, "%s: the value's dtype %s is not the block pointer's element dtype %s (convert "
                   "it with .to())", c->fname, dtype_name((Dtype)o.ty.dt), dtype_name(elem));
        return false;
    }
    return bp_rewrite(c, 2, 3, -1);
}

SVal b_load(Call *c)
{
    static const char *const cache[] = {".ca", ".cg", ".cv", NULL};
    Lower *L = c->L;
    if (sval_is_tensor_desc(c->a[0]) && c->def != &sema_desc_load_method)
        return ops_fail(L, c->loc, "tl.load: a tensor descriptor is loaded with desc.load(offsets)");
    if (c->a[0].kind == SV_BLOCKPTR && !bp_rewrite(c, 1, 3, 4))
        return sval_error();
    ValId p = arg_pointer(c, 0);
    if (!p)
        return sval_error();
    Type pt = ops_type(L, p);
    bool has_mask = !sema_absent(c, 1), has_other = !sema_absent(c, 2);
    if (has_other && !has_mask)
        return ops_fail(L, c->loc, "tl.load: 'other' cannot be given without 'mask'");
    if (boundary_check_given(c, 3))
        return block_ptr_only(c, 3);
    const char *pad;
    if (!arg_str(c, 4, "", &pad))
        return sval_error();
    if (*pad)
        return block_ptr_only(c, 4);
    bool vol;
    if (!check_hint(c, 5, cache) || !check_hint(c, 6, evict_policies) || !arg_bool(c, 7, false, &vol))
        return sval_error();
    Opnd m = {0}, o = {0}, po = {.v = p, .ty = pt};
    if (has_mask && !arg_mask(c, 1, &m))
        return sval_error();
    if (has_other && !ops_opnd(L, c->a[2], true, &o, "tl.load 'other'", c->loc))
        return sval_error();
    if (has_other && o.ty.dt == DT_PTR)
        return ops_fail(L, c->loc, "tl.load: 'other' must be a number or a tile of numbers");
    if (pt.rank == 0 && ((has_mask && m.ty.rank > 0) || (has_other && o.ty.rank > 0)))
        return ops_fail(L, c->loc, "tl.load: mask and other cannot be tiles when the pointer is a scalar");
    int rank = pt.rank;
    int32_t shape[KAD_MAX_RANK];
    memcpy(shape, pt.shape, sizeof shape);
    if (has_mask && !ops_bcast_shape(rank, shape, m.ty.rank, m.ty.shape, &rank, shape))
        return ops_fail(L, c->loc, "tl.load: cannot broadcast the mask %s to the pointer shape %s",
                        ops_tystr(L, m.ty), ops_shapestr(L, pt.rank, pt.shape));
    if (has_other && !ops_bcast_shape(rank, shape, o.ty.rank, o.ty.shape, &rank, shape))
        return ops_fail(L, c->loc, "tl.load: cannot broadcast 'other' %s to the pointer shape %s",
                        ops_tystr(L, o.ty), ops_shapestr(L, pt.rank, pt.shape));
    Dtype elem = (Dtype)pt.elem;
    ValId args[3];
    int n = 0;
    args[n++] = ops_materialize(L, &po, DT_PTR, rank, shape, c->loc);
    if (has_mask)
        args[n++] = ops_materialize(L, &m, DT_I1, rank, shape, c->loc);
    if (has_other)
        args[n++] = ops_materialize(L, &o, elem, rank, shape, c->loc);
    for (int i = 0; i < n; i++)
        if (!args[i])
            return sval_error();
    Type rt = type_tile(elem, rank, shape);
    Inst *in = ir_emit(L->f, L->b, OP_LOAD, args, n, &rt, 1, c->loc);
    in->flags = (uint16_t)((has_mask ? IF_HAS_MASK : 0) | (has_other ? IF_HAS_OTHER : 0));
    return sval_value(in->res[0]);
}

/* The common part of tl.store and tl.atomic_add (op) on pointer p: the
 * value (slot 1, a number or a tile of numbers; ptr_value is the message
 * for a pointer) and the optional mask (slot 2) are broadcast to the
 * pointer's shape, which they may not widen, as the pointee dtype and i1.
 * Returns op's result (None for a store). */
static SVal store_like(Call *c, OpKind op, ValId p, const char *ptr_value)
{
    Lower *L = c->L;
    Type pt = ops_type(L, p);
    bool has_mask = !sema_absent(c, 2);
    Opnd v, m = {0};
    if (!ops_opnd(L, c->a[1], true, &v, arena_printf(L->a, "%s value", c->fname), c->loc))
        return sval_error();
    if (v.ty.dt == DT_PTR)
        return ops_fail(L, c->loc, "%s: %s", c->fname, ptr_value);
    if (has_mask && !arg_mask(c, 2, &m))
        return sval_error();
    const Opnd *opnd[2] = {&v, &m};
    const char *what[2] = {"value", "mask"};
    for (int i = 0; i < (has_mask ? 2 : 1); i++) {
        Type t = opnd[i]->ty;
        int rank;
        int32_t shape[KAD_MAX_RANK];
        if (!ops_bcast_shape(pt.rank, pt.shape, t.rank, t.shape, &rank, shape) ||
            !type_same_shape(pt, type_with_shape(pt, rank, shape)))
            return ops_fail(L, c->loc, "%s: the %s %s cannot be broadcast to the pointer shape %s", c->fname,
                            what[i], ops_tystr(L, t), ops_shapestr(L, pt.rank, pt.shape));
    }
    ValId args[3];
    int n = 0;
    args[n++] = p;
    args[n++] = ops_materialize(L, &v, (Dtype)pt.elem, pt.rank, pt.shape, c->loc);
    if (has_mask)
        args[n++] = ops_materialize(L, &m, DT_I1, pt.rank, pt.shape, c->loc);
    for (int i = 0; i < n; i++)
        if (!args[i])
            return sval_error();
    bool store = op == OP_STORE;
    Type rt = type_tile((Dtype)pt.elem, pt.rank, pt.shape);
    Inst *in = ir_emit(L->f, L->b, op, args, n, store ? NULL : &rt, store ? 0 : 1, c->loc);
    in->flags = (uint16_t)(has_mask ? IF_HAS_MASK : 0);
    return store ? sval_none() : sval_value(in->res[0]);
}

SVal b_store(Call *c)
{
    static const char *const cache[] = {".wb", ".cg", ".cs", ".wt", NULL};
    if (sval_is_tensor_desc(c->a[0]) && c->def != &sema_desc_store_method)
        return ops_fail(c->L, c->loc, "tl.store: a tensor descriptor is stored with desc.store(offsets, value)");
    if (c->a[0].kind == SV_BLOCKPTR && !bp_store_value(c))
        return sval_error();
    ValId p = arg_pointer(c, 0);
    if (!p)
        return sval_error();
    if (boundary_check_given(c, 3))
        return block_ptr_only(c, 3);
    if (!check_hint(c, 4, cache) || !check_hint(c, 5, evict_policies))
        return sval_error();
    return store_like(c, OP_STORE, p, "storing pointers is not supported");
}

/* ------------------------------------------------------------------ */
/* Tensor descriptors                                                  */
/* ------------------------------------------------------------------ */

/* tl.make_tensor_descriptor's descriptor is an SV_BLOCKPTR whose qual is
 * "tensor_descriptor" (padding "zero") or "tensor_descriptor_nan" and whose
 * offsets are zeros: desc.load(offsets) and desc.store(offsets, value) are a
 * block pointer at those offsets, every dimension boundary-checked, so that
 * out-of-bounds lanes read the padding and are not written, as TMA does.
 * Types follow Triton's semantic.make_tensor_descriptor: shape int32 (kad
 * keeps it int64, the comparisons give the same masks for shapes below
 * 2^31), strides int64 with a constant 1 last, block_shape constants with at
 * least 16 bytes in the last dimension, offsets int32. */

bool sval_is_tensor_desc(SVal x)
{
    return x.kind == SV_BLOCKPTR && x.qual && strncmp(x.qual, "tensor_descriptor", 17) == 0;
}

SVal b_make_tensor_descriptor(Call *c)
{
    Lower *L = c->L;
    SVal parts[BP_N];
    if (!bp_base_shape_strides(c, parts))
        return sval_error();
    SVal base = parts[BP_BASE];
    int64_t blk[KAD_MAX_RANK + 2];
    int nb;
    if (!sema_int_list(c, c->a[3], true, blk, KAD_MAX_RANK + 1, &nb, "'block_shape'"))
        return sval_error();
    int nd = parts[BP_SHAPE].n;
    if (nd < 1 || nd > 5)
        return ops_fail(L, c->loc, "%s: expected 1 to 5 dimensions, got %d", c->fname, nd);
    if (parts[BP_STRIDES].n != nd || nb != nd)
        return ops_fail(L, c->loc, "%s: shape, strides and block_shape must have the same length (got %d, %d and %d)",
                        c->fname, nd, parts[BP_STRIDES].n, nb);
    if (!sema_check_shape(c, nb, blk))
        return sval_error();
    Dtype elem = (Dtype)ops_type(L, base.v).elem;
    int bytes = dtype_bytes(elem);
    if (blk[nb - 1] * bytes < 16)
        return ops_fail(L, c->loc, "%s: the block shape must have at least 16 bytes in the last dimension, got "
                        "%lld * %d bytes", c->fname, (long long)blk[nb - 1], bytes);
    SVal last = parts[BP_STRIDES].elts[nd - 1];
    if (!sval_is_int(last) || last.c.i != 1)
        return ops_fail(L, c->loc, "%s: the last dimension's stride must be the constant 1 (got %s)", c->fname,
                        ops_describe(L, last));
    const char *pad;
    if (!arg_str(c, 4, "zero", &pad))
        return sval_error();
    if (strcmp(pad, "zero") != 0 && strcmp(pad, "nan") != 0)
        return ops_fail(L, c->loc, "%s: padding_option must be \"zero\" or \"nan\", got \"%s\"", c->fname, pad);
    if (!strcmp(pad, "nan") && !dtype_is_float(elem))
        return ops_fail(L, c->loc, "%s: padding option \"nan\" is not supported for integer descriptors", c->fname);
    SVal b[KAD_MAX_RANK], o[KAD_MAX_RANK], z[KAD_MAX_RANK];
    for (int k = 0; k < nb; k++)
        b[k] = sval_int(blk[k]), o[k] = sval_int(nb - 1 - k), z[k] = sval_int(0);
    parts[BP_OFFSETS] = sval_tuple(L, z, nb);
    parts[BP_BLOCK] = sval_tuple(L, b, nb);
    parts[BP_ORDER] = sval_tuple(L, o, nb);
    SVal d = sval_blockptr(L, parts);
    d.qual = !strcmp(pad, "nan") ? "tensor_descriptor_nan" : "tensor_descriptor";
    return d;
}

SVal sval_host_tensor_desc(Lower *L, ValId base, const ValId *shape, const ValId *strides, const int64_t *block,
                           int rank, bool nan)
{
    SVal parts[BP_N], sh[KAD_MAX_RANK], st[KAD_MAX_RANK], b[KAD_MAX_RANK], o[KAD_MAX_RANK], z[KAD_MAX_RANK];
    for (int k = 0; k < rank; k++) {
        sh[k] = sval_value(shape[k]); /* int32 as Triton's host descriptors: compared with int32 indices */
        st[k] = k + 1 < rank ? sval_value(strides[k]) : sval_int(1);
        b[k] = sval_int(block[k]), o[k] = sval_int(rank - 1 - k), z[k] = sval_int(0);
    }
    parts[BP_BASE] = sval_value(base);
    parts[BP_SHAPE] = sval_tuple(L, sh, rank);
    parts[BP_STRIDES] = sval_tuple(L, st, rank);
    parts[BP_OFFSETS] = sval_tuple(L, z, rank);
    parts[BP_BLOCK] = sval_tuple(L, b, rank);
    parts[BP_ORDER] = sval_tuple(L, o, rank);
    SVal d = sval_blockptr(L, parts);
    d.qual = nan ? "tensor_descriptor_nan" : "tensor_descriptor";
    return d;
}

/* The descriptor's block at offsets (argument 1 of c) as a block pointer. */
static bool desc_block_ptr(Call *c, SVal *bp)
{
    SVal desc = c->a[0], off;
    if (!sval_is_tensor_desc(desc)) {
        diag_error(c->L->d, c->loc, "%s: 'desc' must be a tensor descriptor (tl.make_tensor_descriptor), got %s",
                   c->fname, ops_describe(c->L, desc));
        return false;
    }
    if (!bp_coords(c, 1, false, &off))
        return false;
    int rank = desc.elts[BP_BLOCK].n;
    if (off.n != rank) {
        diag_error(c->L->d, c->loc, "%s: expected %d offsets, got %d", c->fname, rank, off.n);
        return false;
    }
    SVal parts[BP_N];
    memcpy(parts, desc.elts, sizeof parts);
    parts[BP_OFFSETS] = off;
    *bp = sval_blockptr(c->L, parts);
    return true;
}

/* A call of tl.load or tl.store (load: value NULL) on block pointer bp with every
 * dimension boundary-checked; value and padding where given. */
static SVal desc_access(Call *c, SVal bp, const SVal *value, const char *pad)
{
    Call t = {.L = c->L, .def = value ? &sema_desc_store_method : &sema_desc_load_method, .fname = c->fname,
              .loc = c->loc};
    static const char *const load_names[] = {"pointer", "mask", "other", "boundary_check", "padding_option",
                                              "cache_modifier", "eviction_policy", "volatile"};
    static const char *const store_names[] = {"pointer", "value", "mask", "boundary_check", "cache_modifier",
                                               "eviction_policy"};
    bool load = value == NULL;
    t.np = load ? 8 : 6;
    for (int i = 0; i < t.np; i++)
        t.pname[i] = load ? load_names[i] : store_names[i], t.a[i] = sval_none();
    int rank = bp.elts[BP_BLOCK].n;
    SVal dims[KAD_MAX_RANK];
    for (int k = 0; k < rank; k++)
        dims[k] = sval_int(k);
    t.a[0] = bp, t.has[0] = true;
    t.a[3] = sval_tuple(c->L, dims, rank), t.has[3] = true;
    /* the descriptor's operands (ir.h, ir_desc_at), made before the access they follow */
    Lower *L = c->L;
    ValId dops[3 * KAD_MAX_RANK];
    int nd = 0;
    dops[nd++] = bp.elts[BP_BASE].v;
    for (int part = BP_SHAPE; part <= BP_OFFSETS; part++) { /* shape, strides, offsets */
        for (int k = 0; k < (part == BP_STRIDES ? rank - 1 : rank); k++) {
            SVal x = bp.elts[part].elts[k];
            Dtype dt = part == BP_OFFSETS || (part == BP_SHAPE && sval_is_int(x) && x.c.i <= INT32_MAX) ? DT_I32 : DT_I64;
            dops[nd++] = sval_is_int(x) ? ops_emit_const(L, x.c, type_scalar(dt), c->loc) : x.v;
            if (!dops[nd - 1])
                return sval_error();
        }
    }
    SVal r;
    if (load) {
        t.a[4] = (SVal){.kind = SV_CONST, .c = {.kind = CK_STR, .s = pad}}, t.has[4] = true;
        r = b_load(&t);
    } else {
        t.a[1] = *value, t.has[1] = true;
        r = b_store(&t);
    }
    if (r.kind == SV_ERROR || !L->b->insts.n)
        return r;
    Inst *in = &L->b->insts.v[L->b->insts.n - 1];
    ASSERT(in->op == (load ? OP_LOAD : OP_STORE) && !(in->flags & IF_DESC));
    ValId *args = arena_alloc(L->a, sizeof *args * (size_t)(in->nargs + nd));
    memcpy(args, in->args, sizeof *args * (size_t)in->nargs);
    memcpy(args + in->nargs, dops, sizeof *args * (size_t)nd);
    in->args = args;
    in->nargs += nd;
    in->flags |= IF_DESC;
    return r;
}

/* desc.load(offsets) */
SVal b_desc_load(Call *c)
{
    SVal bp;
    if (!desc_block_ptr(c, &bp))
        return sval_error();
    return desc_access(c, bp, NULL,
                       !strcmp(c->a[0].qual, "tensor_descriptor_nan") ? "nan" : "zero");
}

/* desc.store(offsets, value): the value has the block's shape and is
 * converted to the descriptor's dtype (Triton's descriptor_store). */
SVal b_desc_store(Call *c)
{
    Lower *L = c->L;
    SVal bp;
    if (!desc_block_ptr(c, &bp))
        return sval_error();
    Opnd o;
    if (!ops_opnd(L, c->a[2], false, &o, "desc.store value", c->loc))
        return sval_error();
    SVal blk = bp.elts[BP_BLOCK];
    bool shape_ok = o.ty.rank == blk.n;
    for (int k = 0; shape_ok && k < blk.n; k++)
        shape_ok = o.ty.shape[k] == blk.elts[k].c.i;
    if (!shape_ok || o.is_const || o.ty.dt == DT_PTR)
        return ops_fail(L, c->loc, "%s: the value must be a tile of the descriptor's block shape, got %s", c->fname,
                        ops_describe(L, c->a[2]));
    Dtype elem = (Dtype)ops_type(L, bp.elts[BP_BASE].v).elem;
    SVal v = sval_value(o.ty.dt == elem ? o.v : ops_cast(L, o.v, elem, c->loc));
    return desc_access(c, bp, &v, NULL);
}

const Builtin sema_desc_load_method = {"load", b_desc_load, "self,offsets", 0};
const Builtin sema_desc_store_method = {"store", b_desc_store, "self,offsets,value", 0};

/* tl.atomic_add, atomic_max, atomic_min, atomic_xchg (c->def->aux: the op): the dtypes
 * Triton's semantic accepts for each (atomic_add: 16 bits or more; max and min: 32- and
 * 64-bit ints, fp32, fp16 and bf16; xchg: 16 bits or more, as add). */
SVal b_atomic(Call *c)
{
    static const char *const sems[] = {"acquire", "release", "acq_rel", "relaxed", NULL};
    static const char *const scopes[] = {"gpu", "cta", "sys", NULL};
    OpKind op = (OpKind)c->def->aux;
    ValId p = arg_pointer(c, 0);
    if (!p)
        return sval_error();
    Dtype elem = (Dtype)ops_type(c->L, p).elem;
    bool minmax = op == OP_ATOMIC_MAX || op == OP_ATOMIC_MIN;
    if (elem == DT_I16 || elem == DT_U16 || dtype_bits(elem) < 16 || (minmax && elem == DT_F64))
        return ops_fail(c->L, c->loc, "%s does not support %s", c->fname, dtype_name(elem));
    if (!check_hint(c, 3, sems) || !check_hint(c, 4, scopes))
        return sval_error();
    return store_like(c, op, p, "the value must be a number or a tile of numbers");
}

