/* sema.c -- STUB, to be written (sema helper). */
#include "kad_int.h"
bool sig_parse(Arena *a, Diags *d, const char *text, Signature *out)
{
    (void)a; (void)text; (void)out;
    diag_error(d, (Loc){"<sig>", 1, 1}, "signatures not implemented");
    return false;
}
Func *sema_kernel(Arena *a, Diags *d, Module **mods, int nmods, const char *name,
                  const Signature *sig, const SemaOptions *opt)
{
    (void)a; (void)mods; (void)nmods; (void)sig; (void)opt;
    diag_error(d, (Loc){0}, "sema not implemented (kernel %s)", name);
    return NULL;
}
