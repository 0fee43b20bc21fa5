/* test_ir.c -- the IR core: builders, printer, parser, verifier, passes. */

static const Loc L0 = {"t.ir", 1, 1};

/* print -> parse -> print must be the identity on the text. */
static bool roundtrips(Arena *a, const Func *f, const char **text_out)
{
    const char *t1 = ir_to_string(a, f);
    Diags d;
    diag_init(&d, a);
    Func *g = ir_parse(a, &d, "rt.ir", t1);
    if (text_out)
        *text_out = t1;
    if (!g) {
        printf("  parse failed:\n%s%s", diag_render(&d), t1);
        return false;
    }
    const char *t2 = ir_to_string(a, g);
    if (strcmp(t1, t2)) {
        printf("  round trip differs:\n%s---\n%s", t1, t2);
        return false;
    }
    return true;
}

static bool verifies(Arena *a, const Func *f)
{
    Diags d;
    diag_init(&d, a);
    bool ok = ir_verify(f, &d);
    if (!ok)
        printf("  unexpected verifier errors:\n%s", diag_render(&d));
    return ok;
}

/* The verifier rejects f with a message containing want. */
static bool rejects(Arena *a, const Func *f, const char *want)
{
    Diags d;
    diag_init(&d, a);
    if (ir_verify(f, &d)) {
        printf("  verifier accepted a bad function (wanted '%s')\n", want);
        return false;
    }
    const char *r = diag_render(&d);
    if (!strstr(r, want) || !strstr(r, "IR verifier: ")) {
        printf("  wanted '%s', got:\n%s", want, r);
        return false;
    }
    return true;
}

/* kernel(%x_ptr: *fp32, %n: i32): a for with two iter_args containing an
 * if with a result, then a while; stores the results. */
static Func *build_sample(Arena *a)
{
    Func *f = ir_func_new(a, "sample", L0);
    Type i32 = type_scalar(DT_I32), f32 = type_scalar(DT_F32);
    int32_t sh[1] = {64};
    Type f64t = type_tile(DT_F32, 1, sh);
    ValId p = ir_param_add(f, type_ptr(DT_F32, 0, NULL), "x_ptr", L0);
    ValId n = ir_param_add(f, i32, "n", L0);
    ConstParam cp = {.name = "BLOCK", .value = "64"};
    vec_push(a, f->consts, cp);
    Block *b = f->body;
    ValId zero = ir_const_int(f, b, i32, 0, L0);
    ValId one = ir_const_int(f, b, i32, 1, L0);
    ValId acc0 = ir_const_float(f, b, f64t, 0.5, L0);
    f->vals.v[acc0].name = "acc";

    /* for %i = 0 to n step 1 iter_args(acc = acc0, k = zero) */
    ValId fargs[5] = {zero, n, one, acc0, zero};
    Type rtys[2] = {f64t, i32};
    Inst *fi = ir_emit(f, b, OP_FOR, fargs, 5, rtys, 2, L0);
    int for_idx = b->insts.n - 1;
    f->vals.v[fi->res[0]].name = "acc";
    Block *body = ir_inst_add_region(f, fi);
    ValId iv = ir_block_param_add(f, body, i32, "i", L0);
    ValId acc = ir_block_param_add(f, body, f64t, "acc", L0);
    ValId k = ir_block_param_add(f, body, i32, "k", L0);
    ValId c = ir_op2(f, body, OP_LT, type_scalar(DT_I1), iv, k, L0);
    Inst *ii = ir_emit(f, body, OP_IF, &c, 1, &f64t, 1, L0);
    int if_idx = body->insts.n - 1;
    Block *then = ir_inst_add_region(f, ii);
    Block *els = ir_inst_add_region(f, &body->insts.v[if_idx]);
    ValId fiv = ir_op1(f, then, OP_CAST, f32, iv, L0);
    ValId bc = ir_op1(f, then, OP_BROADCAST, f64t, fiv, L0);
    ValId s = ir_op2(f, then, OP_ADD, f64t, acc, bc, L0);
    f->vals.v[s].name = "acc"; /* a third "acc": acc.N */
    ir_emit(f, then, OP_YIELD, &s, 1, NULL, 0, L0);
    ir_emit(f, els, OP_YIELD, &acc, 1, NULL, 0, L0);
    ValId ifres = body->insts.v[if_idx].res[0];
    ValId k2 = ir_op2(f, body, OP_ADD, i32, k, iv, L0);
    ValId ys[2] = {ifres, k2};
    ir_emit(f, body, OP_YIELD, ys, 2, NULL, 0, L0);
    fi = &b->insts.v[for_idx]; /* re-fetch: b may have grown */
    ValId accr = fi->res[0], kr = fi->res[1];

    /* while (j = kr) { condition j < n } do (j) { yield j + 1 } */
    Inst *wi = ir_emit(f, b, OP_WHILE, &kr, 1, &i32, 1, L0);
    int w_idx = b->insts.n - 1;
    Block *cond = ir_inst_add_region(f, wi);
    Block *wb = ir_inst_add_region(f, &b->insts.v[w_idx]);
    ValId j = ir_block_param_add(f, cond, i32, "j", L0);
    ValId cj = ir_op2(f, cond, OP_LT, type_scalar(DT_I1), j, n, L0);
    ir_emit(f, cond, OP_CONDITION, &cj, 1, NULL, 0, L0);
    ValId j2 = ir_block_param_add(f, wb, i32, "j", L0);
    ValId j3 = ir_op2(f, wb, OP_ADD, i32, j2, one, L0);
    ir_emit(f, wb, OP_YIELD, &j3, 1, NULL, 0, L0);
    ValId wr = b->insts.v[w_idx].res[0];

    ValId sum = ir_emit(f, b, OP_SUM, &accr, 1, &f32, 1, L0)->res[0];
    ValId st[2] = {p, sum};
    ir_emit(f, b, OP_STORE, st, 2, NULL, 0, L0);
    ValId wf = ir_op1(f, b, OP_CAST, f32, wr, L0);
    ValId st2[2] = {p, wf};
    ir_emit(f, b, OP_STORE, st2, 2, NULL, 0, L0);
    return f;
}

static void test_builder_roundtrip(T *t)
{
    Arena *a = arena_new(0);
    Func *f = build_sample(a);
    CHECK(t, f->vals.n > 1 && f->vals.v[0].ty.dt == DT_VOID);
    CHECK(t, verifies(a, f));
    const char *text = NULL;
    CHECK(t, roundtrips(a, f, &text));
    /* hints are uniqued in order of definition: acc, acc.1 (region param),
     * acc.2 (inside the if), acc.3 (the loop's result, defined after it);
     * values without a hint count up from %0 in the same order */
    CHECK(t, text && strstr(text, "%acc = const 0.5 : fp32[64]"));
    CHECK(t, text && strstr(text, "%acc.3, %7 = for %i = %0 to %n step %1 iter_args(%acc.1 = %acc, %k = %0)"
                                  " -> (fp32[64], i32) {"));
    CHECK(t, text && strstr(text, "      %acc.2 = add %acc.1, %4 : fp32[64]\n"));
    CHECK(t, text && strstr(text, "  %10 = while (%j = %7) -> (i32) {\n"));
    CHECK(t, text && strstr(text, "  } do (%j.1) {\n"));
    CHECK(t, text && strncmp(text, "kernel @sample(%x_ptr: *fp32, %n: i32) [BLOCK = 64] {\n", 52) == 0);
    arena_free(a);
}

static void test_float_format(T *t)
{
    Arena *a = arena_new(0);
    static const struct { double x; const char *s; } cases[] = {
        {1.0, "1.0"}, {1e-06, "1e-06"}, {-0.0, "-0.0"}, {0.1, "0.1"}, {100.0, "100.0"},
        {1e16, "1e+16"}, {123.456, "123.456"}, {0.0001, "0.0001"}, {0.00001, "1e-05"},
        {(double)0.1f, "0.10000000149011612"}, {5e-324, "5e-324"}, {1.7976931348623157e308, "1.7976931348623157e+308"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        Buf b = {.a = a};
        ir_format_float(&b, cases[i].x);
        CHECK(t, strcmp(buf_str(&b), cases[i].s) == 0);
        CHECK(t, strtod(buf_str(&b), NULL) == cases[i].x);
    }
    Buf b = {.a = a};
    ir_format_float(&b, -INFINITY);
    buf_putc(&b, ' ');
    ir_format_float(&b, NAN);
    CHECK(t, strcmp(buf_str(&b), "-inf nan") == 0);
    arena_free(a);
}

/* Every prefix and many byte mutations of a valid text parse or fail
 * cleanly, and what parses also verifies or fails cleanly. */
static void test_parse_garbage(T *t)
{
    Arena *a = arena_new(0);
    const char *text = ir_to_string(a, build_sample(a));
    size_t n = strlen(text);
    char *buf = arena_alloc(a, n + 1);
    int parsed = 0;
    for (size_t cut = 0; cut <= n; cut++) {
        Arena *s = arena_new(0);
        memcpy(buf, text, cut);
        buf[cut] = 0;
        Diags d;
        diag_init(&d, s);
        Func *f = ir_parse(s, &d, "cut.ir", buf);
        if (f) {
            parsed++;
            ir_verify(f, &d);
        } else {
            CHECK(t, d.nerrors == 1);
        }
        arena_free(s);
    }
    CHECK(t, parsed == 2); /* the whole text, and the text without its last newline */
    static const char junk[] = "%@{}()[],:=*->#\"\\ \n0-9xe.";
    for (size_t i = 0; i < n; i += 3) {
        Arena *s = arena_new(0);
        memcpy(buf, text, n + 1);
        buf[i] = junk[(i * 7) % (sizeof junk - 1)];
        Diags d;
        diag_init(&d, s);
        Func *f = ir_parse(s, &d, "mut.ir", buf);
        if (f)
            ir_verify(f, &d);
        arena_free(s);
    }
    /* deep nesting is refused, not a stack overflow */
    Buf deep = {.a = a};
    buf_puts(&deep, "kernel @k(%c: i1) {\n");
    for (int i = 0; i < 5000; i++)
        buf_puts(&deep, "if %c {\n");
    Diags d;
    diag_init(&d, a);
    CHECK(t, ir_parse(a, &d, "deep.ir", buf_str(&deep)) == NULL);
    CHECK(t, strstr(diag_render(&d), "nested more than"));
    arena_free(a);
}

/* A small valid function to break in different ways. */
static Func *tiny(Arena *a, ValId *x, ValId *y, Inst **add)
{
    Func *f = ir_func_new(a, "tiny", L0);
    *x = ir_param_add(f, type_scalar(DT_F32), "x", L0);
    *y = ir_param_add(f, type_scalar(DT_I32), "y", L0);
    ValId r = ir_op2(f, f->body, OP_ADD, type_scalar(DT_F32), *x, *x, L0);
    *add = &f->body->insts.v[0];
    (void)r;
    return f;
}

static void test_verifier_rejects(T *t)
{
    Arena *a = arena_new(0);
    ValId x, y;
    Inst *in;
    Type f32 = type_scalar(DT_F32), i32 = type_scalar(DT_I32), i1 = type_scalar(DT_I1);
    int32_t sh4[1] = {4}, sh8[1] = {8};

    Func *f = tiny(a, &x, &y, &in);
    CHECK(t, verifies(a, f));
    in->args[1] = y;
    CHECK(t, rejects(a, f, "'add': operands and result must have one type, got fp32, i32 -> fp32"));

    f = tiny(a, &x, &y, &in);
    in->nargs = 1;
    CHECK(t, rejects(a, f, "'add': takes 2 operands, got 1"));

    f = tiny(a, &x, &y, &in);
    in->args[0] = in->res[0]; /* uses itself */
    CHECK(t, rejects(a, f, "use of %0 before its definition"));

    f = tiny(a, &x, &y, &in);
    in->args[0] = 999;
    CHECK(t, rejects(a, f, "operand 1 is not a value (999)"));

    f = tiny(a, &x, &y, &in);
    ValId r0 = in->res[0];
    in = ir_emit(f, f->body, OP_MUL, (ValId[]){x, x}, 2, &f32, 1, L0);
    in->res[0] = r0; /* defined twice */
    CHECK(t, rejects(a, f, "%0 is defined more than once"));

    f = tiny(a, &x, &y, &in);
    ir_op1(f, f->body, OP_EXP, i32, y, L0);
    CHECK(t, rejects(a, f, "'exp': operand must be a float, got i32"));

    f = tiny(a, &x, &y, &in);
    ir_op2(f, f->body, OP_SHL, f32, x, x, L0);
    CHECK(t, rejects(a, f, "'shl': operands must be integers, got fp32"));

    f = tiny(a, &x, &y, &in);
    ir_op2(f, f->body, OP_LT, f32, x, x, L0);
    CHECK(t, rejects(a, f, "'lt': result must be i1"));

    f = tiny(a, &x, &y, &in);
    ValId t4 = ir_op1(f, f->body, OP_BROADCAST, type_tile(DT_F32, 1, sh4), x, L0);
    ir_op1(f, f->body, OP_BROADCAST, type_tile(DT_F32, 1, sh8), t4, L0);
    CHECK(t, rejects(a, f, "'broadcast': cannot broadcast fp32[4] to fp32[8]"));

    f = tiny(a, &x, &y, &in);
    in = ir_emit(f, f->body, OP_SUM, &x, 1, &f32, 1, L0);
    CHECK(t, rejects(a, f, "'sum': axis 0 out of range for fp32"));

    f = tiny(a, &x, &y, &in);
    ValId p = ir_param_add(f, type_ptr(DT_F16, 0, NULL), "p", L0);
    ir_emit(f, f->body, OP_STORE, (ValId[]){p, x}, 2, NULL, 0, L0);
    CHECK(t, rejects(a, f, "'store': the value must be fp16"));

    f = tiny(a, &x, &y, &in);
    p = ir_param_add(f, type_ptr(DT_F32, 0, NULL), "p", L0);
    in = ir_emit(f, f->body, OP_LOAD, &p, 1, &f32, 1, L0);
    in->flags = IF_HAS_MASK; /* flag without the operand */
    CHECK(t, rejects(a, f, "'load': expected 2 operands for these flags, got 1"));

    /* if whose then-region lacks its yield; while whose cond yields */
    f = tiny(a, &x, &y, &in);
    ValId c = ir_op2(f, f->body, OP_LT, i1, x, x, L0);
    in = ir_emit(f, f->body, OP_IF, &c, 1, NULL, 0, L0);
    ir_inst_add_region(f, in);
    Block *e = ir_inst_add_region(f, &f->body->insts.v[f->body->insts.n - 1]);
    ir_emit(f, e, OP_YIELD, NULL, 0, NULL, 0, L0);
    CHECK(t, rejects(a, f, "'if': a region is empty: it must end with 'yield'"));

    f = tiny(a, &x, &y, &in);
    in = ir_emit(f, f->body, OP_IF, &y, 1, NULL, 0, L0);
    ir_emit(f, ir_inst_add_region(f, in), OP_YIELD, NULL, 0, NULL, 0, L0);
    ir_emit(f, ir_inst_add_region(f, &f->body->insts.v[f->body->insts.n - 1]), OP_YIELD, NULL, 0, NULL, 0, L0);
    CHECK(t, rejects(a, f, "'if': the condition must be an i1 scalar, got i32"));

    /* a region param used after its region */
    f = tiny(a, &x, &y, &in);
    in = ir_emit(f, f->body, OP_FOR, (ValId[]){y, y, y}, 3, NULL, 0, L0);
    Block *fb = ir_inst_add_region(f, in);
    ValId iv = ir_block_param_add(f, fb, i32, "i", L0);
    ir_emit(f, fb, OP_YIELD, NULL, 0, NULL, 0, L0);
    ir_op2(f, f->body, OP_ADD, i32, iv, y, L0);
    CHECK(t, rejects(a, f, "use of %i outside the region that defines it"));

    /* for whose region misses the induction variable */
    f = tiny(a, &x, &y, &in);
    in = ir_emit(f, f->body, OP_FOR, (ValId[]){y, y, y}, 3, NULL, 0, L0);
    ir_emit(f, ir_inst_add_region(f, in), OP_YIELD, NULL, 0, NULL, 0, L0);
    CHECK(t, rejects(a, f, "'for': the body region must have 1 parameter, got 0"));

    arena_free(a);
}

/* Runs simplify on IR text and returns the printed result (NULL: error). */
static const char *simplified(Arena *a, const char *text)
{
    Diags d;
    diag_init(&d, a);
    Func *f = ir_parse(a, &d, "s.ir", text);
    if (!f || !ir_verify(f, &d) || !pass_run(f, "simplify", &d) || !ir_verify(f, &d)) {
        printf("%s", diag_render(&d));
        return NULL;
    }
    return ir_to_string(a, f);
}

static void test_simplify(T *t)
{
    Arena *a = arena_new(0);
    const char *r = simplified(a,
        "kernel @k(%p: *i32) {\n"
        "  %a = const 2147483647 : i32\n"
        "  %b = const 1 : i32\n"
        "  %c = add %a, %b : i32\n"
        "  store %p, %c\n"
        "}\n");
    CHECK(t, r && strstr(r, "%c = const -2147483648 : i32\n") && !strstr(r, "%a ="));

    r = simplified(a,
        "kernel @k(%p: *i32) {\n"
        "  %a = const 1 : i32\n"
        "  %z = const 0 : i32\n"
        "  %c = div %a, %z : i32\n"
        "  store %p, %c\n"
        "}\n");
    CHECK(t, r && strstr(r, "%c = div %a, %z : i32\n"));

    r = simplified(a,
        "kernel @k(%p: *fp32, %x: fp32) {\n"
        "  %z = const 0.0 : fp32\n"
        "  %c = add %x, %z : fp32\n"
        "  store %p, %c\n"
        "}\n");
    CHECK(t, r && strstr(r, "%c = add %x, %z : fp32\n"));

    r = simplified(a,
        "kernel @k(%p: *fp32, %x: fp32) {\n"
        "  %o = const 1.0 : fp32\n"
        "  %c = mul %x, %o : fp32\n"
        "  store %p, %c\n"
        "}\n");
    CHECK(t, r && strstr(r, "store %p, %x\n") && !strstr(r, "mul"));

    /* i8 wrap, unsigned compare, C remainder */
    r = simplified(a,
        "kernel @k(%p: *i8, %q: *i1) {\n"
        "  %a = const 127 : i8\n"
        "  %b = const 2 : i8\n"
        "  %c = mul %a, %b : i8\n"
        "  store %p, %c\n"
        "  %m = const -7 : i8\n"
        "  %r = rem %m, %b : i8\n"
        "  store %p, %r\n"
        "  %u = const 255 : u8\n"
        "  %v = const 1 : u8\n"
        "  %g = gt %u, %v : i1\n"
        "  store %q, %g\n"
        "}\n");
    CHECK(t, r && strstr(r, "%c = const -2 : i8\n") && !strstr(r, "mul") && !strstr(r, "rem"));
    CHECK(t, r && strstr(r, "%r = const -1 : i8\n") && strstr(r, "%g = const 1 : i1\n"));

    /* a builder-made function keeps verifying after simplify and dce */
    Func *f = build_sample(a);
    Diags d;
    diag_init(&d, a);
    CHECK(t, pass_run(f, "simplify", &d) && pass_run(f, "dce", &d) && ir_verify(f, &d));
    CHECK(t, roundtrips(a, f, NULL));
    CHECK(t, !pass_run(f, "nope", &d) && strstr(diag_render(&d), "unknown pass 'nope'"));
    arena_free(a);
}

static void tests_ir(T *t)
{
    RUN(t, test_builder_roundtrip);
    RUN(t, test_float_format);
    RUN(t, test_parse_garbage);
    RUN(t, test_verifier_rejects);
    RUN(t, test_simplify);
}
