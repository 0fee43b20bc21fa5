/* interp.c -- STUB, to be written (interpreter helper). */
#include "kad_int.h"
bool interp_run(const Func *f, const int64_t grid[3], const InterpArg *args, int nargs,
                InterpMode mode, Diags *d)
{ (void)f; (void)grid; (void)args; (void)nargs; (void)mode; diag_error(d, (Loc){0}, "interpreter not implemented"); return false; }
