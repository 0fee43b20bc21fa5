/* test_interp.c -- the CPU interpreter (interp.c, interp_ops.c) on kernels written in
 * textual IR: memory and masks, reductions, control flow, rounding of
 * fp16/bf16, IM_F64, integer semantics, shape ops, dot, Philox, errors. */

/* One parsed kernel and the diagnostics of its runs. */
typedef struct IKernel {
    Arena *a;
    Diags d;
    Func *f;
} IKernel;

static bool ik_parse(T *t, IKernel *k, const char *text)
{
    k->a = arena_new(0);
    diag_init(&k->d, k->a);
    diag_add_source(&k->d, "t.ir", text);
    k->f = ir_parse(k->a, &k->d, "t.ir", text);
    if (!k->f || !ir_verify(k->f, &k->d)) {
        printf("  %s", diag_render(&k->d));
        CHECK(t, !"kernel does not parse");
        arena_free(k->a);
        return false;
    }
    return true;
}

static bool ik_run(IKernel *k, int64_t gx, int64_t gy, const InterpArg *args, int nargs,
                   InterpMode mode)
{
    int64_t grid[3] = {gx, gy, 1};
    return interp_run(k->f, grid, args, nargs, mode, &k->d);
}

/* The first diagnostic's message ("" when none). */
static const char *ik_msg(IKernel *k) { return k->d.list.n ? k->d.list.v[0].msg : ""; }

static InterpArg buf_arg(void *p, size_t n) { return (InterpArg){.data = p, .nbytes = (int64_t)n}; }
static InterpArg int_arg(int64_t i) { return (InterpArg){.i = i}; }

/* out[i] = x[i] + x[i] for i < n, four lanes per program, masked. */
static const char *const ADD_IR =
    "kernel @add(%x_ptr: *fp32, %out_ptr: *fp32, %n: i32) [BLOCK = 4] {\n"
    "  %pid = program_id 0 : i32\n"
    "  %c4 = const 4 : i32\n"
    "  %base = mul %pid, %c4 : i32\n"
    "  %offs = arange 0 : i32[4]\n"
    "  %b = broadcast %base : i32[4]\n"
    "  %i = add %b, %offs : i32[4]\n"
    "  %nn = broadcast %n : i32[4]\n"
    "  %mask = lt %i, %nn : i1[4]\n"
    "  %xp = broadcast %x_ptr : *fp32[4]\n"
    "  %xa = addptr %xp, %i : *fp32[4]\n"
    "  %x = load %xa, mask %mask : fp32[4]\n"
    "  %y = add %x, %x : fp32[4]\n"
    "  %op = broadcast %out_ptr : *fp32[4]\n"
    "  %oa = addptr %op, %i : *fp32[4]\n"
    "  store %oa, %y, mask %mask\n"
    "}\n";

static void test_interp_vector_add_mask(T *t)
{
    IKernel k;
    if (!ik_parse(t, &k, ADD_IR))
        return;
    float x[14], out[16];
    for (int i = 0; i < 14; i++)
        x[i] = (float)i * 0.5f;
    for (int i = 0; i < 16; i++)
        out[i] = -1;
    InterpArg args[3] = {buf_arg(x, sizeof x), buf_arg(out, sizeof out), int_arg(14)};
    CHECK(t, ik_run(&k, 4, 1, args, 3, IM_AS_WRITTEN));
    for (int i = 0; i < 14; i++)
        CHECK(t, out[i] == (float)i);
    CHECK(t, out[14] == -1 && out[15] == -1); /* masked-off lanes untouched */
    arena_free(k.a);
}

/* Leaving the mask out reads past the end: the error names the buffer, the
 * element, the program and the lane. */
static void test_interp_out_of_bounds(T *t)
{
    const char *ir =
        "kernel @oob(%x_ptr: *fp32, %out_ptr: *fp32) {\n"
        "  %pid = program_id 0 : i32\n"
        "  %c4 = const 4 : i32\n"
        "  %base = mul %pid, %c4 : i32\n"
        "  %offs = arange 0 : i32[4]\n"
        "  %b = broadcast %base : i32[4]\n"
        "  %i = add %b, %offs : i32[4]\n"
        "  %xp = broadcast %x_ptr : *fp32[4]\n"
        "  %xa = addptr %xp, %i : *fp32[4]\n"
        "  %x = load %xa : fp32[4]\n"
        "  %op = broadcast %out_ptr : *fp32[4]\n"
        "  %oa = addptr %op, %i : *fp32[4]\n"
        "  store %oa, %x\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    float x[10] = {0}, out[16] = {0};
    InterpArg args[2] = {buf_arg(x, sizeof x), buf_arg(out, sizeof out)};
    CHECK(t, !ik_run(&k, 4, 1, args, 2, IM_AS_WRITTEN));
    CHECK(t, strcmp(ik_msg(&k), "out-of-bounds load from 'x_ptr': element 10 of 10 "
                                "(program (2, 0, 0), lane 2)") == 0);
    CHECK(t, k.d.list.n == 1 && k.d.list.v[0].loc.line == 10 && k.d.list.v[0].loc.col == 3);
    /* programs 0 and 1 completed before the failure */
    CHECK(t, k.d.nerrors == 1);
    arena_free(k.a);
}

/* Row sums, maxima and argmax of a [4, 8] tile; results stored per row. */
static void test_interp_row_reduction(T *t)
{
    const char *ir =
        "kernel @rows(%x_ptr: *fp32, %s_ptr: *fp32, %m_ptr: *fp32, %a_ptr: *i32) {\n"
        "  %r = arange 0 : i32[4]\n"
        "  %c = arange 0 : i32[8]\n"
        "  %r2 = expand_dims %r {axis = 1} : i32[4,1]\n"
        "  %c2 = expand_dims %c {axis = 0} : i32[1,8]\n"
        "  %c8 = const 8 : i32[4,1]\n"
        "  %rs = mul %r2, %c8 : i32[4,1]\n"
        "  %rb = broadcast %rs : i32[4,8]\n"
        "  %cb = broadcast %c2 : i32[4,8]\n"
        "  %idx = add %rb, %cb : i32[4,8]\n"
        "  %xp = broadcast %x_ptr : *fp32[4,8]\n"
        "  %xa = addptr %xp, %idx : *fp32[4,8]\n"
        "  %x = load %xa : fp32[4,8]\n"
        "  %s = sum %x {axis = 1} : fp32[4]\n"
        "  %m = max %x {axis = 1} : fp32[4]\n"
        "  %am = argmax %x {axis = 1} : i32[4]\n"
        "  %sp = broadcast %s_ptr : *fp32[4]\n"
        "  %sa = addptr %sp, %r : *fp32[4]\n"
        "  store %sa, %s\n"
        "  %mp = broadcast %m_ptr : *fp32[4]\n"
        "  %ma = addptr %mp, %r : *fp32[4]\n"
        "  store %ma, %m\n"
        "  %ap = broadcast %a_ptr : *i32[4]\n"
        "  %aa = addptr %ap, %r : *i32[4]\n"
        "  store %aa, %am\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    float x[32], s[4], m[4];
    int32_t am[4];
    for (int i = 0; i < 32; i++)
        x[i] = (float)((i * 7) % 11) - 3.0f;
    x[8 + 5] = 100;                /* row 1: max at 5 */
    x[16 + 2] = x[16 + 6] = 50;    /* row 2: tie -> first index */
    x[24 + 1] = NAN;               /* row 3: NaN ignored by max */
    InterpArg args[4] = {buf_arg(x, sizeof x), buf_arg(s, sizeof s), buf_arg(m, sizeof m),
                         buf_arg(am, sizeof am)};
    CHECK(t, ik_run(&k, 1, 1, args, 4, IM_AS_WRITTEN));
    for (int r = 0; r < 3; r++) {
        double ref = 0, mx = -INFINITY;
        int arg = 0;
        for (int c = 0; c < 8; c++) {
            ref += x[r * 8 + c];
            if (x[r * 8 + c] > mx)
                mx = x[r * 8 + c], arg = c;
        }
        CHECK(t, s[r] == (float)ref && m[r] == (float)mx && am[r] == arg);
    }
    CHECK(t, am[1] == 5 && am[2] == 2);
    CHECK(t, isnan(s[3]) && m[3] == 6.0f); /* row 3: 6 is the largest non-NaN */
    arena_free(k.a);
}

/* A for loop with iter_args: sum and count of range(lb, ub, step), also
 * with a negative step, and a swap of two carried values per iteration. */
static void test_interp_for_loop(T *t)
{
    const char *ir =
        "kernel @loop(%out_ptr: *i32, %lb: i32, %ub: i32, %st: i32) {\n"
        "  %z = const 0 : i32\n"
        "  %one = const 1 : i32\n"
        "  %two = const 2 : i32\n"
        "  %s, %n, %p, %q = for %i = %lb to %ub step %st iter_args(%acc = %z, %k = %z,"
        " %a = %one, %b = %two) -> (i32, i32, i32, i32) {\n"
        "    %acc.1 = add %acc, %i : i32\n"
        "    %k.1 = add %k, %one : i32\n"
        "    yield %acc.1, %k.1, %b, %a\n"
        "  }\n"
        "  %o1 = addptr %out_ptr, %one : *i32\n"
        "  %o2 = addptr %out_ptr, %two : *i32\n"
        "  %c3 = const 3 : i32\n"
        "  %o3 = addptr %out_ptr, %c3 : *i32\n"
        "  store %out_ptr, %s\n"
        "  store %o1, %n\n"
        "  store %o2, %p\n"
        "  store %o3, %q\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    static const int cases[][3] = {{0, 10, 1}, {3, 20, 4}, {10, 0, -3}, {5, 5, 1}, {5, 0, 1}};
    for (int c = 0; c < 5; c++) {
        int32_t out[4] = {-9, -9, -9, -9};
        InterpArg args[4] = {buf_arg(out, sizeof out), int_arg(cases[c][0]), int_arg(cases[c][1]),
                             int_arg(cases[c][2])};
        CHECK(t, ik_run(&k, 1, 1, args, 4, IM_AS_WRITTEN));
        int sum = 0, n = 0;
        for (int i = cases[c][0]; cases[c][2] > 0 ? i < cases[c][1] : i > cases[c][1];
             i += cases[c][2])
            sum += i, n++;
        CHECK(t, out[0] == sum && out[1] == n);
        CHECK(t, out[2] == (n % 2 ? 2 : 1) && out[3] == (n % 2 ? 1 : 2));
    }
    /* step 0 is an error (Python's range raises) */
    int32_t out[4];
    InterpArg args[4] = {buf_arg(out, sizeof out), int_arg(0), int_arg(4), int_arg(0)};
    CHECK(t, !ik_run(&k, 1, 1, args, 4, IM_AS_WRITTEN));
    CHECK(t, strstr(ik_msg(&k), "for loop step is zero") != NULL);
    arena_free(k.a);
}

/* if with results, and a while loop doubling until it passes n. */
static void test_interp_if_while(T *t)
{
    const char *ir =
        "kernel @cf(%out_ptr: *i32, %n: i32) {\n"
        "  %one = const 1 : i32\n"
        "  %two = const 2 : i32\n"
        "  %ten = const 10 : i32\n"
        "  %big = gt %n, %ten : i1\n"
        "  %v = if %big -> (i32) {\n"
        "    %a = mul %n, %two : i32\n"
        "    yield %a\n"
        "  } else {\n"
        "    %b = sub %n, %one : i32\n"
        "    yield %b\n"
        "  }\n"
        "  %w, %cnt = while (%j = %one, %c = %one) -> (i32, i32) {\n"
        "    %go = lt %j, %n : i1\n"
        "    condition %go\n"
        "  } do (%j.1, %c.1) {\n"
        "    %j.2 = mul %j.1, %two : i32\n"
        "    %c.2 = add %c.1, %one : i32\n"
        "    yield %j.2, %c.2\n"
        "  }\n"
        "  store %out_ptr, %v\n"
        "  %o1 = addptr %out_ptr, %one : *i32\n"
        "  store %o1, %w\n"
        "  %o2 = addptr %out_ptr, %two : *i32\n"
        "  store %o2, %cnt\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    int32_t out[3];
    InterpArg args[2] = {buf_arg(out, sizeof out), int_arg(100)};
    CHECK(t, ik_run(&k, 1, 1, args, 2, IM_AS_WRITTEN));
    CHECK(t, out[0] == 200 && out[1] == 128 && out[2] == 8);
    args[1] = int_arg(3);
    CHECK(t, ik_run(&k, 1, 1, args, 2, IM_AS_WRITTEN));
    CHECK(t, out[0] == 2 && out[1] == 4 && out[2] == 3);
    args[1] = int_arg(0); /* the condition is false at once */
    CHECK(t, ik_run(&k, 1, 1, args, 2, IM_AS_WRITTEN));
    CHECK(t, out[0] == -1 && out[1] == 1 && out[2] == 1);
    arena_free(k.a);
}

/* Stores constants and a sum to fp16 and bf16 buffers; compares bit
 * patterns worked out by hand (round to nearest even, overflow, subnormal
 * ties, NaN). */
static void test_interp_fp16_bf16_rounding(T *t)
{
    /* One kernel per value: store cast(const : fp64) to both buffers. */
    static const struct { double v; uint16_t h, b; } cases[] = {
        {1.0 / 3.0, 0x3555, 0x3eab},           /* 1/3: fp16 rounds down, bf16 up */
        {65519.0, 0x7bff, 0x4780},             /* below the fp16 overflow tie */
        {65520.0, 0x7c00, 0x4780},             /* the tie rounds to even: inf */
        {0x1p-25, 0x0000, 0x3300},             /* half the smallest subnormal: to 0 */
        {0x1.8p-24, 0x0002, 0x33c0},           /* 1.5 quanta: tie to even (2) */
        {1.0 + 0x1p-8, 0x3c04, 0x3f80},        /* bf16 tie: to even (1.0) */
        {1.0 + 0x1.8p-7, 0x3c0c, 0x3f82},      /* bf16 tie: to even (odd below) */
        {-0.0, 0x8000, 0x8000},
        {1e-9, 0x0000, 0x3089},                /* below fp16's range: 0 */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        Arena *a = arena_new(0);
        char *text = arena_printf(a,
            "kernel @r(%%h_ptr: *fp16, %%b_ptr: *bf16) {\n"
            "  %%v = const %.17e : fp64\n"
            "  %%h = cast %%v : fp16\n"
            "  %%b = cast %%v : bf16\n"
            "  store %%h_ptr, %%h\n"
            "  store %%b_ptr, %%b\n"
            "}\n", cases[c].v);
        if (cases[c].v == 0)
            text = arena_printf(a,
                "kernel @r(%%h_ptr: *fp16, %%b_ptr: *bf16) {\n"
                "  %%v = const -0.0 : fp64\n  %%h = cast %%v : fp16\n  %%b = cast %%v : bf16\n"
                "  store %%h_ptr, %%h\n  store %%b_ptr, %%b\n}\n");
        IKernel k;
        if (!ik_parse(t, &k, text)) {
            arena_free(a);
            return;
        }
        uint16_t h = 0x1234, b = 0x1234;
        InterpArg args[2] = {buf_arg(&h, 2), buf_arg(&b, 2)};
        CHECK(t, ik_run(&k, 1, 1, args, 2, IM_AS_WRITTEN));
        if (h != cases[c].h || b != cases[c].b)
            printf("  case %zu: fp16 %04x (want %04x), bf16 %04x (want %04x)\n", c, h, cases[c].h,
                   b, cases[c].b);
        CHECK(t, h == cases[c].h && b == cases[c].b);
        arena_free(k.a);
        arena_free(a);
    }
    /* fp16 arithmetic rounds every op: 2048 + 1 = 2048 (tie to even), and
     * loads decode exactly: 0x3c01 + 0x3c01 = 2.001953125 -> 0x4001. */
    const char *sum_ir =
        "kernel @s(%h_ptr: *fp16) {\n"
        "  %x = load %h_ptr : fp16\n"
        "  %y = add %x, %x : fp16\n"
        "  %big = const 2048.0 : fp16\n"
        "  %one = const 1.0 : fp16\n"
        "  %z = add %big, %one : fp16\n"
        "  %w = add %z, %y : fp16\n"
        "  %c1 = const 1 : i32\n"
        "  %p1 = addptr %h_ptr, %c1 : *fp16\n"
        "  store %h_ptr, %y\n"
        "  store %p1, %w\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, sum_ir))
        return;
    uint16_t hb[2] = {0x3c01, 0};
    InterpArg args[1] = {buf_arg(hb, sizeof hb)};
    CHECK(t, ik_run(&k, 1, 1, args, 1, IM_AS_WRITTEN));
    /* 2048 + 2.001953125 = 2050.00195 -> 2050 (ulp 2): 0x6801 */
    CHECK(t, hb[0] == 0x4001 && hb[1] == 0x6801);
    arena_free(k.a);
}

/* IM_F64: fp32-typed arithmetic on float64 buffers, never rounded; int
 * buffers keep their dtype; pointer arithmetic scales by 8. */
static void test_interp_f64_mode(T *t)
{
    const char *ir =
        "kernel @f(%x_ptr: *fp32, %i_ptr: *i32, %out_ptr: *fp32, %s: fp32) {\n"
        "  %offs = arange 0 : i32[4]\n"
        "  %xp = broadcast %x_ptr : *fp32[4]\n"
        "  %xa = addptr %xp, %offs : *fp32[4]\n"
        "  %x = load %xa : fp32[4]\n"
        "  %ip = broadcast %i_ptr : *i32[4]\n"
        "  %ia = addptr %ip, %offs : *i32[4]\n"
        "  %i = load %ia : i32[4]\n"
        "  %fi = cast %i : fp32[4]\n"
        "  %tenth = const 0.1 : fp32[4]\n"
        "  %sb = broadcast %s : fp32[4]\n"
        "  %m = mul %x, %tenth : fp32[4]\n"
        "  %y = add %m, %fi : fp32[4]\n"
        "  %z = div %y, %sb : fp32[4]\n"
        "  %h = cast %z : fp16[4]\n"
        "  %g = cast %h : fp32[4]\n"
        "  %op = broadcast %out_ptr : *fp32[4]\n"
        "  %oa = addptr %op, %offs : *fp32[4]\n"
        "  store %oa, %g\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    double x[4] = {1.0 / 3, 2.5, -7.125, 1e-30}, out[4];
    int32_t iv[4] = {1, -2, 3, 100000};
    InterpArg args[4] = {buf_arg(x, sizeof x), buf_arg(iv, sizeof iv), buf_arg(out, sizeof out),
                         {.f = 3.0}};
    CHECK(t, ik_run(&k, 1, 1, args, 4, IM_F64));
    for (int i = 0; i < 4; i++)
        CHECK(t, out[i] == (x[i] * 0.1 + iv[i]) / 3.0);
    arena_free(k.a);
}

/* Integer semantics: wrap-around, C division and remainder, shifts at and
 * beyond the width, unsigned types, casts from float (saturating). */
static void test_interp_integers(T *t)
{
    const char *ir =
        "kernel @ints(%out_ptr: *i32, %u_ptr: *u8, %a: i32, %b: i32) {\n"
        "  %s = add %a, %b : i32\n"
        "  %p = mul %a, %b : i32\n"
        "  %q = div %a, %b : i32\n"
        "  %r = rem %a, %b : i32\n"
        "  %sh = const 33 : i32\n"
        "  %l = shl %a, %sh : i32\n"
        "  %ar = shr %a, %sh : i32\n"
        "  %one = const 1 : i32\n"
        "  %l1 = shl %a, %one : i32\n"
        "  %au = cast %a : u8\n"
        "  %c200 = const 200 : u8\n"
        "  %us = add %au, %c200 : u8\n"
        "  %f = const 3.0e9 : fp32\n"
        "  %fi = cast %f : i32\n"
        "  %nf = const -2.7 : fp32\n"
        "  %ni = cast %nf : i32\n"
        "  %nu = cast %nf : u8\n"
        "  %vals = const 0 : i32\n"
        "  %o0 = addptr %out_ptr, %vals : *i32\n"
        "  store %o0, %s\n"
        "  %o1 = addptr %out_ptr, %one : *i32\n"
        "  store %o1, %p\n"
        "  %c2 = const 2 : i32\n"
        "  %o2 = addptr %out_ptr, %c2 : *i32\n"
        "  store %o2, %q\n"
        "  %c3 = const 3 : i32\n"
        "  %o3 = addptr %out_ptr, %c3 : *i32\n"
        "  store %o3, %r\n"
        "  %c4 = const 4 : i32\n"
        "  %o4 = addptr %out_ptr, %c4 : *i32\n"
        "  store %o4, %l\n"
        "  %c5 = const 5 : i32\n"
        "  %o5 = addptr %out_ptr, %c5 : *i32\n"
        "  store %o5, %ar\n"
        "  %c6 = const 6 : i32\n"
        "  %o6 = addptr %out_ptr, %c6 : *i32\n"
        "  store %o6, %l1\n"
        "  %c7 = const 7 : i32\n"
        "  %o7 = addptr %out_ptr, %c7 : *i32\n"
        "  store %o7, %fi\n"
        "  %c8 = const 8 : i32\n"
        "  %o8 = addptr %out_ptr, %c8 : *i32\n"
        "  store %o8, %ni\n"
        "  store %u_ptr, %us\n"
        "  %u1 = addptr %u_ptr, %one : *u8\n"
        "  store %u1, %nu\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    int32_t out[9];
    uint8_t u[2];
    InterpArg args[4] = {buf_arg(out, sizeof out), buf_arg(u, sizeof u), int_arg(INT32_MAX),
                         int_arg(-2)};
    CHECK(t, ik_run(&k, 1, 1, args, 4, IM_AS_WRITTEN));
    CHECK(t, out[0] == INT32_MAX - 2 && out[1] == 2);               /* (2^31-1)*-2 wraps to 2 */
    CHECK(t, out[2] == -1073741823 && out[3] == 1);                 /* truncating */
    CHECK(t, out[4] == 0 && out[5] == 0 && out[6] == -2);           /* shifts by 33 */
    CHECK(t, out[7] == INT32_MAX && out[8] == -2);                  /* saturate; trunc */
    CHECK(t, u[0] == (uint8_t)(255 + 200) && u[1] == 0);
    args[2] = int_arg(-7), args[3] = int_arg(2);
    CHECK(t, ik_run(&k, 1, 1, args, 4, IM_AS_WRITTEN));
    CHECK(t, out[2] == -3 && out[3] == -1 && out[5] == -1);         /* C division; sign fill */
    args[2] = int_arg(7), args[3] = int_arg(-2);
    CHECK(t, ik_run(&k, 1, 1, args, 4, IM_AS_WRITTEN));
    CHECK(t, out[2] == -3 && out[3] == 1);
    args[2] = int_arg(INT32_MIN), args[3] = int_arg(-1);
    CHECK(t, ik_run(&k, 1, 1, args, 4, IM_AS_WRITTEN));
    CHECK(t, out[2] == INT32_MIN && out[3] == 0);
    args[3] = int_arg(0);
    CHECK(t, !ik_run(&k, 1, 1, args, 4, IM_AS_WRITTEN));
    CHECK(t, strcmp(ik_msg(&k), "integer division by zero (program (0, 0, 0))") == 0);
    arena_free(k.a);
}

/* dot of [2,3] x [3,2] + acc, fp16 inputs, fp32 result. */
static void test_interp_dot(T *t)
{
    const char *ir =
        "kernel @d(%a_ptr: *fp16, %b_ptr: *fp16, %out_ptr: *fp32) {\n"
        "  %r = arange 0 : i32[2]\n"
        "  %k = arange 0 : i32[3]\n"
        "  %r2 = expand_dims %r {axis = 1} : i32[2,1]\n"
        "  %k2 = expand_dims %k {axis = 0} : i32[1,3]\n"
        "  %c3 = const 3 : i32[2,1]\n"
        "  %rs = mul %r2, %c3 : i32[2,1]\n"
        "  %rsb = broadcast %rs : i32[2,3]\n"
        "  %kb = broadcast %k2 : i32[2,3]\n"
        "  %ai = add %rsb, %kb : i32[2,3]\n"
        "  %ap = broadcast %a_ptr : *fp16[2,3]\n"
        "  %aa = addptr %ap, %ai : *fp16[2,3]\n"
        "  %a = load %aa : fp16[2,3]\n"
        "  %bp = broadcast %b_ptr : *fp16[2,3]\n"
        "  %ba = addptr %bp, %ai : *fp16[2,3]\n"
        "  %bt = load %ba : fp16[2,3]\n"
        "  %b = permute %bt {perm = [1, 0]} : fp16[3,2]\n"
        "  %acc = const 0.5 : fp32[2,2]\n"
        "  %d = dot %a, %b, %acc {precision = ieee} : fp32[2,2]\n"
        "  %o = arange 0 : i32[4]\n"
        "  %df = reshape %d : fp32[4]\n"
        "  %op = broadcast %out_ptr : *fp32[4]\n"
        "  %oa = addptr %op, %o : *fp32[4]\n"
        "  store %oa, %df\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    /* a = [[1,2,3],[4,5,6]], b^T = [[1,0,-1],[2,1,0.5]] as fp16 bits */
    uint16_t a[6] = {0x3c00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600};
    uint16_t b[6] = {0x3c00, 0x0000, 0xbc00, 0x4000, 0x3c00, 0x3800};
    float out[4];
    InterpArg args[3] = {buf_arg(a, sizeof a), buf_arg(b, sizeof b), buf_arg(out, sizeof out)};
    CHECK(t, ik_run(&k, 1, 1, args, 3, IM_AS_WRITTEN));
    /* row 0: 1-3 = -2, 2+2+1.5 = 5.5; row 1: 4-6 = -2, 8+5+3 = 16; + 0.5 */
    CHECK(t, out[0] == -1.5f && out[1] == 6.0f && out[2] == -1.5f && out[3] == 16.5f);
    arena_free(k.a);
}

/* cumsum forward and reversed along axis 1 of a [2,3] tile; broadcast of
 * a [1,3] row; reshape and expand_dims keep the row-major order. */
static void test_interp_scan_shapes(T *t)
{
    const char *ir =
        "kernel @s(%out_ptr: *i32) {\n"
        "  %v = arange 1 : i32[6]\n"
        "  %m = reshape %v : i32[2,3]\n"
        "  %c = cumsum %m {axis = 1} : i32[2,3]\n"
        "  %cr = cumsum %m {axis = 0, reverse} : i32[2,3]\n"
        "  %row = arange 0 : i32[3]\n"
        "  %row2 = expand_dims %row {axis = 0} : i32[1,3]\n"
        "  %rb = broadcast %row2 : i32[2,3]\n"
        "  %t1 = mul %c, %rb : i32[2,3]\n"
        "  %p = permute %t1 {perm = [1, 0]} : i32[3,2]\n"
        "  %flat = reshape %p : i32[6]\n"
        "  %cf = reshape %cr : i32[6]\n"
        "  %o = arange 0 : i32[6]\n"
        "  %op = broadcast %out_ptr : *i32[6]\n"
        "  %oa = addptr %op, %o : *i32[6]\n"
        "  store %oa, %flat\n"
        "  %six = const 6 : i32[6]\n"
        "  %o2 = add %o, %six : i32[6]\n"
        "  %ob = addptr %op, %o2 : *i32[6]\n"
        "  store %ob, %cf\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    int32_t out[12];
    InterpArg args[1] = {buf_arg(out, sizeof out)};
    CHECK(t, ik_run(&k, 1, 1, args, 1, IM_AS_WRITTEN));
    /* m = [[1,2,3],[4,5,6]]; c = [[1,3,6],[4,9,15]]; t1 = c * [0,1,2] =
     * [[0,3,12],[0,9,30]]; transposed row-major: 0,0,3,9,12,30.
     * reverse cumsum over axis 0: [[5,7,9],[4,5,6]]. */
    static const int32_t want[12] = {0, 0, 3, 9, 12, 30, 5, 7, 9, 4, 5, 6};
    for (int i = 0; i < 12; i++)
        CHECK(t, out[i] == want[i]);
    arena_free(k.a);
}

/* Philox: randint/rand/randn against values computed by hand from the
 * algorithm of triton/language/random.py.  seed 0, offset 0 gives the
 * Random123 known-answer vector of philox4x32-10 for a zero counter and
 * key (6627e8d5 e169c58d ...); the other values come from a plain Python
 * transcription of the same rounds with big integers (randint = first
 * word; rand = fp32((-x-1 if x < 0 else x) as int32) * fp32(4.6566127342e-10);
 * randn = Box-Muller in fp32 of the first two words), cross-checked
 * against the three Random123 known-answer vectors. */
static void test_interp_philox(T *t)
{
    /* offsets 0, 1, 2, 3 and 1000: build them as arange * 1 with lane 4 patched */
    const char *ir =
        "kernel @rng(%i_ptr: *u32, %f_ptr: *fp32, %n_ptr: *fp32, %seed: i32) {\n"
        "  %base = arange 0 : i32[5]\n"
        "  %four = const 4 : i32[5]\n"
        "  %is4 = eq %base, %four : i1[5]\n"
        "  %k = const 1000 : i32[5]\n"
        "  %off = where %is4, %k, %base : i32[5]\n"
        "  %ri = randint %seed, %off : u32[5]\n"
        "  %rf = rand %seed, %off : fp32[5]\n"
        "  %rn = randn %seed, %off : fp32[5]\n"
        "  %ip = broadcast %i_ptr : *u32[5]\n"
        "  %ia = addptr %ip, %base : *u32[5]\n"
        "  store %ia, %ri\n"
        "  %fp = broadcast %f_ptr : *fp32[5]\n"
        "  %fa = addptr %fp, %base : *fp32[5]\n"
        "  store %fa, %rf\n"
        "  %np = broadcast %n_ptr : *fp32[5]\n"
        "  %na = addptr %np, %base : *fp32[5]\n"
        "  store %na, %rn\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    static const struct {
        int64_t seed;
        uint32_t ri[5];
        float rf[5], rn[5];
    } cases[] = {
        {12345,
         {0xd1fa3e81u, 0x00b66929u, 0x6c2cd495u, 0xb63e5c16u, 0xa7ec4720u},
         {0.3595506250858307f, 0.005566734820604324f, 0.8451180458068848f, 0.5762218832969666f,
          0.6881018280982971f},
         {-0.9862430095672607f, -0.7736670970916748f, -0.32186657190322876f, 0.38707107305526733f,
          0.07538991421461105f}},
        {-1, /* sign-extended to u64: both key words 0xffffffff */
         {0x72a47709u, 0x19fed511u, 0x17625282u, 0x8e8fd014u, 0xe1b10477u},
         {0.8956440091133118f, 0.20308935642242432f, 0.18268804252147675f, 0.8862361311912537f,
          0.23678533732891083f},
         {0.23584188520908356f, -1.512938380241394f, 1.2543150186538696f, -0.31771573424339294f,
          -1.488085150718689f}},
    };
    for (int c = 0; c < 2; c++) {
        uint32_t ri[5];
        float rf[5], rn[5];
        InterpArg args[4] = {buf_arg(ri, sizeof ri), buf_arg(rf, sizeof rf),
                             buf_arg(rn, sizeof rn), int_arg(cases[c].seed)};
        CHECK(t, ik_run(&k, 1, 1, args, 4, IM_AS_WRITTEN));
        for (int i = 0; i < 5; i++) {
            CHECK(t, ri[i] == cases[c].ri[i]);
            CHECK(t, rf[i] == cases[c].rf[i]);
            /* log/cos/sqrt in double then rounded: equal to the reference
             * computed the same way */
            CHECK(t, rn[i] == cases[c].rn[i]);
        }
        /* IM_F64 gives the same (fp32) draws */
        double rf64[5], rn64[5];
        InterpArg args64[4] = {buf_arg(ri, sizeof ri), buf_arg(rf64, sizeof rf64),
                               buf_arg(rn64, sizeof rn64), int_arg(cases[c].seed)};
        CHECK(t, ik_run(&k, 1, 1, args64, 4, IM_F64));
        for (int i = 0; i < 5; i++)
            CHECK(t, rf64[i] == (double)cases[c].rf[i] && rn64[i] == (double)cases[c].rn[i]);
    }
    /* The Random123 known answer: seed 0, counter 0. */
    uint32_t ri[5];
    float rf[5], rn[5];
    InterpArg args[4] = {buf_arg(ri, sizeof ri), buf_arg(rf, sizeof rf), buf_arg(rn, sizeof rn),
                         int_arg(0)};
    CHECK(t, ik_run(&k, 1, 1, args, 4, IM_AS_WRITTEN));
    CHECK(t, ri[0] == 0x6627e8d5u);
    arena_free(k.a);
}

/* device_assert reports the message, the program and the lane. */
static void test_interp_assert(T *t)
{
    const char *ir =
        "kernel @a(%n: i32) {\n"
        "  %pid = program_id 1 : i32\n"
        "  %r = arange 0 : i32[3]\n"
        "  %r2 = expand_dims %r {axis = 0} : i32[1,3]\n"
        "  %rb = broadcast %r2 : i32[2,3]\n"
        "  %p = broadcast %pid : i32[2,3]\n"
        "  %s = add %rb, %p : i32[2,3]\n"
        "  %nb = broadcast %n : i32[2,3]\n"
        "  %ok = lt %s, %nb : i1[2,3]\n"
        "  assert %ok {msg = \"index in range\"}\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    InterpArg args[1] = {int_arg(4)};
    CHECK(t, !ik_run(&k, 1, 3, args, 1, IM_AS_WRITTEN));
    CHECK(t, strcmp(ik_msg(&k), "device_assert failed: index in range (program (0, 2, 0), "
                                "lane (0, 2))") == 0);
    arena_free(k.a);
}

/* Math, maximum with NaN, where on pointers, comparisons with NaN, and the
 * misaligned-access error of a bitcast pointer. */
static void test_interp_misc(T *t)
{
    const char *ir =
        "kernel @m(%x_ptr: *fp32, %out_ptr: *fp32) {\n"
        "  %o = arange 0 : i32[4]\n"
        "  %xp = broadcast %x_ptr : *fp32[4]\n"
        "  %xa = addptr %xp, %o : *fp32[4]\n"
        "  %x = load %xa : fp32[4]\n"
        "  %z = const 0.0 : fp32[4]\n"
        "  %mx = maximum %x, %z : fp32[4]\n"
        "  %ne = ne %x, %x : i1[4]\n"
        "  %e = exp %mx : fp32[4]\n"
        "  %s = sigmoid %x : fp32[4]\n"
        "  %w = where %ne, %s, %e : fp32[4]\n"
        "  %op = broadcast %out_ptr : *fp32[4]\n"
        "  %oa = addptr %op, %o : *fp32[4]\n"
        "  store %oa, %w\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    float x[4] = {1.0f, -2.0f, NAN, 0.5f}, out[4];
    InterpArg args[2] = {buf_arg(x, sizeof x), buf_arg(out, sizeof out)};
    CHECK(t, ik_run(&k, 1, 1, args, 2, IM_AS_WRITTEN));
    CHECK(t, out[0] == (float)exp(1.0) && out[1] == 1.0f && out[3] == (float)exp((double)0.5f));
    CHECK(t, isnan(out[2])); /* ne(NaN, NaN) is true: sigmoid(NaN) */
    arena_free(k.a);

    const char *mis =
        "kernel @mis(%x_ptr: *fp32) {\n"
        "  %b = bitcast %x_ptr : *fp16\n"
        "  %one = const 1 : i32\n"
        "  %p = addptr %b, %one : *fp16\n"
        "  %q = bitcast %p : *fp32\n"
        "  %v = load %q : fp32\n"
        "}\n";
    if (!ik_parse(t, &k, mis))
        return;
    float buf[2];
    InterpArg a1[1] = {buf_arg(buf, sizeof buf)};
    CHECK(t, !ik_run(&k, 1, 1, a1, 1, IM_AS_WRITTEN));
    CHECK(t, strcmp(ik_msg(&k), "misaligned load from 'x_ptr': byte offset 2 is not a "
                                "multiple of 4 (program (0, 0, 0))") == 0);
    arena_free(k.a);
}

/* Argument checks and the tile-size limit. */
static void test_interp_limits(T *t)
{
    const char *ir =
        "kernel @big(%n: i32) {\n"
        "  %z = const 0 : i32[8192,4096]\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    InterpArg args[1] = {int_arg(1)};
    CHECK(t, !ik_run(&k, 1, 1, args, 1, IM_AS_WRITTEN));
    CHECK(t, strstr(ik_msg(&k), "more than the limit") != NULL);
    k.d.list.n = 0;
    CHECK(t, !ik_run(&k, 1, 1, args, 0, IM_AS_WRITTEN));
    CHECK(t, strstr(ik_msg(&k), "takes 1 runtime arguments, 0 given") != NULL);
    arena_free(k.a);
}

/* atomic_add: lanes hitting one address apply in lane order and return the
 * old values; masked-off lanes return 0 and touch nothing.  An i8 dot
 * accumulates exactly and wraps to the i32 result. */
static void test_interp_atomic_int_dot(T *t)
{
    const char *ir =
        "kernel @at(%c_ptr: *i32, %old_ptr: *i32, %d_ptr: *i32) {\n"
        "  %o = arange 0 : i32[4]\n"
        "  %two = const 2 : i32[4]\n"
        "  %slot = rem %o, %two : i32[4]\n"
        "  %cp = broadcast %c_ptr : *i32[4]\n"
        "  %ca = addptr %cp, %slot : *i32[4]\n"
        "  %three = const 3 : i32[4]\n"
        "  %m = lt %o, %three : i1[4]\n"
        "  %v = add %o, %three : i32[4]\n"
        "  %old = atomic_add %ca, %v, mask %m : i32[4]\n"
        "  %op = broadcast %old_ptr : *i32[4]\n"
        "  %oa = addptr %op, %o : *i32[4]\n"
        "  store %oa, %old\n"
        "  %a = const 100 : i8[2,64]\n"
        "  %b = const 100 : i8[64,2]\n"
        "  %acc = const 7 : i32[2,2]\n"
        "  %d = dot %a, %b, %acc {precision = ieee} : i32[2,2]\n"
        "  %df = reshape %d : i32[4]\n"
        "  %dp = broadcast %d_ptr : *i32[4]\n"
        "  %da = addptr %dp, %o : *i32[4]\n"
        "  store %da, %df\n"
        "}\n";
    IKernel k;
    if (!ik_parse(t, &k, ir))
        return;
    int32_t c[2] = {10, 20}, old[4], d[4];
    InterpArg args[3] = {buf_arg(c, sizeof c), buf_arg(old, sizeof old), buf_arg(d, sizeof d)};
    CHECK(t, ik_run(&k, 1, 1, args, 3, IM_AS_WRITTEN));
    /* lanes 0 and 2 add 3 and 5 to c[0]; lane 1 adds 4 to c[1]; lane 3 masked */
    CHECK(t, c[0] == 18 && c[1] == 24);
    CHECK(t, old[0] == 10 && old[1] == 20 && old[2] == 13 && old[3] == 0);
    for (int i = 0; i < 4; i++)
        CHECK(t, d[i] == 64 * 100 * 100 + 7);
    arena_free(k.a);
}

static void tests_interp(T *t)
{
    RUN(t, test_interp_vector_add_mask);
    RUN(t, test_interp_out_of_bounds);
    RUN(t, test_interp_row_reduction);
    RUN(t, test_interp_for_loop);
    RUN(t, test_interp_if_while);
    RUN(t, test_interp_fp16_bf16_rounding);
    RUN(t, test_interp_f64_mode);
    RUN(t, test_interp_integers);
    RUN(t, test_interp_dot);
    RUN(t, test_interp_atomic_int_dot);
    RUN(t, test_interp_scan_shapes);
    RUN(t, test_interp_philox);
    RUN(t, test_interp_assert);
    RUN(t, test_interp_misc);
    RUN(t, test_interp_limits);
}
