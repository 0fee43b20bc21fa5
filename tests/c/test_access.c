/* test_access.c -- the access analysis (access.c): verdicts on small
 * kernels, runtime conditions evaluated for concrete launches, and a brute
 * force check that no proof is wrong on families of constant offsets. */

static Func *acc_parse(Arena *a, const char *text)
{
    Diags d;
    diag_init(&d, a);
    Func *f = ir_parse(a, &d, "<test>", text);
    if (f && !ir_verify(f, &d))
        f = NULL;
    if (!f)
        printf("  %s\n", diag_render(&d));
    return f;
}

/* The i-th memory instruction of kind op. */
static const Inst *acc_nth(const Access *A, int op, int i)
{
    for (int k = 0; k < access_count(A); k++)
        if (access_inst(A, k)->op == op && i-- == 0)
            return access_inst(A, k);
    return NULL;
}

static const char *const acc_rowwise =
    "kernel @rowwise(%x: *fp32, %y: *fp32, %stride: i32, %n_cols: i32) [BLOCK = 128] {\n"
    "  %row = program_id 0 : i32\n"
    "  %cols = arange 0 : i32[128]\n"
    "  %0 = broadcast %n_cols : i32[128]\n"
    "  %m = lt %cols, %0 : i1[128]\n"
    "  %1 = mul %row, %stride : i32\n"
    "  %2 = broadcast %1 : i32[128]\n"
    "  %3 = add %2, %cols : i32[128]\n"
    "  %4 = broadcast %x : *fp32[128]\n"
    "  %5 = addptr %4, %3 : *fp32[128]\n"
    "  %v = load %5, mask %m : fp32[128]\n"
    "  %6 = broadcast %y : *fp32[128]\n"
    "  %7 = addptr %6, %cols : *fp32[128]\n"
    "  store %7, %v, mask %m\n"
    "}\n";

/* Row-wise reads x + row * stride + cols: injective iff rows do not
 * overlap, a runtime condition; stride 0 (a broadcast input) must fail it. */
static void test_access_rowwise(T *t)
{
    Arena *a = arena_new(0);
    Func *f = acc_parse(a, acc_rowwise);
    CHECK(t, f);
    if (!f) {
        arena_free(a);
        return;
    }
    Access *A = access_analyze(a, f);
    const Inst *ld = acc_nth(A, OP_LOAD, 0), *st = acc_nth(A, OP_STORE, 0);
    CHECK(t, access_base(A, ld) == 0 && access_base(A, st) == 1);
    AccResult r = access_injective(A, ld, ACC_VARY_PIDS | ACC_VARY_LANES);
    CHECK(t, r.v == ACC_PROVEN_IF && r.cond);
    const char *py = r.cond ? access_cond_python(A, r.cond) : NULL;
    CHECK(t, py && strstr(py, "stride >= n_cols"));
    if (r.v == ACC_PROVEN_IF) {
        int64_t grid[3] = {8, 1, 1};
        bool holds = true;
        int64_t ok_args[4] = {0, 0, 100, 100}, zero[4] = {0, 0, 0, 100}, short_[4] = {0, 0, 50, 100};
        int64_t wide_blk[4] = {0, 0, 128, 1000}, grid2[3] = {8, 2, 1};
        CHECK(t, access_cond_eval(A, r.cond, ok_args, grid, &holds) && holds);
        CHECK(t, access_cond_eval(A, r.cond, zero, grid, &holds) && !holds);   /* stride 0 */
        CHECK(t, access_cond_eval(A, r.cond, short_, grid, &holds) && !holds); /* rows overlap */
        CHECK(t, access_cond_eval(A, r.cond, wide_blk, grid, &holds) && holds); /* BLOCK-wide rows */
        CHECK(t, access_cond_eval(A, r.cond, ok_args, grid2, &holds) && !holds); /* axis 1 unused */
    }
    /* the store y + cols does not depend on the row: every program writes it */
    unsigned axes = 0;
    CHECK(t, access_pid_independent(A, st, &axes) && (axes & 1));
    CHECK(t, access_pid_independent(A, ld, &axes) && !(axes & 1));
    CHECK(t, access_injective(A, st, ACC_VARY_PIDS | ACC_VARY_LANES).v == ACC_NOT_INJECTIVE);
    CHECK(t, access_injective(A, st, ACC_VARY_LANES).v == ACC_PROVEN);
    arena_free(a);
}

/* A kernel storing y[(pid * A + lane * B) OP M] for BLOCK lanes, grid axis 0. */
static char *acc_family(Arena *a, int A_, int B, int blk, const char *op, int M)
{
    return arena_printf(a,
                        "kernel @fam(%%y: *fp32) [BLOCK = %d] {\n"
                        "  %%pid = program_id 0 : i32\n"
                        "  %%a = const %d : i32\n"
                        "  %%pa = mul %%pid, %%a : i32\n"
                        "  %%l = arange 0 : i32[%d]\n"
                        "  %%b = const %d : i32[%d]\n"
                        "  %%lb = mul %%l, %%b : i32[%d]\n"
                        "  %%pb = broadcast %%pa : i32[%d]\n"
                        "  %%o = add %%pb, %%lb : i32[%d]\n"
                        "  %%mm = const %d : i32[%d]\n"
                        "  %%o2 = %s %%o, %%mm : i32[%d]\n"
                        "  %%yb = broadcast %%y : *fp32[%d]\n"
                        "  %%p = addptr %%yb, %%o2 : *fp32[%d]\n"
                        "  %%v = const 1.0 : fp32[%d]\n"
                        "  store %%p, %%v\n"
                        "}\n",
                        blk, A_, blk, B, blk, blk, blk, blk, M, blk, op, blk, blk, blk, blk);
}

static int64_t acc_family_off(int A_, int B, const char *op, int M, int64_t pid, int64_t l)
{
    int64_t o = pid * A_ + l * B;
    if (!strcmp(op, "rem"))
        return o % M;
    if (!strcmp(op, "div"))
        return o / M;
    if (!strcmp(op, "mul"))
        return o * M;
    return o + M;
}

/* Every PROVEN or PROVEN_IF (whose condition holds for the grid) is
 * checked against all pairs of (program, lane); NOT_INJECTIVE must have a
 * collision for some grid of up to 12 programs. */
static void test_access_brute_force(T *t)
{
    static const char *const ops[] = {"add", "mul", "rem", "div"};
    int proven = 0, refuted = 0, wrong = 0, missed = 0;
    for (int oi = 0; oi < 4; oi++)
        for (int A_ = 0; A_ <= 9; A_++)
            for (int B = 0; B <= 5; B++)
                for (int blk = 4; blk <= 8; blk *= 2)
                    for (int M = 1; M <= 17; M += 4) {
                        Arena *a = arena_new(0);
                        Func *f = acc_parse(a, acc_family(a, A_, B, blk, ops[oi], M));
                        if (!f) {
                            wrong++;
                            arena_free(a);
                            continue;
                        }
                        Access *A = access_analyze(a, f);
                        const Inst *st = acc_nth(A, OP_STORE, 0);
                        AccResult r = access_injective(A, st, ACC_VARY_PIDS | ACC_VARY_LANES);
                        bool any_collision = false;
                        for (int64_t g = 1; g <= 12; g++) {
                            int64_t grid[3] = {g, 1, 1};
                            bool holds = r.v == ACC_PROVEN;
                            if (r.v == ACC_PROVEN_IF && !access_cond_eval(A, r.cond, NULL, grid, &holds))
                                holds = false;
                            bool coll = false;
                            for (int64_t p1 = 0; p1 < g && !coll; p1++)
                                for (int64_t l1 = 0; l1 < blk && !coll; l1++)
                                    for (int64_t p2 = 0; p2 < g && !coll; p2++)
                                        for (int64_t l2 = 0; l2 < blk && !coll; l2++)
                                            coll = (p1 != p2 || l1 != l2) &&
                                                   acc_family_off(A_, B, ops[oi], M, p1, l1) ==
                                                       acc_family_off(A_, B, ops[oi], M, p2, l2);
                            any_collision |= coll;
                            if (holds && coll) {
                                wrong++;
                                printf("  wrong proof: %s A=%d B=%d BLOCK=%d M=%d grid=%lld\n", ops[oi], A_, B,
                                       blk, M, (long long)g);
                            }
                            proven += holds && !coll;
                        }
                        if (r.v == ACC_NOT_INJECTIVE) {
                            refuted++;
                            if (!any_collision) {
                                missed++;
                                printf("  wrong refutation: %s A=%d B=%d BLOCK=%d M=%d: %s\n", ops[oi], A_, B,
                                       blk, M, r.why);
                            }
                        }
                        arena_free(a);
                    }
    CHECK(t, wrong == 0);
    CHECK(t, missed == 0);
    CHECK(t, proven > 100 && refuted > 100); /* both answers are exercised */
}

static const char *const acc_halves =
    "kernel @halves(%y: *fp32) [HALF = 64] {\n"
    "  %row = program_id 0 : i32\n"
    "  %c128 = const 128 : i32\n"
    "  %base = mul %row, %c128 : i32\n"
    "  %cols = arange 0 : i32[64]\n"
    "  %b = broadcast %base : i32[64]\n"
    "  %o1 = add %b, %cols : i32[64]\n"
    "  %k = const SHIFT : i32[64]\n"
    "  %o2 = add %o1, %k : i32[64]\n"
    "  %yb = broadcast %y : *fp32[64]\n"
    "  %p1 = addptr %yb, %o1 : *fp32[64]\n"
    "  %p2 = addptr %yb, %o2 : *fp32[64]\n"
    "  %v = const 1.0 : fp32[64]\n"
    "  store %p1, %v\n"
    "  store %p2, %v\n"
    "}\n";

/* Two store sites: x + cols and x + SHIFT + cols with cols < 64. */
static void test_access_disjoint_sites(T *t)
{
    static const int shifts[] = {64, 100, -64, 63, -63, 0, 1};
    static const bool disjoint[] = {true, true, true, false, false, false, false};
    for (int i = 0; i < 7; i++) {
        Arena *a = arena_new(0);
        char num[16];
        snprintf(num, sizeof num, "%d", shifts[i]);
        const char *src = acc_halves;
        const char *at = strstr(src, "SHIFT");
        char *text = arena_printf(a, "%.*s%s%s", (int)(at - src), src, num, at + 5);
        Func *f = acc_parse(a, text);
        CHECK(t, f);
        if (f) {
            Access *A = access_analyze(a, f);
            AccResult r = access_disjoint(A, acc_nth(A, OP_STORE, 0), acc_nth(A, OP_STORE, 1));
            CHECK(t, (r.v == ACC_PROVEN) == disjoint[i]);
        }
        arena_free(a);
    }
}

/* A second site whose shift depends on the program id: y + 128*row + cols
 * and y + 64 - 64*row + 128*row + cols.  Within one program the shift is
 * 64 - 64*row; for row 1 the two sites meet.  Not provable by comparing
 * constants: unknown. */
static const char *const acc_pid_shift =
    "kernel @pid_shift(%y: *fp32) [HALF = 64] {\n"
    "  %row = program_id 0 : i32\n"
    "  %c128 = const 128 : i32\n"
    "  %base = mul %row, %c128 : i32\n"
    "  %cols = arange 0 : i32[64]\n"
    "  %b = broadcast %base : i32[64]\n"
    "  %o1 = add %b, %cols : i32[64]\n"
    "  %c64 = const 64 : i32\n"
    "  %r64 = mul %row, %c64 : i32\n"
    "  %sh = sub %c64, %r64 : i32\n"
    "  %shb = broadcast %sh : i32[64]\n"
    "  %o2 = add %o1, %shb : i32[64]\n"
    "  %yb = broadcast %y : *fp32[64]\n"
    "  %p1 = addptr %yb, %o1 : *fp32[64]\n"
    "  %p2 = addptr %yb, %o2 : *fp32[64]\n"
    "  %v = const 1.0 : fp32[64]\n"
    "  store %p1, %v\n"
    "  store %p2, %v\n"
    "}\n";

static void test_access_disjoint_pid_shift_unknown(T *t)
{
    Arena *a = arena_new(0);
    Func *f = acc_parse(a, acc_pid_shift);
    CHECK(t, f);
    if (f) {
        Access *A = access_analyze(a, f);
        AccResult r = access_disjoint(A, acc_nth(A, OP_STORE, 0), acc_nth(A, OP_STORE, 1));
        CHECK(t, r.v != ACC_PROVEN);
    }
    arena_free(a);
}

static const char *const acc_gather =
    "kernel @gather(%x: *fp32, %idx: *i32, %y: *fp32) [BLOCK = 16] {\n"
    "  %l = arange 0 : i32[16]\n"
    "  %ib = broadcast %idx : *i32[16]\n"
    "  %ip = addptr %ib, %l : *i32[16]\n"
    "  %i = load %ip : i32[16]\n"
    "  %xb = broadcast %x : *fp32[16]\n"
    "  %xp = addptr %xb, %i : *fp32[16]\n"
    "  %v = load %xp : fp32[16]\n"
    "  %yb = broadcast %y : *fp32[16]\n"
    "  %yp = addptr %yb, %i : *fp32[16]\n"
    "  store %yp, %v\n"
    "}\n";

/* Data-dependent offsets are unknown, never guessed. */
static void test_access_gather_unknown(T *t)
{
    Arena *a = arena_new(0);
    Func *f = acc_parse(a, acc_gather);
    CHECK(t, f);
    if (f) {
        Access *A = access_analyze(a, f);
        const Inst *st = acc_nth(A, OP_STORE, 0);
        CHECK(t, access_injective(A, st, ACC_VARY_LANES).v == ACC_UNKNOWN);
        CHECK(t, access_injective(A, acc_nth(A, OP_LOAD, 1), ACC_VARY_LANES).v == ACC_UNKNOWN);
        CHECK(t, access_injective(A, acc_nth(A, OP_LOAD, 0), ACC_VARY_LANES).v == ACC_PROVEN);
        unsigned axes;
        CHECK(t, !access_pid_independent(A, st, &axes));
        CHECK(t, access_base(A, st) == -1);
    }
    arena_free(a);
}

static void tests_access(T *t)
{
    RUN(t, test_access_rowwise);
    RUN(t, test_access_brute_force);
    RUN(t, test_access_disjoint_sites);
    RUN(t, test_access_disjoint_pid_shift_unknown);
    RUN(t, test_access_gather_unknown);
}
