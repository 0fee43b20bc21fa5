/* test_util.c -- arenas, vectors, buffers, diagnostics, types. */

static void test_arena_vec_buf(T *t)
{
    Arena *a = arena_new(0);
    Vec(int) v = {0};
    for (int i = 0; i < 1000; i++)
        vec_push(a, v, i * 3);
    CHECK(t, v.n == 1000 && v.v[999] == 2997 && v.v[0] == 0);
    Buf b = {.a = a};
    CHECK(t, strcmp(buf_str(&b), "") == 0);
    buf_printf(&b, "%d-%s", 42, "x");
    buf_putc(&b, '!');
    CHECK(t, strcmp(buf_str(&b), "42-x!") == 0);
    char *s = arena_printf(a, "%s:%d", "f", 7);
    CHECK(t, strcmp(s, "f:7") == 0);
    arena_free(a);
}

/* An arena with a byte limit longjmps to its oom target instead of failing. */
static void test_arena_limit(T *t)
{
    Arena *a = arena_new(100000);
    jmp_buf oom;
    volatile int reached = 0;
    arena_set_oom(a, &oom);
    if (setjmp(oom) == 0) {
        for (int i = 0; i < 1000; i++)
            arena_alloc(a, 1000);
        reached = 1;
    }
    CHECK(t, reached == 0);
    CHECK(t, arena_used(a) <= 100000);
    arena_free(a);
}

static void test_diag_render(T *t)
{
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    diag_add_source(&d, "k.py", "line one\n    x = foo(1)\n");
    diag_error(&d, (Loc){"k.py", 2, 9}, "unknown function '%s'", "foo");
    const char *r = diag_render(&d);
    CHECK(t, strcmp(r, "k.py:2:9: error: unknown function 'foo'\n        x = foo(1)\n            ^\n") == 0);
    CHECK(t, d.nerrors == 1);
    arena_free(a);
}

static void test_types(T *t)
{
    Arena *a = arena_new(0);
    int32_t sh[2] = {64, 128};
    Buf b = {.a = a};
    type_print(&b, type_ptr(DT_BF16, 2, sh));
    buf_putc(&b, ' ');
    type_print(&b, type_scalar(DT_I32));
    CHECK(t, strcmp(buf_str(&b), "*bf16[64,128] i32") == 0);
    CHECK(t, type_numel(type_tile(DT_F32, 2, sh)) == 8192);
    CHECK(t, dtype_parse("fp16", 4) == DT_F16 && dtype_parse("xx", 2) == DT_VOID);
    CHECK(t, dtype_bytes(DT_I1) == 1 && dtype_bytes(DT_BF16) == 2);
    arena_free(a);
}

/* fp8: every byte decodes to a value that rounds to itself and encodes back to that byte
 * (NaN codes to the canonical NaN); the largest finite values, saturation and ties. */
static void test_fp8(T *t)
{
    static const Dtype fmts[] = {DT_F8E5, DT_F8E4NV, DT_F8E4B15};
    for (int f = 0; f < 3; f++) {
        Dtype dt = fmts[f];
        CHECK(t, dtype_is_fp8(dt) && dtype_bytes(dt) == 1 && dtype_is_float(dt));
        for (int b = 0; b < 256; b++) {
            double v = fp8_decode(dt, (uint8_t)b);
            if (isnan(v)) {
                CHECK(t, dt != DT_F8E4B15 && (fp8_encode(dt, v) & 0x7f) == 0x7f);
                continue;
            }
            if (isinf(v)) {
                CHECK(t, dt == DT_F8E5);
                continue;
            }
            if (dt == DT_F8E4B15 && fabs(v) > 1.75)
                continue; /* 0x7f/0xff decode to 1.875, which the conversion never produces */
            CHECK(t, dtype_round(dt, v) == v);
            CHECK(t, fp8_encode(dt, v) == (uint8_t)b);
        }
    }
    CHECK(t, dtype_round(DT_F8E4NV, 1e6) == 448.0 && dtype_round(DT_F8E4NV, -INFINITY) == -448.0);
    CHECK(t, dtype_round(DT_F8E5, 1e6) == 57344.0 && isnan(dtype_round(DT_F8E5, NAN)));
    CHECK(t, dtype_round(DT_F8E4NV, 1.0625) == 1.0 && dtype_round(DT_F8E4NV, 1.1875) == 1.25); /* ties to even */
    CHECK(t, dtype_round(DT_F8E4NV, 0x1p-10) == 0.0 && dtype_round(DT_F8E4NV, 0x1.8p-10) == 0x1p-9); /* subnormals */
    CHECK(t, dtype_round(DT_F8E4B15, 1.0625) == 1.125 && dtype_round(DT_F8E4B15, NAN) == 1.75); /* ties away */
    CHECK(t, dtype_round(DT_F8E4B15, -5.0) == -1.75);
}

static void tests_util(T *t)
{
    RUN(t, test_arena_vec_buf);
    RUN(t, test_arena_limit);
    RUN(t, test_diag_render);
    RUN(t, test_types);
    RUN(t, test_fp8);
}
