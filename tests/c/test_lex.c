/* test_lex.c -- unit tests (to be written). */
static void tests_lex(T *t) { (void)t; }
