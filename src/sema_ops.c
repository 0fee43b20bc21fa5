/* sema_ops.c -- STUB, to be written (sema-ops helper). */
#include "kad_int.h"
static SVal err(Lower *L, Loc loc) { diag_error(L->d, loc, "not implemented"); return (SVal){.kind = SV_ERROR}; }
SVal lower_global(Lower *L, const char *qual, Loc loc) { (void)qual; return err(L, loc); }
SVal lower_attr(Lower *L, SVal x, const char *name, Loc loc) { (void)x; (void)name; return err(L, loc); }
SVal lower_call(Lower *L, SVal fn, const SVal *args, int nargs, const char *const *kwnames,
                const SVal *kwvals, int nkw, Loc loc)
{ (void)fn; (void)args; (void)nargs; (void)kwnames; (void)kwvals; (void)nkw; return err(L, loc); }
SVal lower_binop(Lower *L, BinOp op, SVal x, SVal y, Loc loc) { (void)op; (void)x; (void)y; return err(L, loc); }
SVal lower_unop(Lower *L, UnOp op, SVal x, Loc loc) { (void)op; (void)x; return err(L, loc); }
SVal lower_compare(Lower *L, CmpOp op, SVal x, SVal y, Loc loc) { (void)op; (void)x; (void)y; return err(L, loc); }
SVal lower_boolop(Lower *L, BoolOpKind op, SVal x, SVal y, Loc loc) { (void)op; (void)x; (void)y; return err(L, loc); }
SVal lower_subscript(Lower *L, SVal x, const SVal *idx, int n, Loc loc) { (void)x; (void)idx; (void)n; return err(L, loc); }
ValId lower_value(Lower *L, SVal x, Loc loc) { (void)x; err(L, loc); return 0; }
ValId lower_convert(Lower *L, ValId v, Type ty, Loc loc) { (void)v; (void)ty; err(L, loc); return 0; }
bool lower_truth(Lower *L, SVal x, bool *is_const, bool *cval, ValId *v, Loc loc)
{ (void)x; (void)is_const; (void)cval; (void)v; err(L, loc); return false; }
const char *const_repr(Arena *a, ConstVal c) { (void)c; return arena_strdup(a, "?"); }
