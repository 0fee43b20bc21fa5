/* analysis.h -- the analysis stage's header: the affine access analysis
 * (access.c: forms; access_decide.c, access_disjoint.c: decisions;
 * access_report.c: conditions printed and evaluated, the report;
 * access_cover.c: coverage; access_text.c: conditions and covers as text)
 * and the determinism audit (audit.c).
 *
 * Included by the analysis files and by the later stages (plan, AD, the
 * emitters, kad.c, main.c).  analysis/access_int.h is the access
 * analysis's private header.
 */
#ifndef KAD_ANALYSIS_H
#define KAD_ANALYSIS_H

#include "base/base.h"
#include "ir/ir.h"

/* ------------------------------------------------------------------ */
/* access.c (forms), access_decide.c, access_disjoint.c (decisions),  */
/* access_report.c (conditions printed and evaluated, the report):    */
/* affine access analysis (see docs/AD.md, "Access analysis")         */
/* ------------------------------------------------------------------ */

/* A polynomial over symbols with integer coefficients: sum of k * s1*s2*s3.
 * Symbols are integer scalars the launch fixes: runtime int parameters,
 * tl.num_programs(axis), and values kad cannot express otherwise (named in
 * messages by their IR name).  Symbol ids are >= 1; 0 pads a monomial. */
#define ACC_NSYM 3
#define ACC_NMONO 8
typedef struct AccMono {
    int64_t k;
    int32_t s[ACC_NSYM]; /* sorted descending, 0 = none */
} AccMono;
typedef struct AccPoly {
    int n;
    AccMono m[ACC_NMONO];
} AccPoly;
/* A runtime condition in conjunctive form: every clause holds, a clause
 * holds when one of its polynomials is >= 0. */
#define ACC_NALT 4
#define ACC_NCLAUSE 8
typedef struct AccClause {
    int n;
    AccPoly p[ACC_NALT];
} AccClause;
typedef struct AccCond {
    int n;
    AccClause c[ACC_NCLAUSE];
} AccCond;
typedef Vec(const AccCond *) AccCondVec; /* a conjunction of conditions */

typedef enum AccVerdict {
    ACC_PROVEN,        /* injective / disjoint for every launch */
    ACC_PROVEN_IF,     /* ... whenever cond holds (a check over scalar params) */
    ACC_NOT_INJECTIVE, /* two points of the domain reach one element (why: a witness) */
    ACC_UNKNOWN,       /* kad cannot tell (why: the reason) */
} AccVerdict;
typedef struct AccResult {
    AccVerdict v;
    const char *why;     /* NOT_INJECTIVE, UNKNOWN: the reason; else NULL */
    const AccCond *cond; /* PROVEN_IF: the condition (arena); else NULL */
} AccResult;

/* What a query lets vary; what stays fixed is one unknown value.  The
 * lanes of the tile are those the access's mask (and enclosing `if`s, loop
 * bounds) enable. */
enum {
    ACC_VARY_PIDS = 1,   /* tl.program_id of every axis */
    ACC_VARY_LOOPS = 2,  /* the iterations of every loop enclosing the access */
    ACC_VARY_LANES = 4,  /* the lanes of the tile */
    ACC_SKIP_UNUSED_LANES = 8, /* lanes the address does not depend on are not varied
                                  (several lanes writing one element in one iteration
                                  is then allowed: "distinct iterations write distinct
                                  elements") */
};

/* The analysis of one Func: every load, store and atomic_add's address as
 * a base parameter plus an affine form over program ids, loop iterations,
 * lanes, and quasi-affine // and % terms, with symbolic coefficients.  f
 * must stay unchanged while the Access is used. */
typedef struct Access Access;
Access *access_analyze(Arena *a, const Func *f);
/* The memory instructions of f in program order (load, store, atomic_add). */
int access_count(const Access *A);
const Inst *access_inst(const Access *A, int i);
/* The pointer parameter an access goes through (index into f->params), or
 * -1 when its address is not an affine form over one parameter. */
int access_base(Access *A, const Inst *mem);
/* The parameters (indices < nparams) the accesses of A's function go through: w[p]
 * set for those its stores and atomic_adds write through, r[p] (unless r is NULL:
 * loads not asked about) for those its loads read through; accesses whose sattr is
 * skip (unless NULL) are left out.  False when an access has no base parameter
 * among them (the others are still marked). */
bool access_params(Access *A, int nparams, uint8_t *w, uint8_t *r, const char *skip);
/* Is (program ids, loop iterations, enabled lanes) -> element injective,
 * over what `vary` (ACC_VARY_*) lets vary? */
AccResult access_injective(Access *A, const Inst *mem, int vary);
/* The grid axes (bit k: axis k) the address provably does not depend on:
 * every program along such an axis touches the same elements (a weight
 * read by every row program), so its gradient collides across that axis.
 * Returns false when the address is unknown. */
bool access_pid_independent(Access *A, const Inst *mem, unsigned *axes);
/* mem's address as base parameter (*base, an index into f->params) + c0 +
 * sum_k pid[k] * tl.program_id(k) + terms over the tile's lanes only (`//`
 * and `%` of lanes included: a 2-D block's tid / BX, tid % BX); false when it
 * is unknown or has a loop term, or `//` or `%` of more (write/gather.c). */
bool access_pid_form(Access *A, const Inst *mem, int *base, AccPoly *c0, AccPoly pid[3]);
/* Do two accesses through one base parameter, in one program and one
 * iteration of their common loops, touch disjoint elements (on the lanes
 * their masks enable)?  (Two halves of a row through two tl.store sites.) */
AccResult access_disjoint(Access *A, const Inst *x, const Inst *y);
/* The same over every iteration of every loop enclosing either access
 * (one program; a loop enclosing both varies on its own for each): two
 * sites in loops never write one element (a reverse tile walk's masked
 * first tile and its loop). */
AccResult access_disjoint_all(Access *A, const Inst *x, const Inst *y);
/* The condition as a Python / Triton expression over the kernel's
 * parameter names (`stride >= n_cols`, `tl.num_programs(0) * s >= 1`);
 * NULL when it names a value that is not a parameter. */
const char *access_cond_python(Access *A, const AccCond *c);
/* c multiplies two of the kernel's parameters in some term (`cols >= rows*cols`: launches of one
 * row), none of them a grid size: a condition the proof's ordering found, which launches rarely
 * meet. */
bool access_cond_param_product(Access *A, const AccCond *c);
/* Evaluates the condition for runtime values of the int parameters (by
 * index into f->params; others ignored) and the grid.  False when it names
 * a value not computed from int parameters, constants and num_programs by
 * + - * // %; else *holds is set. */
bool access_cond_eval(Access *A, const AccCond *c, const int64_t *params, const int64_t grid[3],
                      bool *holds);
/* A report of every access (form, constraints, verdicts): `kad access`. */
const char *access_report(Access *A);
/* What symbol id (>= 1, as in AccMono.s) stands for: 1 and *param (index
 * into f->params) for an int parameter, 2 and *axis for
 * tl.num_programs(axis), 0 for anything else. */
int access_sym(Access *A, int id, int *param, int *axis);
/* Is the footprint of each program private along `axes` (bit k:
 * tl.program_id(k))?  That is: is every element one program touches
 * through any of the n accesses mems (one base parameter; over every
 * iteration of their loops and every enabled lane) touched by no program
 * whose program id differs from it in some axis of `axes`?  Within one
 * program the sites may overlap freely (LayerNorm reads its row in three
 * loops).  axes = 0 is trivially PROVEN.  NOT_INJECTIVE comes with a
 * witness (two programs reaching one element); data-dependent addresses
 * are UNKNOWN. */
AccResult access_private(Access *A, const Inst *const *mems, int n, unsigned axes);
/* Is every element the n accesses mems (one base parameter, rank-1 tiles of one length L) touch
 * in one program touched by one lane only, over every site, loop iteration and enabled lane?  A
 * program here: fixed program ids along fixed_axes (bit k: axis k; 7 for a launch's program; fewer
 * where a fold turns the other ids into a loop's counter).  Proven from the forms alone: each
 * address is R + lane + L * (an integer), R the same for every site and fixed within a program.
 * Then *len = L.  (A backend whose lanes are threads, each in program order, needs no barrier
 * between such read-modify-writes: docs/AD.md.) */
bool access_lane_private(Access *A, const Inst *const *mems, int n, unsigned fixed_axes, int64_t *len);
/* The condition as a Python expression for the host: int parameter p as
 * args["p"], tl.num_programs(k) as grid[k] (args and grid: the names
 * given); NULL when it names a value that is not computed from them. */
const char *access_cond_host(Access *A, const AccCond *c, const char *args, const char *grid);
/* Adds c to the conjunction out, its clauses merged into out's where they
 * fit (clauses another implies dropped): out means (out and c). */
void access_cond_conj(Access *A, AccCondVec *out, const AccCond *c);
/* Does the conjunction x imply y?  True when each clause of y is implied by
 * one of x's (a sufficient test: false may still be an implication). */
bool access_cond_implies(const AccCondVec *x, const AccCond *y);
/* Coverage (access_cover.c; docs/AD.md, "Coverage"): the elements the
 * whole launch reaches through mem (every program, every iteration of its
 * `for` loops, the lanes its mask enables), described exactly enough that
 * a launcher can check that they include every element of a tensor's
 * view: then a gradient stored with mem's address and mask needs no
 * zero-fill.  NULL, with the reason in *why (may be NULL), when kad cannot
 * describe them exactly (a mask it does not read exactly, an enclosing
 * `if` or `while`, `//` or `%` in the address, a constant offset). */
typedef struct AccCover AccCover;
const AccCover *access_cover(Access *A, const Inst *mem, const char **why);
/* The check as a Python expression, true only when every element of the
 * view of `tensor` (a Python expression for a torch.Tensor) is reached:
 * int parameter p as args["p"], the grid as grid[k] (args and grid: the
 * names given); a call of _kad_covers, the Python helper the launcher
 * prints before them (src/emit/py/cover.py, embedded as kad_py_covers).
 * NULL when a coefficient names a value not computed from them. */
const char *access_cover_host(Access *A, const AccCover *c, const char *tensor, const char *args,
                              const char *grid);

/* A polynomial of an analysis as text in the caller's language (its symbols: the int parameters and
 * the grid), or NULL when it names something else. */
typedef const char *(*AccPolyText)(void *ctx, Access *A, const AccPoly *p);
/* The check in C for a dense gradient of numel elements (the expression naming its element count):
 * statements setting the bool out by a call of kad_covers, the C twin of _kad_covers that the CUDA C
 * launcher prints (src/emit/emit_cuda_host.c), grid axis k as grid_x, grid_y, grid_z; NULL when poly
 * cannot print a polynomial. */
const char *access_cover_c(Access *A, const AccCover *c, const char *numel, const char *out, AccPolyText poly,
                           void *ctx);

/* access_text.c: a condition and a cover as a Program's text (docs/IR.md, "Programs"), the
 * contract's int parameters named pnames[0..np) (the main kernel's printed names, without
 * '%').  Reading: symbols interned in A (an Access over the kernel pnames names), NULL with
 * *err (the message) when the text at s is not one; else where it ends. */
void access_cond_text(Buf *b, Access *A, const AccCond *c, const char *const *pnames, int np);
void access_cover_text(Buf *b, Access *A, const AccCover *c, const char *const *pnames, int np);
const char *access_cond_read(Access *A, const char *s, const char *const *pnames, int np, const AccCond **out,
                             const char **err);
const char *access_cover_read(Access *A, const char *s, const char *const *pnames, int np, const AccCover **out,
                              const char **err);

/* A launch condition of a backward kernel: its gradient is right only
 * when cond holds (a store in a loop proven to write distinct elements
 * under it).  Symbols: the forward's int parameters, which are the
 * backward's first parameters, and the grid. */
typedef struct FuncGuard {
    Access *acc;         /* the forward's analysis (cond's symbols) */
    const AccCond *cond;
    Loc loc;             /* the forward's construct that needs it */
    const char *msg;     /* the refusal, without the location */
} FuncGuard;
/* Does each of the n guards g hold for these int arguments (by index into
 * the kernel's params) and grid?  False after a located error in d otherwise
 * (also when a condition cannot be evaluated). */
bool func_guards_hold(const FuncGuard *g, int n, const int64_t *iargs, const int64_t grid[3], Diags *d);

/* ------------------------------------------------------------------ */
/* audit.c: determinism audit (see docs/AD.md, "Determinism audit")    */
/* ------------------------------------------------------------------ */

/* The report of what makes f nondeterministic (float atomics that may add
 * into one element several times) or batch-variant (float accumulation
 * loops chunked by tl.num_programs or by a batch size), one located line
 * per finding, then a summary line (`kad audit`, kad_audit). */
const char *audit_report(Arena *a, const Func *f);

#endif
