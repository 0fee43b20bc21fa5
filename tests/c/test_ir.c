/* test_ir.c -- unit tests (to be written). */
static void tests_ir(T *t) { (void)t; }
