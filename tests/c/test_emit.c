/* test_emit.c -- unit tests (to be written). */
static void tests_emit(T *t) { (void)t; }
