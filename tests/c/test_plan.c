/* test_plan.c -- a backward as a Program (src/plan/): its host steps, its textual
 * form read back, and the runner on both.
 *
 * The first forward is a gated recurrence h = a * h + x over T rows (tests/kernels/
 * tape_loops.py), whose backward has a flag per input gradient and a tape; then a
 * folded backward, a GEMM form and a gather (tests/grad/rms_norm_weight.ir,
 * program_text_gemm.ir, program_text_gather.ir), each read back from its text with
 * its companion kernels and run against the Program it was printed from. */

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

/* Runs P (IM_F64) on fixed inputs; the input gradients into dx, da, dh0. */
static bool plan_run_case(const Program *P, double *dx, double *da, double *dh0, Diags *d)
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
    const int64_t grid[3] = {2, 1, 1};
    return plan_run(P, grid, args, 10, IM_F64, d);
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
    /* the text carries the tape in the kernel's header, the flags' conditions and the steps in its
     * plan; read back, it is the same Program */
    const char *text = plan_to_string(a, P);
    CHECK(t, strstr(text, " tape(%kad_tape0 trips max(%T, 0) slot 16) {\n") != NULL);
    CHECK(t, strstr(text, "\nplan {\n  flag %plain_d_x_ptr if {") != NULL &&
                 strstr(text, "  steps flag 0, flag 1, flag 2, tape 0, tape_budget, zero 0, zero 1, zero 2, launch\n}\n"));
    Program *Q = plan_parse(a, &d, "plan_bwd.ir", text);
    CHECK(t, Q && ir_verify(Q->main, &d));
    if (!Q) {
        printf("%s", diag_render(&d));
        arena_free(a);
        return;
    }
    CHECK(t, !strcmp(plan_to_string(a, Q), text));
    CHECK(t, !strcmp(plan_kinds(a, Q), plan_kinds(a, P)) && plan_nargs(Q) == 10 && Q->flags.n == 3);
    /* both compute their flags and run their tape on the interpreter: the same gradients, bit for bit */
    static double dx[2][PT * PD], da[2][PT * PD], dh0[2][PD];
    bool ok = plan_run_case(P, dx[0], da[0], dh0[0], &d) && plan_run_case(Q, dx[1], da[1], dh0[1], &d);
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

enum { PBUF = 4096 }; /* doubles per buffer of plan_run_both */

/* Runs P (IM_F64) on grid with fixed arguments: every pointer of the contract a buffer of PBUF
 * doubles (a pattern; zeros for the input gradients, P's covers, which the interpreter's
 * callers zero-fill), every int the value ints names ("n=40,K=32"), floats 1e-5.  The buffers
 * into bufs (the caller frees them). */
static bool plan_run_contract(Arena *a, const Program *P, const int64_t grid[3], const char *ints, double **bufs,
                              Diags *d)
{
    const Func *f = P->main;
    int n = plan_nargs(P);
    InterpArg *args = arena_alloc(a, sizeof *args * (size_t)(n + 1));
    const char **vn = ir_names(a, f);
    for (int i = 0; i < n; i++) {
        Type ty = ir_type(f, f->params[i]);
        const char *name = vn[f->params[i]];
        if (ty.dt == DT_PTR) {
            bufs[i] = calloc(PBUF, sizeof(double));
            bool zero = false;
            for (int j = 0; j < P->covers.n; j++)
                zero |= P->covers.v[j].param == f->params[i];
            for (int k = 0; !zero && k < PBUF; k++)
                bufs[i][k] = 0.01 * ((k * 7 + i * 3) % 29) - 0.13;
            args[i] = (InterpArg){.data = bufs[i], .nbytes = PBUF * (int64_t)sizeof(double)};
        } else if (dtype_is_float((Dtype)ty.dt)) {
            args[i].f = 1e-5;
        } else {
            const char *at = strstr(ints, arena_printf(a, "%s=", name));
            args[i].i = at ? strtoll(at + strlen(name) + 1, NULL, 10) : 0;
        }
    }
    return plan_run(P, grid, args, n, IM_F64, d);
}

/* tests/grad/NAME.ir's backward (wrt, out): its text read back prints the same, with the
 * companion kernels of the text; both Programs run on grid and agree bit for bit.  want: a
 * part of the text (what kind of backward it is). */
static void plan_text_case(T *t, const char *name, const char *wrt, const char *out, const int64_t grid[3],
                           const char *ints, const char *want)
{
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    const char *path = arena_printf(a, "tests/grad/%s.ir", name);
    size_t len;
    char *src = read_file(a, path, &len);
    Func *f = src ? ir_parse(a, &d, path, src) : NULL;
    CHECK(t, f && ir_verify(f, &d));
    const char **w, **o;
    AdSpec spec = {0};
    spec.nwrt = ad_split_names(a, wrt, &w);
    spec.nouts = ad_split_names(a, out, &o);
    spec.wrt = w;
    spec.outs = o;
    Program *P = f ? ad_backward(a, &d, f, &spec) : NULL;
    const char *text = P ? plan_to_string(a, P) : NULL;
    Program *Q = text ? plan_parse(a, &d, "program.ir", text) : NULL;
    CHECK(t, text && strstr(text, want) && Q && ir_verify(Q->main, &d));
    if (!Q) {
        printf("  %s: %s", name, diag_render(&d));
        arena_free(a);
        return;
    }
    CHECK(t, !strcmp(plan_to_string(a, Q), text) && !strcmp(plan_kinds(a, Q), plan_kinds(a, P)));
    /* the companions are the text's, not P's (nor rebuilt from the plan) */
    const Func *kp[8], *kq[8];
    int np = plan_companions(P, kp), nq = plan_companions(Q, kq);
    CHECK(t, np == nq && np > 0 && np <= 8);
    for (int i = 0; i < np && i < nq; i++)
        CHECK(t, kp[i] != kq[i] && !strcmp(kp[i]->name, kq[i]->name) && ir_verify(kq[i], &d));
    int n = plan_nargs(P);
    double **bp = arena_alloc(a, sizeof *bp * (size_t)(n + 1)), **bq = arena_alloc(a, sizeof *bq * (size_t)(n + 1));
    bool ok = plan_run_contract(a, P, grid, ints, bp, &d) && plan_run_contract(a, Q, grid, ints, bq, &d);
    CHECK(t, ok);
    if (!ok)
        printf("  %s: %s", name, diag_render(&d));
    bool same = true, moved = false;
    for (int i = 0; i < n; i++) {
        if (!bp[i])
            continue;
        same &= !memcmp(bp[i], bq[i], PBUF * sizeof(double));
        for (int j = 0; j < P->covers.n; j++) /* an input gradient the backward wrote */
            for (int k = 0; P->covers.v[j].param == P->main->params[i] && k < PBUF; k++)
                moved |= bp[i][k] != 0;
        free(bp[i]);
        free(bq[i]);
    }
    CHECK(t, same && moved);
    arena_free(a);
}

/* A folded backward (its sum kernel), a GEMM form (dacc, operand and one-iteration kernels) and a
 * gather (its gather kernel, the main kernel launched unless every flag holds). */
static void test_plan_text_companions(T *t)
{
    const int64_t rows[3] = {3, 1, 1}, tiles[3] = {2, 2, 1}, blocks[3] = {3, 1, 1};
    plan_text_case(t, "rms_norm_weight", "x_ptr,w_ptr", "y_ptr", rows, "n=13", "\n  sum @rms_bwd_sum\n");
    plan_text_case(t, "program_text_gemm", "a_ptr,b_ptr", "c_ptr", tiles,
                   "M=32,N=32,K=32,stride_am=32,stride_bk=32,stride_cm=32", "\n  gemm @matmul_kernel_bwd_dacc ");
    plan_text_case(t, "program_text_gather", "x_ptr", "y_ptr", blocks, "n=40",
                   "\n  steps flag 0, zero 0, launch_unless_gathered, gather 0\n");
}

static void tests_plan(T *t)
{
    RUN(t, test_plan_steps_text_run);
    RUN(t, test_plan_text_companions);
}
