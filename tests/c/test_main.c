/* test_main.c -- the C unit tests: one binary, one line per test, a summary.
 *
 * Each tests/c/test_<stage>.c file defines `static void tests_<stage>(T *t)`
 * calling CHECK/RUN; they are included here so everything stays static.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "analysis/analysis.h"
#include "plan/plan.h"
#include "ad/autodiff.h"
#include "emit/emit_triton.h"
#include "emit/py/embed.h"
#include "check/check.h"

typedef struct T {
    int passed, failed;
    const char *current;
    int current_failed;
} T;

#define CHECK(t, cond)                                                          \
    do {                                                                        \
        if (!(cond)) {                                                          \
            printf("  %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            (t)->current_failed = 1;                                            \
        }                                                                       \
    } while (0)

/* Runs one test function and prints its line. */
#define RUN(t, fn) run_one((t), #fn, fn)
static void run_one(T *t, const char *name, void (*fn)(T *))
{
    t->current = name;
    t->current_failed = 0;
    fn(t);
    printf("%s %s\n", t->current_failed ? "FAIL" : "ok  ", name);
    if (t->current_failed)
        t->failed++;
    else
        t->passed++;
}

#include "test_util.c"
#include "test_lex.c"
#include "test_ir.c"
#include "test_interp.c"
#include "test_emit.c"
#include "test_ad.c"
#include "test_access.c"
#include "test_plan.c"

int main(void)
{
    T t = {0};
    tests_util(&t);
    tests_lex(&t);
    tests_ir(&t);
    tests_interp(&t);
    tests_emit(&t);
    tests_ad(&t);
    tests_access(&t);
    tests_plan(&t);
    printf("c: %d passed, %d failed\n", t.passed, t.failed);
    return t.failed ? 1 : 0;
}
