/* lex.c -- STUB, to be written (front-end helper). */
#include "kad_int.h"
static const char *tok_names[TK_COUNT] = {
#define X(e, s) [e] = s,
    KAD_TOKENS(X)
#undef X
};
const char *tok_kind_name(TokKind k) { return (unsigned)k < TK_COUNT ? tok_names[k] : "?"; }
Token *lex(Arena *a, Diags *d, const char *file, const char *text, int *ntok)
{
    (void)text;
    diag_error(d, (Loc){file, 1, 1}, "lexer not implemented");
    *ntok = 1;
    return arena_alloc(a, sizeof(Token));
}
