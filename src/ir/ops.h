/* ops.h -- the one table of IR operations.
 *
 * Every op is listed here once.  The OpKind enum, the name table used by the
 * printer and the parser, the verifier's arity checks and the per-mode
 * "has a derivative rule" checks are all generated from these rows, so an op
 * cannot be half-added.  Include after defining X (see ir.h).
 *
 * Columns:
 *   enum      OP_ name
 *   name      spelling in the textual IR
 *   nargs     operand count, -1 = variadic (checked by the verifier per op)
 *   nres      result count, -1 = variadic (structured control flow)
 *   nreg      region count
 *   pure      1 = no side effects (may be removed when unused, recomputed)
 *   ew        1 = elementwise: all operands and the result have one shape
 *   diff      how AD treats it: D differentiable (needs a rule), N differentiable
 *             but no adjoint rule yet (AD refuses it where it matters), Z zero
 *             derivative / not a float op (indices, masks, comparisons),
 *             M memory (load/store: shadow-pointer rules), C control flow
 *
 * Attributes (Inst fields) used by each op are documented in its comment.
 * Binary elementwise ops take operands of identical type (sema inserts the
 * broadcasts and casts); comparisons return i1 of the operand shape.
 */
/* libdevice functions kad has no tl.* op for (docs/LANGUAGE.md, "libdevice"):
 * elementwise, fp32/fp64 (sema checks the dtypes), printed as the libdevice
 * call of the name (the *_round ops: libdevice.add_rz for {round = rz}).
 * Their derivatives, both modes, are ad_libm_partial's (src/ad/ad_libm.c); the
 * interpreter's values libm_eval's (src/ir/libm.c).  Same columns as KAD_OPS. */
#define KAD_LIBM_OPS(X) \
  X(OP_ASINH,        "asinh",          1,  1,  0,  1,  1, 'D') \
  X(OP_ACOSH,        "acosh",          1,  1,  0,  1,  1, 'D') \
  X(OP_ATANH,        "atanh",          1,  1,  0,  1,  1, 'D') \
  X(OP_CBRT,         "cbrt",           1,  1,  0,  1,  1, 'D') \
  X(OP_RCBRT,        "rcbrt",          1,  1,  0,  1,  1, 'D') /* 1/cbrt(x) */ \
  X(OP_EXP10,        "exp10",          1,  1,  0,  1,  1, 'D') \
  X(OP_LOG10,        "log10",          1,  1,  0,  1,  1, 'D') \
  X(OP_SINPI,        "sinpi",          1,  1,  0,  1,  1, 'D') /* sin(pi*x) */ \
  X(OP_COSPI,        "cospi",          1,  1,  0,  1,  1, 'D') /* cos(pi*x) */ \
  X(OP_ERFC,         "erfc",           1,  1,  0,  1,  1, 'D') \
  X(OP_ERFCX,        "erfcx",          1,  1,  0,  1,  1, 'D') /* exp(x^2)*erfc(x) */ \
  X(OP_ERFINV,       "erfinv",         1,  1,  0,  1,  1, 'D') \
  X(OP_ERFCINV,      "erfcinv",        1,  1,  0,  1,  1, 'D') \
  X(OP_NORMCDF,      "normcdf",        1,  1,  0,  1,  1, 'D') /* standard normal CDF */ \
  X(OP_NORMCDFINV,   "normcdfinv",     1,  1,  0,  1,  1, 'D') /* its inverse */ \
  X(OP_LGAMMA,       "lgamma",         1,  1,  0,  1,  1, 'D') /* log|gamma(x)| */ \
  X(OP_TGAMMA,       "tgamma",         1,  1,  0,  1,  1, 'D') \
  X(OP_J0,           "j0",             1,  1,  0,  1,  1, 'D') /* Bessel functions of the first and second kind */ \
  X(OP_J1,           "j1",             1,  1,  0,  1,  1, 'D') \
  X(OP_Y0,           "y0",             1,  1,  0,  1,  1, 'D') \
  X(OP_Y1,           "y1",             1,  1,  0,  1,  1, 'D') \
  X(OP_I0,           "cyl_bessel_i0",  1,  1,  0,  1,  1, 'D') /* modified Bessel functions */ \
  X(OP_I1,           "cyl_bessel_i1",  1,  1,  0,  1,  1, 'D') \
  X(OP_SATURATE,     "saturatef",      1,  1,  0,  1,  1, 'D') /* clamp to [0, 1], NaN -> 0 (fp32) */ \
  X(OP_RSQRT_RN,     "rsqrt_rn",       1,  1,  0,  1,  1, 'D') /* correctly rounded rsqrt (fp32) */ \
  X(OP_LOGB,         "logb",           1,  1,  0,  1,  1, 'Z') /* the exponent as a float */ \
  X(OP_ILOGB,        "ilogb",          1,  1,  0,  1,  1, 'Z') /* the exponent: result i32 */ \
  X(OP_HYPOT,        "hypot",          2,  1,  0,  1,  1, 'D') \
  X(OP_RHYPOT,       "rhypot",         2,  1,  0,  1,  1, 'D') /* 1/hypot */ \
  X(OP_NORM3D,       "norm3d",         3,  1,  0,  1,  1, 'D') \
  X(OP_RNORM3D,      "rnorm3d",        3,  1,  0,  1,  1, 'D') /* 1/norm3d */ \
  X(OP_FDIM,         "fdim",           2,  1,  0,  1,  1, 'D') /* max(a-b, 0) */ \
  X(OP_COPYSIGN,     "copysign",       2,  1,  0,  1,  1, 'D') /* |a| with b's sign */ \
  X(OP_REMAINDER,    "remainder",      2,  1,  0,  1,  1, 'D') /* a - rint(a/b)*b */ \
  X(OP_LDEXP,        "ldexp",          2,  1,  0,  1,  1, 'D') /* x (float), n (i32): x*2^n (libdevice.ldexp/scalbn) */ \
  X(OP_POWI,         "powi",           2,  1,  0,  1,  1, 'D') /* x (float), n (i32): x^n (libdevice.pow with an int32 exponent) */ \
  X(OP_JN,           "jn",             2,  1,  0,  1,  1, 'D') /* n (i32), x (float): Bessel J_n(x) */ \
  X(OP_YN,           "yn",             2,  1,  0,  1,  1, 'D') /* n (i32), x (float): Y_n(x) */ \
  X(OP_FAST_SIN,     "fast_sinf",      1,  1,  0,  1,  1, 'D') /* fp32 approximations (libdevice fast_*): the rules of the exact function */ \
  X(OP_FAST_COS,     "fast_cosf",      1,  1,  0,  1,  1, 'D') \
  X(OP_FAST_TAN,     "fast_tanf",      1,  1,  0,  1,  1, 'D') \
  X(OP_FAST_LOG2,    "fast_log2f",     1,  1,  0,  1,  1, 'D') \
  X(OP_FAST_LOG10,   "fast_log10f",    1,  1,  0,  1,  1, 'D') \
  X(OP_FAST_EXP10,   "fast_exp10f",    1,  1,  0,  1,  1, 'D') \
  X(OP_FAST_POW,     "fast_powf",      2,  1,  0,  1,  1, 'D') \
  X(OP_FAST_DIV,     "fast_dividef",   2,  1,  0,  1,  1, 'D') \
  X(OP_ADD_ROUND,    "add_round",      2,  1,  0,  1,  1, 'D') /* ival = rounding (Rounding: rn rz rd ru): libdevice.add_rn ... */ \
  X(OP_SUB_ROUND,    "sub_round",      2,  1,  0,  1,  1, 'D') \
  X(OP_MUL_ROUND,    "mul_round",      2,  1,  0,  1,  1, 'D') \
  X(OP_DIV_ROUND,    "div_round",      2,  1,  0,  1,  1, 'D') \
  X(OP_SQRT_ROUND,   "sqrt_round",     1,  1,  0,  1,  1, 'D') \
  X(OP_RCP_ROUND,    "rcp_round",      1,  1,  0,  1,  1, 'D') /* 1/x */ \
  X(OP_FMA_ROUND,    "fma_round",      3,  1,  0,  1,  1, 'D') /* a*b+c rounded once */

#define KAD_OPS(X) \
  /* enum              name            nargs nres nreg pure ew diff */ \
  /* constants and indices */ \
  X(OP_CONST,          "const",          0,  1,  0,  1,  0, 'Z') /* ival or fval by result dtype; tile result = all lanes equal */ \
  X(OP_PROGRAM_ID,     "program_id",     0,  1,  0,  1,  0, 'Z') /* ival = axis 0..2; result i32 */ \
  X(OP_NUM_PROGRAMS,   "num_programs",   0,  1,  0,  1,  0, 'Z') /* ival = axis 0..2; result i32 */ \
  X(OP_ARANGE,         "arange",         0,  1,  0,  1,  0, 'Z') /* ival = start; result i32[end-start] */ \
  /* elementwise arithmetic (float and int) */ \
  X(OP_ADD,            "add",            2,  1,  0,  1,  1, 'D') \
  X(OP_SUB,            "sub",            2,  1,  0,  1,  1, 'D') \
  X(OP_MUL,            "mul",            2,  1,  0,  1,  1, 'D') \
  X(OP_DIV,            "div",            2,  1,  0,  1,  1, 'D') /* float: true division; int: C (truncating) division */ \
  X(OP_REM,            "rem",            2,  1,  0,  1,  1, 'D') /* int: C remainder (sign of dividend); float: fmod */ \
  X(OP_POW,            "pow",            2,  1,  0,  1,  1, 'D') /* float only */ \
  X(OP_MAXIMUM,        "maximum",        2,  1,  0,  1,  1, 'D') \
  X(OP_MINIMUM,        "minimum",        2,  1,  0,  1,  1, 'D') \
  X(OP_ATAN2,          "atan2",          2,  1,  0,  1,  1, 'D') \
  X(OP_NEG,            "neg",            1,  1,  0,  1,  1, 'D') \
  X(OP_ABS,            "abs",            1,  1,  0,  1,  1, 'D') \
  /* elementwise integer / bitwise / logical (i1 for logical) */ \
  X(OP_AND,            "and",            2,  1,  0,  1,  1, 'Z') \
  X(OP_OR,             "or",             2,  1,  0,  1,  1, 'Z') \
  X(OP_XOR,            "xor",            2,  1,  0,  1,  1, 'Z') \
  X(OP_NOT,            "not",            1,  1,  0,  1,  1, 'Z') /* bitwise not; logical not on i1 */ \
  X(OP_SHL,            "shl",            2,  1,  0,  1,  1, 'Z') \
  X(OP_SHR,            "shr",            2,  1,  0,  1,  1, 'Z') /* arithmetic for signed, logical for unsigned */ \
  X(OP_UMULHI,         "umulhi",         2,  1,  0,  1,  1, 'Z') \
  /* comparisons: result i1 */ \
  X(OP_LT,             "lt",             2,  1,  0,  1,  1, 'Z') \
  X(OP_LE,             "le",             2,  1,  0,  1,  1, 'Z') \
  X(OP_GT,             "gt",             2,  1,  0,  1,  1, 'Z') \
  X(OP_GE,             "ge",             2,  1,  0,  1,  1, 'Z') \
  X(OP_EQ,             "eq",             2,  1,  0,  1,  1, 'Z') \
  X(OP_NE,             "ne",             2,  1,  0,  1,  1, 'Z') \
  X(OP_ISNAN,          "isnan",          1,  1,  0,  1,  1, 'Z') \
  X(OP_ISINF,          "isinf",          1,  1,  0,  1,  1, 'Z') \
  /* elementwise math (float only) */ \
  X(OP_EXP,            "exp",            1,  1,  0,  1,  1, 'D') \
  X(OP_EXP2,           "exp2",           1,  1,  0,  1,  1, 'D') \
  X(OP_EXPM1,          "expm1",          1,  1,  0,  1,  1, 'D') \
  X(OP_LOG,            "log",            1,  1,  0,  1,  1, 'D') \
  X(OP_LOG2,           "log2",           1,  1,  0,  1,  1, 'D') \
  X(OP_LOG1P,          "log1p",          1,  1,  0,  1,  1, 'D') \
  X(OP_SQRT,           "sqrt",           1,  1,  0,  1,  1, 'D') \
  X(OP_RSQRT,          "rsqrt",          1,  1,  0,  1,  1, 'D') \
  X(OP_SIGMOID,        "sigmoid",        1,  1,  0,  1,  1, 'D') \
  X(OP_SIN,            "sin",            1,  1,  0,  1,  1, 'D') \
  X(OP_COS,            "cos",            1,  1,  0,  1,  1, 'D') \
  X(OP_TAN,            "tan",            1,  1,  0,  1,  1, 'D') \
  X(OP_ASIN,           "asin",           1,  1,  0,  1,  1, 'D') \
  X(OP_ACOS,           "acos",           1,  1,  0,  1,  1, 'D') \
  X(OP_ATAN,           "atan",           1,  1,  0,  1,  1, 'D') \
  X(OP_SINH,           "sinh",           1,  1,  0,  1,  1, 'D') \
  X(OP_COSH,           "cosh",           1,  1,  0,  1,  1, 'D') \
  X(OP_TANH,           "tanh",           1,  1,  0,  1,  1, 'D') \
  X(OP_ERF,            "erf",            1,  1,  0,  1,  1, 'D') \
  X(OP_FLOOR,          "floor",          1,  1,  0,  1,  1, 'Z') \
  X(OP_CEIL,           "ceil",           1,  1,  0,  1,  1, 'Z') \
  X(OP_TRUNC,          "trunc",          1,  1,  0,  1,  1, 'Z') \
  X(OP_RINT,           "rint",           1,  1,  0,  1,  1, 'Z') /* round half to even */ \
  X(OP_FMA,            "fma",            3,  1,  0,  1,  1, 'D') /* a*b+c */ \
  X(OP_WHERE,          "where",          3,  1,  0,  1,  1, 'D') /* cond(i1), a, b */ \
  KAD_LIBM_OPS(X) \
  /* conversions */ \
  X(OP_CAST,           "cast",           1,  1,  0,  1,  1, 'D') /* to the result dtype (value conversion) */ \
  X(OP_BITCAST,        "bitcast",        1,  1,  0,  1,  1, 'Z') /* same width reinterpretation; ptr<->ptr */ \
  /* hints: identity on values, kept for the Triton emitter */ \
  X(OP_MULTIPLE_OF,    "multiple_of",    1,  1,  0,  1,  1, 'Z') /* ints = the multiples per axis (nints = rank, or 1) */ \
  X(OP_MAX_CONTIGUOUS, "max_contiguous", 1,  1,  0,  1,  1, 'Z') /* ints as above */ \
  /* custom derivatives (docs/AD.md "Custom derivatives"): identity on operand 0 */ \
  X(OP_CUSTOM_VJP,     "custom_vjp",    -1,  1,  0,  1,  0, 'D') /* y, args...: y (a helper's result) with \
     Func.rules[ival] as the adjoint rule: its params are args... then dy, it yields the float args' adjoints */ \
  X(OP_CUSTOM_JVP,     "custom_jvp",    -1,  1,  0,  1,  0, 'D') /* y, args...: y (a helper's result) with \
     Func.rules[ival] as the tangent rule: its params are args..., then one tangent per float arg (of its type), \
     it yields y's tangent (y's type); reverse mode: identity on operand 0 */ \
  X(OP_STOP_GRADIENT,  "stop_gradient",  1,  1,  0,  1,  1, 'Z') /* x: x, with no gradient (kad.nondiff) */ \
  /* shape ops */ \
  X(OP_BROADCAST,      "broadcast",      1,  1,  0,  1,  0, 'D') /* to the result shape; rank-0 or same-rank size-1 axes */ \
  X(OP_EXPAND_DIMS,    "expand_dims",    1,  1,  0,  1,  0, 'D') /* ival = axis (normalized, 0..rank) */ \
  X(OP_RESHAPE,        "reshape",        1,  1,  0,  1,  0, 'D') /* to the result shape, row-major, same numel */ \
  X(OP_PERMUTE,        "permute",        1,  1,  0,  1,  0, 'D') /* ints = perm, nints = rank; trans = permute [1,0] */ \
  /* tl.join/split/flip/gather/sort/topk/histogram (docs/IR.md, "Shapes") */ \
  X(OP_JOIN,           "join",           2,  1,  0,  1,  0, 'D') /* a, b of one type -> their shape + [2] */ \
  X(OP_SPLIT,          "split",          1,  1,  0,  1,  0, 'D') /* ival = half (0/1): x[..., half] of a last axis of 2 */ \
  X(OP_FLIP,           "flip",           1,  1,  0,  1,  0, 'D') /* ival = axis */ \
  X(OP_GATHER,         "gather",         2,  1,  0,  1,  0, 'D') /* src, index (int) -> index's shape; ival = axis */ \
  X(OP_SORT,           "sort",           1,  1,  0,  1,  0, 'D') /* along the last axis, the first ival kept; flags REVERSE = descending */ \
  X(OP_HISTOGRAM,      "histogram",     -1,  1,  0,  1,  0, 'Z') /* x (int, rank 1) [, mask]: i32[ival bins] */ \
  /* reductions and scans; ival = axis (normalized) */ \
  X(OP_SUM,            "sum",            1,  1,  0,  1,  0, 'D') /* flags KEEP_DIMS */ \
  X(OP_MAX,            "max",            1,  1,  0,  1,  0, 'D') /* flags KEEP_DIMS */ \
  X(OP_MIN,            "min",            1,  1,  0,  1,  0, 'D') /* flags KEEP_DIMS */ \
  X(OP_ARGMAX,         "argmax",         1,  1,  0,  1,  0, 'Z') /* result i32; first index of the max; flags KEEP_DIMS */ \
  X(OP_ARGMIN,         "argmin",         1,  1,  0,  1,  0, 'Z') /* result i32; first index of the min; flags KEEP_DIMS */ \
  X(OP_CUMSUM,         "cumsum",         1,  1,  0,  1,  0, 'D') /* flags REVERSE */ \
  X(OP_CUMPROD,        "cumprod",        1,  1,  0,  1,  0, 'D') /* flags REVERSE */ \
  /* tl.associative_scan: n inputs of one shape -> n results of their types; ival = axis, flags REVERSE; \
     region 0 (combine): 2n scalar params (the running values, then the next element's), yields n scalars; \
     closed: it reads only its params and its own values, pure region-less ops only */ \
  X(OP_SCAN,           "scan",          -1, -1,  1,  1,  0, 'D') \
  /* tl.reduce: n inputs of one shape -> n results of their dtypes, the axis removed; ival = axis; \
     region 0 (combine) as OP_SCAN's (the values so far, then the next element's); keep_dims is an expand_dims */ \
  X(OP_REDUCE,         "reduce",        -1, -1,  1,  1,  0, 'D') \
  /* matrix product: a[M,K], b[K,N], acc[M,N]; ival = input precision (DotPrec) */ \
  X(OP_DOT,            "dot",            3,  1,  0,  1,  0, 'D') \
  /* random numbers (Philox 4x32-10, like tl.rand/randn/randint): seed (scalar int), offset (int tile) */ \
  X(OP_RAND,           "rand",           2,  1,  0,  1,  1, 'Z') /* uniform fp32 in [0, 1) */ \
  X(OP_RANDN,          "randn",          2,  1,  0,  1,  1, 'Z') /* standard normal fp32 */ \
  X(OP_RANDINT,        "randint",        2,  1,  0,  1,  1, 'Z') /* u32 */ \
  /* memory */ \
  X(OP_ADDPTR,         "addptr",         2,  1,  0,  1,  1, 'Z') /* ptr + int offset (in elements of the pointee) */ \
  X(OP_LOAD,           "load",          -1,  1,  0,  0,  1, 'M') /* ptr [, mask [, other]]: flags HAS_MASK, HAS_OTHER */ \
  X(OP_STORE,          "store",         -1,  0,  0,  0,  1, 'M') /* ptr, value [, mask]: flags HAS_MASK */ \
  X(OP_ATOMIC_ADD,     "atomic_add",    -1,  1,  0,  0,  1, 'M') /* ptr, value [, mask] -> old value; flags HAS_MASK */ \
  X(OP_ATOMIC_MAX,     "atomic_max",    -1,  1,  0,  0,  1, 'M') /* as atomic_add: out = max(out, value) -> old */ \
  X(OP_ATOMIC_MIN,     "atomic_min",    -1,  1,  0,  0,  1, 'M') /* as atomic_add: out = min(out, value) -> old */ \
  X(OP_ATOMIC_XCHG,    "atomic_xchg",   -1,  1,  0,  0,  1, 'M') /* as atomic_add: out = value -> old */ \
  X(OP_ASSERT,         "assert",         1,  0,  0,  0,  0, 'Z') /* device_assert: cond (i1, any shape); sattr = message */ \
  /* tl.debug_barrier(): a program's memory accesses before it are seen by all its threads after it.  Made by AD \
     only (sweep_rev.c, in-place gradients); sema drops the forward's, which kad's semantics do not need. \
     ival L > 0 ({lanes = L}): it orders only read-modify-writes whose elements each belong to one lane \
     of L (access_lane_private): a backend running each of L lanes as one thread may drop it */ \
  X(OP_BARRIER,        "barrier",        0,  0,  0,  0,  0, 'Z') \
  /* structured control flow (see ir.h, "Structured control flow") */ \
  X(OP_FOR,            "for",           -1, -1,  1,  0,  0, 'C') /* lb, ub, step, inits... ; region params: iv, carried... */ \
  X(OP_IF,             "if",             1, -1,  2,  0,  0, 'C') /* cond (i1 scalar); regions then, else */ \
  X(OP_WHILE,          "while",         -1, -1,  2,  0,  0, 'C') /* inits...; regions cond (ends in condition), body */ \
  X(OP_YIELD,          "yield",         -1,  0,  0,  0,  0, 'C') /* terminator of for/if/while-body regions */ \
  X(OP_CONDITION,      "condition",      1,  0,  0,  0,  0, 'C') /* terminator of a while's cond region: cond (i1 scalar) */
