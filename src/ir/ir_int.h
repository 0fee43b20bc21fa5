/* ir_int.h: the ir folder's private header -- the interpreter's state and the functions
 * interp.c (preparation, control flow, the run) and interp_ops.c (number formats and the
 * operations) share.  See interp.c's header comment for the representation. */
#ifndef KAD_IR_INT_H
#define KAD_IR_INT_H

#include "base/base.h"
#include "ir/ir.h"

/* How a float result is rounded to its dtype. */
enum { R_NONE, R_F32, R_F16, R_BF16, R_F8E5, R_F8E4NV, R_F8E4B15 };

/* Integer formats: a value of width w is kept in an int64 whose upper
 * 64-w bits are copies of the sign bit (signed) or zero (unsigned, i1).
 * iwrap is dtype_wrap (util.c) with the shift precomputed per op. */
typedef struct IntFmt {
    uint8_t sh;  /* 64 - width */
    bool uns;    /* zero-extended */
} IntFmt;

static inline int64_t iwrap(uint64_t u, IntFmt f)
{
    u <<= f.sh;
    return f.uns ? (int64_t)(u >> f.sh) : (int64_t)u >> f.sh;
}

/* A pointer lane. */
typedef struct PtrLane {
    int64_t off; /* byte offset into the buffer */
    int64_t buf; /* 1 + index of the pointer parameter; 0: invalid */
} PtrLane;

/* Operand classes for dispatch. */
enum { C_FLOAT, C_INT, C_U64, C_PTR };

typedef struct XBlock XBlock;

/* An instruction prepared for execution. */
typedef struct XInst {
    const Inst *in;
    uint16_t op;
    uint8_t rk;     /* rounding of a float result (R_*) */
    uint8_t cls;    /* class of the first operand (C_*) */
    IntFmt ifmt;    /* int format of the result (int results) */
    Dtype rdt;      /* result dtype (DT_VOID without result) */
    int64_t n;      /* numel of the result, or of the first operand */
    void *r, *x, *y, *z; /* slots: result and first three operands */
    XBlock *reg[2];
} XInst;

/* A region prepared for execution. */
struct XBlock {
    XInst *v;
    int n;              /* instructions before the terminator */
    const Inst *term;   /* yield / condition */
    const Block *b;
    void **tmp;         /* per block param: a temporary for parallel yields, or NULL */
};

/* A pointer parameter's buffer. */
typedef struct Buffer {
    const char *name;
    uint8_t *data;
    int64_t nbytes;
} Buffer;

typedef struct Interp {
    const Func *f;
    Diags *d;
    Arena *a;           /* scratch: slots and prepared code */
    bool f64;           /* IM_F64 */
    void **slot;        /* per ValId; NULL for 0 */
    Buffer *bufs;       /* per runtime parameter */
    int64_t grid[3], pid[3];
    jmp_buf *jb;
} Interp;

#define LOOP(n) for (int64_t i = 0; i < (n); i++)

/* interp.c: the state's helpers, errors, control flow */
size_t interp_lane_bytes(Type t);
int access_size(const Interp *S, Dtype dt);
int interp_rk_of(const Interp *S, Dtype dt);
int interp_cls_of(Type t);
Type interp_vtype(const Interp *S, ValId v);
_Noreturn void interp_fail(Interp *S, Loc loc, Type t, int64_t lane, const char *fmt, ...);
_Noreturn void interp_unsupported(Interp *S, const XInst *xi);
void interp_for_op(Interp *S, const XInst *xi);
void interp_scan_region_op(Interp *S, const XInst *xi);
void interp_reduce_region_op(Interp *S, const XInst *xi);
void interp_if_op(Interp *S, const XInst *xi);
void interp_while_op(Interp *S, const XInst *xi);
void interp_assert_op(Interp *S, const XInst *xi);

/* interp_ops.c: number formats, lane copies, the operations */
double interp_round_rk(int rk, double x);
IntFmt interp_int_fmt(Dtype dt);
void interp_copy_lanes(void *dst, const void *src, int64_t n, size_t lb);
void interp_axis_view(Type t, int axis, int64_t *outer, int64_t *len, int64_t *inner);
void interp_exec_inst(Interp *S, const XInst *xi);

#endif
