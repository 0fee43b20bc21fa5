/* access_int.h -- internals shared by the files of the access analysis.
 *
 * access.c builds the analysis (the affine form and the constraints of
 * every memory instruction); access_decide.c decides over them
 * (injectivity), access_disjoint.c over several sites (disjointness,
 * private footprints) with access_decide.c's access_chain; access_report.c prints
 * and evaluates the runtime conditions and writes the report;
 * access_cover.c describes what a store covers.
 * This header holds what they need: the variable and symbol numbering, the
 * types behind Access, and the helpers of access.c that the decisions
 * call.  Only the access*.c files include it; the
 * rest of kad sees the API in analysis/analysis.h.
 */
#ifndef ACCESS_INT_H
#define ACCESS_INT_H

#include "base/base.h"
#include "ir/ir.h"
#include "analysis/analysis.h"

#define AC_NTERM 10
#define AC_LIMIT ((int64_t)1 << 40) /* beyond this, give up (no overflow) */
#define NVAR_MAX 60                  /* variable ids fit a uint64_t mask */
#define V_PID 0                      /* vars 0..2: program ids */
#define V_LANE 3                     /* vars 3..6: lane axes */
#define V_DYN 7                      /* loops and fresh variables from here */
#define V_HOLE 63                    /* placeholder for a carried value */

enum { SYM_PARAM, SYM_NPROG, SYM_VAL };
enum { VK_PID, VK_LANE, VK_LOOP, VK_DIV, VK_MOD };

typedef struct AcTerm {
    int var;
    AccPoly c;
} AcTerm;

/* An affine form; why != NULL: unknown, with the reason. */
typedef struct AcForm {
    const char *why;
    int base; /* pointers: param index + 1 */
    AccPoly c0;
    int nt;
    AcTerm t[AC_NTERM]; /* sorted by var, coefficients non-zero */
} AcForm;

typedef struct AcSym {
    int kind;
    ValId v;   /* SYM_PARAM, SYM_VAL; 0: a SYM_VAL read from text (access_text.c) */
    int axis;  /* SYM_NPROG */
    uint64_t dep; /* vars (pids, loops) it may depend on */
    const TapeExpr *expr; /* v = 0: the value over the int parameters (TX_PARAM: an index into
                           * f->params), constants and the grid; NULL: kad cannot compute it */
    const char *name;     /* v = 0: the symbol as the text names it */
} AcSym;

typedef struct AcVar {
    int kind;
    int loop;        /* VK_LOOP: index into loops */
    const AcForm *e; /* VK_DIV, VK_MOD: e // d, e % d */
    AccPoly d;
    bool has_max;    /* max: the largest value (the smallest is 0) */
    AccPoly max;
    uint64_t dep;    /* original variables it is a function of */
    bool rev;        /* VK_LOOP: max - t of loop `loop`'s counter t (ac_var_rev) */
    bool swz;        /* VK_DIV, VK_MOD: the row (DIV) and column (MOD) of a grouped swizzle of
                      * tile e over d = num_pid_n columns (access.c swizzle): with the plain
                      * e // d, e % d they share only being a bijection of e onto the tiles */
} AcVar;

typedef struct AcLoop {
    const Inst *in;
    int parent; /* enclosing loop index, or -1 */
    int var;
} AcLoop;

/* One memory instruction and its context. */
typedef struct AcSite {
    const Inst *in;
    uint64_t loops;      /* var bits of the enclosing loops */
    Vec(ValId) ctx;      /* conditions known true: enclosing `if` then-branches, `while` conditions */
    Vec(int) fors;       /* enclosing `for` loops (their bounds) */
    const AcForm *form;  /* the offset (NULL until asked) */
} AcSite;

struct Access {
    Arena *a;
    const Func *f;
    const char **names;
    int nv;
    const Inst **def;  /* by ValId */
    int *owner;        /* by ValId: loop index of a region param, -1 */
    int *slot;         /* by ValId: its slot (for: 0 = iv) */
    int *inloop;       /* by ValId: innermost enclosing loop + 1, 0 outside */
    const AcForm **memo;
    uint8_t *busy;
    uint64_t *dep;
    uint8_t *dep_done;
    int hole_depth;
    Vec(const AcForm **) log; /* memo entries set while a carried value is open */
    Vec(AcLoop) loops;
    Vec(AcVar) vars;
    Vec(AcSym) syms;
    Vec(AcSite) sites;
    unsigned pid_axes; /* the grid axes some tl.program_id reads */
    const char *host_args, *host_grid; /* printing for the host (access_cond_host), else NULL */
    bool priv_one_order; /* access_private: no disjunction of orders (a retry when it is too long) */
};

/* A cover (access_cover.c; its text: access_text.c). */
enum { CV_PID, CV_LANE, CV_LOOP };

typedef struct CovVar {
    int var;   /* the access analysis's variable id (-1: read from text) */
    int kind;  /* CV_* */
    int ext;   /* CV_PID: grid axis; CV_LANE: the tile's size along the lane axis */
    AccPoly c; /* the address's coefficient */
} CovVar;

/* sum_k a[k] * v[idx[k]] < bound */
typedef struct CovClause {
    int n;
    int idx[AC_NTERM];
    AccPoly a[AC_NTERM];
    AccPoly bound;
} CovClause;

struct AccCover {
    int nv;
    CovVar v[AC_NTERM];
    Vec(CovClause) cl;
    Vec(AccPoly) neg;    /* each must be < 0 */
    unsigned nonempty;   /* grid axes the address does not use: at least one program there */
};

/* Facts: the symbols known >= 1 (num_programs; upper bounds of enabled
 * lanes).  pos is a bit set over symbol ids (ids < 64; others unknown). */
typedef struct Facts {
    uint64_t pos;
    Access *A; /* for the symbols defined as `x // d` (ac_pnonneg), or NULL */
} Facts;

typedef Vec(const AcForm *) Cons; /* each: form < 0 */

/* ------------------------------------------------------------------ */
/* access.c: helpers the decisions use                                 */
/* ------------------------------------------------------------------ */

/* Polynomials (false: a term or coefficient beyond the limits). */
AccPoly ac_pconst(int64_t k);
bool ac_in_limit(int64_t k);
bool ac_padd_mono(AccPoly *p, AccMono m);
bool ac_padd(AccPoly *r, const AccPoly *x, const AccPoly *y, int64_t sy);
bool ac_pmul(AccPoly *r, const AccPoly *x, const AccPoly *y);
bool ac_pis_const(const AccPoly *p, int64_t *k);
bool ac_peq(const AccPoly *x, const AccPoly *y);
bool ac_pdiv_exact(AccPoly *r, const AccPoly *p, int64_t k);
/* Symbols and signs */
int ac_sym_intern(Access *A, int kind, ValId v, int axis, uint64_t dep);
AccPoly ac_psym(int id);
bool ac_pnonneg(const Facts *F, const AccPoly *p);
/* Forms; ac_too_big: the reason when a result has too many terms */
extern const char *const ac_too_big;
AcForm *ac_fnew(Access *A);
AccPoly *ac_fcoef(AcForm *f, int var);
const AcForm *ac_fadd(Access *A, const AcForm *x, const AcForm *y, int64_t s);
bool ac_feq(const AcForm *x, const AcForm *y);
uint64_t ac_fdeps(const Access *A, const AcForm *f);
Type ac_vty(const Access *A, ValId v);
const char *ac_vname(const Access *A, ValId v);
const AccPoly *ac_poly_of(Access *A, ValId v);
const AcForm *ac_form_of(Access *A, ValId v); /* v's affine form (why set: none) */
Facts ac_base_facts(const Access *A);
/* Sites and their constraints */
AcSite *ac_site_of(Access *A, const Inst *mem);
const AcForm *ac_site_form(Access *A, AcSite *s);
Cons ac_site_cons(Access *A, AcSite *s);
const char *ac_site_cons_exact(Access *A, AcSite *s, Cons *out);
void ac_add_facts(Access *A, const Cons *cs, Facts *F);
/* The constraints of the scalar i1 value c where it is true (neg: where
 * it is false), read exactly, appended to out: NULL, or why they would
 * say less than holds (a part that is not a signed integer comparison of
 * affine forms; neg: more than one comparison, whose negation is a
 * disjunction). */
const char *ac_cond_cons_exact(Access *A, ValId c, bool neg, Cons *out);
/* The variable max - v of a loop counter v whose largest value is max
 * (interned), and f with v replaced by max - v' (c*v = c*max - c*v'):
 * a negative coefficient made positive, the same set of elements. */
int ac_var_rev(Access *A, int v, const AccPoly *max);
const AcForm *ac_fsubst_rev(Access *A, const AcForm *f, int v, int nv, const AccPoly *max);
/* A symbol defined as x // d (d a constant >= 1, x a polynomial over
 * loop-invariant symbols): true with *x and *d. */
bool ac_sym_div(Access *A, int id, AccPoly *x, int64_t *d);

/* ------------------------------------------------------------------ */
/* access_decide.c: the dominance chain access_disjoint.c reuses       */
/* ------------------------------------------------------------------ */

/* One decision over a form f under constraints cs: its varied variables
 * and their coefficients, the facts known, the tile. */
typedef struct Dec {
    Access *A;
    const AcForm *f;
    const Cons *cs;
    Facts F;
    int n;
    int var[AC_NTERM];
    AccPoly coef[AC_NTERM];
    int32_t *shape;
    int rank;
    int nskip;    /* chain: the first nskip variables of the order need not be
                   * recovered (access_private's per-program part) */
    AccPoly init; /* chain: the span before the first variable */
} Dec;

/* The largest value of variable v, if known. */
bool access_var_max(Dec *D, int v, AccPoly *mx);
/* Bounds of the group of the first k variables of order ord from the
 * constraints on exactly that group (alternatives, up to nout). */
int access_group_alts(Dec *D, const int *ord, int k, AccPoly *out, int nout);
/* Static truth of p >= 0: 1 true, 0 false (a negative constant), -1 unknown. */
int access_ptruth(const Facts *F, const AccPoly *p);
/* Adds clause (one of alts >= 0) to cond; returns 0 when it is false. */
int access_add_clause(Dec *D, AccCond *cond, const AccPoly *alts, int n);
/* The facts (s >= 1) a condition's clauses `s - k >= 0` give. */
void access_facts_of_cond(Facts *F, const AccCond *c);
/* The mixed-radix argument over the variables in order ord: each
 * coefficient exceeds the span of the earlier ones (what cannot be shown
 * statically is added to cond); false when it fails. */
bool access_chain(Dec *D, const int *ord, AccCond *cond);
int access_coef_rank(const AccPoly *p);
bool access_next_perm(int *a, int n);
int64_t access_iabs(int64_t x);
int64_t access_gcd64(int64_t a, int64_t b);

/* Conditions: whether clause x implies y; the clauses of v that no other
 * implies (in place); x and y (NULL: none) as one condition; a verdict
 * with its reason and condition; x or y as one conjunction (false when it
 * does not fit); whether c never holds; how demanding c looks, for
 * choosing among orders. */
bool access_clause_implies(const AccClause *x, const AccClause *y);
void access_drop_implied(AccClause *v, int *n);
const AccCond *access_cond_join(Access *A, const AccCond *x, const AccCond *y);
AccResult access_res(AccVerdict v, const char *why, const AccCond *c);
bool access_cond_or(const AccCond *x, const AccCond *y, AccCond *out);
bool access_cond_unsat(const AccCond *c);
int access_cond_weight(const AccCond *c);

/* access_disjoint.c: appends the clauses of x to c (without duplicates);
 * false when full. */
bool access_cond_merge(AccCond *c, const AccCond *x);

/* access_report.c: a polynomial (as Python when py) and a variable in
 * messages. */
const char *access_poly_str(Access *A, const AccPoly *p, bool py);
const char *access_var_str(Access *A, int v);

/* ------------------------------------------------------------------ */
/* access_report.c: the printing access_cover.c needs                 */
/* ------------------------------------------------------------------ */

/* p as a Python expression for the host (int parameter n as
 * args["n"], num_programs(k) as grid[k]); NULL when it names a value not
 * computed from them. */
const char *ac_poly_host(Access *A, const AccPoly *p, const char *args, const char *grid);

#endif
