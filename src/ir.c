/* ir.c -- STUB, to be written (IR helper). */
#include "kad_int.h"
const OpInfo op_info[OP_COUNT] = {
#define X(e, name, nargs, nres, nreg, pure, ew, diff) [e] = {name, nargs, nres, nreg, pure, ew, diff},
    KAD_OPS(X)
#undef X
};
OpKind op_by_name(const char *s, size_t n) { (void)s; (void)n; return OP_COUNT; }
Func *ir_func_new(Arena *a, const char *name, Loc loc) { Func *f = arena_alloc(a, sizeof *f); f->a = a; f->name = name; f->loc = loc; return f; }
void ir_print(Buf *b, const Func *f) { (void)f; buf_puts(b, "# printer not implemented\n"); }
char *ir_to_string(Arena *a, const Func *f) { Buf b = {.a = a}; ir_print(&b, f); return (char *)buf_str(&b); }
