/* fuzz_frontend.c -- libFuzzer target for the front ends.
 *
 * The input is split at its first newline: the first line is a signature,
 * the rest a Python module (or, after a first line "cu:TARGS", a CUDA C
 * file: fuzz_cuda).  The module goes through the lexer, the parser
 * and, for its first @triton.jit function, sema and the verifier.  The whole
 * input is also read as textual IR.  Memory is capped by the arena limit, so
 * exhaustion is an error path, not a crash.  Build and run: `make fuzz`.
 */
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"
#include "front/cuda.h"
#include "front/triton.h"
#include "front/cu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What one fuzz step runs on the input: sig and text as split below. */
typedef void FuzzBody(Arena *a, Diags *d, const char *sig, const char *text);

/* Runs body with a fresh arena capped at 256 MiB and a diagnostics sink.
 * Exhausting the arena longjmps back here (setjmp must sit in a frame that
 * outlives the body, hence the callback); the diagnostics are rendered
 * after the body, as the CLI would, so the renderer is fuzzed too. */
static void fuzz_in_arena(FuzzBody *body, const char *sig, const char *text)
{
    Arena *a = arena_new((size_t)256 << 20);
    if (!a)
        return;
    jmp_buf oom;
    arena_set_oom(a, &oom);
    if (setjmp(oom) == 0) {
        Diags d;
        diag_init(&d, a);
        body(a, &d, sig, text);
        (void)diag_render(&d);
    }
    arena_free(a);
}

/* The Python front end: lexer, parser, AST dump, and for the first function
 * sema (unrolling constant loops or not, by a bit of the input), the
 * verifier, simplify and the printer. */
static void fuzz_python(Arena *a, Diags *d, const char *sig, const char *src)
{
    diag_add_source(d, "fuzz.py", src);
    Module *m = parse_module(a, d, "fuzz.py", src);
    if (m) {
        Buf b = {.a = a};
        ast_dump(&b, m);
    }
    if (m && d->nerrors == 0 && m->funcs.n > 0) {
        Signature s = {0};
        if (sig_parse(a, d, sig, &s)) {
            SemaOptions opt = {.unroll_const_loops = (sig[0] & 1) != 0};
            Func *f = sema_kernel(a, d, &m, 1, m->funcs.v[0]->name, &s, &opt);
            if (f && ir_verify(f, d) && pass_run(f, "simplify", d) && ir_verify(f, d))
                (void)ir_to_string(a, f);
        }
    }
}

/* The IR front end: parser, verifier, printer, simplify. */
static void fuzz_ir(Arena *a, Diags *d, const char *sig, const char *text)
{
    (void)sig;
    Func *f = ir_parse(a, d, "fuzz.ir", text);
    if (f && ir_verify(f, d)) {
        (void)ir_to_string(a, f);
        if (pass_run(f, "simplify", d))
            (void)ir_verify(f, d);
    }
}

/* The CUDA C / HIP front end (an input whose signature line starts with
 * "cu:"; the rest of that line is the template arguments, the kernel is the
 * file's first __global__ function, the block 64 threads, or 8x4 when the
 * line's last byte is odd): preprocessor, parser, lowering, the verifier,
 * simplify and the printer. */
static void fuzz_cuda(Arena *a, Diags *d, const char *sig, const char *src)
{
    diag_add_source(d, "fuzz.cu", src);
    int n = 0;
    CuTok *toks = cu_lex(a, d, "fuzz.cu", src, NULL, 0, &n);
    CuUnit *u = cu_parse(a, d, "fuzz.cu", toks, n);
    if (!u || d->nerrors)
        return;
    for (int i = 0; i < u->funcs.n; i++) {
        if (!u->funcs.v[i]->is_global)
            continue;
        size_t len = strlen(sig);
        bool two_d = len && (sig[len - 1] & 1);
        CuSpec spec = {.targs = sig + 3, .block = {two_d ? 8 : 64, two_d ? 4 : 1, 1}};
        Func *f = cu_lower(a, d, &u, 1, u->funcs.v[i]->name, &spec);
        if (f && ir_verify(f, d) && pass_run(f, "simplify", d) && ir_verify(f, d))
            (void)ir_to_string(a, f);
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    size_t n = strlen(buf); /* stop at an embedded NUL, like the CLI refuses them */
    char *nl = memchr(buf, '\n', n);
    const char *sig = "", *src = buf;
    if (nl) {
        *nl = 0;
        sig = buf;
        src = nl + 1;
    }
    if (!strncmp(sig, "cu:", 3))
        fuzz_in_arena(fuzz_cuda, sig, src);
    else
        fuzz_in_arena(fuzz_python, sig, src);
    if (nl)
        *nl = '\n';
    fuzz_in_arena(fuzz_ir, "", buf);
    free(buf);
    return 0;
}
