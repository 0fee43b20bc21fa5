/* emit_cuda_int.h -- the CUDA C emitter's internals, shared by emit_cuda.c (names, types,
 * expressions, memory, control flow, the kernel) and emit_cuda_lanes.c (work across the lanes
 * through shared memory, per-thread arrays, the prelude).  Included by those two files only; the
 * entry points are emit_cuda.h's.
 */
#ifndef KAD_EMIT_CUDA_INT_H
#define KAD_EMIT_CUDA_INT_H

#include "base/base.h"
#include "ir/ir.h"
#include "emit/emit_cuda.h"

/* The state of one kernel's emission. */
typedef struct Cu {
    Arena *a;
    Diags *d;
    const Func *f;
    const EmitCudaOpts *o;
    Buf *out;
    const char **irname; /* ir_names: for messages */
    const char **var;    /* by ValId: the C variable (or inlined expression) holding the value */
    int *uses;           /* by ValId: operand uses, regions included */
    const Block **ublock; /* by ValId: the block of its (last) user */
    bool *noinline;      /* by ValId: read by a yield, a loop header or an alias: keeps its variable */
    const Inst **def;    /* by ValId: the defining instruction (ir_index_defs) */
    bool *inl;           /* by ValId: var is the inlined expression, not a variable */
    uint8_t *prec;       /* by ValId: an inlined expression's top operator, C precedence: 2 (a cast),
                            3 (* / %),
                            4 (+ -), 11 (&&), 12 (||); 0 unknown (its parentheses stay) */
    Vec(const char *) taken; /* C names in use */
    int L;               /* the lane count (block size) */
    unsigned helpers;    /* CU_H_* used */
    unsigned smem;       /* bit per Dtype: a shared buffer kad_smem_<dt>[L] is needed */
    int smem_more[DT_COUNT]; /* further buffers kad_smem_<dt>_<k>[L], k = 1.. (several operands) */
    bool smem_idx;       /* kad_smem_idx[L] (argmax/argmin) */
    unsigned smem_cols;  /* bit per Dtype: kad_cols_<dt>[CU_COLS] (reductions of [L, k] across the threads) */
    int ntmp;            /* tmpN counter */
    int ncomb;           /* combine functors printed */
    Buf pre;             /* functors of reduce/scan regions, printed before the kernel */
    int depth;           /* indentation, 4 spaces a level */
    bool jidx;           /* val() reads per-thread arrays at kad_j (printing an array op's element) */
    bool *splat;         /* by ValId: an array whose every element is var (a broadcast, a constant) */
    ValId *scat_idx, *scat_d; /* by ValId of a sum: a scatter-add along the lanes (ecu_find_scatters) */
    bool *absorbed;      /* by ValId: a value only such scatter-adds read (not printed) */
    const char **lane_acc; /* by ValId of `acc + sum(x)` in a for body: the per-thread accumulator
                              that stands for it (print_for's hoisted sums) */
    bool *hoisted;       /* by ValId of such a sum: not printed (reduced once after the loop) */
    bool ok;
} Cu;

/* The longest per-thread array of a tile [L, k], and of a row. */
enum { CU_MAX_ROW = 64 };
/* The elements of the shared buffer through which a reduction of [L, k] across the threads goes
 * (columns in chunks of CU_COLS / L). */
enum { CU_COLS = 2048 };

static inline Type cu_vty(Cu *c, ValId v) { return c->f->vals.v[v].ty; }
static inline Dtype cu_vdt(Cu *c, ValId v) { return (Dtype)cu_vty(c, v).dt; }
static inline bool cu_is16(Dtype dt) { return dt == DT_F16 || dt == DT_BF16; }
/* A 1-D tile: its lanes are the block's threads (rows are caught first by ecu_array_inst). */
static inline bool cu_is_lane(Cu *c, ValId v) { return cu_vty(c, v).rank == 1; }

/* emit_cuda.c */
void ecu_refuse(Cu *c, Loc loc, const char *fmt, ...);   /* a located refusal; c->ok = false */
const char *ecu_shape_str(Cu *c, Type t);                /* "fp32[16,4]" */
const char *ecu_fresh(Cu *c, const char *base);          /* an unused C name: base, base_1, ... */
const char *ecu_name_for(Cu *c, ValId v);                /* v's C variable: its source name or tmpN */
const char *ecu_ctype(Cu *c, ValId v, Loc loc);          /* "float", "__half *" */
bool ecu_lanes_of(Cu *c, Type t);                        /* [L] or [L, k]: per thread */
int ecu_width(Cu *c, ValId v);                           /* a per-thread array's length, or 0 */
const char *ecu_smem(Cu *c, Dtype dt);                   /* kad_smem_<dt>, declared */
void ecu_print_assert(Cu *c, const Inst *in);              /* assert(x && "message") */
bool ecu_is_row(Cu *c, ValId v);                         /* a row every thread holds alike */
const char *ecu_val(Cu *c, ValId v);                     /* v's C expression (element kad_j: c->jidx) */
const char *ecu_elem_at(Cu *c, ValId v, const char *idx); /* element idx of array v */
const char *ecu_bare(Cu *c, ValId v);                    /* ecu_val without enclosing parentheses */
const char *ecu_zero(Cu *c, Dtype dt);                   /* the zero of dt */
void ecu_line(Cu *c, const char *fmt, ...);              /* one indented statement line */
/* binds result v to expression e: inlined into its one user, or a `const T v = e;` line */
void ecu_bind(Cu *c, const Block *b, ValId v, const char *e, bool pure, Loc loc);
const char *ecu_declare(Cu *c, ValId v, ValId init, Loc loc); /* a mutable variable (init: 0 none) */
const char *ecu_expr(Cu *c, const Inst *in);             /* a pure instruction's expression, or NULL */
void ecu_print_block(Cu *c, const Block *b, const char *const *yield_to);

/* emit_cuda_lanes.c */
void ecu_reduction(Cu *c, const Block *b, const Inst *in);   /* sum max min argmax argmin reduce */
void ecu_scan(Cu *c, const Block *b, const Inst *in);        /* cumsum cumprod scan */
void ecu_multi_lane_op(Cu *c, const Inst *in);               /* reduce/scan of several operands */
void ecu_find_scatters(Cu *c, const Block *b);            /* sets scat_idx, scat_d, absorbed */
void ecu_scatter_add(Cu *c, const Block *b, const Inst *in); /* prints a sum scat_idx marks */
void ecu_permute_lanes(Cu *c, const Block *b, const Inst *in); /* gather, flip */
bool ecu_array_inst(Cu *c, const Inst *in);                  /* an op on per-thread arrays or rows */

#endif
