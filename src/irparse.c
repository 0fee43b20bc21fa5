/* irparse.c -- STUB, to be written (IR helper). */
#include "kad_int.h"
Func *ir_parse(Arena *a, Diags *d, const char *file, const char *text)
{ (void)a; (void)text; diag_error(d, (Loc){file, 1, 1}, "IR parser not implemented"); return NULL; }
