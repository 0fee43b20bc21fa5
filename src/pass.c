/* pass.c -- STUB, to be written (IR helper). */
#include <string.h>
#include "kad_int.h"
bool pass_run(Func *f, const char *name, Diags *d)
{ (void)f; if (!name) return false; if (!strcmp(name, "verify")) return ir_verify(f, d); diag_error(d, (Loc){0}, "unknown pass '%s'", name); return false; }
const char *pass_names(void) { return "verify"; }
