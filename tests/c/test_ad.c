/* test_ad.c -- reverse-mode AD (ad_backward, backward.c) checked by the float64
 * finite-difference checker (check.c), and the checker checked by a
 * deliberately broken rule.
 *
 * The forward kernels are the textual-IR files of tests/grad/ (the same
 * files the `kad grad` golden tests print), so the binary runs from the
 * repository root like `make ctest` does.  Each case names the inputs,
 * outputs, grid, buffer sizes, scalar values and input ranges the checker
 * needs; the random inputs keep away from kinks and ties (see docs/AD.md).
 */

typedef struct AdCase {
    const char *file, *wrt, *out;
    int64_t grid;
    const char *shapes, *args, *ranges;
} AdCase;

static const AdCase ad_cases[] = {
    {"ew_chain", "x_ptr", "y_ptr", 2, "x_ptr=100,y_ptr=100", "n=100", NULL},
    {"softmax_row", "x_ptr", "y_ptr", 5, "x_ptr=5x20,y_ptr=100", "n_cols=20", NULL},
    {"rms_norm_weight", "x_ptr,w_ptr", "y_ptr", 6, "x_ptr=6x13,w_ptr=13,y_ptr=78,r_ptr=6",
     "n=13,eps=1e-5", NULL},
    {"shapes_reductions", "x_ptr,b_ptr", "y_ptr,z_ptr,w_ptr", 1,
     "x_ptr=32,b_ptr=8,y_ptr=32,z_ptr=4,w_ptr=9", NULL, NULL},
    {"matmul_kloop", "a_ptr,b_ptr", "c_ptr", 1, "a_ptr=16x48,b_ptr=48x16,c_ptr=256", "K=48",
     "a_ptr=-0.3:0.3"},
    {"runtime_if", "x_ptr,w_ptr", "y_ptr", 4, "x_ptr=32,w_ptr=1,y_ptr=32", "nrows=3", NULL},
    {"early_return", "x_ptr", "y_ptr", 6, "x_ptr=6,y_ptr=6", "n=4", NULL},
    {"chunked_sum_loop", "x_ptr,w_ptr", "y_ptr", 1, "x_ptr=24,w_ptr=8,y_ptr=1", "n=24", NULL},
    {"unary_rules", "x_ptr", "y_ptr", 1, "x_ptr=16,y_ptr=16", NULL, "x_ptr=0.2:0.8"},
    {"binary_rules", "a_ptr,b_ptr", "y_ptr", 1, "a_ptr=16,b_ptr=16,y_ptr=16", NULL,
     "a_ptr=0.2:0.8,b_ptr=0.9:2"},
    {"cast_bf16", "x_ptr", "y_ptr", 1, "x_ptr=16,y_ptr=16", NULL, NULL},
    {"layer_norm_chunked", "X,W,B", "Y", 3, "X=3x40,Y=3x40,W=40,B=40,Mean=3,Rstd=3",
     "stride_x=40,stride_y=40,N=40,eps=1e-5", NULL},
};

/* Parses tests/grad/NAME.ir into a (verified) Func, or NULL. */
static Func *ad_load(Arena *a, Diags *d, const char *name)
{
    const char *path = arena_printf(a, "tests/grad/%s.ir", name);
    size_t len;
    char *text = read_file(a, path, &len);
    if (!text) {
        printf("  cannot read %s (run from the repository root)\n", path);
        return NULL;
    }
    diag_add_source(d, path, text);
    Func *f = ir_parse(a, d, path, text);
    return f && ir_verify(f, d) ? f : NULL;
}

/* Runs the checker on one case; returns the report (NULL on error, with
 * the diagnostics printed) and sets *passed. */
static const char *ad_run_case(Arena *a, const AdCase *c, int mutate, uint64_t seed, bool *passed)
{
    Diags d;
    diag_init(&d, a);
    *passed = false;
    Func *f = ad_load(a, &d, c->file);
    const char **w, **o;
    AdSpec spec = {0};
    spec.nwrt = ad_split_names(a, c->wrt, &w);
    spec.nouts = ad_split_names(a, c->out, &o);
    spec.wrt = w;
    spec.outs = o;
    spec.mutate = mutate;
    CheckConfig cfg = {.grid = {c->grid, 1, 1}, .shapes = c->shapes, .args = c->args, .ranges = c->ranges,
                       .seed = seed};
    const char *rep = f ? check_gradients(a, &d, f, &spec, &cfg, passed) : NULL;
    if (!rep)
        printf("  %s: %s", c->file, diag_render(&d));
    return rep;
}

/* Every case passes, for two seeds of the checker. */
static void test_ad_gradients(T *t)
{
    for (size_t i = 0; i < sizeof ad_cases / sizeof *ad_cases; i++) {
        for (uint64_t seed = 1; seed <= 2; seed++) {
            Arena *a = arena_new(0);
            bool ok;
            const char *rep = ad_run_case(a, &ad_cases[i], AD_MUTATE_NONE, seed * 7919, &ok);
            if (rep && !ok)
                printf("  %s (seed %llu):\n%s", ad_cases[i].file, (unsigned long long)seed * 7919, rep);
            CHECK(t, rep && ok);
            arena_free(a);
        }
    }
}

/* The checker can fail: a wrong exp rule (d*x instead of d*exp(x)) must
 * turn the PASS of a kernel using exp into a FAIL; the same kernel passes
 * without the mutation. */
static void test_ad_mutation_fails(T *t)
{
    static const char *const with_exp[] = {"ew_chain", "softmax_row", "unary_rules"};
    for (size_t i = 0; i < 3; i++) {
        const AdCase *c = NULL;
        for (size_t k = 0; k < sizeof ad_cases / sizeof *ad_cases; k++)
            if (!strcmp(ad_cases[k].file, with_exp[i]))
                c = &ad_cases[k];
        Arena *a = arena_new(0);
        bool ok_good = false, ok_bad = true;
        const char *good = ad_run_case(a, c, AD_MUTATE_NONE, 12345, &ok_good);
        const char *bad = ad_run_case(a, c, AD_MUTATE_EXP, 12345, &ok_bad);
        CHECK(t, good && ok_good);
        CHECK(t, bad && !ok_bad);
        CHECK(t, bad && strstr(bad, "FAIL"));
        arena_free(a);
    }
}

/* Compiles IR text and differentiates it; returns the rendered
 * diagnostics ("" when AD succeeded). */
static const char *ad_errors(Arena *a, const char *ir, const char *wrt, const char *out)
{
    Diags d;
    diag_init(&d, a);
    diag_add_source(&d, "t.ir", ir);
    Func *f = ir_parse(a, &d, "t.ir", ir);
    if (!f || !ir_verify(f, &d))
        return arena_printf(a, "PARSE: %s", diag_render(&d));
    const char **w, **o;
    AdSpec spec = {0};
    spec.nwrt = ad_split_names(a, wrt, &w);
    spec.nouts = ad_split_names(a, out, &o);
    spec.wrt = w;
    spec.outs = o;
    Program *g = ad_backward(a, &d, f, &spec);
    (void)g; /* the diagnostics say everything */
    return diag_render(&d);
}

/* Refusals are located errors naming the construct. */
static void test_ad_refusals(T *t)
{
    Arena *a = arena_new(0);
    /* a pointer selected from an input and an output */
    const char *amb = "kernel @k(%x_ptr: *fp32, %y_ptr: *fp32, %c: i1) {\n"
                      "  %p = where %c, %x_ptr, %y_ptr : *fp32\n"
                      "  %x = load %p : fp32\n"
                      "  store %y_ptr, %x\n"
                      "}\n";
    const char *e = ad_errors(a, amb, "x_ptr", "y_ptr");
    CHECK(t, strstr(e, "t.ir:3:3: error: cannot differentiate a load through a pointer selected among "
                       "'x_ptr', 'y_ptr': 'y_ptr' is a differentiated output") != NULL);
    /* an output written twice, before a loop and at one address in every iteration: the last write
     * wins, which the backward finds by running the loop backwards -- refused here because the step
     * is a runtime value; with a constant step it is differentiated (no error) */
    const char *twice_fmt = "kernel @k(%%x_ptr: *fp32, %%y_ptr: *fp32, %%n: i32) {\n"
                            "  %%x = load %%x_ptr : fp32\n"
                            "  store %%y_ptr, %%x\n"
                            "  %%lb = const 0 : i32\n"
                            "  %%st = const 1 : i32\n"
                            "  for %%i = %%lb to %%n step %s {\n"
                            "    %%q = addptr %%y_ptr, %%lb : *fp32\n"
                            "    store %%q, %%x\n"
                            "    yield\n"
                            "  }\n"
                            "}\n";
    e = ad_errors(a, arena_printf(a, twice_fmt, "%n"), "x_ptr", "y_ptr");
    CHECK(t, strstr(e, "t.ir:6:3: error: the store at line 8 may write one element of its output in several "
                       "iterations (the last write wins), so the backward visits the iterations backwards, on a "
                       "tape, which needs a loop whose step is a constant") != NULL);
    e = ad_errors(a, arena_printf(a, twice_fmt, "%st"), "x_ptr", "y_ptr");
    CHECK(t, e[0] == 0);
    /* a scan whose combine function no special case recognizes (the general rule differentiates
     * it); a while carrying a differentiated value is taped: no error at either */
    const char *cp = "kernel @k(%x_ptr: *fp32, %y_ptr: *fp32) {\n"
                     "  %i = arange 0 : i32[8]\n"
                     "  %xp0 = broadcast %x_ptr : *fp32[8]\n"
                     "  %xp = addptr %xp0, %i : *fp32[8]\n"
                     "  %x = load %xp : fp32[8]\n"
                     "  %c = scan %x {axis = 0} -> (fp32[8]) combine (%p, %q) {\n"
                     "    %r = mul %p, %q : fp32\n"
                     "    yield %r\n"
                     "  }\n"
                     "  %s = sum %c {axis = 0} : fp32\n"
                     "  %h = while (%v = %s) -> (fp32) {\n"
                     "    %z = const 10.0 : fp32\n"
                     "    %b = lt %v, %z : i1\n"
                     "    condition %b\n"
                     "  } do (%v.1) {\n"
                     "    %v.2 = mul %v.1, %v.1 : fp32\n"
                     "    yield %v.2\n"
                     "  }\n"
                     "  store %y_ptr, %h\n"
                     "}\n";
    e = ad_errors(a, cp, "x_ptr", "y_ptr");
    CHECK(t, strstr(e, "t.ir:6:3") == NULL);
    CHECK(t, strstr(e, "t.ir:11:3") == NULL);
    /* names that are not differentiable pointer parameters */
    const char *ok = "kernel @k(%x_ptr: *fp32, %y_ptr: *fp32, %n: i32) {\n"
                     "  %x = load %x_ptr : fp32\n"
                     "  store %y_ptr, %x\n"
                     "}\n";
    e = ad_errors(a, ok, "n", "y_ptr");
    CHECK(t, strstr(e, "'n' is not a pointer to floating-point data") != NULL);
    e = ad_errors(a, ok, "q_ptr", "y_ptr");
    CHECK(t, strstr(e, "kernel 'k' has no runtime parameter 'q_ptr'") != NULL);
    e = ad_errors(a, ok, "x_ptr", "y_ptr");
    CHECK(t, strcmp(e, "") == 0);
    arena_free(a);
}

/* The backward kernel's signature and names follow the contract. */
static void test_ad_signature(T *t)
{
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    Func *f = ad_load(a, &d, "rms_norm_weight");
    const char *wrt[] = {"w_ptr", "x_ptr"}, *outs[] = {"y_ptr"};
    AdSpec spec = {.wrt = wrt, .nwrt = 2, .outs = outs, .nouts = 1};
    Program *gp = f ? ad_backward(a, &d, f, &spec) : NULL;
    Func *g = gp ? gp->main : NULL;
    CHECK(t, g != NULL);
    if (g) {
        /* the contract's parameters, then the fold's hidden ones (src/ad/write/fold.c): w is read by
         * every row program, so its gradient goes through per-program partials */
        const char *want[] = {"x_ptr", "w_ptr", "y_ptr", "r_ptr", "n", "eps", "d_y_ptr", "d_x_ptr",
                              "d_w_ptr_part", "plain_d_x_ptr", "kad_span_w_ptr", "kad_programs_0"};
        CHECK(t, plan_nargs(gp) == 9 && g->nparams == 12 && gp->flags.n == 1 && gp->flags.v[0].param == g->params[9]);
        for (int i = 0; i < g->nparams && i < 12; i++)
            CHECK(t, strcmp(g->vals.v[g->params[i]].name, want[i]) == 0);
        CHECK(t, gp->fold && gp->fold->axis == 0 && gp->fold->n == 1 && gp->fold->in[0].slot == 8 &&
                     !strcmp(gp->fold->in[0].name, "w_ptr") && gp->sum && gp->fold->in[0].load_store);
        /* the Program's host steps, in the order the runner and the launcher follow: the flag of
         * d_x's plain stores, the zero-fills of both input gradients, the folded launch (with its
         * sum kernel); the folded launch runs the main kernel */
        Buf sb = {.a = a};
        for (int i = 0; i < gp->steps.n; i++)
            buf_printf(&sb, "%s%s", i ? " " : "", plan_step_name(gp->steps.v[i].kind));
        CHECK(t, !strcmp(buf_str(&sb), "flag zero zero fold"));
        CHECK(t, gp->steps.n == 4 && plan_step_kernel(gp, &gp->steps.v[3]) == g &&
                     plan_step_kernel(gp, &gp->steps.v[0]) == NULL);
        const char *ir = ir_to_string(a, g);
        CHECK(t, strstr(ir, "kernel @rms_bwd(") == ir);
        /* every forward store removed, scratch rstd included: the stores left are d_x's
         * plain store, under the flag the launcher computes (x's rows do not overlap), and the
         * partials' row, on the fold loop's last iteration; no atomic_add on d_w */
        CHECK(t, strstr(ir, "store %d_p, %dx.1, mask %mask") != NULL);
        CHECK(t, strstr(ir, "if %plain_d_x_ptr {") != NULL);
        CHECK(t, strstr(ir, "%dy = load %d_q, mask %mask") != NULL);
        CHECK(t, strstr(ir, "for %pid0 = %q to %kad_programs_0 step %nfold hints {num_stages = 3} iter_args(") != NULL);
        CHECK(t, strstr(ir, "store %d_pw, ") != NULL && !strstr(ir, "atomic_add %d_pw"));
    }
    /* deterministic=False: atomics, no fold */
    spec.atomics = true;
    gp = f ? ad_backward(a, &d, f, &spec) : NULL;
    g = gp ? gp->main : NULL;
    CHECK(t, g && !gp->fold && g->nparams == 9);
    CHECK(t, gp && gp->steps.n >= 1 && gp->steps.v[gp->steps.n - 1].kind == STEP_LAUNCH && !gp->sum);
    if (g) {
        const char *ir = ir_to_string(a, g);
        CHECK(t, strstr(ir, "atomic_add %d_pw, %dw, mask %mask") != NULL);
        CHECK(t, strstr(ir, "atomic_add %d_p, %dx.1, mask %mask") != NULL && !strstr(ir, "store"));
    }
    arena_free(a);
}


/* Simulates revolve_plan(trips, s) with the registers as an iteration
 * number: every iteration reversed exactly once, last first, each from its
 * own values; restores only from slots holding what the row says; at most
 * s slots; at most t = revolve_reps advances of any iteration; the row
 * count and the recomputed total as revolve_plan reports them. */
static bool revolve_ok(int64_t trips, int64_t s)
{
    int64_t adv = -1, rows = revolve_plan(trips, s, NULL, &adv);
    int64_t t = revolve_reps(trips, s);
    int32_t *plan = malloc(sizeof *plan * (size_t)(RV_FIELDS * rows + 1));
    int64_t *slot = malloc(sizeof *slot * (size_t)(s + 1)), *times = calloc((size_t)trips + 1, sizeof *times);
    bool ok = plan && slot && times && rows >= 0 && revolve_plan(trips, s, plan, NULL) == rows;
    ok &= revolve_beta(s, t) >= trips && (t == 0 || revolve_beta(s, t - 1) < trips);
    for (int64_t j = 0; ok && j <= s; j++)
        slot[j] = -1;
    int64_t cur = 0, next = trips - 1, sum = 0;
    for (int64_t r = 0; ok && r < rows; r++) { /* restore, advance, store, reverse */
        const int32_t *w = plan + RV_FIELDS * r;
        ok &= w[RV_RESTORE] >= -1 && w[RV_RESTORE] < s && w[RV_STORE] >= -1 && w[RV_STORE] < s &&
              w[RV_ADVANCE] >= 0 && (w[RV_REVERSE] == 0 || w[RV_REVERSE] == 1);
        ok &= w[RV_RESTORE] >= 0 || w[RV_ADVANCE] || w[RV_STORE] >= 0 || w[RV_REVERSE]; /* no empty row */
        if (!ok)
            break;
        if (w[RV_RESTORE] >= 0) {
            ok &= slot[w[RV_RESTORE]] == w[RV_AT];
            cur = w[RV_AT];
        }
        ok &= cur + w[RV_ADVANCE] <= trips;
        for (int64_t i = cur; ok && i < cur + w[RV_ADVANCE]; i++)
            times[i]++;
        cur += w[RV_ADVANCE];
        sum += w[RV_ADVANCE];
        if (w[RV_STORE] >= 0)
            slot[w[RV_STORE]] = cur;
        if (w[RV_REVERSE]) {
            ok &= cur == next; /* the values at the start of the iteration reversed next */
            next--;
        }
    }
    ok &= next == -1 && sum == adv;
    for (int64_t i = 0; ok && i < trips; i++)
        ok &= times[i] <= t;
    free(plan);
    free(slot);
    free(times);
    return ok;
}

static void test_ad_revolve_schedule(T *t)
{
    CHECK(t, revolve_beta(3, 2) == 10 && revolve_beta(1, 5) == 6 && revolve_beta(4, 0) == 1);
    CHECK(t, revolve_beta(200, 200) == INT64_MAX);
    CHECK(t, revolve_reps(64, 10) == 2 && revolve_reps(64, 6) == 3 && revolve_reps(64, 1) == 63);
    bool all = true;
    for (int64_t trips = 0; trips <= 70; trips++)
        for (int64_t s = 1; s <= 12; s++)
            all &= revolve_ok(trips, s);
    CHECK(t, all);
    CHECK(t, revolve_ok(1000, 3) && revolve_ok(1000, 20) && revolve_ok(4096, 64));
    /* revolve_fit: the most slots whose head and slots fit */
    int64_t s = 0, rows = 0;
    CHECK(t, revolve_fit(64, 2, 64, 4, 100000, &s, &rows) && s == 64);
    int64_t r10 = revolve_plan(64, 10, NULL, NULL), b10 = (1 + RV_FIELDS * r10) * 4 + 10 * 2 * 64;
    CHECK(t, revolve_fit(64, 2, 64, 4, b10, &s, &rows) && s >= 10 && rows == revolve_plan(64, s, NULL, NULL) &&
                 (1 + RV_FIELDS * rows) * 4 + s * 2 * 64 <= b10);
    for (int64_t b = 600; b < 9000; b += 37) { /* whatever it picks fits, and one slot more would not */
        if (!revolve_fit(64, 2, 64, 4, b, &s, &rows))
            continue;
        CHECK(t, (1 + RV_FIELDS * rows) * 4 + s * 2 * 64 <= b && rows == revolve_plan(64, s, NULL, NULL));
        CHECK(t, s == 64 || (1 + RV_FIELDS * revolve_plan(64, s + 1, NULL, NULL)) * 4 + (s + 1) * 2 * 64 > b);
    }
    CHECK(t, !revolve_fit(64, 2, 64, 4, 100, &s, &rows));
    int64_t b1 = (1 + RV_FIELDS * revolve_plan(64, 1, NULL, NULL)) * 4 + 2 * 64; /* exactly one slot */
    CHECK(t, revolve_fit(64, 2, 64, 4, b1, &s, &rows) && s == 1 && !revolve_fit(64, 2, 64, 4, b1 - 1, &s, &rows));
}

static void tests_ad(T *t)
{
    RUN(t, test_ad_gradients);
    RUN(t, test_ad_mutation_fails);
    RUN(t, test_ad_refusals);
    RUN(t, test_ad_signature);
    RUN(t, test_ad_revolve_schedule);
}
