/* ir.c -- construction of the tile IR and its textual form.
 *
 * Job: the builder helpers every producer of IR uses (sema, irparse, the
 * passes), the op table and op_by_name, and the printer (ir_print).
 *
 * Invariants kept by the builders:
 *   - Func.vals.v[0] is a dummy value, so ValId 0 means "no value";
 *   - every result and region parameter is a fresh value (defined once);
 *   - an Inst owns arena arrays for args, results and regions; regions are
 *     separate Block objects, so only the Inst array of the parent block
 *     moves when it grows: a Block* obtained from ir_inst_add_region stays
 *     valid while the builder emits into it, and the builder re-fetches the
 *     parent Inst (&b->insts.v[idx]) after emitting into nested regions.
 *
 * The printer writes exactly the format documented in docs/IR.md ("Textual
 * IR"); irparse.c reads it back and print(parse(print(f))) == print(f).
 * Requires: types and values as built here.  Guarantees: deterministic
 * output (names depend only on the Func, never on addresses).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"

const OpInfo op_info[OP_COUNT] = {
#define X(e, name, nargs, nres, nreg, pure, ew, diff) [e] = {name, nargs, nres, nreg, pure, ew, diff},
    KAD_OPS(X)
#undef X
};

OpKind op_by_name(const char *s, size_t n)
{
    for (int op = 0; op < OP_COUNT; op++)
        if (strlen(op_info[op].name) == n && memcmp(op_info[op].name, s, n) == 0)
            return (OpKind)op;
    return OP_COUNT;
}

/* ------------------------------------------------------------------ */
/* Construction                                                        */
/* ------------------------------------------------------------------ */

Func *ir_func_new(Arena *a, const char *name, Loc loc)
{
    Func *f = arena_alloc(a, sizeof *f);
    f->a = a;
    f->name = name ? arena_strdup(a, name) : "kernel";
    f->loc = loc;
    Value dummy = {0};
    vec_push(a, f->vals, dummy); /* ValId 0 = "none" */
    f->body = ir_block_new(f);
    return f;
}

ValId ir_value_new(Func *f, Type ty, const char *name, Loc loc)
{
    Value v = {.ty = ty, .name = name ? arena_strdup(f->a, name) : NULL, .loc = loc};
    if (f->vals.n == 0) { /* a Func not made by ir_func_new: keep 0 = none */
        Value dummy = {0};
        vec_push(f->a, f->vals, dummy);
    }
    vec_push(f->a, f->vals, v);
    return (ValId)(f->vals.n - 1);
}

/* Appends x to an arena array of n elements by copying (arrays here are
 * short: parameters, regions). */
static void *array_append(Arena *a, const void *old, int n, const void *x, size_t elem)
{
    char *p = arena_alloc(a, (size_t)(n + 1) * elem);
    if (n)
        memcpy(p, old, (size_t)n * elem);
    memcpy(p + (size_t)n * elem, x, elem);
    return p;
}

ValId ir_param_add(Func *f, Type ty, const char *name, Loc loc)
{
    ValId v = ir_value_new(f, ty, name, loc);
    f->params = array_append(f->a, f->params, f->nparams, &v, sizeof v);
    f->nparams++;
    return v;
}

Block *ir_block_new(Func *f) { return arena_alloc(f->a, sizeof(Block)); }

const Inst *ir_block_term(const Block *b) { return b->insts.n ? &b->insts.v[b->insts.n - 1] : NULL; }

ValId ir_block_param_add(Func *f, Block *b, Type ty, const char *name, Loc loc)
{
    ValId v = ir_value_new(f, ty, name, loc);
    b->params = array_append(f->a, b->params, b->nparams, &v, sizeof v);
    b->nparams++;
    return v;
}

Inst *ir_emit(Func *f, Block *b, OpKind op, const ValId *args, int nargs,
              const Type *res_types, int nres, Loc loc)
{
    ASSERT((unsigned)op < OP_COUNT && nargs >= 0 && nres >= 0);
    Inst in = {0};
    in.op = (uint16_t)op;
    in.loc = loc;
    in.nargs = nargs;
    if (nargs) {
        in.args = arena_alloc(f->a, (size_t)nargs * sizeof *in.args);
        memcpy(in.args, args, (size_t)nargs * sizeof *in.args);
    }
    in.nres = nres;
    if (nres) {
        in.res = arena_alloc(f->a, (size_t)nres * sizeof *in.res);
        for (int i = 0; i < nres; i++)
            in.res[i] = ir_value_new(f, res_types[i], NULL, loc);
    }
    vec_push(f->a, b->insts, in);
    return &b->insts.v[b->insts.n - 1];
}

void ir_inst_copy_attrs(Inst *dst, const Inst *src)
{
    dst->flags = src->flags;
    dst->ival = src->ival;
    dst->fval = src->fval;
    memcpy(dst->ints, src->ints, sizeof dst->ints);
    dst->nints = src->nints;
    dst->sattr = src->sattr;
}

ValId ir_widened16(const Func *f, const Inst *const *def, int nv, ValId v, const Inst **perm)
{
    const Inst *in = v > 0 && v < nv ? def[v] : NULL;
    *perm = NULL;
    if (in && in->op == OP_PERMUTE) {
        *perm = in;
        v = in->args[0];
        in = v > 0 && v < nv ? def[v] : NULL;
    }
    if (!in || in->op != OP_CAST || f->vals.v[v].ty.dt != DT_F32)
        return 0;
    Dtype x = (Dtype)f->vals.v[in->args[0]].ty.dt;
    return x == DT_BF16 || x == DT_F16 ? in->args[0] : 0;
}

ValId ir_permute_as(Func *f, Block *b, const Func *pf, const Inst *perm, ValId x)
{
    Type t = pf->vals.v[perm->res[0]].ty;
    t.dt = f->vals.v[x].ty.dt;
    Inst *q = ir_emit(f, b, OP_PERMUTE, &x, 1, &t, 1, perm->loc);
    ir_inst_copy_attrs(q, perm);
    return q->res[0];
}

ValId ir_op1(Func *f, Block *b, OpKind op, Type ty, ValId x, Loc loc)
{
    return ir_emit(f, b, op, &x, 1, &ty, 1, loc)->res[0];
}

ValId ir_op2(Func *f, Block *b, OpKind op, Type ty, ValId x, ValId y, Loc loc)
{
    ValId a[2] = {x, y};
    return ir_emit(f, b, op, a, 2, &ty, 1, loc)->res[0];
}

ValId ir_op3(Func *f, Block *b, OpKind op, Type ty, ValId x, ValId y, ValId z, Loc loc)
{
    ValId a[3] = {x, y, z};
    return ir_emit(f, b, op, a, 3, &ty, 1, loc)->res[0];
}

ValId ir_const_int(Func *f, Block *b, Type ty, int64_t v, Loc loc)
{
    Inst *in = ir_emit(f, b, OP_CONST, NULL, 0, &ty, 1, loc);
    in->ival = v;
    return in->res[0];
}

ValId ir_const_float(Func *f, Block *b, Type ty, double v, Loc loc)
{
    Inst *in = ir_emit(f, b, OP_CONST, NULL, 0, &ty, 1, loc);
    in->fval = v;
    return in->res[0];
}

const Inst *ir_block_def(const Block *b, ValId v)
{
    for (int i = b->insts.n - 1; i >= 0; i--)
        for (int k = 0; k < b->insts.v[i].nres; k++)
            if (b->insts.v[i].res[k] == v)
                return &b->insts.v[i];
    return NULL;
}

Block *ir_inst_add_region(Func *f, Inst *inst)
{
    Block *r = ir_block_new(f);
    inst->regions = array_append(f->a, inst->regions, inst->nregions, &r, sizeof r);
    inst->nregions++;
    return r;
}

/* ------------------------------------------------------------------ */
/* Printer                                                             */
/* ------------------------------------------------------------------ */

/* Printed names.  Every value defined in f gets one name, assigned in
 * order of definition (kernel params; then, per instruction, the params
 * and instructions of its regions, then its results -- a loop's results
 * exist only after the loop).  A value with a source-name hint prints as
 * the hint when that name is still free, else as hint.N with the smallest
 * free N >= 1; a value without a hint as %N, N counting from 0.  Hints
 * that are purely numeric count as no hint, so the two kinds of names never
 * collide, and the names printed form valid hints again: reading the text
 * back and printing it gives the same names. */
typedef struct Namer {
    Arena *a;
    const char **names; /* by ValId; NULL: not defined anywhere */
    int nvals;
    const char **set; /* open-addressing set of the names in use */
    uint32_t mask;
    int next_num; /* the next %N */
    /* By hint (open addressing, same mask): the smallest N that may still
     * be free for hint.N.  Names are only ever added, so every N below it
     * stays taken; without it the k-th value named x would probe x.1 ..
     * x.k-1 again (quadratic in a long straight line of `x = ...`). */
    const char **hint;
    int *hint_next;
} Namer;

static uint32_t str_hash(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static bool namer_used(const Namer *nm, const char *s)
{
    for (uint32_t i = str_hash(s) & nm->mask;; i = (i + 1) & nm->mask) {
        if (!nm->set[i])
            return false;
        if (!strcmp(nm->set[i], s))
            return true;
    }
}

/* The slot of hint h in nm->hint (found or empty). */
static uint32_t namer_hint_slot(const Namer *nm, const char *h)
{
    uint32_t i = str_hash(h) & nm->mask;
    while (nm->hint[i] && strcmp(nm->hint[i], h))
        i = (i + 1) & nm->mask;
    return i;
}

static void namer_insert(Namer *nm, const char *s)
{
    uint32_t i = str_hash(s) & nm->mask;
    while (nm->set[i])
        i = (i + 1) & nm->mask;
    nm->set[i] = s;
}

/* The hint as it may be printed: NULL when absent or purely numeric;
 * characters outside [A-Za-z0-9_.] become '_' so the name lexes. */
static const char *clean_hint(Arena *a, const char *h)
{
    if (!h || !*h)
        return NULL;
    bool numeric = true, clean = true;
    for (const char *p = h; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c < '0' || c > '9')
            numeric = false;
        if (!(c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
              (c >= 'A' && c <= 'Z')))
            clean = false;
    }
    if (numeric)
        return NULL;
    if (clean)
        return h;
    char *s = arena_strdup(a, h);
    for (char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (!(c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
              (c >= 'A' && c <= 'Z')))
            *p = '_';
    }
    return s;
}

static void namer_define(Namer *nm, const Func *f, ValId v)
{
    if (v <= 0 || v >= nm->nvals || nm->names[v])
        return; /* invalid or defined twice: the verifier reports it */
    const char *h = clean_hint(nm->a, f->vals.v[v].name);
    const char *s;
    if (!h) {
        s = arena_printf(nm->a, "%d", nm->next_num++);
    } else if (!namer_used(nm, h)) {
        s = h;
    } else {
        uint32_t slot = namer_hint_slot(nm, h);
        int n = nm->hint[slot] ? nm->hint_next[slot] : 1;
        for (;; n++) {
            s = arena_printf(nm->a, "%s.%d", h, n);
            if (!namer_used(nm, s))
                break;
        }
        nm->hint[slot] = h;
        nm->hint_next[slot] = n + 1;
    }
    namer_insert(nm, s);
    nm->names[v] = s;
}

static void namer_block(Namer *nm, const Func *f, const Block *b)
{
    for (int i = 0; i < b->nparams; i++)
        namer_define(nm, f, b->params[i]);
    for (int i = 0; i < b->insts.n; i++) {
        const Inst *in = &b->insts.v[i];
        for (int r = 0; r < in->nregions; r++)
            if (in->regions[r])
                namer_block(nm, f, in->regions[r]);
        for (int r = 0; r < in->nres; r++)
            namer_define(nm, f, in->res[r]);
    }
}

static void namer_init(Namer *nm, Arena *a, const Func *f)
{
    nm->a = a;
    nm->nvals = f->vals.n;
    nm->names = arena_alloc(a, (size_t)(f->vals.n + 1) * sizeof *nm->names);
    uint32_t cap = 16;
    while (cap < 2u * (uint32_t)f->vals.n + 16)
        cap *= 2;
    nm->set = arena_alloc(a, cap * sizeof *nm->set);
    nm->hint = arena_alloc(a, cap * sizeof *nm->hint);
    nm->hint_next = arena_alloc(a, cap * sizeof *nm->hint_next);
    nm->mask = cap - 1;
    nm->next_num = 0;
    for (int i = 0; i < f->nparams; i++)
        namer_define(nm, f, f->params[i]);
    if (f->body)
        namer_block(nm, f, f->body);
    for (int i = 0; i < f->rules.n; i++)
        namer_block(nm, f, f->rules.v[i]);
}

const char **ir_names(Arena *a, const Func *f)
{
    Namer nm;
    namer_init(&nm, a, f);
    return nm.names;
}

typedef struct Printer {
    Buf *b;
    const Func *f;
    Namer nm;
} Printer;

static void put_val(Printer *p, ValId v)
{
    if (v > 0 && v < p->nm.nvals && p->nm.names[v])
        buf_printf(p->b, "%%%s", p->nm.names[v]);
    else
        buf_printf(p->b, "%%?%d", (int)v); /* not defined: invalid IR, printed for debugging */
}

static void put_type_of(Printer *p, ValId v)
{
    if (v > 0 && v < p->f->vals.n)
        type_print(p->b, p->f->vals.v[v].ty);
    else
        buf_puts(p->b, "?");
}

static void indent(Printer *p, int depth)
{
    for (int i = 0; i < depth; i++)
        buf_puts(p->b, "  ");
}

/* Floats print like Python's repr: the fewest significant digits that
 * read back (strtod) to the same double, in fixed notation when the
 * decimal exponent is in [-4, 16), else in scientific notation; always
 * with a '.', 'e', "inf" or "nan" so the text stays a float literal. */
void ir_format_float(Buf *b, double x)
{
    if (isnan(x)) {
        buf_puts(b, "nan");
        return;
    }
    if (isinf(x)) {
        buf_puts(b, x < 0 ? "-inf" : "inf");
        return;
    }
    char tmp[64];
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
        if (strtod(tmp, NULL) == x)
            break;
    }
    snprintf(tmp, sizeof tmp, "%.*e", prec - 1, x);
    int exp10 = atoi(strchr(tmp, 'e') + 1);
    if (exp10 >= -4 && exp10 < 16) {
        int decimals = prec - 1 - exp10;
        snprintf(tmp, sizeof tmp, "%.*f", decimals > 1 ? decimals : 1, x);
    }
    buf_puts(b, tmp);
}

static void put_string(Buf *b, const char *s)
{
    buf_putc(b, '"');
    for (const unsigned char *q = (const unsigned char *)s; *q; q++) {
        if (*q == '"' || *q == '\\')
            buf_printf(b, "\\%c", *q);
        else if (*q == '\n')
            buf_puts(b, "\\n");
        else if (*q == '\t')
            buf_puts(b, "\\t");
        else if (*q < 0x20 || *q == 0x7f)
            buf_printf(b, "\\x%02x", *q);
        else
            buf_putc(b, (char)*q);
    }
    buf_putc(b, '"');
}

static const char *const dot_prec_names[] = {"default", "tf32", "tf32x3", "ieee"};

const char *ir_dot_prec_name(int prec)
{
    return prec >= 0 && prec < 4 ? dot_prec_names[prec] : "?";
}

static bool is_reduction(OpKind op)
{
    return op == OP_SUM || op == OP_MAX || op == OP_MIN || op == OP_ARGMAX || op == OP_ARGMIN;
}

const struct LoopHint ir_loop_hints[6] = {
    {"num_stages", 0}, {"loop_unroll_factor", 0}, {"flatten", LHB_FLATTEN},
    {"warp_specialize", LHB_WARP_SPECIALIZE}, {"disallow_acc_multi_buffer", LHB_NO_ACC_MULTI_BUFFER},
    {"disable_licm", LHB_DISABLE_LICM},
};

/* Attributes in braces after the operands ({axis = 1, keep_dims}, ...). */
static void put_attrs(Printer *p, const Inst *in)
{
    Buf *b = p->b;
    OpKind op = (OpKind)in->op;
    if (is_reduction(op)) {
        buf_printf(b, " {axis = %lld%s}", (long long)in->ival, in->flags & IF_KEEP_DIMS ? ", keep_dims" : "");
    } else if (op == OP_CUMSUM || op == OP_CUMPROD) {
        buf_printf(b, " {axis = %lld%s}", (long long)in->ival, in->flags & IF_REVERSE ? ", reverse" : "");
    } else if (op == OP_EXPAND_DIMS) {
        buf_printf(b, " {axis = %lld}", (long long)in->ival);
    } else if (op == OP_PERMUTE || op == OP_MULTIPLE_OF || op == OP_MAX_CONTIGUOUS) {
        buf_printf(b, " {%s = [", op == OP_PERMUTE ? "perm" : "values");
        for (int i = 0; i < in->nints && i < KAD_MAX_RANK; i++)
            buf_printf(b, i ? ", %d" : "%d", (int)in->ints[i]);
        buf_puts(b, "]}");
    } else if (op == OP_DOT) {
        if (in->ival != DP_DEFAULT)
            buf_printf(b, " {precision = %s}", ir_dot_prec_name((int)in->ival));
    } else if (op == OP_CUSTOM_VJP || op == OP_CUSTOM_JVP) {
        buf_printf(b, " {rule = %lld}", (long long)in->ival);
    } else if (op == OP_SPLIT) {
        buf_printf(b, " {half = %lld}", (long long)in->ival);
    } else if (op == OP_FLIP || op == OP_GATHER) {
        buf_printf(b, " {axis = %lld}", (long long)in->ival);
    } else if (op == OP_SORT) {
        buf_printf(b, " {k = %lld%s}", (long long)in->ival, in->flags & IF_REVERSE ? ", descending" : "");
    } else if (op == OP_HISTOGRAM) {
        buf_printf(b, " {bins = %lld}", (long long)in->ival);
    } else if (op == OP_ADD_ROUND || op == OP_SUB_ROUND || op == OP_MUL_ROUND || op == OP_DIV_ROUND ||
               op == OP_SQRT_ROUND || op == OP_RCP_ROUND || op == OP_FMA_ROUND) {
        buf_printf(b, " {round = %s}", libm_rounding_names[in->ival & 3]);
    } else if (op == OP_BARRIER && in->ival) {
        buf_printf(b, " {lanes = %lld}", (long long)in->ival);
    } else if (op == OP_ASSERT) {
        buf_puts(b, " {msg = ");
        put_string(b, in->sattr ? in->sattr : "");
        buf_putc(b, '}');
    }
}

static void print_block(Printer *p, const Block *blk, int depth);

/* Values in a comma-separated list. */
static void put_vals(Printer *p, const ValId *v, int n)
{
    for (int i = 0; i < n; i++) {
        if (i)
            buf_puts(p->b, ", ");
        put_val(p, v[i]);
    }
}

/* " -> (t1, t2)" after a control-flow header, omitted without results. */
static void put_result_types(Printer *p, const Inst *in)
{
    if (!in->nres)
        return;
    buf_puts(p->b, " -> (");
    for (int i = 0; i < in->nres; i++) {
        if (i)
            buf_puts(p->b, ", ");
        put_type_of(p, in->res[i]);
    }
    buf_putc(p->b, ')');
}

/* A region's body and its closing brace at depth. */
static void put_region(Printer *p, const Inst *in, int r, int depth)
{
    buf_puts(p->b, " {\n");
    if (r < in->nregions && in->regions[r])
        print_block(p, in->regions[r], depth + 1);
    indent(p, depth);
    buf_putc(p->b, '}');
}

/* "(%a = %a0, %b = %b0)": region params paired with initial values. */
static void put_bindings(Printer *p, const Block *r, int pfirst, const ValId *inits, int ninits)
{
    int np = r ? r->nparams - pfirst : 0;
    int n = np > ninits ? np : ninits;
    buf_putc(p->b, '(');
    for (int i = 0; i < n; i++) {
        if (i)
            buf_puts(p->b, ", ");
        put_val(p, i < np ? r->params[pfirst + i] : 0);
        buf_puts(p->b, " = ");
        put_val(p, i < ninits ? inits[i] : 0);
    }
    buf_putc(p->b, ')');
}

static void print_inst(Printer *p, const Inst *in, int depth)
{
    Buf *b = p->b;
    OpKind op = (OpKind)in->op;
    indent(p, depth);
    if (op >= OP_COUNT) {
        buf_printf(b, "?op%d\n", (int)op);
        return;
    }
    if (in->nres) {
        put_vals(p, in->res, in->nres);
        buf_puts(b, " = ");
    }
    buf_puts(b, op_info[op].name);
    switch (op) {
    case OP_FOR: {
        const Block *r = in->nregions > 0 ? in->regions[0] : NULL;
        buf_putc(b, ' ');
        put_val(p, r && r->nparams > 0 ? r->params[0] : 0);
        buf_puts(b, " = ");
        put_val(p, in->nargs > 0 ? in->args[0] : 0);
        buf_puts(b, " to ");
        put_val(p, in->nargs > 1 ? in->args[1] : 0);
        buf_puts(b, " step ");
        put_val(p, in->nargs > 2 ? in->args[2] : 0);
        if (in->nints == LH_N) { /* hints {num_stages = 3, flatten = 1} */
            const char *sep = " hints {";
            for (int h = 0; h < 6; h++) {
                int bit = ir_loop_hints[h].bit;
                int v = bit ? ((in->ints[LH_GIVEN] & bit) ? (in->ints[LH_TRUE] & bit) != 0 : -1)
                            : in->ints[h == 0 ? LH_STAGES : LH_UNROLL];
                if (v < 0)
                    continue;
                buf_printf(b, "%s%s = %d", sep, ir_loop_hints[h].name, v);
                sep = ", ";
            }
            buf_puts(b, "}");
        }
        if (in->nargs > 3 || (r && r->nparams > 1)) {
            buf_puts(b, " iter_args");
            put_bindings(p, r, 1, in->args + (in->nargs > 3 ? 3 : in->nargs),
                         in->nargs > 3 ? in->nargs - 3 : 0);
        }
        put_result_types(p, in);
        put_region(p, in, 0, depth);
        break;
    }
    case OP_IF:
        buf_putc(b, ' ');
        put_vals(p, in->args, in->nargs);
        put_result_types(p, in);
        put_region(p, in, 0, depth);
        buf_puts(b, " else");
        put_region(p, in, 1, depth);
        break;
    case OP_WHILE: {
        const Block *c = in->nregions > 0 ? in->regions[0] : NULL;
        const Block *body = in->nregions > 1 ? in->regions[1] : NULL;
        buf_putc(b, ' ');
        put_bindings(p, c, 0, in->args, in->nargs);
        put_result_types(p, in);
        put_region(p, in, 0, depth);
        buf_puts(b, " do (");
        if (body)
            put_vals(p, body->params, body->nparams);
        buf_putc(b, ')');
        put_region(p, in, 1, depth);
        break;
    }
    case OP_SCAN:   /* scan %a, %b {axis = 0, reverse} -> (T, T) combine (%x1, %x2, %y1, %y2) { ... } */
    case OP_REDUCE: { /* reduce %a, %b {axis = 0} -> (T, T) combine (%x1, %x2, %y1, %y2) { ... } */
        const Block *r = in->nregions > 0 ? in->regions[0] : NULL;
        buf_putc(b, ' ');
        put_vals(p, in->args, in->nargs);
        buf_printf(b, " {axis = %lld%s}", (long long)in->ival, in->flags & IF_REVERSE ? ", reverse" : "");
        put_result_types(p, in);
        buf_puts(b, " combine (");
        if (r)
            put_vals(p, r->params, r->nparams);
        buf_putc(b, ')');
        put_region(p, in, 0, depth);
        break;
    }
    default: {
        /* immediates before the operands */
        const Type *rt = in->nres ? &p->f->vals.v[in->res[0]].ty : NULL;
        if (op == OP_CONST) {
            if (rt && dtype_is_float((Dtype)rt->dt)) {
                buf_putc(b, ' ');
                ir_format_float(b, in->fval);
            } else if (rt && rt->dt == DT_U64) {
                buf_printf(b, " %llu", (unsigned long long)in->ival); /* stored as the bit pattern */
            } else {
                buf_printf(b, " %lld", (long long)in->ival);
            }
        } else if (op == OP_PROGRAM_ID || op == OP_NUM_PROGRAMS || op == OP_ARANGE) {
            buf_printf(b, " %lld", (long long)in->ival);
        }
        /* operands; the optional ones of memory ops are keyword-prefixed */
        for (int i = 0; i < in->nargs; i++) {
            buf_puts(b, i ? ", " : " ");
            if (op == OP_LOAD || op_writes_memory(op)) {
                int nfixed = op == OP_LOAD ? 1 : 2;
                if (i == ir_desc_at(in) && (in->flags & IF_DESC))
                    buf_puts(b, "desc ");
                else if (i > ir_desc_at(in))
                    ;
                else if (i == nfixed && (in->flags & IF_HAS_MASK))
                    buf_puts(b, "mask ");
                else if (i >= nfixed && (in->flags & IF_HAS_OTHER))
                    buf_puts(b, "other ");
            }
            put_val(p, in->args[i]);
        }
        put_attrs(p, in);
        if (in->nres == 1) {
            buf_puts(b, " : ");
            put_type_of(p, in->res[0]);
        }
        break;
    }
    }
    buf_putc(b, '\n');
}

static void print_block(Printer *p, const Block *blk, int depth)
{
    for (int i = 0; i < blk->insts.n; i++)
        print_inst(p, &blk->insts.v[i], depth);
}

static const char *const tx_names[] = {[TX_ADD] = "add", [TX_SUB] = "sub", [TX_MUL] = "mul", [TX_DIV] = "div",
                                       [TX_REM] = "rem", [TX_MAX] = "max", [TX_MIN] = "min", [TX_CDIV] = "cdiv"};

const char *ir_tape_expr_op_name(int op) { return op >= TX_ADD && op <= TX_CDIV ? tx_names[op] : NULL; }

/* A tape's trip count: INT, %param, grid(K), or OP(x, y). */
static void put_tape_expr(Printer *p, const TapeExpr *e)
{
    switch (e->op) {
    case TX_CONST:
        buf_printf(p->b, "%lld", (long long)e->v);
        return;
    case TX_PARAM:
        put_val(p, p->f->params[e->v]);
        return;
    case TX_GRID:
        buf_printf(p->b, "grid(%lld)", (long long)e->v);
        return;
    case TX_PID:
        buf_printf(p->b, "pid(%lld)", (long long)e->v);
        return;
    default:
        buf_printf(p->b, "%s(", tx_names[e->op]);
        put_tape_expr(p, e->x);
        buf_puts(p->b, ", ");
        put_tape_expr(p, e->y);
        buf_putc(p->b, ')');
        return;
    }
}

bool ir_inst_writes(const Inst *in)
{
    if (op_writes_memory(in->op) || in->op == OP_BARRIER)
        return true;
    for (int r = 0; r < in->nregions; r++)
        for (int k = 0; k < in->regions[r]->insts.n; k++)
            if (ir_inst_writes(&in->regions[r]->insts.v[k]))
                return true;
    return false;
}

bool ir_block_has_op(const Block *b, int op)
{
    for (int k = 0; b && k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        if (in->op == op)
            return true;
        for (int r = 0; r < in->nregions; r++)
            if (ir_block_has_op(in->regions[r], op))
                return true;
    }
    return false;
}

bool ir_inst_uses(const Inst *in, ValId v)
{
    for (int i = 0; i < in->nargs; i++)
        if (in->args[i] == v)
            return true;
    for (int r = 0; r < in->nregions; r++)
        if (ir_block_uses(in->regions[r], v))
            return true;
    return false;
}

bool ir_block_uses(const Block *b, ValId v)
{
    for (int k = 0; k < b->insts.n; k++)
        if (ir_inst_uses(&b->insts.v[k], v))
            return true;
    return false;
}

static Block *block_clone(Arena *a, const Block *b)
{
    Block *c = arena_alloc(a, sizeof *c);
    c->nparams = b->nparams;
    if (b->nparams) {
        c->params = arena_alloc(a, sizeof *c->params * (size_t)b->nparams);
        memcpy(c->params, b->params, sizeof *c->params * (size_t)b->nparams);
    }
    for (int k = 0; k < b->insts.n; k++) {
        Inst in = b->insts.v[k];
        if (in.nargs) {
            in.args = arena_alloc(a, sizeof *in.args * (size_t)in.nargs);
            memcpy(in.args, b->insts.v[k].args, sizeof *in.args * (size_t)in.nargs);
        }
        if (in.nres) {
            in.res = arena_alloc(a, sizeof *in.res * (size_t)in.nres);
            memcpy(in.res, b->insts.v[k].res, sizeof *in.res * (size_t)in.nres);
        }
        if (in.nregions) {
            in.regions = arena_alloc(a, sizeof *in.regions * (size_t)in.nregions);
            for (int r = 0; r < in.nregions; r++)
                in.regions[r] = block_clone(a, b->insts.v[k].regions[r]);
        }
        vec_push(a, c->insts, in);
    }
    return c;
}

Func *ir_func_clone(Arena *a, const Func *f, const char *name)
{
    Func *c = arena_alloc(a, sizeof *c);
    *c = *f;
    c->a = a;
    c->name = arena_strdup(a, name);
    c->vals.v = NULL;
    c->vals.n = c->vals.cap = 0;
    for (int i = 0; i < f->vals.n; i++)
        vec_push(a, c->vals, f->vals.v[i]);
    c->params = arena_alloc(a, sizeof *c->params * (size_t)(f->nparams + 1));
    memcpy(c->params, f->params, sizeof *c->params * (size_t)f->nparams);
    c->body = block_clone(a, f->body);
    c->rules.v = NULL;
    c->rules.n = c->rules.cap = 0;
    for (int i = 0; i < f->rules.n; i++)
        vec_push(a, c->rules, block_clone(a, f->rules.v[i]));
    memset(&c->hints, 0, sizeof c->hints);
    return c;
}

const ParamRange *ir_param_range(const Func *f, int param)
{
    for (int i = 0; i < f->ranges.n; i++)
        if (f->ranges.v[i].param == param)
            return &f->ranges.v[i];
    return NULL;
}

void ir_print(Buf *b, const Func *f) { ir_print_plan(b, f, NULL); }

void ir_print_plan(Buf *b, const Func *f, const IrPlanText *pt)
{
    static const IrPlanText none;
    if (!pt)
        pt = &none;
    Printer p = {.b = b, .f = f};
    namer_init(&p.nm, b->a, f);
    buf_printf(b, "kernel @%s(", f->name ? f->name : "kernel");
    for (int i = 0; i < f->nparams; i++) {
        if (i)
            buf_puts(b, ", ");
        put_val(&p, f->params[i]);
        buf_puts(b, ": ");
        put_type_of(&p, f->params[i]);
        const ParamRange *r = ir_param_range(f, i);
        if (r)
            buf_printf(b, " in [%lld, %lld]", (long long)r->lo, (long long)r->hi);
    }
    buf_putc(b, ')');
    if (f->consts.n) {
        buf_puts(b, " [");
        for (int i = 0; i < f->consts.n; i++)
            buf_printf(b, "%s%s = %s", i ? ", " : "", f->consts.v[i].name, f->consts.v[i].value);
        buf_putc(b, ']');
    }
    for (int j = 0; j < pt->tapes.n; j++) { /* tape(%t trips EXPR slot N, ...) */
        buf_puts(b, j ? ", " : " tape(");
        put_val(&p, pt->tapes.v[j].param);
        buf_puts(b, " trips ");
        put_tape_expr(&p, pt->tapes.v[j].trips);
        buf_printf(b, " slot %lld", (long long)pt->tapes.v[j].slot);
        if (pt->tapes.v[j].bounded)
            buf_puts(b, " bounded");
        if (pt->tapes.v[j].ckpt)
            buf_printf(b, " checkpointed %lld%s", (long long)pt->tapes.v[j].budget, pt->tapes.v[j].revolve ? " revolve" : "");
        if (j + 1 == pt->tapes.n)
            buf_putc(b, ')');
    }
    if (pt->spread) { /* spread(%s trips EXPR [lanes N]) */
        buf_puts(b, " spread(");
        put_val(&p, pt->spread->param);
        buf_puts(b, " trips ");
        put_tape_expr(&p, pt->spread->trips);
        if (pt->spread->lanes)
            buf_printf(b, " lanes %d", (int)pt->spread->lanes);
        buf_putc(b, ')');
    }
    if (pt->fold) { /* fold(axes = [K...], programs = [%G...], %part = x: dtype span %span [rows N [flag %f]], ...) */
        const FoldPlan *pl = pt->fold;
        buf_puts(b, " fold(axes = [");
        for (int k = 0, n = 0; k < 3; k++)
            if (pl->axes & (1u << k))
                buf_printf(b, "%s%d", n++ ? ", " : "", k);
        buf_puts(b, "], programs = [");
        for (int k = 0, n = 0; k < 3; k++)
            if (pl->axes & (1u << k)) {
                buf_puts(b, n++ ? ", " : "");
                put_val(&p, pl->programs[k]);
            }
        buf_putc(b, ']');
        for (int j = 0; j < pl->n; j++) {
            buf_puts(b, ", ");
            put_val(&p, f->params[pl->in[j].slot]);
            buf_printf(b, " = %s: %s span ", pl->in[j].name, dtype_name(pl->in[j].dt));
            put_val(&p, pl->in[j].span);
            if (pl->in[j].load_store)
                buf_puts(b, " load_store");
            if (pl->in[j].rows)
                buf_printf(b, " rows %d", pl->in[j].rows);
            if (pl->in[j].flag) {
                buf_puts(b, " flag ");
                put_val(&p, pl->in[j].flag);
            }
        }
        buf_putc(b, ')');
    }
    buf_puts(b, " {\n");
    if (f->body)
        print_block(&p, f->body, 1);
    buf_puts(b, "}\n");
    for (int r = 0; r < f->rules.n; r++) { /* rule N(%a: T, ..., %dy: T) { ... yield ... } */
        const Block *rb = f->rules.v[r];
        buf_printf(b, "rule %d(", r);
        for (int i = 0; i < rb->nparams; i++) {
            if (i)
                buf_puts(b, ", ");
            put_val(&p, rb->params[i]);
            buf_puts(b, ": ");
            put_type_of(&p, rb->params[i]);
        }
        buf_puts(b, ") {\n");
        print_block(&p, rb, 1);
        buf_puts(b, "}\n");
    }
}

void ir_index_defs(const Block *b, const Inst **def)
{
    for (int k = 0; b && k < b->insts.n; k++) {
        const Inst *in = &b->insts.v[k];
        for (int r = 0; r < in->nres; r++)
            def[in->res[r]] = in;
        for (int r = 0; r < in->nregions; r++)
            ir_index_defs(in->regions[r], def);
    }
}

Inst *ir_block_detach(Block *b, int *n)
{
    Inst *old = b->insts.v;
    *n = b->insts.n;
    b->insts.v = NULL;
    b->insts.n = b->insts.cap = 0;
    return old;
}

char *ir_to_string(Arena *a, const Func *f)
{
    Buf b = {.a = a};
    ir_print(&b, f);
    return (char *)buf_str(&b);
}
