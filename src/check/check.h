/* check.h -- the checker stage: the float64 finite-difference gradient
 * checker (check.c: AD's backward Program run on the interpreter against
 * central finite differences).
 *
 * Included by check.c and by the API (kad.c; tests/c).
 */
#ifndef KAD_CHECK_H
#define KAD_CHECK_H

#include "base/base.h"
#include "ir/ir.h"
#include "ad/autodiff.h"

/* ------------------------------------------------------------------ */
/* check/check.c: the float64 finite-difference gradient checker       */
/* ------------------------------------------------------------------ */

typedef struct CheckConfig {
    int64_t grid[3];
    const char *shapes; /* "x_ptr=64x128,w_ptr=128": elements of every pointer param */
    const char *args;   /* "n=1000,eps=1e-5": value of every scalar param */
    const char *ranges; /* optional "x_ptr=0.5:2": input distribution (default -1:1) */
    uint64_t seed;      /* 0: 1 */
    int directions;     /* random directions per input; 0: 4 */
    int64_t elem_limit; /* per-element FD for inputs of <= this many elements; 0: 4096; <0: never */
    double rtol;        /* 0: CHECK_RTOL */
    const char *mutate; /* testing aid: NULL or an adjoint rule to break (ad_mutation_by_name) */
    bool saved;         /* check the backward of the saving forward (ad_save.c): the saving forward
                         * runs first and fills the buffer the backward loads */
} CheckConfig;
#define CHECK_RTOL 1e-6

/* Differentiates fwd per spec, runs forward and backward on the
 * interpreter in float64 and compares with central finite differences.
 * Returns the report (one line per input, then PASS or FAIL) and sets
 * *passed; NULL on an error (bad configuration, AD refusal, interpreter
 * error), reported in d. */
const char *check_gradients(Arena *a, Diags *d, const Func *fwd, const AdSpec *spec,
                            const CheckConfig *cfg, bool *passed);

#endif
