/* test_interp.c -- unit tests (to be written). */
static void tests_interp(T *t) { (void)t; }
