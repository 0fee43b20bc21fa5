/* test_plan.c -- a backward as a Program (src/plan/): its host steps, its textual
 * form read back, and the runner on both.
 *
 * The forward is a gated recurrence h = a * h + x over T rows (tests/kernels/
 * tape_loops.py), whose backward has a flag per input gradient and a tape. */

static const char plan_fwd[] =
    "kernel @gated_recurrence(%x_ptr: *fp32, %a_ptr: *fp32, %h0_ptr: *fp32, %y_ptr: *fp32, %T: i32, %D: i32) "
    "[BLOCK_D = 16] {\n"
    "  %pid = program_id 0 : i32\n"
    "  %0 = const 16 : i32\n"
    "  %1 = mul %pid, %0 : i32\n"
    "  %2 = arange 0 : i32[16]\n"
    "  %3 = broadcast %1 : i32[16]\n"
    "  %offs = add %3, %2 : i32[16]\n"
    "  %4 = broadcast %D : i32[16]\n"
    "  %mask = lt %offs, %4 : i1[16]\n"
    "  %5 = broadcast %h0_ptr : *fp32[16]\n"
    "  %6 = addptr %5, %offs : *fp32[16]\n"
    "  %7 = const 0.0 : fp32[16]\n"
    "  %h = load %6, mask %mask, other %7 : fp32[16]\n"
    "  %8 = const 0 : i32\n"
    "  %9 = const 1 : i32\n"
    "  %h.3 = for %t = %8 to %T step %9 iter_args(%h.1 = %h) -> (fp32[16]) {\n"
    "    %10 = mul %t, %D : i32\n"
    "    %11 = addptr %x_ptr, %10 : *fp32\n"
    "    %12 = broadcast %11 : *fp32[16]\n"
    "    %13 = addptr %12, %offs : *fp32[16]\n"
    "    %x = load %13, mask %mask, other %7 : fp32[16]\n"
    "    %14 = addptr %a_ptr, %10 : *fp32\n"
    "    %15 = broadcast %14 : *fp32[16]\n"
    "    %16 = addptr %15, %offs : *fp32[16]\n"
    "    %a = load %16, mask %mask, other %7 : fp32[16]\n"
    "    %17 = mul %a, %h.1 : fp32[16]\n"
    "    %h.2 = add %17, %x : fp32[16]\n"
    "    %18 = addptr %y_ptr, %10 : *fp32\n"
    "    %19 = broadcast %18 : *fp32[16]\n"
    "    %20 = addptr %19, %offs : *fp32[16]\n"
    "    store %20, %h.2, mask %mask\n"
    "    yield %h.2\n"
    "  }\n"
    "}\n";

/* The kinds of P's steps, by name, separated by spaces. */
static const char *plan_kinds(Arena *a, const Program *P)
{
    Buf b = {.a = a};
    buf_puts(&b, "");
    for (int i = 0; i < P->steps.n; i++)
        buf_printf(&b, "%s%s", i ? " " : "", plan_step_name(P->steps.v[i].kind));
    return buf_str(&b);
}

enum { PT = 7, PD = 20 };

/* Runs P (IM_F64) on fixed inputs; nflags extra true flags after the contract (a parsed
 * backward takes them as arguments); the input gradients into dx, da, dh0. */
static bool plan_run_case(const Program *P, int nflags, double *dx, double *da, double *dh0, Diags *d)
{
    static double x[PT * PD], a[PT * PD], h0[PD], y[PT * PD], dy[PT * PD];
    for (int i = 0; i < PT * PD; i++) {
        x[i] = 0.01 * (i % 17) - 0.05;
        a[i] = 0.5 + 0.003 * (i % 23);
        dy[i] = 0.02 * (i % 11) - 0.1;
        y[i] = 0;
    }
    for (int i = 0; i < PD; i++)
        h0[i] = 0.1 * (i % 5) - 0.2;
    memset(dx, 0, sizeof(double) * PT * PD);
    memset(da, 0, sizeof(double) * PT * PD);
    memset(dh0, 0, sizeof(double) * PD);
    InterpArg args[16] = {
        {x, sizeof x, 0, 0}, {a, sizeof a, 0, 0}, {h0, sizeof h0, 0, 0}, {y, sizeof y, 0, 0}, {.i = PT},
        {.i = PD}, {dy, sizeof dy, 0, 0}, {dx, (int64_t)sizeof(double) * PT * PD, 0, 0},
        {da, (int64_t)sizeof(double) * PT * PD, 0, 0}, {dh0, (int64_t)sizeof(double) * PD, 0, 0},
    };
    for (int j = 0; j < nflags; j++)
        args[10 + j] = (InterpArg){.i = 1}; /* plain stores, as P's flags hold for this launch (rows
                                             * of distinct elements); atomics would turn -0 into +0 */
    const int64_t grid[3] = {2, 1, 1};
    return plan_run(P, grid, args, 10 + nflags, IM_F64, d);
}

static void test_plan_steps_text_run(T *t)
{
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    Func *f = ir_parse(a, &d, "plan.ir", plan_fwd);
    CHECK(t, f && ir_verify(f, &d));
    const char *wrt[] = {"x_ptr", "a_ptr", "h0_ptr"}, *outs[] = {"y_ptr"};
    AdSpec spec = {.wrt = wrt, .nwrt = 3, .outs = outs, .nouts = 1};
    Program *P = f ? ad_backward(a, &d, f, &spec) : NULL;
    CHECK(t, P != NULL);
    if (!P) {
        printf("%s", diag_render(&d));
        arena_free(a);
        return;
    }
    /* the flags of the three input gradients' plain stores, the tape and its budget, the zero-fills,
     * the one launch; the contract without the flags and the tape */
    CHECK(t, !strcmp(plan_kinds(a, P), "flag flag flag tape tape_budget zero zero zero launch"));
    CHECK(t, plan_nargs(P) == 10 && P->main->nparams == 14 && P->tapes.n == 1);
    CHECK(t, plan_find_step(P, STEP_TAPE) == 3 && plan_find_step(P, STEP_FOLD) == -1);
    /* the text carries the tape; read back, the flags are plain parameters (the text does not say
     * how the launcher computes them), the tape still the Program's */
    const char *text = plan_to_string(a, P);
    CHECK(t, strstr(text, " tape(%kad_tape0 trips max(%T, 0) slot 16) {\n") != NULL);
    Program *Q = plan_parse(a, &d, "plan_bwd.ir", text);
    CHECK(t, Q && ir_verify(Q->main, &d));
    if (!Q) {
        printf("%s", diag_render(&d));
        arena_free(a);
        return;
    }
    CHECK(t, !strcmp(plan_to_string(a, Q), text));
    CHECK(t, !strcmp(plan_kinds(a, Q), "tape tape_budget launch") && plan_nargs(Q) == 13);
    /* both run their tape on the interpreter and compute the same gradients, bit for bit */
    static double dx[2][PT * PD], da[2][PT * PD], dh0[2][PD];
    bool ok = plan_run_case(P, 0, dx[0], da[0], dh0[0], &d) && plan_run_case(Q, 3, dx[1], da[1], dh0[1], &d);
    CHECK(t, ok);
    if (!ok)
        printf("%s", diag_render(&d));
    CHECK(t, !memcmp(dx[0], dx[1], sizeof dx[0]) && !memcmp(da[0], da[1], sizeof da[0]) &&
                 !memcmp(dh0[0], dh0[1], sizeof dh0[0]));
    /* d_a[t] = d_h[t] * h[t - 1] needs the taped h: nonzero, and d_h0 gets a * d_h[0] */
    bool any = false;
    for (int i = 0; i < PT * PD; i++)
        any |= da[0][i] != 0;
    CHECK(t, any && dh0[0][3] != 0);
    /* a wrong argument count is a located error, not a run */
    const int64_t grid[3] = {2, 1, 1};
    InterpArg none[1] = {{0}};
    CHECK(t, !plan_run(P, grid, none, 1, IM_F64, &d) && strstr(diag_render(&d), "takes 10 runtime arguments"));
    arena_free(a);
}

static void tests_plan(T *t) { RUN(t, test_plan_steps_text_run); }
