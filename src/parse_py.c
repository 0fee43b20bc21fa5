/* parse_py.c -- STUB, to be written (front-end helper). */
#include "kad_int.h"
Module *parse_module(Arena *a, Diags *d, const char *file, const char *text)
{
    (void)a; (void)text;
    diag_error(d, (Loc){file, 1, 1}, "parser not implemented");
    return NULL;
}
void ast_dump(Buf *b, const Module *m) { (void)m; buf_puts(b, "()\n"); }
