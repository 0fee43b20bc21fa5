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

static void tests_util(T *t)
{
    RUN(t, test_arena_vec_buf);
    RUN(t, test_arena_limit);
    RUN(t, test_diag_render);
    RUN(t, test_types);
}
