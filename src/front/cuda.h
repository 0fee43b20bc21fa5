/* cuda.h -- the CUDA C / HIP front end's entry points: a file's tokens
 * (cu_lex.c), its device code (cu_parse.c), a kernel lowered to the IR
 * for its template arguments and block (cu_kernel.c: cu_lower).
 *
 * Included by the API (kad.c) and by the front end's private header
 * front/cu.h, which defines the tokens and the units.
 */
#ifndef KAD_CUDA_H
#define KAD_CUDA_H

#include "base/base.h"
#include "ir/ir.h"

typedef struct CuTok CuTok;   /* a token (front/cu.h) */
typedef struct CuUnit CuUnit; /* a parsed file (front/cu.h) */

/* ---- tokens (cu_lex.c) ---- */

/* Tokenizes and preprocesses text; returns the tokens ending in CT_EOF.
 * A quoted #include is read beside the including file, else in dirs[0..ndirs).
 * Errors go to d (located). */
CuTok *cu_lex(Arena *a, Diags *d, const char *file, const char *text, const char *const *dirs, int ndirs, int *ntok);

/* ---- the AST (cu_parse.c) ---- */

/* Parses the tokens of a file: device code into a CuUnit, host code
 * skipped.  NULL only after a hard error; errors go to d. */
CuUnit *cu_parse(Arena *a, Diags *d, const char *file, const CuTok *toks, int ntok);

/* ---- lowering (cu_kernel.c: cu_lower) ---- */

typedef struct CuSpec {
    const char *targs; /* "scalar_t=fp32,BLOCK=256" or NULL */
    int block[3];      /* blockDim; 0 entries read as 1 */
} CuSpec;

/* Lowers kernel `name` of the units (the first that defines it) for spec.
 * NULL after an error (located in d). */
Func *cu_lower(Arena *a, Diags *d, CuUnit **units, int nunits, const char *name, const CuSpec *spec);

#endif
