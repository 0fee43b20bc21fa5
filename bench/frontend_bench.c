/* frontend_bench.c -- time of front end + sema + lowering for one kernel.
 *
 * usage: frontend_bench FILE.py KERNEL SIG [RUNS]
 * Runs the whole pipeline of kad_specialize (parse, sema, verify, simplify,
 * verify) RUNS times on a fresh context each time and prints the median and
 * the minimum wall time in milliseconds, plus the source's line count.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../include/kad.h"
#include "base/base.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: frontend_bench FILE.py KERNEL SIG [RUNS]\n");
        return 2;
    }
    int runs = argc > 4 ? atoi(argv[4]) : 200;
    if (runs < 1)
        runs = 1;
    Arena *a = arena_new(0);
    size_t len;
    char *text = read_file(a, argv[1], &len);
    if (!text) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 1;
    }
    int lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    double *t = malloc(sizeof *t * (size_t)runs);
    for (int r = 0; r < runs; r++) {
        double t0 = now_ms();
        kad_ctx *c = kad_ctx_new();
        if (kad_add_source(c, argv[1], text) != 0 || !kad_specialize(c, argv[2], argv[3], 0)) {
            fputs(kad_diagnostics(c), stderr);
            return 1;
        }
        kad_ctx_free(c);
        t[r] = now_ms() - t0;
    }
    qsort(t, (size_t)runs, sizeof *t, cmp_double);
    printf("%s:%s  %d lines  runs %d  median %.3f ms  min %.3f ms\n", argv[1], argv[2], lines, runs,
           t[runs / 2], t[0]);
    free(t);
    arena_free(a);
    return 0;
}
