/* cu.h -- the CUDA C / HIP front end's private header (cu_lex.c, cu_parse.c,
 * cu_lower.c, cu_stmt.c, cu_builtins.c, cu_kernel.c).
 *
 * A per-thread kernel is lowered to kad's tile IR with a block's threads as
 * the lanes of one 1-D tile (docs/LANGUAGE.md, "CUDA C / HIP kernels"):
 *   cu_lex.c    text -> tokens, with the preprocessor subset (#define, #if,
 *               #include of the runtime headers) applied
 *   cu_parse.c  tokens -> CuUnit: structs, __global__/__device__ functions
 *               (templates kept unexpanded), explicit instantiations; host
 *               code skipped
 *   cu_lower.c  CuUnit + kernel + template arguments + block dims -> Func:
 *               types, values and expressions (cu_builtins.c: the builtins;
 *               cu_stmt.c: statements, control flow, shared memory; cu_kernel.c:
 *               device functions and the kernel entry point cu_lower)
 * Everything lives in the compilation's arena; errors are located Diags.
 * The entry points (cu_lex, cu_parse, cu_lower) are front/cuda.h's.
 */
#ifndef KAD_CU_H
#define KAD_CU_H

#include "base/base.h"
#include "ir/ir.h"

/* ---- tokens (cu_lex.c) ---- */

typedef enum CuTokKind { CT_EOF, CT_IDENT, CT_INT, CT_FLOAT, CT_STRING, CT_CHAR, CT_PUNCT } CuTokKind;

typedef struct CuTok {
    CuTokKind kind;
    Loc loc;
    const char *text; /* NUL-terminated copy (arena) */
    int64_t ival;     /* CT_INT, CT_CHAR */
    double fval;      /* CT_FLOAT */
    bool is_unsigned, is_long; /* CT_INT suffixes u, l/ll */
    bool is_f32;      /* CT_FLOAT with suffix f */
    bool bol;         /* first token of a line (directives) */
} CuTok;

/* ---- the AST (cu_parse.c) ---- */

/* A type as written: base name ("float", "unsigned int", "float4", a struct
 * or template parameter name), pointer depth, qualifiers. */
typedef struct CuTArg CuTArg;
typedef struct CuTypeSpec {
    const char *name;  /* "cub::BlockReduce" with targs; "NAME::TempStorage" */
    struct CuTArg *targs;
    int ntargs;
    int nptr;
    bool is_const;
    bool ref; /* `&` (a device function's parameter by reference) */
    Loc loc;
} CuTypeSpec;

typedef enum CuExprKind {
    CE_IDENT, CE_INT, CE_FLOAT, CE_BOOL, CE_STRING,
    CE_UNARY,  /* op: "-", "+", "!", "~", "*", "&", "++pre", "--pre", "post++", "post--" */
    CE_BINARY, /* op: "+" ... "&&", "||", ",": l, r */
    CE_ASSIGN, /* op: "=", "+=", ...: l, r */
    CE_COND,   /* c ? l : r */
    CE_CALL,   /* callee (name), targs, args */
    CE_INDEX,  /* l[r] */
    CE_MEMBER, /* l.name or l->name (arrow) */
    CE_CAST,   /* (type) l, static_cast<type>(l), reinterpret_cast, ... */
    CE_SIZEOF, /* sizeof(type) */
    CE_INIT,   /* {a, b, ...}: args */
    CE_LAMBDA, /* [captures](params) -> ret { body }: fn (a CuFunc named "lambda"), capture */
} CuExprKind;

typedef struct CuExpr CuExpr;
struct CuFunc;
struct CuTArg { /* a template argument: a type or a constant expression */
    CuTypeSpec *type;
    CuExpr *expr;
};

struct CuExpr {
    CuExprKind kind;
    Loc loc;
    const char *op;
    const char *name;  /* CE_IDENT, CE_CALL (callee), CE_MEMBER */
    bool arrow;        /* CE_MEMBER */
    CuExpr *c, *l, *r;
    CuExpr **args;
    int nargs;
    CuTArg *targs;
    int ntargs;
    CuTypeSpec *type; /* CE_CAST, CE_SIZEOF */
    const CuTok *tok;  /* literals */
    struct CuFunc *fn; /* CE_LAMBDA: its parameters and body */
    bool by_copy;      /* CE_LAMBDA: some capture is by value ([=], [x]) */
};

typedef enum CuStmtKind {
    CS_DECL, CS_EXPR, CS_IF, CS_FOR, CS_WHILE, CS_DO, CS_BREAK, CS_CONTINUE,
    CS_RETURN, CS_BLOCK, CS_EMPTY,
    CS_SWITCH, /* switch (e) body: body a CS_BLOCK whose items include the labels */
    CS_CASE,   /* a label of the enclosing switch's body: `case e:`, or `default:` (e NULL) */
    CS_TYPEDEF, /* `using name = T;` / `typedef T name;` in a body: type, decls[0].name */
} CuStmtKind;

typedef struct CuStmt CuStmt;
typedef struct CuDecl { /* one declarator of a declaration */
    const char *name;
    CuExpr *dims[4]; /* array dimensions (NULL inside [] of extern __shared__) */
    int ndims;
    bool unsized;    /* extern __shared__ T s[]; */
    CuExpr *init;
    Loc loc;
} CuDecl;

struct CuStmt {
    CuStmtKind kind;
    Loc loc;
    CuExpr *e;          /* CS_EXPR, CS_IF/WHILE/DO cond, CS_FOR cond, CS_RETURN value */
    CuExpr *step;       /* CS_FOR */
    CuStmt *init;       /* CS_FOR */
    CuStmt *body, *els; /* CS_IF (then, else), loops (body) */
    CuStmt **list;      /* CS_BLOCK */
    int n;
    CuTypeSpec *type;   /* CS_DECL */
    CuDecl *decls;
    int ndecls;
    bool shared, is_extern, is_static; /* CS_DECL: __shared__, extern */
};

typedef struct CuParam {
    CuTypeSpec *type;
    const char *name;
    Loc loc;
} CuParam;

typedef struct CuTParam { /* template <typename T> or template <int N> */
    const char *name;
    bool is_type;
    CuTypeSpec *type; /* a non-type parameter's type */
    Loc loc;
} CuTParam;

typedef struct CuFunc {
    const char *name;
    Loc loc;
    bool is_global, is_device;
    CuTypeSpec *ret;
    CuParam *params;
    int nparams;
    CuTParam *tparams;
    int ntparams;
    CuStmt *body;
} CuFunc;

typedef struct CuField {
    CuTypeSpec *type;
    const char *name;
} CuField;
typedef struct CuStruct {
    const char *name;
    CuField *fields;
    int nfields;
    Loc loc;
    bool host;    /* has a member that is not a number field (a method, an array, torch::Tensor...): */
    Loc host_loc; /* the first such member; refused where a kernel uses the struct, host code may */
} CuStruct;

typedef struct CuInst { /* template __global__ void k<float, 256>(...); */
    const char *name;
    CuTArg *targs;
    int ntargs;
    Loc loc;
} CuInst;

/* A name whose definition kad could not read, and its errors, reported only where the name is
 * used: a __global__ or __device__ function that did not parse (CuUnit.broken: one unreadable
 * function refuses no other), a file-scope constant that did not lower (Lw.bad_consts). */
typedef struct CuBroken {
    const char *name; /* NULL where the name itself could not be read */
    Diag *diags;
    int ndiags;
} CuBroken;

typedef struct CuUnit {
    const char *file;
    Vec(CuFunc *) funcs;
    Vec(CuBroken) broken;
    Vec(CuStruct *) structs;
    Vec(CuInst) insts;
    Vec(CuField) typedefs; /* typedef T name; using name = T; (file scope) */
    Vec(CuStmt *) consts;  /* file-scope constants: [static] constexpr/const T name = ...; (CS_DECL) */
} CuUnit;

/* ---- the lowering's state, shared by cu_lower.c, cu_stmt.c, cu_builtins.c and cu_kernel.c ---- */

/* C types of values.  Vector types (float4) and user structs are TY_STRUCT;
 * a pointer to a struct whose fields share one dtype is an IR pointer to
 * that dtype, indexed in units of the struct's field count. */
enum { TY_VOID, TY_BOOL, TY_INT, TY_FLOAT, TY_PTR, TY_STRUCT, TY_CUB,
       TY_CG /* a cooperative group: cub_threads its size (the block's threads, or a tile's) */,
       TY_ACC /* torch::PackedTensorAccessor32/64<T, N>: elem T, cub_threads N, dt the index type */ };
typedef struct CuTy CuTy;
typedef struct CuSInfo {
    const char *name;
    int n;
    const char **fname;
    const CuTy **fty;
} CuSInfo;
struct CuTy {
    int k;            /* TY_* */
    Dtype dt;         /* TY_BOOL (i1), TY_INT, TY_FLOAT; TY_PTR: the IR pointee */
    const CuTy *elem; /* TY_PTR */
    const CuSInfo *st; /* TY_STRUCT */
    int cub;           /* TY_CUB: CUB_BLOCK_REDUCE (elem: its value type) or CUB_TEMP */
    int64_t cub_threads; /* TY_CUB: the block's threads cub reduces over; TY_CG: the group's threads */
    bool cg_tile;      /* TY_CG: a thread_block_tile (else the thread_block) */
};
enum { CUB_BLOCK_REDUCE = 1, CUB_TEMP = 2 };

/* A C value: its type and IR value (rank 0: the same in every thread of
 * the block; rank 1: one lane per thread); structs by their fields.
 * cst: a compile-time constant (ci or cf), for array sizes, template
 * arguments and loops kad unrolls. */
typedef struct CVal {
    const CuTy *t;
    ValId v;
    struct CVal *f; /* TY_STRUCT: t->st->n fields */
    bool cst;
    int64_t ci;
    double cf;
} CVal;

/* A name in scope.  Local arrays and struct variables are a head plus one
 * VK_VAL variable per element ("a[3]") or field ("v.x"), so that merging
 * at joins and loop carrying treat every piece alike.  Names starting with
 * '$' are the lowering's own: "$m" the threads executing (an i1 scalar or
 * lane tile), "$brk" the threads that left the innermost loop by break,
 * "$cnt" those that continued in this iteration, "$ret" a device
 * function's result. */
enum { VK_VAL, VK_ARRAY, VK_SHARED, VK_STRUCT, VK_TYPE, VK_CUB /* a cub TempStorage: a name, no value */,
       VK_LAMBDA /* a local lambda: lam, and for a by-value capture the values when it was made */,
       VK_ACC /* a PackedTensorAccessor: val its data pointer, "NAME.size<k>" / "NAME.stride<k>" its fields */ };
typedef struct Var {
    const char *name;
    int kind;
    const CuTy *t;   /* VK_VAL: its type; VK_ARRAY/VK_SHARED: the element's; VK_TYPE: the bound type */
    CVal val;        /* VK_VAL; VK_SHARED: the block's array as one tile [len] */
    ValId decl_m;    /* $m where it was declared: assignments under another mask merge */
    int len, ndims, dims[2]; /* arrays */
    const CuExpr *lam; /* VK_LAMBDA: the CE_LAMBDA */
    int snap0, nsnap; /* VK_LAMBDA by value: env[snap0, snap0 + nsnap) when it was made, their values in snap */
    ValId *snap;
    bool dirty;      /* VK_SHARED: written since the last __syncthreads() */
    ValId dirty_idx; /* the index those writes used when all used one value, else 0 */
    Loc loc;
} Var;

typedef struct Lw {
    Arena *a;
    Diags *d;
    Func *f;
    Block *b;                 /* where lowering emits */
    Block *top;               /* the kernel's body (constants that every region sees) */
    CuUnit **units;
    int nunits;
    int bdim[3], nl, lp, warp; /* block dims, threads, lanes (power of two), warpSize */
    ValId tid;                /* i32[lp]: the thread's linear index */
    ValId active;             /* i1 mask of the lanes < nl (or the scalar true) */
    ValId tru, fls;           /* i1 scalar constants */
    Vec(Var) env;
    int frame;                /* env index where the current function's names start */
    int g0, g1;               /* env [g0, g1): the file-scope constants, seen from every frame */
    const CuDecl *ext;        /* the kernel's extern __shared__ array (CUDA gives them all one address) */
    Vec(CuBroken) bad_consts; /* file-scope constants that did not lower: each name and its first error */
    int depth;                /* device function inlining depth */
    const CuFunc *fn;
    const CuTy *ret_ty;       /* NULL while an auto return type is not known yet (ret_auto) */
    bool ret_auto;            /* the function being inlined deduces its return type (a lambda, `auto f()`) */
    const char *targs;        /* CuSpec.targs */
    Vec(CuSInfo *) vecs;      /* vector types made so far */
    Vec(ValId) lanes;         /* values equal to the lane index tid (threadIdx.x of 1-D blocks, converted) */
    /* warp-uniform values (cu_warp_uniform): tiles equal in the lanes of each warp, so that a mask
     * made of them leaves every warp converged (one warp per row: `if (tid / 32 >= rows) return;`) */
    Vec(uint8_t) warpf;       /* by ValId: CU_W_* facts (0 past the end) */
} Lw;

/* cu_lower.c */
Type cu_ir_type(Lw *L, const CuTy *t, bool tile);
const CuTy *cu_scalar_ty(Lw *L, int k, Dtype dt);
const CuTy *cu_resolve_type(Lw *L, const CuTypeSpec *ts);
Var *cu_lookup(Lw *L, const char *name);
Var *cu_declare(Lw *L, const char *name, int kind, const CuTy *t, Loc loc);
void cu_set(Lw *L, Var *v, CVal x, Loc loc);   /* an assignment: merged under $m */
ValId cu_m(Lw *L);                               /* the current $m */
void cu_set_m(Lw *L, ValId m);
ValId cu_and(Lw *L, ValId a, ValId b, Loc loc);  /* masks, folding true/false */
ValId cu_or(Lw *L, ValId a, ValId b, Loc loc);
ValId cu_not(Lw *L, ValId a, Loc loc);
ValId cu_any(Lw *L, ValId m, Loc loc);           /* an i1 scalar: some lane of m is set */
ValId cu_bcast(Lw *L, ValId v, Loc loc);         /* a scalar as a lane tile */
ValId cu_where(Lw *L, ValId c, ValId a, ValId b, Loc loc);
ValId cu_cint(Lw *L, Dtype dt, int64_t v, Loc loc);
CVal cu_const_int(Lw *L, const CuTy *t, int64_t v, Loc loc);
CVal cu_convert(Lw *L, CVal x, const CuTy *to, Loc loc);
CVal cu_binop(Lw *L, const char *op, CVal x, CVal y, Loc loc);
ValId cu_truth(Lw *L, CVal x, Loc loc);         /* i1, scalar or tile */
CVal cu_expr(Lw *L, const CuExpr *e);
void cu_assign(Lw *L, const CuExpr *lhs, CVal v, Loc loc);
CVal cu_zero(Lw *L, const CuTy *t, Loc loc);
bool cu_is_lane(Lw *L, ValId v);
bool cu_warp_uniform(Lw *L, ValId v);            /* a scalar, or a tile equal in each warp's lanes */
/* warp facts of a value (Lw.warpf): a tile proven warp-uniform; tid plus a nonnegative scalar
 * multiple of warpSize; a scalar that is a nonnegative multiple of warpSize */
enum { CU_W_UNIFORM = 1, CU_W_LANE = 2, CU_W_MUL = 4 };
void cu_warp_mark(Lw *L, ValId v, unsigned fact);
bool cu_const_eval(Lw *L, const CuExpr *e, int64_t *out); /* an integer constant expression */

/* cu_lower.c: the value toolkit cu_builtins.c lowers with */
const CuTy *cu_ty_int(Lw *L);
const CuTy *cu_ty_bool(Lw *L);
bool cu_is_tile(Lw *L, ValId v);
ValId cu_op2(Lw *L, OpKind op, ValId x, ValId y, Loc loc); /* broadcast to one shape; i1 for comparisons */
const CuTy *cu_promote(Lw *L, const CuTy *t);               /* the integer promotions */
const CuTy *cu_common(Lw *L, const CuTy *a, const CuTy *b); /* the usual arithmetic conversions */
bool cu_is_num(const CuTy *t);
CVal cu_bad(Lw *L);                                          /* the value after an error */
const CuTy *cu_vec_type(Lw *L, const char *name);            /* float4 ...; NULL if not one */
CVal cu_load_ptr(Lw *L, CVal p, Loc loc);                    /* *p under $m */
void cu_store_ptr(Lw *L, CVal p, CVal v, Loc loc);
const CuTy *cu_ptr_ty(Lw *L, const CuTy *elem);              /* pointer to elem */           /* *p = v under $m */

CVal cu_var_value(Lw *L, Var *v, Loc loc);                   /* a variable's value (a struct from its fields) */
CVal cu_struct_value(Lw *L, Var *v, Loc loc);
/* The errors of a function of name that kad could not parse (CuUnit.broken), reported into L->d
 * (after "'name' is a function of the file that kad could not read" at use, when use.file is set):
 * true if there was one. */
bool cu_report_broken(Lw *L, const char *name, Loc use);
const CuFunc *cu_find_func(Lw *L, const char *name);          /* the first function of the units named so */
const CuTy *cu_base_type(Lw *L, const char *n, Loc loc);      /* a type name, without pointers */
CVal cu_const_float(Lw *L, const CuTy *t, double v, Loc loc);

/* cu_builtins.c: a call of a builtin; *handled false when name is none */
CVal cu_call_builtin(Lw *L, const CuExpr *e, bool *handled);

/* cu_kernel.c: the value of "NAME=VALUE" in the template-argument string (CuSpec.targs), or NULL */
const char *cu_targ(Lw *L, const char *name);
/* cu_kernel.c: a call of a __device__ function, inlined (the entry point cu_lower is above) */
CVal cu_call_device(Lw *L, const CuFunc *fn, const CuExpr *call);
/* Whether s may assign the variable `name` (an assignment, ++/--, &, a reference argument). */
bool cu_stmt_assigns(Lw *L, const CuStmt *s, const char *name);
bool cu_stmt_mentions(const CuStmt *s, const char *name); /* the identifier name occurs in s */
bool cu_stmt_declares(const CuStmt *s, const char *name); /* s declares a variable name */
CVal cu_call_lambda(Lw *L, Var *lam, const CuExpr *call_e);
CVal cu_cg_method(Lw *L, const CuExpr *e, CVal g); /* group.sync(), .thread_rank(), .shfl_down(v, d)... */
const CuTy *cu_cg_type(Lw *L, bool tile, int64_t n, Loc loc); /* a group of n threads (tile: a tile) */
CVal cu_inline_call(Lw *L, const CuFunc *fn, const CuExpr *call_e, bool keep_frame);

/* cu_stmt.c */
void cu_stmt(Lw *L, const CuStmt *s);
void cu_declare_stmt(Lw *L, const CuStmt *s);
CVal cu_shared_read(Lw *L, Var *v, CVal idx, Loc loc);
void cu_shared_write(Lw *L, Var *v, CVal idx, CVal x, Loc loc);
void cu_syncthreads(Lw *L, Loc loc);

#endif
