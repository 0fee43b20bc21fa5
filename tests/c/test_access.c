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

/* Rows of a shifted, masked tile: y[pid * S + c], c = lane + D, stored
 * where 0 <= c < W (a stencil tap at offset D).  The columns stored are
 * max(0, D) .. min(W, BLOCK + D) - 1: injective over the launch when S is
 * at least their count (or one program). */
static char *acc_shifted(Arena *a, int D, int blk)
{
    return arena_printf(a,
                        "kernel @shifted(%%y: *fp32, %%S: i32, %%W: i32) [BLOCK = %d] {\n"
                        "  %%pid = program_id 0 : i32\n"
                        "  %%l = arange 0 : i32[%d]\n"
                        "  %%d = const %d : i32[%d]\n"
                        "  %%c = add %%l, %%d : i32[%d]\n"
                        "  %%z = const 0 : i32[%d]\n"
                        "  %%m1 = ge %%c, %%z : i1[%d]\n"
                        "  %%wb = broadcast %%W : i32[%d]\n"
                        "  %%m2 = lt %%c, %%wb : i1[%d]\n"
                        "  %%m = and %%m1, %%m2 : i1[%d]\n"
                        "  %%rs = mul %%pid, %%S : i32\n"
                        "  %%rb = broadcast %%rs : i32[%d]\n"
                        "  %%o = add %%rb, %%c : i32[%d]\n"
                        "  %%yb = broadcast %%y : *fp32[%d]\n"
                        "  %%p = addptr %%yb, %%o : *fp32[%d]\n"
                        "  %%v = const 1.0 : fp32[%d]\n"
                        "  store %%p, %%v, mask %%m\n"
                        "}\n",
                        blk, blk, D, blk, blk, blk, blk, blk, blk, blk, blk, blk, blk, blk, blk);
}

/* The lower bounds of masks (c >= 0) narrow a group's span (group_low):
 * every verdict against all pairs of stored (program, lane); a tap at
 * D = -1 with W = 5 is injective for S = 5 (not only S = 6). */
static void test_access_masked_shift_brute_force(T *t)
{
    int proven = 0, wrong = 0;
    bool tight = false;
    for (int D = -3; D <= 3; D++)
        for (int blk = 4; blk <= 8; blk *= 2) {
            Arena *a = arena_new(0);
            Func *f = acc_parse(a, acc_shifted(a, D, blk));
            if (!f) {
                wrong++;
                arena_free(a);
                continue;
            }
            Access *A = access_analyze(a, f);
            AccResult r = access_injective(A, acc_nth(A, OP_STORE, 0), ACC_VARY_PIDS | ACC_VARY_LANES);
            for (int64_t W = 0; W <= 10; W++)
                for (int64_t S = -2; S <= 10; S++)
                    for (int64_t g = 1; g <= 4; g++) {
                        int64_t grid[3] = {g, 1, 1}, params[3] = {0, S, W};
                        bool holds = r.v == ACC_PROVEN;
                        if (r.v == ACC_PROVEN_IF && !access_cond_eval(A, r.cond, params, grid, &holds))
                            holds = false;
                        bool coll = false;
                        for (int64_t p1 = 0; p1 < g && !coll; p1++)
                            for (int64_t l1 = 0; l1 < blk && !coll; l1++)
                                for (int64_t p2 = 0; p2 < g && !coll; p2++)
                                    for (int64_t l2 = 0; l2 < blk && !coll; l2++) {
                                        int64_t c1 = l1 + D, c2 = l2 + D;
                                        coll = (p1 != p2 || l1 != l2) && c1 >= 0 && c1 < W && c2 >= 0 &&
                                               c2 < W && p1 * S + c1 == p2 * S + c2;
                                    }
                        if (holds && coll) {
                            wrong++;
                            printf("  wrong proof: D=%d BLOCK=%d W=%lld S=%lld grid=%lld\n", D, blk, (long long)W,
                                   (long long)S, (long long)g);
                        }
                        proven += holds;
                        tight |= D == -1 && blk == 8 && W == 5 && S == 5 && g == 3 && holds;
                    }
            arena_free(a);
        }
    CHECK(t, wrong == 0);
    CHECK(t, proven > 500);
    CHECK(t, tight);
}

/* The mean over rows (tests/kernels/mean_dim.py, BLOCK_M = BLOCK_N = 2):
 * x[b * SB + m * SM + n] with n = 2 * pid1 + lane_n < N and m = m0 +
 * lane_m < M, m0 in range(0, M, 2).  The loop counter and lane_m are one
 * group bounded by the mask (m < M): a contiguous [B, M, N] tensor (SM = N,
 * SB = M * N) is proven injective (not only with SB >= (M + BLOCK_M - 2)
 * * SM + N, the bound from the loop's and the lanes' extents apart). */
static const char *const acc_mean_rows =
    "kernel @mean_rows(%x: *fp32, %M: i32, %N: i32, %SB: i32, %SM: i32) [BLOCK_M = 2, BLOCK_N = 2] {\n"
    "  %pid_b = program_id 0 : i32\n"
    "  %pid_n = program_id 1 : i32\n"
    "  %0 = const 2 : i32\n"
    "  %1 = mul %pid_n, %0 : i32\n"
    "  %2 = arange 0 : i32[2]\n"
    "  %3 = broadcast %1 : i32[2]\n"
    "  %offs_n = add %3, %2 : i32[2]\n"
    "  %4 = broadcast %N : i32[2]\n"
    "  %n_mask = lt %offs_n, %4 : i1[2]\n"
    "  %5 = mul %pid_b, %SB : i32\n"
    "  %base = addptr %x, %5 : *fp32\n"
    "  %acc = const 0.0 : fp32[2]\n"
    "  %6 = const 0 : i32\n"
    "  %acc.3 = for %m0 = %6 to %M step %0 iter_args(%acc.1 = %acc) -> (fp32[2]) {\n"
    "    %7 = broadcast %m0 : i32[2]\n"
    "    %offs_m = add %7, %2 : i32[2]\n"
    "    %8 = expand_dims %offs_m {axis = 1} : i32[2,1]\n"
    "    %9 = broadcast %SM : i32[2,1]\n"
    "    %10 = mul %8, %9 : i32[2,1]\n"
    "    %11 = broadcast %base : *fp32[2,1]\n"
    "    %12 = addptr %11, %10 : *fp32[2,1]\n"
    "    %13 = expand_dims %offs_n {axis = 0} : i32[1,2]\n"
    "    %14 = broadcast %12 : *fp32[2,2]\n"
    "    %15 = broadcast %13 : i32[2,2]\n"
    "    %ptrs = addptr %14, %15 : *fp32[2,2]\n"
    "    %16 = broadcast %M : i32[2,1]\n"
    "    %17 = lt %8, %16 : i1[2,1]\n"
    "    %18 = expand_dims %n_mask {axis = 0} : i1[1,2]\n"
    "    %19 = broadcast %17 : i1[2,2]\n"
    "    %20 = broadcast %18 : i1[2,2]\n"
    "    %tile_mask = and %19, %20 : i1[2,2]\n"
    "    %21 = const 0.0 : fp32[2,2]\n"
    "    %tile = load %ptrs, mask %tile_mask, other %21 : fp32[2,2]\n"
    "    %22 = sum %tile {axis = 0} : fp32[2]\n"
    "    %acc.2 = add %acc.1, %22 : fp32[2]\n"
    "    yield %acc.2\n"
    "  }\n"
    "}\n";

static void test_access_chunk_group_brute_force(T *t)
{
    Arena *a = arena_new(0);
    Func *f = acc_parse(a, acc_mean_rows);
    CHECK(t, f);
    if (!f) {
        arena_free(a);
        return;
    }
    Access *A = access_analyze(a, f);
    AccResult r = access_injective(A, acc_nth(A, OP_LOAD, 0), ACC_VARY_PIDS | ACC_VARY_LOOPS | ACC_VARY_LANES);
    int proven = 0, wrong = 0;
    bool contiguous = false;
    for (int64_t M = 1; M <= 5; M++)
        for (int64_t N = 1; N <= 4; N++)
            for (int64_t SM = 1; SM <= 6; SM++)
                for (int64_t SB = 1; SB <= 24; SB++)
                    for (int64_t g0 = 1; g0 <= 3; g0++)
                        for (int64_t g1 = 1; g1 <= 2; g1++) {
                            int64_t grid[3] = {g0, g1, 1}, params[5] = {0, M, N, SB, SM};
                            bool holds = r.v == ACC_PROVEN;
                            if (r.v == ACC_PROVEN_IF && !access_cond_eval(A, r.cond, params, grid, &holds))
                                holds = false;
                            /* every read (b, n, m) against every other: n < min(N, 2 * g1), m < M */
                            int64_t nn = N < 2 * g1 ? N : 2 * g1, all = g0 * nn * M;
                            bool coll = false;
                            for (int64_t i = 0; i < all * all && !coll; i++) {
                                int64_t p = i % all, q = i / all;
                                int64_t m1 = p % M, n1 = p / M % nn, b1 = p / M / nn;
                                int64_t m2 = q % M, n2 = q / M % nn, b2 = q / M / nn;
                                coll = p != q && b1 * SB + m1 * SM + n1 == b2 * SB + m2 * SM + n2;
                            }
                            if (holds && coll) {
                                wrong++;
                                printf("  wrong proof: M=%lld N=%lld SM=%lld SB=%lld grid=%lldx%lld\n", (long long)M,
                                       (long long)N, (long long)SM, (long long)SB, (long long)g0, (long long)g1);
                            }
                            proven += holds;
                            contiguous |= M == 5 && N == 3 && SM == 3 && SB == 15 && g1 == 2 && holds;
                        }
    CHECK(t, wrong == 0);
    CHECK(t, proven > 1000);
    CHECK(t, contiguous);
    arena_free(a);
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

static const char *const acc_priv_ln3 =
    "kernel @ln3(%x: *fp32, %y: *fp32, %stride: i32, %N: i32) [BLOCK = 64] {\n"
    "  %row = program_id 0 : i32\n"
    "  %acc = const 0.0 : fp32[64]\n"
    "  %0 = const 0 : i32\n"
    "  %1 = const 64 : i32\n"
    "  %acc.3 = for %off = %0 to %N step %1 iter_args(%acc.1 = %acc) -> (fp32[64]) {\n"
    "    %2 = arange 0 : i32[64]\n"
    "    %3 = broadcast %off : i32[64]\n"
    "    %cols = add %3, %2 : i32[64]\n"
    "    %4 = mul %row, %stride : i32\n"
    "    %5 = addptr %x, %4 : *fp32\n"
    "    %6 = broadcast %5 : *fp32[64]\n"
    "    %7 = addptr %6, %cols : *fp32[64]\n"
    "    %8 = broadcast %N : i32[64]\n"
    "    %9 = lt %cols, %8 : i1[64]\n"
    "    %10 = load %7, mask %9, other %acc : fp32[64]\n"
    "    %acc.2 = add %acc.1, %10 : fp32[64]\n"
    "    yield %acc.2\n"
    "  }\n"
    "  %11 = sum %acc.3 {axis = 0} : fp32\n"
    "  %12 = cast %N : fp32\n"
    "  %mean = div %11, %12 : fp32\n"
    "  %acc2.2 = for %off.1 = %0 to %N step %1 iter_args(%acc2 = %acc) -> (fp32[64]) {\n"
    "    %13 = arange 0 : i32[64]\n"
    "    %14 = broadcast %off.1 : i32[64]\n"
    "    %cols.1 = add %14, %13 : i32[64]\n"
    "    %15 = mul %row, %stride : i32\n"
    "    %16 = addptr %x, %15 : *fp32\n"
    "    %17 = broadcast %16 : *fp32[64]\n"
    "    %18 = addptr %17, %cols.1 : *fp32[64]\n"
    "    %19 = broadcast %N : i32[64]\n"
    "    %20 = lt %cols.1, %19 : i1[64]\n"
    "    %21 = load %18, mask %20, other %acc : fp32[64]\n"
    "    %22 = broadcast %mean : fp32[64]\n"
    "    %v = sub %21, %22 : fp32[64]\n"
    "    %23 = mul %v, %v : fp32[64]\n"
    "    %acc2.1 = add %acc2, %23 : fp32[64]\n"
    "    yield %acc2.1\n"
    "  }\n"
    "  %24 = sum %acc2.2 {axis = 0} : fp32\n"
    "  %var = div %24, %12 : fp32\n"
    "  for %off.2 = %0 to %N step %1 {\n"
    "    %25 = arange 0 : i32[64]\n"
    "    %26 = broadcast %off.2 : i32[64]\n"
    "    %cols.2 = add %26, %25 : i32[64]\n"
    "    %27 = mul %row, %stride : i32\n"
    "    %28 = addptr %x, %27 : *fp32\n"
    "    %29 = broadcast %28 : *fp32[64]\n"
    "    %30 = addptr %29, %cols.2 : *fp32[64]\n"
    "    %31 = broadcast %N : i32[64]\n"
    "    %32 = lt %cols.2, %31 : i1[64]\n"
    "    %v.1 = load %30, mask %32, other %acc : fp32[64]\n"
    "    %33 = addptr %y, %27 : *fp32\n"
    "    %34 = broadcast %33 : *fp32[64]\n"
    "    %35 = addptr %34, %cols.2 : *fp32[64]\n"
    "    %36 = broadcast %mean : fp32[64]\n"
    "    %37 = sub %v.1, %36 : fp32[64]\n"
    "    %38 = broadcast %var : fp32[64]\n"
    "    %39 = mul %37, %38 : fp32[64]\n"
    "    store %35, %39, mask %32\n"
    "    yield\n"
    "  }\n"
    "}\n";

static const char *const acc_priv_wrow =
    "kernel @wrow(%x: *fp32, %w: *fp32, %y: *fp32, %N: i32) [BLOCK = 64] {\n"
    "  %row = program_id 0 : i32\n"
    "  %cols = arange 0 : i32[64]\n"
    "  %0 = broadcast %N : i32[64]\n"
    "  %m = lt %cols, %0 : i1[64]\n"
    "  %1 = mul %row, %N : i32\n"
    "  %2 = addptr %x, %1 : *fp32\n"
    "  %3 = broadcast %2 : *fp32[64]\n"
    "  %4 = addptr %3, %cols : *fp32[64]\n"
    "  %5 = load %4, mask %m : fp32[64]\n"
    "  %6 = broadcast %w : *fp32[64]\n"
    "  %7 = addptr %6, %cols : *fp32[64]\n"
    "  %8 = load %7, mask %m : fp32[64]\n"
    "  %v = mul %5, %8 : fp32[64]\n"
    "  %9 = addptr %y, %1 : *fp32\n"
    "  %10 = broadcast %9 : *fp32[64]\n"
    "  %11 = addptr %10, %cols : *fp32[64]\n"
    "  store %11, %v, mask %m\n"
    "}\n";

static const char *const acc_priv_bias2d =
    "kernel @bias2d(%x: *fp32, %b: *fp32, %y: *fp32, %N: i32) [B = 32] {\n"
    "  %row = program_id 0 : i32\n"
    "  %blk = program_id 1 : i32\n"
    "  %0 = const 32 : i32\n"
    "  %1 = mul %blk, %0 : i32\n"
    "  %2 = arange 0 : i32[32]\n"
    "  %3 = broadcast %1 : i32[32]\n"
    "  %cols = add %3, %2 : i32[32]\n"
    "  %4 = mul %row, %N : i32\n"
    "  %5 = addptr %x, %4 : *fp32\n"
    "  %6 = broadcast %5 : *fp32[32]\n"
    "  %7 = addptr %6, %cols : *fp32[32]\n"
    "  %8 = load %7 : fp32[32]\n"
    "  %9 = addptr %b, %1 : *fp32\n"
    "  %10 = broadcast %9 : *fp32[32]\n"
    "  %11 = addptr %10, %2 : *fp32[32]\n"
    "  %12 = load %11 : fp32[32]\n"
    "  %v = add %8, %12 : fp32[32]\n"
    "  %13 = addptr %y, %4 : *fp32\n"
    "  %14 = broadcast %13 : *fp32[32]\n"
    "  %15 = addptr %14, %cols : *fp32[32]\n"
    "  store %15, %v\n"
    "}\n";

static const char *const acc_priv_windows =
    "kernel @windows(%x: *fp32, %y: *fp32) [B = 16] {\n"
    "  %pid = program_id 0 : i32\n"
    "  %0 = const 16 : i32\n"
    "  %1 = mul %pid, %0 : i32\n"
    "  %2 = addptr %x, %1 : *fp32\n"
    "  %3 = arange 0 : i32[32]\n"
    "  %4 = broadcast %2 : *fp32[32]\n"
    "  %5 = addptr %4, %3 : *fp32[32]\n"
    "  %v = load %5 : fp32[32]\n"
    "  %6 = const 2 : i32\n"
    "  %7 = mul %pid, %6 : i32\n"
    "  %8 = mul %7, %0 : i32\n"
    "  %9 = addptr %y, %8 : *fp32\n"
    "  %10 = broadcast %9 : *fp32[32]\n"
    "  %11 = addptr %10, %3 : *fp32[32]\n"
    "  store %11, %v\n"
    "}\n";

static const char *const acc_priv_transp =
    "kernel @transp(%x: *fp32, %y: *fp32) [B = 16] {\n"
    "  %pid = program_id 0 : i32\n"
    "  %0 = addptr %x, %pid : *fp32\n"
    "  %1 = arange 0 : i32[16]\n"
    "  %2 = const 4 : i32[16]\n"
    "  %3 = mul %1, %2 : i32[16]\n"
    "  %4 = broadcast %0 : *fp32[16]\n"
    "  %5 = addptr %4, %3 : *fp32[16]\n"
    "  %v = load %5 : fp32[16]\n"
    "  %6 = const 16 : i32\n"
    "  %7 = mul %pid, %6 : i32\n"
    "  %8 = addptr %y, %7 : *fp32\n"
    "  %9 = broadcast %8 : *fp32[16]\n"
    "  %10 = addptr %9, %1 : *fp32[16]\n"
    "  store %10, %v\n"
    "}\n";

static const char *const acc_priv_wrapmod =
    "kernel @wrapmod(%x: *fp32, %y: *fp32) [B = 16] {\n"
    "  %pid = program_id 0 : i32\n"
    "  %0 = const 4 : i32\n"
    "  %1 = rem %pid, %0 : i32\n"
    "  %2 = const 16 : i32\n"
    "  %3 = mul %1, %2 : i32\n"
    "  %4 = addptr %x, %3 : *fp32\n"
    "  %5 = arange 0 : i32[16]\n"
    "  %6 = broadcast %4 : *fp32[16]\n"
    "  %7 = addptr %6, %5 : *fp32[16]\n"
    "  %v = load %7 : fp32[16]\n"
    "  %8 = mul %pid, %2 : i32\n"
    "  %9 = addptr %y, %8 : *fp32\n"
    "  %10 = broadcast %9 : *fp32[16]\n"
    "  %11 = addptr %10, %5 : *fp32[16]\n"
    "  store %11, %v\n"
    "}\n";

static const char *const acc_priv_halves =
    "kernel @halves(%x: *fp32, %y: *fp32, %stride: i32) [HALF = 32] {\n"
    "  %row = program_id 0 : i32\n"
    "  %c = arange 0 : i32[32]\n"
    "  %0 = mul %row, %stride : i32\n"
    "  %1 = addptr %x, %0 : *fp32\n"
    "  %2 = broadcast %1 : *fp32[32]\n"
    "  %3 = addptr %2, %c : *fp32[32]\n"
    "  %a = load %3 : fp32[32]\n"
    "  %4 = const 32 : i32\n"
    "  %5 = addptr %1, %4 : *fp32\n"
    "  %6 = broadcast %5 : *fp32[32]\n"
    "  %7 = addptr %6, %c : *fp32[32]\n"
    "  %b = load %7 : fp32[32]\n"
    "  %8 = addptr %y, %0 : *fp32\n"
    "  %9 = broadcast %8 : *fp32[32]\n"
    "  %10 = addptr %9, %c : *fp32[32]\n"
    "  store %10, %b\n"
    "  %11 = addptr %8, %4 : *fp32\n"
    "  %12 = broadcast %11 : *fp32[32]\n"
    "  %13 = addptr %12, %c : *fp32[32]\n"
    "  store %13, %a\n"
    "}\n";

static const char *const acc_priv_tiles =
    "kernel @tiles(%a: *fp32, %c: *fp32, %M: i32, %N: i32, %stride: i32) [BM = 16, BN = 32] {\n"
    "  %pid = program_id 0 : i32\n"
    "  %0 = const 32 : i32\n"
    "  %1 = add %N, %0 : i32\n"
    "  %2 = const 1 : i32\n"
    "  %3 = sub %1, %2 : i32\n"
    "  %num_n = div %3, %0 : i32\n"
    "  %pm = div %pid, %num_n : i32\n"
    "  %pn = rem %pid, %num_n : i32\n"
    "  %4 = const 16 : i32\n"
    "  %5 = mul %pm, %4 : i32\n"
    "  %6 = arange 0 : i32[16]\n"
    "  %7 = broadcast %5 : i32[16]\n"
    "  %rm = add %7, %6 : i32[16]\n"
    "  %8 = mul %pn, %0 : i32\n"
    "  %9 = arange 0 : i32[32]\n"
    "  %10 = broadcast %8 : i32[32]\n"
    "  %rn = add %10, %9 : i32[32]\n"
    "  %11 = expand_dims %rm {axis = 1} : i32[16,1]\n"
    "  %12 = broadcast %M : i32[16,1]\n"
    "  %13 = lt %11, %12 : i1[16,1]\n"
    "  %14 = expand_dims %rn {axis = 0} : i32[1,32]\n"
    "  %15 = broadcast %N : i32[1,32]\n"
    "  %16 = lt %14, %15 : i1[1,32]\n"
    "  %17 = broadcast %13 : i1[16,32]\n"
    "  %18 = broadcast %16 : i1[16,32]\n"
    "  %m = and %17, %18 : i1[16,32]\n"
    "  %19 = broadcast %stride : i32[16,1]\n"
    "  %20 = mul %11, %19 : i32[16,1]\n"
    "  %21 = broadcast %a : *fp32[16,1]\n"
    "  %22 = addptr %21, %20 : *fp32[16,1]\n"
    "  %23 = broadcast %22 : *fp32[16,32]\n"
    "  %24 = broadcast %14 : i32[16,32]\n"
    "  %25 = addptr %23, %24 : *fp32[16,32]\n"
    "  %v = load %25, mask %m : fp32[16,32]\n"
    "  %26 = broadcast %c : *fp32[16,1]\n"
    "  %27 = addptr %26, %20 : *fp32[16,1]\n"
    "  %28 = broadcast %27 : *fp32[16,32]\n"
    "  %29 = addptr %28, %24 : *fp32[16,32]\n"
    "  %30 = const 2.0 : fp32[16,32]\n"
    "  %31 = mul %v, %30 : fp32[16,32]\n"
    "  store %29, %31, mask %m\n"
    "}\n";

static const char *const acc_priv_tileloop =
    "kernel @tileloop(%a: *fp32, %c: *fp32, %M: i32, %N: i32, %stride: i32) [BM = 16, BN = 32] {\n"
    "  %pid = program_id 0 : i32\n"
    "  %nprog = num_programs 0 : i32\n"
    "  %0 = const 32 : i32\n"
    "  %1 = add %N, %0 : i32\n"
    "  %2 = const 1 : i32\n"
    "  %3 = sub %1, %2 : i32\n"
    "  %num_n = div %3, %0 : i32\n"
    "  %4 = const 16 : i32\n"
    "  %5 = add %M, %4 : i32\n"
    "  %6 = sub %5, %2 : i32\n"
    "  %7 = div %6, %4 : i32\n"
    "  %num_tiles = mul %7, %num_n : i32\n"
    "  for %tile = %pid to %num_tiles step %nprog {\n"
    "    %pm = div %tile, %num_n : i32\n"
    "    %pn = rem %tile, %num_n : i32\n"
    "    %8 = mul %pm, %4 : i32\n"
    "    %9 = arange 0 : i32[16]\n"
    "    %10 = broadcast %8 : i32[16]\n"
    "    %rm = add %10, %9 : i32[16]\n"
    "    %11 = mul %pn, %0 : i32\n"
    "    %12 = arange 0 : i32[32]\n"
    "    %13 = broadcast %11 : i32[32]\n"
    "    %rn = add %13, %12 : i32[32]\n"
    "    %14 = expand_dims %rm {axis = 1} : i32[16,1]\n"
    "    %15 = broadcast %M : i32[16,1]\n"
    "    %16 = lt %14, %15 : i1[16,1]\n"
    "    %17 = expand_dims %rn {axis = 0} : i32[1,32]\n"
    "    %18 = broadcast %N : i32[1,32]\n"
    "    %19 = lt %17, %18 : i1[1,32]\n"
    "    %20 = broadcast %16 : i1[16,32]\n"
    "    %21 = broadcast %19 : i1[16,32]\n"
    "    %m = and %20, %21 : i1[16,32]\n"
    "    %22 = broadcast %stride : i32[16,1]\n"
    "    %23 = mul %14, %22 : i32[16,1]\n"
    "    %24 = broadcast %a : *fp32[16,1]\n"
    "    %25 = addptr %24, %23 : *fp32[16,1]\n"
    "    %26 = broadcast %25 : *fp32[16,32]\n"
    "    %27 = broadcast %17 : i32[16,32]\n"
    "    %28 = addptr %26, %27 : *fp32[16,32]\n"
    "    %v = load %28, mask %m : fp32[16,32]\n"
    "    %29 = broadcast %c : *fp32[16,1]\n"
    "    %30 = addptr %29, %23 : *fp32[16,1]\n"
    "    %31 = broadcast %30 : *fp32[16,32]\n"
    "    %32 = addptr %31, %27 : *fp32[16,32]\n"
    "    %33 = const 2.0 : fp32[16,32]\n"
    "    %34 = mul %v, %33 : fp32[16,32]\n"
    "    store %32, %34, mask %m\n"
    "    yield\n"
    "  }\n"
    "}\n";

/* A kernel's sites through parameter p (0-based), in program order. */
static int acc_sites_of(Access *A, int p, const Inst **ms)
{
    int n = 0;
    for (int k = 0; k < access_count(A); k++)
        if (access_base(A, access_inst(A, k)) == p)
            ms[n++] = access_inst(A, k);
    return n;
}

static AccResult acc_priv(Arena *a, const char *text, int param, unsigned axes, Access **out)
{
    Func *f = acc_parse(a, text);
    if (!f)
        return (AccResult){ACC_UNKNOWN, "parse", NULL};
    Access *A = access_analyze(a, f);
    const Inst *ms[16];
    int n = acc_sites_of(A, param, ms);
    if (out)
        *out = A;
    return access_private(A, ms, n, axes);
}

/* access_private on the kernels of tests/access/priv_*.ir: the positive
 * cases and their conditions for concrete launches, and the negative
 * ones (which must never be proven). */
static void test_access_private(T *t)
{
    Arena *a = arena_new(0);
    Access *A = NULL;
    bool holds = false;
    int64_t g1[3] = {64, 1, 1};
    /* LayerNorm: x's row read in three loops (params x, y, stride, N) */
    AccResult r = acc_priv(a, acc_priv_ln3, 0, 7, &A);
    CHECK(t, r.v == ACC_PROVEN_IF);
    if (r.v == ACC_PROVEN_IF) {
        int64_t ok[4] = {0, 0, 1000, 1000}, pad[4] = {0, 0, 1024, 1000}, over[4] = {0, 0, 500, 1000},
                zero[4] = {0, 0, 0, 1000};
        CHECK(t, access_cond_eval(A, r.cond, ok, g1, &holds) && holds);
        CHECK(t, access_cond_eval(A, r.cond, pad, g1, &holds) && holds);
        CHECK(t, access_cond_eval(A, r.cond, over, g1, &holds) && !holds);
        CHECK(t, access_cond_eval(A, r.cond, zero, g1, &holds) && !holds); /* stride 0 */
        CHECK(t, access_cond_python(A, r.cond) && strstr(access_cond_python(A, r.cond), "stride"));
    }
    /* w + cols: every row program reads w; private over no axis */
    CHECK(t, acc_priv(a, acc_priv_wrow, 1, 1, NULL).v == ACC_NOT_INJECTIVE);
    CHECK(t, acc_priv(a, acc_priv_wrow, 1, 0, NULL).v == ACC_PROVEN);
    CHECK(t, acc_priv(a, acc_priv_wrow, 0, 1, NULL).v != ACC_NOT_INJECTIVE);
    /* bias b + pid1*B + arange: private over pid1 only */
    CHECK(t, acc_priv(a, acc_priv_bias2d, 1, 2, NULL).v == ACC_PROVEN);
    CHECK(t, acc_priv(a, acc_priv_bias2d, 1, 1, NULL).v == ACC_NOT_INJECTIVE);
    CHECK(t, acc_priv(a, acc_priv_bias2d, 1, 3, NULL).v == ACC_NOT_INJECTIVE);
    /* overlapping windows, a transposed view, a wrapping % */
    CHECK(t, acc_priv(a, acc_priv_windows, 0, 1, NULL).v == ACC_NOT_INJECTIVE);
    CHECK(t, acc_priv(a, acc_priv_windows, 1, 1, NULL).v != ACC_NOT_INJECTIVE);
    CHECK(t, acc_priv(a, acc_priv_transp, 0, 1, NULL).v == ACC_NOT_INJECTIVE);
    CHECK(t, acc_priv(a, acc_priv_wrapmod, 0, 1, NULL).v == ACC_NOT_INJECTIVE);
    /* two halves of a row (params x, y, stride): private when stride >= 64 */
    r = acc_priv(a, acc_priv_halves, 1, 7, &A);
    CHECK(t, r.v == ACC_PROVEN_IF);
    if (r.v == ACC_PROVEN_IF) {
        int64_t ok[3] = {0, 0, 64}, half[3] = {0, 0, 32};
        CHECK(t, access_cond_eval(A, r.cond, ok, g1, &holds) && holds);
        CHECK(t, access_cond_eval(A, r.cond, half, g1, &holds) && !holds);
    }
    /* tiles split by // and % (params a, c, M, N, stride; BM 16, BN 32) */
    const char *tk[2] = {acc_priv_tiles, acc_priv_tileloop};
    for (int i = 0; i < 2; i++) {
        r = acc_priv(a, tk[i], 0, 7, &A);
        CHECK(t, r.v == ACC_PROVEN_IF);
        if (r.v == ACC_PROVEN_IF) {
            int64_t ok[5] = {0, 0, 100, 100, 100}, narrow[5] = {0, 0, 100, 100, 40};
            int64_t g[3] = {28, 1, 1};
            CHECK(t, access_cond_eval(A, r.cond, ok, g, &holds) && holds);
            CHECK(t, access_cond_eval(A, r.cond, narrow, g, &holds) && !holds);
        }
    }
    /* the tile loop's store: distinct iterations write distinct elements when
     * the rows do not overlap (tile = pid + nprog * t, split by // and %) */
    Func *tf = acc_parse(a, acc_priv_tileloop);
    CHECK(t, tf);
    if (tf) {
        A = access_analyze(a, tf);
        r = access_injective(A, acc_nth(A, OP_STORE, 0), ACC_VARY_PIDS | ACC_VARY_LOOPS | ACC_VARY_LANES);
        CHECK(t, r.v == ACC_PROVEN_IF);
        if (r.v == ACC_PROVEN_IF) {
            int64_t ok[5] = {0, 0, 100, 100, 100}, narrow[5] = {0, 0, 100, 100, 40}, g[3] = {5, 1, 1};
            CHECK(t, access_cond_eval(A, r.cond, ok, g, &holds) && holds);
            CHECK(t, access_cond_eval(A, r.cond, narrow, g, &holds) && !holds);
        }
    }
    /* gathers: unknown */
    Func *gf = acc_parse(a, acc_gather);
    CHECK(t, gf);
    if (gf) {
        A = access_analyze(a, gf);
        const Inst *ld = acc_nth(A, OP_LOAD, 1);
        CHECK(t, access_private(A, &ld, 1, 1).v == ACC_UNKNOWN);
    }
    arena_free(a);
}

/* A kernel loading y[(pid*A + lane*B) OP M] and y[(pid*A + lane*B) OP M + K]. */
static char *acc_priv_family(Arena *a, int A_, int B, int blk, const char *op, int M, int K)
{
    return arena_printf(a,
                        "kernel @fam(%%y: *fp32, %%z: *fp32) [BLOCK = %d] {\n"
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
                        "  %%kk = const %d : i32[%d]\n"
                        "  %%o3 = add %%o2, %%kk : i32[%d]\n"
                        "  %%yb = broadcast %%y : *fp32[%d]\n"
                        "  %%p = addptr %%yb, %%o2 : *fp32[%d]\n"
                        "  %%q = addptr %%yb, %%o3 : *fp32[%d]\n"
                        "  %%v = load %%p : fp32[%d]\n"
                        "  %%w = load %%q : fp32[%d]\n"
                        "  %%s = add %%v, %%w : fp32[%d]\n"
                        "  %%zb = broadcast %%z : *fp32[%d]\n"
                        "  %%zp = addptr %%zb, %%l : *fp32[%d]\n"
                        "  store %%zp, %%s\n"
                        "}\n",
                        blk, A_, blk, B, blk, blk, blk, blk, M, blk, op, blk, K, blk, blk, blk, blk, blk, blk,
                        blk, blk, blk, blk);
}

/* Every PROVEN / PROVEN_IF (condition holding) of access_private over the
 * two sites is checked against the footprints of all pairs of programs;
 * NOT_INJECTIVE must have two programs meeting for some grid. */
static void test_access_private_brute_force(T *t)
{
    static const char *const ops[] = {"add", "rem", "div"};
    static const int ks[] = {0, 3, 8, -4};
    int proven = 0, refuted = 0, wrong = 0, missed = 0;
    for (int oi = 0; oi < 3; oi++)
        for (int A_ = 0; A_ <= 9; A_++)
            for (int B = 0; B <= 3; B++)
                for (int ki = 0; ki < 4; ki++)
                    for (int M = 1; M <= 9; M += 4) {
                        if (oi == 0 && M > 1)
                            continue;
                        int blk = 4, K = ks[ki];
                        Arena *a = arena_new(0);
                        Access *A = NULL;
                        AccResult r = acc_priv(a, acc_priv_family(a, A_, B, blk, ops[oi], oi ? M : 0, K), 0, 1, &A);
                        bool any = false;
                        for (int64_t g = 1; g <= 10; g++) {
                            int64_t grid[3] = {g, 1, 1};
                            bool holds = r.v == ACC_PROVEN;
                            if (r.v == ACC_PROVEN_IF && !access_cond_eval(A, r.cond, NULL, grid, &holds))
                                holds = false;
                            bool meet = false;
                            for (int64_t p1 = 0; p1 < g && !meet; p1++)
                                for (int64_t p2 = 0; p2 < g && !meet; p2++)
                                    for (int64_t l1 = 0; l1 < blk * 2 && p1 != p2 && !meet; l1++)
                                        for (int64_t l2 = 0; l2 < blk * 2 && !meet; l2++) {
                                            int64_t o1 = acc_family_off(A_, B, ops[oi], oi ? M : 0, p1, l1 % blk) +
                                                         (l1 >= blk ? K : 0);
                                            int64_t o2 = acc_family_off(A_, B, ops[oi], oi ? M : 0, p2, l2 % blk) +
                                                         (l2 >= blk ? K : 0);
                                            meet = o1 == o2;
                                        }
                            any |= meet;
                            if (holds && meet) {
                                wrong++;
                                printf("  wrong proof: %s A=%d B=%d K=%d M=%d grid=%lld\n", ops[oi], A_, B, K, M,
                                       (long long)g);
                            }
                            proven += holds && !meet;
                        }
                        if (r.v == ACC_NOT_INJECTIVE) {
                            refuted++;
                            if (!any) {
                                missed++;
                                printf("  wrong refutation: %s A=%d B=%d K=%d M=%d: %s\n", ops[oi], A_, B, K, M,
                                       r.why);
                            }
                        }
                        arena_free(a);
                    }
    CHECK(t, wrong == 0);
    CHECK(t, missed == 0);
    if (proven <= 100 || refuted <= 50)
        printf("  proven %d, refuted %d\n", proven, refuted);
    CHECK(t, proven > 100 && refuted > 50);
}

/* A loop over a row, the offsets row*stride + lane + S*t + K (t the loop's counter, for the
 * loop `off = 0 to N step S`) and, in a second loop, row*stride + lane + S*t + K2. */
static char *acc_lane_family(Arena *a, int S, int K, int K2, int B)
{
    return arena_printf(a,
                        "kernel @lanes(%%x: *fp32, %%stride: i32, %%N: i32) [BLOCK = 8] {\n"
                        "  %%row = program_id 0 : i32\n"
                        "  %%r = mul %%row, %%stride : i32\n"
                        "  %%xr = addptr %%x, %%r : *fp32\n"
                        "  %%0 = const 0 : i32\n"
                        "  %%1 = const %d : i32\n"
                        "  for %%off = %%0 to %%N step %%1 {\n"
                        "    %%2 = arange 0 : i32[8]\n"
                        "    %%b = const %d : i32[8]\n"
                        "    %%2b = mul %%2, %%b : i32[8]\n"
                        "    %%3 = broadcast %%off : i32[8]\n"
                        "    %%c = add %%3, %%2b : i32[8]\n"
                        "    %%k = const %d : i32[8]\n"
                        "    %%ck = add %%c, %%k : i32[8]\n"
                        "    %%4 = broadcast %%xr : *fp32[8]\n"
                        "    %%5 = addptr %%4, %%ck : *fp32[8]\n"
                        "    %%v = load %%5 : fp32[8]\n"
                        "    %%w = const 1.0 : fp32[8]\n"
                        "    store %%5, %%w\n"
                        "    yield\n"
                        "  }\n"
                        "  for %%off.1 = %%0 to %%N step %%1 {\n"
                        "    %%6 = arange 0 : i32[8]\n"
                        "    %%7 = broadcast %%off.1 : i32[8]\n"
                        "    %%c.1 = add %%7, %%6 : i32[8]\n"
                        "    %%k2 = const %d : i32[8]\n"
                        "    %%ck2 = add %%c.1, %%k2 : i32[8]\n"
                        "    %%8 = broadcast %%xr : *fp32[8]\n"
                        "    %%9 = addptr %%8, %%ck2 : *fp32[8]\n"
                        "    %%u = load %%9 : fp32[8]\n"
                        "    yield\n"
                        "  }\n"
                        "}\n",
                        S, B, K, K2);
}

/* access_lane_private over the sites of parameter param of the kernel text, which must be nsites */
static bool acc_lane_priv(Arena *a, const char *text, int param, unsigned fixed, int nsites, int64_t *L)
{
    Func *f = acc_parse(a, text);
    if (!f)
        return false;
    Access *A = access_analyze(a, f);
    const Inst *ms[16];
    int n = acc_sites_of(A, param, ms);
    return n == nsites && access_lane_private(A, ms, n, fixed, L);
}

/* access_lane_private: a proof must hold for every trip count and stride (brute force: two lanes
 * of one program, any iterations of either loop, never meet), and the kernels it is built for
 * (a row walked by strided loops at several sites: softmax, LayerNorm) are proven. */
static void test_access_lane_private(T *t)
{
    int proven = 0, wrong = 0, refused_meeting = 0;
    static const int steps[] = {8, 16, 4, 12, 24}, ks[] = {0, 8, -8, 3, 16, 5};
    for (int si = 0; si < 5; si++)
        for (int ki = 0; ki < 6; ki++)
            for (int k2 = 0; k2 < 6; k2++)
                for (int B = 1; B <= 2; B++) {
                    int S = steps[si], K = ks[ki], K2 = ks[k2];
                    Arena *a = arena_new(0);
                    Func *f = acc_parse(a, acc_lane_family(a, S, K, K2, B));
                    CHECK(t, f);
                    if (!f) {
                        arena_free(a);
                        continue;
                    }
                    Access *A = access_analyze(a, f);
                    const Inst *ms[4];
                    int n = acc_sites_of(A, 0, ms);
                    int64_t L = 0;
                    bool ok = n == 3 && access_lane_private(A, ms, n, 7, &L);
                    /* the offsets of site s (0, 1: the first loop's load and store; 2: the second
                     * loop's load), lane l, iteration i */
                    bool meet = false;
                    for (int s1 = 0; s1 < 3 && !meet; s1++)
                        for (int s2 = 0; s2 < 3 && !meet; s2++)
                            for (int l1 = 0; l1 < 8 && !meet; l1++)
                                for (int l2 = 0; l2 < 8 && !meet; l2++)
                                    for (int i1 = 0; i1 < 6 && !meet; i1++)
                                        for (int i2 = 0; i2 < 6 && !meet; i2++) {
                                            int64_t o1 = (int64_t)S * i1 + (s1 < 2 ? l1 * B + K : l1 + K2);
                                            int64_t o2 = (int64_t)S * i2 + (s2 < 2 ? l2 * B + K : l2 + K2);
                                            meet = l1 != l2 && o1 == o2;
                                        }
                    if (ok && (meet || L != 8)) {
                        wrong++;
                        printf("  wrong lane proof: S=%d K=%d K2=%d B=%d\n", S, K, K2, B);
                    }
                    proven += ok;
                    refused_meeting += !ok && meet;
                    arena_free(a);
                }
    CHECK(t, wrong == 0);
    CHECK(t, proven >= 20);
    CHECK(t, refused_meeting > 20);
    /* LayerNorm's three loops over x's row: proven, 64 lanes, unless the row's program id is a
     * fold's loop counter (row * stride then moves the lanes' elements); the windows kernel's
     * single sites: one lane per element */
    Arena *a = arena_new(0);
    int64_t L = 0;
    CHECK(t, acc_lane_priv(a, acc_priv_ln3, 0, 7, 3, &L) && L == 64);
    CHECK(t, !acc_lane_priv(a, acc_priv_ln3, 0, 0, 3, &L));
    CHECK(t, acc_lane_priv(a, acc_priv_windows, 0, 7, 1, &L));
    CHECK(t, acc_lane_priv(a, acc_priv_windows, 1, 7, 1, &L) && L == 32);
    arena_free(a);
}

/* Two halves of a head, y + t*st + h*sh + cols and y + t*st + h*sh + 4 +
 * cols (cols < 4), with t = pid ta and h = pid 1 - ta: a rotary embedding
 * on grid (tokens, heads) or (heads, tokens).  The footprints' privacy
 * over both axes must not depend on which axis is which (issue 33). */
static const char *const acc_rotary =
    "kernel @rotary(%%y: *fp32, %%st: i32, %%sh: i32) [HALF = 4] {\n"
    "  %%t = program_id %d : i32\n"
    "  %%h = program_id %d : i32\n"
    "  %%0 = mul %%t, %%st : i32\n"
    "  %%1 = mul %%h, %%sh : i32\n"
    "  %%base = add %%0, %%1 : i32\n"
    "  %%cols = arange 0 : i32[4]\n"
    "  %%b = broadcast %%base : i32[4]\n"
    "  %%o1 = add %%b, %%cols : i32[4]\n"
    "  %%k = const 4 : i32[4]\n"
    "  %%o2 = add %%o1, %%k : i32[4]\n"
    "  %%yb = broadcast %%y : *fp32[4]\n"
    "  %%p1 = addptr %%yb, %%o1 : *fp32[4]\n"
    "  %%p2 = addptr %%yb, %%o2 : *fp32[4]\n"
    "  %%v = const 1.0 : fp32[4]\n"
    "  store %%p1, %%v\n"
    "  store %%p2, %%v\n"
    "}\n";

static void test_access_grid_order_brute_force(T *t)
{
    enum { NS = 27, NG = 4 };
    static bool pass[2][2][NS][NS][NG][NG];
    /* what: 0 the footprint of both stores (access_private), 1 the first
     * store alone (access_injective over programs and lanes) */
    for (int what = 0; what < 2; what++) {
        int proven = 0, wrong = 0, differ = 0, lanes = what ? 4 : 8;
        for (int ta = 0; ta < 2; ta++) {
            Arena *a = arena_new(0);
            Access *A = NULL;
            AccResult r;
            if (what) {
                Func *f = acc_parse(a, arena_printf(a, acc_rotary, ta, 1 - ta));
                A = access_analyze(a, f);
                r = access_injective(A, acc_nth(A, OP_STORE, 0), ACC_VARY_PIDS | ACC_VARY_LANES);
            } else {
                r = acc_priv(a, arena_printf(a, acc_rotary, ta, 1 - ta), 0, 7, &A);
            }
            CHECK(t, r.v == ACC_PROVEN_IF);
            for (int64_t st = 0; st < NS && r.v == ACC_PROVEN_IF; st++)
                for (int64_t sh = 0; sh < NS; sh++)
                    for (int64_t nt = 1; nt <= NG; nt++)
                        for (int64_t nh = 1; nh <= NG; nh++) {
                            int64_t grid[3] = {ta ? nh : nt, ta ? nt : nh, 1}, params[3] = {0, st, sh};
                            bool holds = false;
                            if (!access_cond_eval(A, r.cond, params, grid, &holds))
                                holds = false;
                            bool meet = false;
                            for (int64_t p = 0; p < nt * nh && !meet; p++)
                                for (int64_t q = 0; q < nt * nh && !meet; q++)
                                    for (int64_t l1 = 0; l1 < lanes && !meet; l1++)
                                        for (int64_t l2 = 0; l2 < lanes && !meet; l2++)
                                            meet = (p != q || l1 != l2) && (what || p != q) &&
                                                   (p / nh) * st + (p % nh) * sh + l1 == (q / nh) * st + (q % nh) * sh + l2;
                            if (holds && meet) {
                                wrong++;
                                printf("  wrong proof (%s): axis %d st=%lld sh=%lld grid %lldx%lld\n",
                                       what ? "injective" : "private", ta, (long long)st, (long long)sh,
                                       (long long)nt, (long long)nh);
                            }
                            pass[what][ta][st][sh][nt - 1][nh - 1] = holds;
                            proven += holds;
                            if (ta && holds != pass[what][0][st][sh][nt - 1][nh - 1])
                                differ++;
                        }
            arena_free(a);
        }
        CHECK(t, wrong == 0);
        /* symmetric: the same launches pass on either order of the axes; the
         * rotary's (stride_t, stride_h) = (24, 8) on 4 tokens and 3 heads */
        if (differ || proven < 1000)
            printf("  %s: proven %d, %d launches differ between the orders\n", what ? "injective" : "private",
                   proven, differ);
        CHECK(t, differ == 0 && proven >= 1000 && pass[what][0][24][8][3][2] && pass[what][1][24][8][3][2]);
    }
}

/* The grouped GEMM order of a persistent tile loop (tests/kernels/grid_order.py
 * swizzled_tiles, BM = BN = 2, GROUP_M = G): c + (pid_m*2 + rm)*stride_cm +
 * pid_n*2 + rn under the masks, with pid_m, pid_n the swizzle of the tile. */
static const char *const acc_swizzle =
    "kernel @swizzled_tiles(%%a_ptr: *fp32, %%c_ptr: *fp32, %%M: i32, %%N: i32, %%stride_am: i32, %%stride_cm: i32) [BM = 2, BN = 2, GROUP_M = %d] {\n"
    "  %%pid = program_id 0 : i32\n"
    "  %%nprog = num_programs 0 : i32\n"
    "  %%0 = const 2 : i32\n"
    "  %%1 = add %%M, %%0 : i32\n"
    "  %%2 = const 1 : i32\n"
    "  %%3 = sub %%1, %%2 : i32\n"
    "  %%num_pid_m = div %%3, %%0 : i32\n"
    "  %%4 = add %%N, %%0 : i32\n"
    "  %%5 = sub %%4, %%2 : i32\n"
    "  %%num_pid_n = div %%5, %%0 : i32\n"
    "  %%num_tiles = mul %%num_pid_m, %%num_pid_n : i32\n"
    "  %%rm = arange 0 : i32[2]\n"
    "  for %%tile = %%pid to %%num_tiles step %%nprog {\n"
    "    %%6 = const %d : i32\n"
    "    %%width = mul %%6, %%num_pid_n : i32\n"
    "    %%group_id = div %%tile, %%width : i32\n"
    "    %%first_pid_m = mul %%group_id, %%6 : i32\n"
    "    %%7 = sub %%num_pid_m, %%first_pid_m : i32\n"
    "    %%group_size_m = minimum %%7, %%6 : i32\n"
    "    %%8 = rem %%tile, %%group_size_m : i32\n"
    "    %%pid_m = add %%first_pid_m, %%8 : i32\n"
    "    %%9 = rem %%tile, %%width : i32\n"
    "    %%pid_n = div %%9, %%group_size_m : i32\n"
    "    %%10 = mul %%pid_m, %%0 : i32\n"
    "    %%11 = broadcast %%10 : i32[2]\n"
    "    %%om = add %%11, %%rm : i32[2]\n"
    "    %%12 = mul %%pid_n, %%0 : i32\n"
    "    %%13 = broadcast %%12 : i32[2]\n"
    "    %%on = add %%13, %%rm : i32[2]\n"
    "    %%14 = expand_dims %%om {axis = 1} : i32[2,1]\n"
    "    %%15 = broadcast %%M : i32[2,1]\n"
    "    %%16 = lt %%14, %%15 : i1[2,1]\n"
    "    %%17 = expand_dims %%on {axis = 0} : i32[1,2]\n"
    "    %%18 = broadcast %%N : i32[1,2]\n"
    "    %%19 = lt %%17, %%18 : i1[1,2]\n"
    "    %%20 = broadcast %%16 : i1[2,2]\n"
    "    %%21 = broadcast %%19 : i1[2,2]\n"
    "    %%m = and %%20, %%21 : i1[2,2]\n"
    "    %%22 = broadcast %%stride_am : i32[2,1]\n"
    "    %%23 = mul %%14, %%22 : i32[2,1]\n"
    "    %%24 = broadcast %%a_ptr : *fp32[2,1]\n"
    "    %%25 = addptr %%24, %%23 : *fp32[2,1]\n"
    "    %%26 = broadcast %%25 : *fp32[2,2]\n"
    "    %%27 = broadcast %%17 : i32[2,2]\n"
    "    %%28 = addptr %%26, %%27 : *fp32[2,2]\n"
    "    %%29 = const 0.0 : fp32[2,2]\n"
    "    %%a = load %%28, mask %%m, other %%29 : fp32[2,2]\n"
    "    %%30 = broadcast %%stride_cm : i32[2,1]\n"
    "    %%31 = mul %%14, %%30 : i32[2,1]\n"
    "    %%32 = broadcast %%c_ptr : *fp32[2,1]\n"
    "    %%33 = addptr %%32, %%31 : *fp32[2,1]\n"
    "    %%34 = broadcast %%33 : *fp32[2,2]\n"
    "    %%35 = addptr %%34, %%27 : *fp32[2,2]\n"
    "    %%36 = sin %%a : fp32[2,2]\n"
    "    %%37 = mul %%36, %%a : fp32[2,2]\n"
    "    store %%35, %%37, mask %%m\n"
    "    yield\n"
    "  }\n"
    "}\n";

/* The same in Triton's tutorial spelling: pid_m = first + (tile % width) % gs. */
static const char *const acc_swizzle_tut =
    "kernel @swizzled_tiles_tutorial(%%a_ptr: *fp32, %%c_ptr: *fp32, %%M: i32, %%N: i32, %%stride_am: i32, %%stride_cm: i32) [BM = 2, BN = 2, GROUP_M = %d] {\n"
    "  %%pid = program_id 0 : i32\n"
    "  %%nprog = num_programs 0 : i32\n"
    "  %%0 = const 2 : i32\n"
    "  %%1 = add %%M, %%0 : i32\n"
    "  %%2 = const 1 : i32\n"
    "  %%3 = sub %%1, %%2 : i32\n"
    "  %%num_pid_m = div %%3, %%0 : i32\n"
    "  %%4 = add %%N, %%0 : i32\n"
    "  %%5 = sub %%4, %%2 : i32\n"
    "  %%num_pid_n = div %%5, %%0 : i32\n"
    "  %%num_tiles = mul %%num_pid_m, %%num_pid_n : i32\n"
    "  %%rm = arange 0 : i32[2]\n"
    "  for %%tile = %%pid to %%num_tiles step %%nprog {\n"
    "    %%6 = const %d : i32\n"
    "    %%width = mul %%6, %%num_pid_n : i32\n"
    "    %%group_id = div %%tile, %%width : i32\n"
    "    %%first_pid_m = mul %%group_id, %%6 : i32\n"
    "    %%7 = sub %%num_pid_m, %%first_pid_m : i32\n"
    "    %%group_size_m = minimum %%6, %%7 : i32\n"
    "    %%8 = rem %%tile, %%width : i32\n"
    "    %%9 = rem %%8, %%group_size_m : i32\n"
    "    %%pid_m = add %%first_pid_m, %%9 : i32\n"
    "    %%pid_n = div %%8, %%group_size_m : i32\n"
    "    %%10 = mul %%pid_m, %%0 : i32\n"
    "    %%11 = broadcast %%10 : i32[2]\n"
    "    %%om = add %%11, %%rm : i32[2]\n"
    "    %%12 = mul %%pid_n, %%0 : i32\n"
    "    %%13 = broadcast %%12 : i32[2]\n"
    "    %%on = add %%13, %%rm : i32[2]\n"
    "    %%14 = expand_dims %%om {axis = 1} : i32[2,1]\n"
    "    %%15 = broadcast %%M : i32[2,1]\n"
    "    %%16 = lt %%14, %%15 : i1[2,1]\n"
    "    %%17 = expand_dims %%on {axis = 0} : i32[1,2]\n"
    "    %%18 = broadcast %%N : i32[1,2]\n"
    "    %%19 = lt %%17, %%18 : i1[1,2]\n"
    "    %%20 = broadcast %%16 : i1[2,2]\n"
    "    %%21 = broadcast %%19 : i1[2,2]\n"
    "    %%m = and %%20, %%21 : i1[2,2]\n"
    "    %%22 = broadcast %%stride_am : i32[2,1]\n"
    "    %%23 = mul %%14, %%22 : i32[2,1]\n"
    "    %%24 = broadcast %%a_ptr : *fp32[2,1]\n"
    "    %%25 = addptr %%24, %%23 : *fp32[2,1]\n"
    "    %%26 = broadcast %%25 : *fp32[2,2]\n"
    "    %%27 = broadcast %%17 : i32[2,2]\n"
    "    %%28 = addptr %%26, %%27 : *fp32[2,2]\n"
    "    %%29 = const 0.0 : fp32[2,2]\n"
    "    %%a = load %%28, mask %%m, other %%29 : fp32[2,2]\n"
    "    %%30 = broadcast %%stride_cm : i32[2,1]\n"
    "    %%31 = mul %%14, %%30 : i32[2,1]\n"
    "    %%32 = broadcast %%c_ptr : *fp32[2,1]\n"
    "    %%33 = addptr %%32, %%31 : *fp32[2,1]\n"
    "    %%34 = broadcast %%33 : *fp32[2,2]\n"
    "    %%35 = addptr %%34, %%27 : *fp32[2,2]\n"
    "    %%36 = sin %%a : fp32[2,2]\n"
    "    %%37 = mul %%36, %%a : fp32[2,2]\n"
    "    store %%35, %%37, mask %%m\n"
    "    yield\n"
    "  }\n"
    "}\n";

/* The swizzle's row and column of tile t (as the kernel computes them). */
static void acc_swz(int64_t t, int64_t npm, int64_t npn, int64_t G, bool tut, int64_t *pm, int64_t *pn)
{
    int64_t width = G * npn, first = t / width * G, gs = npm - first < G ? npm - first : G;
    *pm = first + (tut ? t % width : t) % gs;
    *pn = t % width / gs;
}

/* Every verdict on the swizzled store, in both spellings (iterations,
 * programs and lanes all varying) against the addresses the launch writes: no proof where two
 * writes meet, and proofs where the rows do not overlap (stride >= N). */
static void test_access_swizzle_brute_force(T *t)
{
    int proven = 0, wrong = 0;
    for (int G = 1; G <= 6; G++) {
        bool tut = G > 3;
        Arena *a = arena_new(0);
        Func *f = acc_parse(a, arena_printf(a, tut ? acc_swizzle_tut : acc_swizzle, tut ? G - 3 : G, tut ? G - 3 : G));
        CHECK(t, f);
        if (!f) {
            arena_free(a);
            continue;
        }
        Access *A = access_analyze(a, f);
        AccResult r = access_injective(A, acc_nth(A, OP_STORE, 0), ACC_VARY_PIDS | ACC_VARY_LOOPS | ACC_VARY_LANES);
        CHECK(t, r.v == ACC_PROVEN_IF);
        for (int64_t M = 1; M <= 9 && r.v == ACC_PROVEN_IF; M++)
            for (int64_t N = 1; N <= 7; N++)
                for (int64_t sc = N - 2; sc <= N + 1; sc++)
                    for (int64_t g = 1; g <= 3; g++) {
                        int64_t params[6] = {0, 0, M, N, 0, sc}, grid[3] = {g, 1, 1};
                        bool holds = false;
                        if (!access_cond_eval(A, r.cond, params, grid, &holds))
                            holds = false;
                        int64_t npm = (M + 1) / 2, npn = (N + 1) / 2, seen[256];
                        int ns = 0;
                        bool meet = false;
                        for (int64_t p = 0; p < g; p++)
                            for (int64_t tile = p; tile < npm * npn; tile += g) {
                                int64_t pm, pn;
                                acc_swz(tile, npm, npn, tut ? G - 3 : G, tut, &pm, &pn);
                                for (int64_t rm = 0; rm < 2; rm++)
                                    for (int64_t rn = 0; rn < 2; rn++) {
                                        if (pm * 2 + rm >= M || pn * 2 + rn >= N)
                                            continue;
                                        int64_t o = (pm * 2 + rm) * sc + pn * 2 + rn;
                                        for (int i = 0; i < ns; i++)
                                            meet |= seen[i] == o;
                                        if (ns < 256)
                                            seen[ns++] = o;
                                    }
                            }
                        if (holds && meet) {
                            wrong++;
                            printf("  wrong proof: G=%d M=%lld N=%lld stride=%lld grid=%lld\n", G, (long long)M,
                                   (long long)N, (long long)sc, (long long)g);
                        }
                        proven += holds;
                    }
        arena_free(a);
    }
    CHECK(t, wrong == 0);
    if (proven < 600)
        printf("  proven %d\n", proven);
    CHECK(t, proven >= 600);
}

/* Coverage (access_cover): the description the launcher checks, and the
 * refusals where kad cannot read the written set exactly. */
static const char *const acc_cover_kinds =
    "kernel @kinds(%x: *fp32, %y: *fp32, %n: i32) [BLOCK = 64] {\n"
    "  %pid = program_id 0 : i32\n"
    "  %0 = const 64 : i32\n"
    "  %1 = mul %pid, %0 : i32\n"
    "  %2 = arange 0 : i32[64]\n"
    "  %3 = broadcast %1 : i32[64]\n"
    "  %offs = add %3, %2 : i32[64]\n"
    "  %4 = broadcast %n : i32[64]\n"
    "  %m = lt %offs, %4 : i1[64]\n"
    "  %5 = broadcast %x : *fp32[64]\n"
    "  %6 = addptr %5, %offs : *fp32[64]\n"
    "  %a = load %6, mask %m : fp32[64]\n"
    "  %7 = const 0.5 : fp32[64]\n"
    "  %fm = lt %a, %7 : i1[64]\n"
    "  %b = load %6, mask %fm : fp32[64]\n"
    "  %8 = const 1 : i32\n"
    "  %9 = addptr %x, %8 : *fp32\n"
    "  %10 = broadcast %9 : *fp32[64]\n"
    "  %11 = addptr %10, %offs : *fp32[64]\n"
    "  %c = load %11, mask %m : fp32[64]\n"
    "  %12 = const 0 : i32\n"
    "  %pos = gt %n, %12 : i1\n"
    "  %d = if %pos -> (fp32[64]) {\n"
    "    %e = load %6, mask %m : fp32[64]\n"
    "    yield %e\n"
    "  } else {\n"
    "    yield %a\n"
    "  }\n"
    "  %13 = broadcast %y : *fp32[64]\n"
    "  %14 = addptr %13, %offs : *fp32[64]\n"
    "  %15 = add %a, %b : fp32[64]\n"
    "  %16 = add %15, %c : fp32[64]\n"
    "  %17 = add %16, %d : fp32[64]\n"
    "  store %14, %17, mask %m\n"
    "}\n";

static void test_access_cover(T *t)
{
    Arena *a = arena_new(0);
    Func *f = acc_parse(a, acc_rowwise);
    CHECK(t, f);
    if (f) { /* x + row * stride + cols under cols < n_cols */
        Access *A = access_analyze(a, f);
        const char *why = NULL;
        const AccCover *c = access_cover(A, acc_nth(A, OP_LOAD, 0), &why);
        CHECK(t, c && !why);
        const char *py = c ? access_cover_host(A, c, "d", "a", "g") : NULL;
        CHECK(t, py && !strcmp(py, "_kad_covers(d, {0: (a[\"stride\"], g[0]), 1: (1, 128)}, "
                                   "[(a[\"n_cols\"], (1,), (1,))], [-g[1], -g[2]])"));
        if (py && strcmp(py, "_kad_covers(d, {0: (a[\"stride\"], g[0]), 1: (1, 128)}, "
                             "[(a[\"n_cols\"], (1,), (1,))], [-g[1], -g[2]])"))
            printf("  got %s\n", py);
        CHECK(t, strstr(kad_py_covers, "def _kad_covers(d, vs, clauses, negs):"));
    }
    f = acc_parse(a, acc_cover_kinds);
    CHECK(t, f);
    if (f) {
        Access *A = access_analyze(a, f);
        const char *why = NULL;
        const AccCover *c = access_cover(A, acc_nth(A, OP_LOAD, 0), &why);
        const char *py = c ? access_cover_host(A, c, "d", "a", "g") : NULL;
        /* offs = pid * 64 + lane under offs < n: one clause on the run's index */
        CHECK(t, py && !strcmp(py, "_kad_covers(d, {0: (64, g[0]), 1: (1, 64)}, [(a[\"n\"], (0, 1), (64, 1))], "
                                   "[-g[1], -g[2]])"));
        if (py && strcmp(py, "_kad_covers(d, {0: (64, g[0]), 1: (1, 64)}, [(a[\"n\"], (0, 1), (64, 1))], "
                             "[-g[1], -g[2]])"))
            printf("  got %s\n", py);
        why = NULL; /* a mask computed from loaded values */
        CHECK(t, !access_cover(A, acc_nth(A, OP_LOAD, 1), &why) && why && strstr(why, "mask"));
        why = NULL; /* x + 1 + offs */
        CHECK(t, !access_cover(A, acc_nth(A, OP_LOAD, 2), &why) && why && strstr(why, "offset"));
        /* under `if n > 0`: the condition is one more clause (on no variable: n > 0 must hold) */
        c = access_cover(A, acc_nth(A, OP_LOAD, 3), &why);
        py = c ? access_cover_host(A, c, "d", "a", "g") : NULL;
        CHECK(t, py && strstr(py, "[(a[\"n\"], (0, 1), (64, 1))]") && strstr(py, "-a[\"n\"]"));
        if (py && !strstr(py, "-a[\"n\"]"))
            printf("  got %s\n", py);
    }
    f = acc_parse(a, acc_priv_ln3);
    CHECK(t, f);
    if (f) { /* loops of positive step: their iterations are variables bounded by the loop */
        Access *A = access_analyze(a, f);
        const AccCover *c = access_cover(A, acc_nth(A, OP_LOAD, 0), NULL);
        const char *py = c ? access_cover_host(A, c, "d", "a", "g") : NULL;
        CHECK(t, py && strstr(py, ": (64, None)") && strstr(py, "(a[\"N\"], (2,), (64,))"));
        if (py && !strstr(py, ": (64, None)"))
            printf("  got %s\n", py);
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
    RUN(t, test_access_private);
    RUN(t, test_access_private_brute_force);
    RUN(t, test_access_lane_private);
    RUN(t, test_access_masked_shift_brute_force);
    RUN(t, test_access_chunk_group_brute_force);
    RUN(t, test_access_grid_order_brute_force);
    RUN(t, test_access_swizzle_brute_force);
    RUN(t, test_access_cover);
}
