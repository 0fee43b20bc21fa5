/* main.c -- the `kad` command line.
 *
 *   kad ir FILE.py:KERNEL --sig SIG [--unroll] [--no-simplify] [--include F.py]...
 *   kad opt --pass NAME [--pass NAME]... [FILE.ir]      (stdin when no file)
 *   kad ast FILE.py
 *   kad version
 *
 * Exit status: 0 success, 1 user error (diagnostics on stderr), 2 usage.
 * Everything goes through the public API except `ast`, a debugging aid.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kad_int.h"

static const char usage[] =
    "usage:\n"
    "  kad ir FILE.py:KERNEL --sig SIG [--unroll] [--no-simplify] [--include FILE.py]...\n"
    "      specialize KERNEL for SIG (e.g. 'x_ptr=*fp32,n=i32,BLOCK=1024') and print its IR\n"
    "  kad opt --pass NAME [--pass NAME]... [FILE.ir]\n"
    "      read textual IR (stdin when no FILE), run passes, print the IR\n"
    "  kad ast FILE.py\n"
    "      print the syntax tree of a kernel file\n"
    "  kad version\n";

static char *slurp(const char *path, const char *what)
{
    FILE *fp = path ? fopen(path, "rb") : stdin;
    if (!fp) {
        fprintf(stderr, "kad: cannot open %s '%s'\n", what, path);
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *s = malloc(cap);
    for (;;) {
        if (!s)
            break;
        if (len + 1 >= cap) {
            char *t = realloc(s, cap *= 2);
            if (!t) {
                free(s);
                s = NULL;
                break;
            }
            s = t;
        }
        size_t n = fread(s + len, 1, cap - len - 1, fp);
        if (n == 0)
            break;
        len += n;
    }
    if (path)
        fclose(fp);
    if (!s) {
        fprintf(stderr, "kad: out of memory reading %s\n", path ? path : "stdin");
        return NULL;
    }
    if (memchr(s, 0, len)) {
        fprintf(stderr, "kad: %s '%s' contains a NUL byte\n", what, path ? path : "<stdin>");
        free(s);
        return NULL;
    }
    s[len] = 0;
    return s;
}

static int fail(kad_ctx *c)
{
    fputs(kad_diagnostics(c), stderr);
    kad_ctx_free(c);
    return 1;
}

static int add_file(kad_ctx *c, const char *path)
{
    char *text = slurp(path, "file");
    if (!text)
        return -1;
    int rc = kad_add_source(c, path, text);
    free(text);
    return rc;
}

static int cmd_ir(int argc, char **argv)
{
    const char *target = NULL, *sig = NULL;
    unsigned flags = 0;
    kad_ctx *c = kad_ctx_new();
    if (!c)
        return 1;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--sig") && i + 1 < argc)
            sig = argv[++i];
        else if (!strncmp(argv[i], "--sig=", 6))
            sig = argv[i] + 6;
        else if (!strcmp(argv[i], "--unroll"))
            flags |= KAD_UNROLL_CONST_LOOPS;
        else if (!strcmp(argv[i], "--no-simplify"))
            flags |= KAD_NO_SIMPLIFY;
        else if (!strcmp(argv[i], "--include") && i + 1 < argc) {
            if (add_file(c, argv[++i]) != 0)
                return fail(c);
        } else if (argv[i][0] != '-' && !target)
            target = argv[i];
        else {
            fprintf(stderr, "kad ir: unexpected argument '%s'\n%s", argv[i], usage);
            kad_ctx_free(c);
            return 2;
        }
    }
    const char *colon = target ? strrchr(target, ':') : NULL;
    if (!colon || colon == target || !colon[1]) {
        fprintf(stderr, "kad ir: expected FILE.py:KERNEL\n%s", usage);
        kad_ctx_free(c);
        return 2;
    }
    char *path = malloc((size_t)(colon - target) + 1);
    if (!path)
        return 1;
    memcpy(path, target, (size_t)(colon - target));
    path[colon - target] = 0;
    int rc = add_file(c, path);
    free(path);
    if (rc != 0)
        return fail(c);
    kad_kernel *k = kad_specialize(c, colon + 1, sig ? sig : "", flags);
    if (!k)
        return fail(c);
    fputs(kad_kernel_ir(k), stdout);
    kad_ctx_free(c);
    return 0;
}

static int cmd_opt(int argc, char **argv)
{
    const char *passes[64];
    int npasses = 0;
    const char *file = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--pass") && i + 1 < argc && npasses < 64)
            passes[npasses++] = argv[++i];
        else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else {
            fprintf(stderr, "kad opt: unexpected argument '%s'\n%s", argv[i], usage);
            return 2;
        }
    }
    char *text = slurp(file, "file");
    if (!text)
        return 1;
    kad_ctx *c = kad_ctx_new();
    if (!c) {
        free(text);
        return 1;
    }
    kad_kernel *k = kad_parse_ir(c, file ? file : "<stdin>", text);
    free(text);
    if (!k)
        return fail(c);
    for (int i = 0; i < npasses; i++)
        if (kad_run_pass(k, passes[i]) != 0)
            return fail(c);
    fputs(kad_kernel_ir(k), stdout);
    kad_ctx_free(c);
    return 0;
}

static int cmd_ast(int argc, char **argv)
{
    if (argc != 1) {
        fputs(usage, stderr);
        return 2;
    }
    char *text = slurp(argv[0], "file");
    if (!text)
        return 1;
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    diag_add_source(&d, argv[0], text);
    Module *m = parse_module(a, &d, argv[0], text);
    int rc = 0;
    if (!m || d.nerrors) {
        fputs(diag_render(&d), stderr);
        rc = 1;
    } else {
        Buf b = {.a = a};
        ast_dump(&b, m);
        fputs(buf_str(&b), stdout);
    }
    arena_free(a);
    free(text);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "ir"))
        return cmd_ir(argc - 2, argv + 2);
    if (!strcmp(cmd, "opt"))
        return cmd_opt(argc - 2, argv + 2);
    if (!strcmp(cmd, "ast"))
        return cmd_ast(argc - 2, argv + 2);
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("kad %s\n", kad_version());
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(usage, stdout);
        return 0;
    }
    fprintf(stderr, "kad: unknown command '%s'\n%s", cmd, usage);
    return 2;
}
