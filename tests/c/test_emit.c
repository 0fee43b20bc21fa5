/* test_emit.c -- unit tests of the Triton emitter (emit_triton.c).
 *
 * Kernels are built with the IR builder, so these tests need neither the
 * front end nor the IR parser: name sanitizing, Python precedence,
 * constants as literals or typed tensors, parallel copies of loop-carried
 * values, and located errors for IR without a Triton spelling.
 */

static Loc emit_loc(void) { return (Loc){"emit_test.ir", 1, 1}; }

/* The module text, or NULL after an error (diagnostics in *d). */
static const char *emit_text(Arena *a, const Func *f, Diags *d)
{
    Buf b = {.a = a};
    if (!emit_triton(&b, f, NULL, d))
        return NULL;
    return buf_str(&b);
}

static bool has(const char *text, const char *needle)
{
    bool ok = text && strstr(text, needle);
    if (!ok)
        printf("  missing \"%s\" in:\n%s\n", needle, text ? text : "(null)");
    return ok;
}

static void test_emit_names(T *t)
{
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    Loc l = emit_loc();
    Func *f = ir_func_new(a, "my.kernel", l);
    Type i32 = type_scalar(DT_I32);
    ValId p = ir_param_add(f, type_ptr(DT_F32, 0, NULL), "x_ptr", l);
    ValId n = ir_param_add(f, i32, "n", l);
    Block *b = f->body;
    Inst *in = ir_emit(f, b, OP_PROGRAM_ID, NULL, 0, &i32, 1, l);
    ValId pid = in->res[0];
    f->vals.v[pid].name = "acc.1";
    ValId v1 = ir_op2(f, b, OP_MUL, i32, pid, n, l);
    f->vals.v[v1].name = "lambda";
    ValId v2 = ir_op2(f, b, OP_ADD, i32, v1, pid, l);
    f->vals.v[v2].name = "2x";
    ValId v3 = ir_op2(f, b, OP_SUB, i32, v2, n, l);
    f->vals.v[v3].name = "a-b";
    ValId v4 = ir_op2(f, b, OP_SUB, i32, v3, v1, l);
    f->vals.v[v4].name = "7"; /* numeric: no hint */
    ValId v5 = ir_op2(f, b, OP_MUL, i32, v4, v4, l);
    f->vals.v[v5].name = "tl"; /* clashes with the module alias */
    ValId q = ir_op2(f, b, OP_ADDPTR, type_ptr(DT_F32, 0, NULL), p, v5, l);
    ValId fv = ir_op1(f, b, OP_CAST, type_scalar(DT_F32), v3, l);
    ValId st[2] = {q, fv};
    ir_emit(f, b, OP_STORE, st, 2, NULL, 0, l);
    const char *s = emit_text(a, f, &d);
    CHECK(t, has(s, "def my_kernel(x_ptr, n):"));
    CHECK(t, has(s, "    acc_1 = tl.program_id(0)\n"));
    CHECK(t, has(s, "    lambda_1 = acc_1 * n\n"));
    CHECK(t, has(s, "    v2x = lambda_1 + acc_1\n"));
    CHECK(t, has(s, "    a_b = v2x - n\n"));
    CHECK(t, has(s, "    tmp0 = a_b - lambda_1\n"));
    CHECK(t, has(s, "    tl_1 = tmp0 * tmp0\n"));
    CHECK(t, has(s, "    tl.store(x_ptr + tl_1, tl.cast(a_b, tl.float32))\n"));
    CHECK(t, has(s, "import triton.language as tl\n"));
    CHECK(t, s && !strstr(s, "libdevice"));
    arena_free(a);
}

/* Stores the scalar e through a fresh pointer parameter, so that the
 * expression is inlined into the store. */
static void store_expr(Func *f, ValId e, const char *pname)
{
    Loc l = emit_loc();
    ValId p = ir_param_add(f, type_ptr((Dtype)ir_type(f, e).dt, 0, NULL), pname, l);
    ValId st[2] = {p, e};
    ir_emit(f, f->body, OP_STORE, st, 2, NULL, 0, l);
}

static void test_emit_precedence(T *t)
{
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    Loc l = emit_loc();
    Func *f = ir_func_new(a, "prec", l);
    Type i32 = type_scalar(DT_I32), i1 = type_scalar(DT_I1);
    ValId x = ir_param_add(f, i32, "x", l);
    ValId y = ir_param_add(f, i32, "y", l);
    Block *b = f->body;
    store_expr(f, ir_op2(f, b, OP_SUB, i32, x, ir_op2(f, b, OP_SUB, i32, y, x, l), l), "o1");
    store_expr(f, ir_op2(f, b, OP_MUL, i32, ir_op2(f, b, OP_ADD, i32, x, y, l), x, l), "o2");
    store_expr(f, ir_op2(f, b, OP_ADD, i32, ir_op2(f, b, OP_MUL, i32, x, y, l), x, l), "o3");
    ValId lt1 = ir_op2(f, b, OP_LT, i1, x, y, l), lt2 = ir_op2(f, b, OP_LT, i1, y, x, l);
    store_expr(f, ir_op2(f, b, OP_AND, i1, lt1, lt2, l), "o4");
    ValId lt3 = ir_op2(f, b, OP_LT, i1, x, y, l), lt4 = ir_op2(f, b, OP_GE, i1, y, x, l);
    store_expr(f, ir_op2(f, b, OP_EQ, i1, lt3, lt4, l), "o5");
    store_expr(f, ir_op1(f, b, OP_NEG, i32, ir_op2(f, b, OP_ADD, i32, x, y, l), l), "o6");
    ValId one = ir_const_int(f, b, i32, 1, l);
    store_expr(f, ir_op2(f, b, OP_SHL, i32, x, ir_op2(f, b, OP_ADD, i32, y, one, l), l), "o7");
    store_expr(f, ir_op2(f, b, OP_DIV, i32, ir_op2(f, b, OP_REM, i32, x, y, l), y, l), "o8");
    store_expr(f, ir_op2(f, b, OP_REM, i32, x, ir_op2(f, b, OP_DIV, i32, x, y, l), l), "o9");
    ValId xo = ir_op2(f, b, OP_XOR, i32, x, ir_op2(f, b, OP_AND, i32, x, y, l), l);
    store_expr(f, ir_op2(f, b, OP_OR, i32, xo, ir_op2(f, b, OP_SHR, i32, y, one, l), l), "o10");
    ValId m = ir_const_int(f, b, i32, -3, l);
    store_expr(f, ir_op2(f, b, OP_MUL, i32, x, m, l), "o11");
    const char *s = emit_text(a, f, &d);
    CHECK(t, has(s, "tl.store(o1, x - (y - x))"));
    CHECK(t, has(s, "tl.store(o2, (x + y) * x)"));
    CHECK(t, has(s, "tl.store(o3, x * y + x)"));
    CHECK(t, has(s, "tl.store(o4, (x < y) & (y < x))"));
    CHECK(t, has(s, "tl.store(o5, (x < y) == (y >= x))"));
    CHECK(t, has(s, "tl.store(o6, -(x + y))"));
    CHECK(t, has(s, "tl.store(o7, x << y + 1)"));
    CHECK(t, has(s, "tl.store(o8, x % y // y)"));
    CHECK(t, has(s, "tl.store(o9, x % (x // y))"));
    CHECK(t, has(s, "tl.store(o10, x ^ x & y | y >> 1)"));
    CHECK(t, has(s, "tl.store(o11, x * -3)"));
    arena_free(a);
}

static void test_emit_constants(T *t)
{
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    Loc l = emit_loc();
    Func *f = ir_func_new(a, "consts", l);
    Type f32 = type_scalar(DT_F32), f16 = type_scalar(DT_F16), i64 = type_scalar(DT_I64);
    int32_t sh[1] = {64};
    Type t64 = type_tile(DT_F32, 1, sh);
    ValId xf = ir_param_add(f, f32, "xf", l);
    ValId xh = ir_param_add(f, f16, "xh", l);
    Block *b = f->body;
    /* an fp32 constant prints as the shortest decimal of its fp32 value */
    store_expr(f, ir_op2(f, b, OP_MUL, f32, xf, ir_const_float(f, b, f32, (double)0.1f, l), l), "o1");
    /* fp16 division runs in fp32 in Triton: an inexact constant is typed, the result cast back */
    store_expr(f, ir_op2(f, b, OP_DIV, f16, xh, ir_const_float(f, b, f16, 0.1, l), l), "o2");
    store_expr(f, ir_op2(f, b, OP_MAXIMUM, f32, xf, ir_const_float(f, b, f32, -INFINITY, l), l), "o3");
    /* an i64 value that would be an i32 literal gets its type spelled out */
    ValId k = ir_const_int(f, b, i64, 5, l);
    store_expr(f, ir_op1(f, b, OP_NEG, i64, k, l), "o4");
    /* a tile constant: tl.zeros / tl.full */
    ValId z = ir_const_float(f, b, t64, 0.0, l);
    store_expr(f, ir_op1(f, b, OP_SUM, f32, ir_op1(f, b, OP_EXP, t64, z, l), l), "o5");
    ValId ones = ir_const_float(f, b, t64, 1.5, l);
    store_expr(f, ir_op1(f, b, OP_SUM, f32, ones, l), "o6");
    const char *s = emit_text(a, f, &d);
    CHECK(t, has(s, "tl.store(o1, xf * 0.1)"));
    CHECK(t, has(s, "tl.store(o2, tl.cast(xh / tl.full([], 0.1, tl.float16), tl.float16))"));
    CHECK(t, has(s, "tl.store(o3, tl.maximum(xf, float(\"-inf\")))"));
    CHECK(t, has(s, "tl.store(o4, -tl.full([], 5, tl.int64))"));
    CHECK(t, has(s, "tl.sum(tl.exp(tl.zeros([64], dtype=tl.float32)), axis=0)"));
    CHECK(t, has(s, "tl.sum(tl.full([64], 1.5, tl.float32), axis=0)"));
    arena_free(a);
}

/* for i in range(0, n) with carried (a, b) swapped every iteration: the
 * carried values reuse the parameters' variables and the swap is one
 * tuple assignment. */
static void test_emit_loop_swap(T *t)
{
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    Loc l = emit_loc();
    Func *f = ir_func_new(a, "swap", l);
    Type i32 = type_scalar(DT_I32), f32 = type_scalar(DT_F32);
    ValId n = ir_param_add(f, i32, "n", l);
    ValId x = ir_param_add(f, f32, "x", l);
    ValId y = ir_param_add(f, f32, "y", l);
    Block *b = f->body;
    ValId lb = ir_const_int(f, b, i32, 0, l), st = ir_const_int(f, b, i32, 1, l);
    ValId args[5] = {lb, n, st, x, y};
    Type rt[2] = {f32, f32};
    Inst *loop = ir_emit(f, b, OP_FOR, args, 5, rt, 2, l);
    int idx = b->insts.n - 1;
    Block *body = ir_inst_add_region(f, loop);
    ir_block_param_add(f, body, i32, "i", l);
    ValId pa = ir_block_param_add(f, body, f32, "a", l);
    ValId pb = ir_block_param_add(f, body, f32, "b", l);
    ValId ys[2] = {pb, pa};
    ir_emit(f, body, OP_YIELD, ys, 2, NULL, 0, l);
    loop = &b->insts.v[idx];
    store_expr(f, ir_op2(f, b, OP_SUB, f32, loop->res[0], loop->res[1], l), "out");
    const char *s = emit_text(a, f, &d);
    CHECK(t, has(s, "    for i in range(n):\n        x, y = y, x\n"));
    CHECK(t, has(s, "tl.store(out, x - y)"));
    arena_free(a);
}

static void test_emit_unsupported(T *t)
{
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    Loc l = {"k.ir", 7, 3};
    Func *f = ir_func_new(a, "bad", l);
    int32_t sh[1] = {1};
    ValId p = ir_param_add(f, type_ptr(DT_F32, 1, sh), "p", l);
    Block *b = f->body;
    ValId x = ir_op1(f, b, OP_LOAD, type_tile(DT_F32, 1, sh), p, l);
    store_expr(f, ir_op1(f, b, OP_RESHAPE, type_scalar(DT_F32), x, l), "o");
    const char *s = emit_text(a, f, &d);
    CHECK(t, s == NULL);
    CHECK(t, d.nerrors == 1);
    const char *msg = diag_render(&d);
    CHECK(t, has(msg, "k.ir:7:3: error: Triton emitter: reshape to a scalar has no Triton spelling"));
    arena_free(a);
}

static void tests_emit(T *t)
{
    RUN(t, test_emit_names);
    RUN(t, test_emit_precedence);
    RUN(t, test_emit_constants);
    RUN(t, test_emit_loop_swap);
    RUN(t, test_emit_unsupported);
}
