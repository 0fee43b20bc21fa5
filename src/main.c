/* main.c -- the `kad` command line.
 *
 *   kad ir FILE.py:KERNEL --sig SIG [--unroll] [--no-simplify] [--include F.py]...
 *   kad emit FILE.py:KERNEL --sig SIG [same options as ir] | kad emit FILE.ir
 *   kad opt --pass NAME [--pass NAME]... [FILE.ir]      (stdin when no file)
 *   kad grad FILE.py:KERNEL --sig SIG --wrt X --out Y [-o F] [--ir] [--kernels-only]   (docs/GRAD.md)
 *   kad jvp FILE.py:KERNEL --sig SIG --wrt X --out Y [-o F] [--ir]    (forward mode)
 *   kad check FILE.py:KERNEL --sig SIG --wrt X --out Y --grid G ...   (docs/AD.md)
 *   kad audit FILE.py:KERNEL --sig SIG [same options as ir] | kad audit FILE.ir
 *   kad ir|emit|audit|grad|jvp|check FILE.cu:KERNEL --block BX[,BY,BZ] [--sig TARGS] ...  (CUDA C / HIP)
 *   kad ast FILE.py
 *   kad builtins
 *   kad version
 *
 * FILE.py's imports are resolved like Python's: its own package root (found
 * by walking up the directories that hold an __init__.py), then each
 * `-I DIR` in order; DIR/a/b.py or DIR/a/b/__init__.py is module a.b.  The
 * kernel's modules and, recursively, the modules they import are added
 * with kad_add_module; modules not found (torch, host-only ones) are left
 * out, and only a kernel using a name from one gets an error.
 *
 * Exit status: 0 success; 1 any user error: diagnostics on stderr, or a usage
 * message for a malformed command line (kad check: also 1 on FAIL).
 * Everything goes through the public API except `ast`, a debugging aid.
 */
#define _XOPEN_SOURCE 700 /* realpath */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../include/kad.h"
#include "base/base.h"
#include "ir/ir.h"
#include "front/triton.h"
#include "analysis/analysis.h"
#include "plan/plan.h"

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* Package roots: -I DIR, in order (for CUDA sources: the include directories). */
typedef struct Roots {
    const char *v[64];
    int n;
} Roots;

/* The usage text, in two literals (ISO C caps one literal at 4095 characters): put_usage. */
static const char usage[] =
    "usage:\n"
    "  kad ir FILE.py:KERNEL --sig SIG [--unroll] [--no-simplify] [--include FILE.py]... [-I DIR]...\n"
    "      specialize KERNEL for SIG (e.g. 'x_ptr=*fp32,n=i32,BLOCK=1024') and print its IR\n"
    "  kad emit FILE.py:KERNEL --sig SIG [--unroll] [--no-simplify] [--include FILE.py]... [-I DIR]...\n"
    "  kad emit FILE.ir\n"
    "      print the specialized kernel as Triton source (see docs/EMIT.md)\n"
    "  kad audit FILE.py:KERNEL --sig SIG [same options as ir] | kad audit FILE.ir\n"
    "      report float atomics and batch-variant accumulation loops (nondeterminism), located\n"
    "  kad access [FILE.ir]\n"
    "      the access analysis: each load/store/atomic's address as an affine form, its verdicts\n"
    "  kad opt --pass NAME [--pass NAME]... [FILE.ir]\n"
    "      read textual IR (stdin when no FILE), run passes, print the IR\n"
    "  kad grad FILE.py:KERNEL --sig SIG --wrt X,... --out Y,... [-o FILE] [--ir] [--atomics] [--kernels-only]\n"
    "           [--include FILE.py]... [-I DIR]...\n"
    "  kad grad FILE.ir --wrt X,... --out Y,... [-o FILE] [--ir]\n"
    "      print the backward as a Triton module: its kernels, then their launcher (docs/GRAD.md);\n"
    "      --kernels-only: the kernels alone, without the launcher; or with --ir the backward\n"
    "      kernel's IR (reverse mode; see docs/AD.md; the launcher's other kernels follow as\n"
    "      # comments); --atomics:\n"
    "      input gradients accumulated with atomic_add (nondeterministic) instead of the default;\n"
    "      --report: per taped loop, what is taped, recomputed, checkpointed (docs/GRAD.md);\n"
    "      --saved: the backward that loads the saved loop results (kad_saved) instead of running\n"
    "      those loops; --save-forward: the saving forward that stores them (docs/AD.md);\n"
    "      --trusted: the backward that loads the outputs and statistics the forward stored (a\n"
    "      softmax's output, a norm's rstd) instead of recomputing them; only for callers that\n"
    "      know those buffers are unchanged (docs/AD.md, \"Trusted saved outputs\");\n"
    "      --race: the check that no two programs or lanes write one element of an output\n"
    "  tapes (grad and check): [--tape-budget BYTES] checkpoint taped `for` loops above BYTES of\n"
    "      tape per launch; [--while-cap N] the tape capacity of a `while` loop kad finds no bound for\n";
static const char usage_more[] =
    "  kad check FILE.py:KERNEL --sig SIG --wrt X,... --out Y,... --grid NX[,NY,NZ]\n"
    "            --shape P=64x128... --arg N=VALUE... [--range P=LO:HI]... [--seed N]\n"
    "            [--dirs K] [--elem-limit N] [--rtol X]      (or FILE.ir instead of FILE.py:KERNEL)\n"
    "      check the backward against float64 finite differences; exit status 1 on FAIL;\n"
    "      --saved: the backward of the saving forward, run after it on the same inputs\n"
    "  kad jvp FILE.py:KERNEL --sig SIG --wrt X,... --out Y,... [-o FILE] [--ir] [--rules FILE.py]... [--include FILE.py]... [-I DIR]...\n"
    "  kad jvp FILE.ir --wrt X,... --out Y,... [-o FILE] [--ir]\n"
    "      print the forward-mode derivative (outputs and their tangents in one pass) as a Triton\n"
    "      module with its launcher (docs/GRAD.md, \"Forward mode\"), or with --ir its IR\n"
    "  --emit cuda|hip (emit, grad, jvp): print the module as CUDA C (or HIP) with an extern \"C\"\n"
    "      host launcher instead of Triton (docs/EMIT.md, \"CUDA C\")\n"
    "  --rules FILE.py (ir, emit, audit, grad, check, jvp; repeatable): a file of custom derivatives\n"
    "      (@kad.vjp_of(helper), @kad.jvp_of(helper), kad.nondiff(helper)) for the kernel's helpers (docs/AD.md)\n"
    "  -I DIR: a package root where the kernel's imports are looked up (repeatable;\n"
    "      the kernel file's own package root comes first)\n"
    "  CUDA C / HIP kernels (docs/LANGUAGE.md, \"CUDA C / HIP kernels\"): FILE.cu:KERNEL (.cu .cuh .hip .cpp)\n"
    "      instead of FILE.py:KERNEL in ir, emit, audit, grad, jvp, check, with --block BX[,BY,BZ] (the\n"
    "      block, default 256) and --sig TEMPLATE_ARGS ('scalar_t=fp32,BLOCK=256', extern __shared__ sizes);\n"
    "      -I DIR: where a quoted #include not beside its file is looked for (nvcc's -I)\n"
    "  kad ast FILE.py\n"
    "      print the syntax tree of a kernel file\n"
    "  kad revolve TRIPS SLOTS [--plan] | kad revolve TRIPS --programs N --slot-bytes B --budget BYTES [--plan]\n"
    "      the revolve schedule of a loop under a tape budget: slots, t, rows, iterations recomputed\n"
    "  kad builtins\n"
    "      the names of triton.language kad knows: NAME supported|refused AD-class (docs/LANGUAGE.md)\n"
    "  kad version\n";

static void put_usage(void)
{
    fputs(usage, stderr);
    fputs(usage_more, stderr);
}

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

static bool file_exists(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (fp)
        fclose(fp);
    return fp != NULL;
}

/* Adds the kernel file `path` as its module and, recursively, the modules
 * it imports found under its package root or a -I root.  Returns the
 * kernel's module name (in a), or NULL after an error (diagnostics in c). */
static const char *load_modules(kad_ctx *c, Arena *a, const char *path, const Roots *roots)
{
    char *text = slurp(path, "file");
    if (!text)
        return NULL;
    /* module name: the stem, prefixed by each enclosing package directory */
    char real[PATH_MAX];
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    const char *modname = arena_strndup(a, base, dot ? (size_t)(dot - base) : strlen(base));
    char *dir = realpath(path, real) ? arena_strdup(a, real) : NULL;
    const char *root = NULL;
    if (dir) {
        char *slash = strrchr(dir, '/');
        if (slash)
            *slash = 0;
        if (!strcmp(modname, "__init__")) { /* a package's __init__.py: the package itself */
            slash = strrchr(dir, '/');
            modname = arena_strdup(a, slash ? slash + 1 : dir);
            if (slash)
                *slash = 0;
        }
        while (*dir && file_exists(arena_printf(a, "%s/__init__.py", dir))) {
            slash = strrchr(dir, '/');
            modname = arena_printf(a, "%s.%s", slash ? slash + 1 : dir, modname);
            if (!slash)
                break;
            *slash = 0;
        }
        root = *dir ? dir : "/";
        /* shown in diagnostics: the root as a prefix of the path given, when it has one */
        int up = 1;
        for (const char *m = modname; *m; m++)
            up += *m == '.';
        if (!strcmp(base, "__init__.py"))
            up++;
        size_t n = strlen(path);
        while (up > 0 && n > 0) {
            n--;
            while (n > 0 && path[n] != '/')
                n--;
            up--;
        }
        if (!up && n > 0 && path[n] == '/')
            root = arena_strndup(a, path, n);
        else if (!up && path[0] != '/')
            root = ".";
    }
    int rc = kad_add_module(c, modname, path, text);
    free(text);
    if (rc != 0)
        return NULL;
    /* breadth first over the imports of every added module */
    Vec(const char *) todo = {0}, tried = {0};
    vec_push(a, todo, modname);
    vec_push(a, tried, modname);
    for (int q = 0; q < todo.n; q++) {
        const char *imps = kad_module_imports(c, todo.v[q]);
        for (const char *p = imps; p && *p;) {
            const char *nl = strchr(p, '\n');
            const char *name = arena_strndup(a, p, (size_t)(nl - p));
            p = nl + 1;
            if (!strcmp(name, "triton") || !strncmp(name, "triton.", 7))
                continue; /* kad knows Triton's own modules */
            int k = 0;
            while (k < tried.n && strcmp(tried.v[k], name))
                k++;
            if (k < tried.n)
                continue;
            vec_push(a, tried, name);
            char *rel = arena_strdup(a, name);
            for (char *r = rel; *r; r++)
                if (*r == '.')
                    *r = '/';
            const char *found = NULL;
            for (int i = -1; i < roots->n && !found; i++) {
                const char *d = i < 0 ? root : roots->v[i];
                if (!d)
                    continue;
                const char *f1 = arena_printf(a, "%s/%s.py", d, rel);
                const char *f2 = arena_printf(a, "%s/%s/__init__.py", d, rel);
                found = file_exists(f1) ? f1 : file_exists(f2) ? f2 : NULL;
            }
            if (!found)
                continue; /* torch, host-only modules: an error only if a kernel uses them */
            char *mtext = slurp(found, "file");
            if (!mtext)
                return NULL;
            rc = kad_add_module(c, name, found, mtext);
            free(mtext);
            if (rc != 0)
                return NULL;
            vec_push(a, todo, name);
        }
    }
    return modname;
}

/* Specializes KERNEL of FILE.py (target "FILE.py:KERNEL" split at colon). */
static kad_kernel *load_py_kernel(kad_ctx *c, const char *target, const char *colon, const Roots *roots,
                                  const char *sig, unsigned flags)
{
    Arena *a = arena_new(0);
    if (!a)
        return NULL;
    const char *path = arena_strndup(a, target, (size_t)(colon - target));
    const char *modname = load_modules(c, a, path, roots);
    kad_kernel *k = NULL;
    if (modname)
        k = kad_specialize(c, arena_printf(a, "%s.%s", modname, colon + 1), sig ? sig : "", flags);
    arena_free(a);
    return k;
}

/* Whether FILE of "FILE:KERNEL" is CUDA C or HIP source (.cu, .cuh, .hip, .cpp). */
static bool is_cuda_file(const char *target, const char *colon)
{
    static const char *const exts[] = {".cu", ".cuh", ".hip", ".cpp"};
    for (size_t k = 0; k < sizeof exts / sizeof *exts; k++) {
        size_t n = strlen(exts[k]);
        if ((size_t)(colon - target) > n && !strncmp(colon - n, exts[k], n))
            return true;
    }
    return false;
}

/* Specializes KERNEL of a CUDA/HIP file for the template arguments sig and
 * the block dims "BX[,BY,BZ]" (default 256). */
static kad_kernel *load_cuda_kernel(kad_ctx *c, const char *target, const char *colon, const char *sig,
                                    const char *block, unsigned flags, const Roots *roots)
{
    /* -I DIR: where a quoted #include not beside its file is looked for, as nvcc's -I */
    for (int i = 0; i < roots->n; i++)
        if (kad_add_cuda_include_dir(c, roots->v[i]) != 0)
            return NULL;
    int dims[3] = {256, 1, 1};
    if (block) {
        const char *q = block;
        for (int k = 0; k < 3; k++) {
            char *end;
            long v = strtol(q, &end, 10);
            if (end == q || v < 1 || v > 4096 || (*end && *end != ',')) {
                fprintf(stderr, "kad: --block takes BX[,BY,BZ], positive integers, got '%s'\n", block);
                return NULL;
            }
            dims[k] = (int)v;
            if (!*end)
                break;
            q = end + 1;
        }
    }
    char *path = malloc((size_t)(colon - target) + 1);
    if (!path)
        return NULL;
    memcpy(path, target, (size_t)(colon - target));
    path[colon - target] = 0;
    char *text = slurp(path, "file");
    int rc = text ? kad_add_cuda_source(c, path, text) : -1;
    free(text);
    free(path);
    return rc == 0 ? kad_specialize_cuda(c, colon + 1, sig, dims, flags) : NULL;
}

/* Reads `-I DIR` / `-IDIR` at argv[*i]; whether it was one. */
static bool root_arg(int argc, char **argv, int *i, Roots *roots)
{
    const char *a = argv[*i];
    if (strncmp(a, "-I", 2) != 0)
        return false;
    const char *d = a[2] ? a + 2 : *i + 1 < argc ? argv[++*i] : NULL;
    if (d && roots->n < (int)(sizeof roots->v / sizeof roots->v[0]))
        roots->v[roots->n++] = d;
    return d != NULL;
}

/* --emit VALUE: triton (0), cuda (1), hip (2); false for anything else. */
static bool emit_target(const char *v, int *cuda)
{
    if (!strcmp(v, "triton") || !strcmp(v, "cuda") || !strcmp(v, "hip")) {
        *cuda = !strcmp(v, "cuda") ? 1 : !strcmp(v, "hip") ? 2 : 0;
        return true;
    }
    return false;
}

/* `kad ir`, `kad emit` (mode 1: print the kernel as Triton source) and
 * `kad audit` (mode 2: the determinism audit); for emit and audit the
 * target may also be FILE.ir, textual IR. */
static int cmd_ir(int argc, char **argv, int mode)
{
    bool triton = mode == 1, audit = mode == 2;
    const char *cmd = audit ? "audit" : triton ? "emit" : "ir";
    const char *target = NULL, *sig = NULL, *block = NULL;
    unsigned flags = 0;
    int cuda = 0; /* emit --emit cuda (1) or hip (2): the CUDA C module instead of Triton */
    Roots roots = {0};
    kad_ctx *c = kad_ctx_new();
    if (!c)
        return 1;
    for (int i = 0; i < argc; i++) {
        if (root_arg(argc, argv, &i, &roots))
            continue;
        if (!strcmp(argv[i], "--sig") && i + 1 < argc)
            sig = argv[++i];
        else if (!strncmp(argv[i], "--sig=", 6))
            sig = argv[i] + 6;
        else if (!strcmp(argv[i], "--block") && i + 1 < argc)
            block = argv[++i];
        else if (!strcmp(argv[i], "--unroll"))
            flags |= KAD_UNROLL_CONST_LOOPS;
        else if (triton && !strcmp(argv[i], "--emit") && i + 1 < argc && emit_target(argv[i + 1], &cuda))
            i++;
        else if (!strcmp(argv[i], "--no-simplify"))
            flags |= KAD_NO_SIMPLIFY;
        else if ((!strcmp(argv[i], "--include") || !strcmp(argv[i], "--rules")) && i + 1 < argc) {
            if (add_file(c, argv[++i]) != 0)
                return fail(c);
        } else if (argv[i][0] != '-' && !target)
            target = argv[i];
        else {
            fprintf(stderr, "kad %s: unexpected argument '%s'\n", cmd, argv[i]);
            put_usage();
            kad_ctx_free(c);
            return 1;
        }
    }
    size_t tlen = target ? strlen(target) : 0;
    if ((triton || audit) && tlen > 3 && !strcmp(target + tlen - 3, ".ir")) {
        char *text = slurp(target, "file");
        kad_kernel *k = text ? kad_parse_ir(c, target, text) : NULL;
        free(text);
        const char *py = !k ? NULL : audit ? kad_audit(k) : cuda ? kad_kernel_cuda(k, cuda == 2) : kad_kernel_triton(k);
        if (!py)
            return fail(c);
        fputs(py, stdout);
        kad_ctx_free(c);
        return 0;
    }
    const char *colon = target ? strrchr(target, ':') : NULL;
    if (!colon || colon == target || !colon[1]) {
        fprintf(stderr, "kad %s: expected FILE.py:KERNEL\n", cmd);
            put_usage();
        kad_ctx_free(c);
        return 1;
    }
    kad_kernel *k = is_cuda_file(target, colon) ? load_cuda_kernel(c, target, colon, sig, block, flags, &roots)
                                                : load_py_kernel(c, target, colon, &roots, sig, flags);
    const char *text = !k                ? NULL
                       : audit           ? kad_audit(k)
                       : triton && cuda  ? kad_kernel_cuda(k, cuda == 2)
                       : triton          ? kad_kernel_triton(k)
                                         : kad_kernel_ir(k);
    if (!text)
        return fail(c);
    fputs(text, stdout);
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
            fprintf(stderr, "kad opt: unexpected argument '%s'\n", argv[i]);
            put_usage();
            return 1;
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

/* kad access FILE.ir: the access analysis of every load, store and atomic. */
static int cmd_access(int argc, char **argv)
{
    if (argc > 1) {
        put_usage();
        return 1;
    }
    char *text = slurp(argc ? argv[0] : NULL, "file");
    if (!text)
        return 1;
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    const char *name = argc ? argv[0] : "<stdin>";
    diag_add_source(&d, name, text);
    Func *f = ir_parse(a, &d, name, text);
    int rc = 0;
    if (!f || !ir_verify(f, &d)) {
        fputs(diag_render(&d), stderr);
        rc = 1;
    } else {
        fputs(access_report(access_analyze(a, f)), stdout);
    }
    free(text);
    arena_free(a);
    return rc;
}

static int cmd_ast(int argc, char **argv)
{
    if (argc != 1) {
        put_usage();
        return 1;
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

/* ---- kad grad, kad check ---- */

/* Options shared by `grad` and `check`. */
typedef struct AdArgs {
    const char *target, *sig, *wrt, *out;
    const char *block;   /* --block BX[,BY,BZ]: a CUDA kernel's block */
    const char *outfile; /* grad -o FILE: write the module there instead of stdout */
    bool ir;             /* grad --ir: print the backward IR instead of the Triton module */
    bool report;         /* grad --report: print the tape report instead of the module */
    long long while_cap, tape_budget; /* --while-cap, --tape-budget */
    unsigned gflags;     /* grad --atomics: KAD_GRAD_ATOMICS; --saved: KAD_GRAD_SAVED;
                            --kernels-only: KAD_GRAD_KERNELS_ONLY */
    bool save_fwd;       /* grad --save-forward: the saving forward instead of the backward */
    bool race;           /* grad --race: the one-writer check module instead of the backward */
    bool jvp;            /* `kad jvp`: forward mode instead of grad */
    int cuda;            /* --emit cuda (1) / hip (2): the CUDA C module instead of the Triton one */
    unsigned flags;
    Roots roots;
    kad_check_opts o;
    Buf shapes, args, ranges; /* comma-joined repeated options */
} AdArgs;

static void join_opt(Buf *b, const char *v)
{
    if (b->len)
        buf_putc(b, ',');
    buf_puts(b, v);
}

/* Parses the options of `grad` (check == false) or `check`; 0 or 2 (usage). */
static int parse_ad_args(kad_ctx *c, int argc, char **argv, bool check, AdArgs *x)
{
    const char *cmd = check ? "check" : x->jvp ? "jvp" : "grad";
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool has = v != NULL;
        if (root_arg(argc, argv, &i, &x->roots))
            continue;
        if (!strcmp(a, "--sig") && has)
            x->sig = argv[++i];
        else if (!strcmp(a, "--wrt") && has)
            x->wrt = argv[++i];
        else if (!strcmp(a, "--out") && has)
            x->out = argv[++i];
        else if (!strcmp(a, "--block") && has)
            x->block = argv[++i];
        else if (!strcmp(a, "--unroll"))
            x->flags |= KAD_UNROLL_CONST_LOOPS;
        else if (!check && !strcmp(a, "--ir"))
            x->ir = true;
        else if (!strcmp(a, "--while-cap") && has)
            x->while_cap = strtoll(argv[++i], NULL, 10);
        else if (!strcmp(a, "--tape-budget") && has)
            x->tape_budget = strtoll(argv[++i], NULL, 10);
        else if (!check && !strcmp(a, "--report"))
            x->report = true;
        else if (!check && !x->jvp && !strcmp(a, "--atomics"))
            x->gflags |= KAD_GRAD_ATOMICS;
        else if (!check && !x->jvp && !strcmp(a, "--kernels-only"))
            x->gflags |= KAD_GRAD_KERNELS_ONLY;
        else if (!x->jvp && !strcmp(a, "--saved")) {
            x->gflags |= KAD_GRAD_SAVED;
            x->o.saved = 1;
        }
        else if (!check && !x->jvp && !strcmp(a, "--trusted"))
            x->gflags |= KAD_GRAD_TRUSTED;
        else if (!check && !x->jvp && !strcmp(a, "--save-forward"))
            x->save_fwd = true;
        else if (!check && !x->jvp && !strcmp(a, "--race"))
            x->race = true;
        else if (!check && !strcmp(a, "--emit") && has && emit_target(v, &x->cuda))
            i++;
        else if (!check && !strcmp(a, "-o") && has)
            x->outfile = argv[++i];
        else if ((!strcmp(a, "--include") || !strcmp(a, "--rules")) && has) {
            if (add_file(c, argv[++i]) != 0)
                return 1;
        } else if (check && !strcmp(a, "--grid") && has) {
            char *end;
            const char *q = argv[++i];
            for (int k = 0; k < 3; k++) {
                x->o.grid[k] = strtoll(q, &end, 10);
                if (end == q || (*end && *end != ','))
                    goto bad;
                if (!*end)
                    break;
                q = end + 1;
            }
        } else if (check && !strcmp(a, "--shape") && has)
            join_opt(&x->shapes, argv[++i]);
        else if (check && !strcmp(a, "--arg") && has)
            join_opt(&x->args, argv[++i]);
        else if (check && !strcmp(a, "--range") && has)
            join_opt(&x->ranges, argv[++i]);
        else if (check && !strcmp(a, "--seed") && has)
            x->o.seed = strtoull(argv[++i], NULL, 10);
        else if (check && !strcmp(a, "--dirs") && has)
            x->o.directions = atoi(argv[++i]);
        else if (check && !strcmp(a, "--elem-limit") && has)
            x->o.elem_limit = strtoll(argv[++i], NULL, 10);
        else if (check && !strcmp(a, "--rtol") && has)
            x->o.rtol = strtod(argv[++i], NULL);
        else if (a[0] != '-' && !x->target)
            x->target = a;
        else
            goto bad;
        continue;
    bad:
        fprintf(stderr, "kad %s: unexpected argument '%s'\n", cmd, a);
            put_usage();
        return 1;
    }
    if (kad_set_tape_options(c, x->while_cap, x->tape_budget) != 0) {
        fprintf(stderr, "kad %s: --while-cap takes 0 to 2**31 - 1 iterations, --tape-budget bytes >= 0\n", cmd);
        return 1;
    }
    if (!x->target || !x->wrt || !x->out) {
        fprintf(stderr, "kad %s: expected a kernel, --wrt and --out\n", cmd);
            put_usage();
        return 1;
    }
    return 0;
}

/* FILE.ir, or FILE.py:KERNEL specialized for sig.  NULL after an error
 * (diagnostics in c) or a usage error (*usage_err set). */
static kad_kernel *load_target(kad_ctx *c, const char *target, const Roots *roots, const char *sig,
                               const char *block, unsigned flags, int *usage_err)
{
    size_t n = strlen(target);
    if (n > 3 && !strcmp(target + n - 3, ".ir")) {
        char *text = slurp(target, "file");
        if (!text)
            return NULL;
        kad_kernel *k = kad_parse_ir(c, target, text);
        free(text);
        return k;
    }
    const char *colon = strrchr(target, ':');
    if (!colon || colon == target || !colon[1]) {
        fprintf(stderr, "kad: expected FILE.py:KERNEL or FILE.ir, got '%s'\n", target);
            put_usage();
        *usage_err = 1;
        return NULL;
    }
    if (is_cuda_file(target, colon))
        return load_cuda_kernel(c, target, colon, sig, block, flags, roots);
    return load_py_kernel(c, target, colon, roots, sig, flags);
}

/* Writes text to path (stdout when NULL); 0, or 1 after a message. */
static int write_output(const char *path, const char *text)
{
    if (!path) {
        fputs(text, stdout);
        return 0;
    }
    FILE *fp = fopen(path, "wb");
    if (!fp) {
        fprintf(stderr, "kad: cannot write '%s'\n", path);
        return 1;
    }
    bool ok = fputs(text, fp) >= 0;
    ok = fclose(fp) == 0 && ok;
    if (!ok)
        fprintf(stderr, "kad: error writing '%s'\n", path);
    return ok ? 0 : 1;
}

static int cmd_ad(int argc, char **argv, bool check, bool jvp)
{
    kad_ctx *c = kad_ctx_new();
    if (!c)
        return 1;
    Arena *a = arena_new(0);
    if (!a) {
        kad_ctx_free(c);
        return 1;
    }
    AdArgs x = {.shapes = {.a = a}, .args = {.a = a}, .ranges = {.a = a}, .jvp = jvp};
    int rc = parse_ad_args(c, argc, argv, check, &x);
    int usage_err = 0;
    kad_kernel *k = rc ? NULL : load_target(c, x.target, &x.roots, x.sig, x.block, x.flags, &usage_err);
    if (!rc && !k)
        rc = 1; /* usage errors were already explained on stderr */
    if (!rc && jvp) {
        kad_kernel *g = x.ir ? kad_jvp(k, x.wrt, x.out) : NULL;
        const char *text = x.ir     ? (g ? kad_kernel_ir(g) : NULL)
                           : x.cuda ? kad_jvp_module_cuda(k, x.wrt, x.out, x.cuda == 2)
                                    : kad_jvp_module(k, x.wrt, x.out);
        rc = text ? write_output(x.outfile, text) : 1;
    } else if (!rc && x.race) {
        const char *text = kad_race_module(k, x.out);
        rc = text ? write_output(x.outfile, *text ? text : "# kad proves one writer per element for every launch\n") : 1;
    } else if (!rc && x.save_fwd) {
        kad_kernel *g = x.ir ? kad_save_forward(k) : NULL;
        const char *text = x.ir ? (g ? kad_kernel_ir(g) : NULL) : kad_save_module(k);
        rc = text ? write_output(x.outfile, text) : 1;
    } else if (!rc && !check) {
        kad_kernel *g = x.ir || x.report ? kad_grad_ex(k, x.wrt, x.out, x.gflags) : NULL;
        const char *text = x.report ? (g ? kad_tape_report(g) : NULL)
                           : x.ir   ? (g ? kad_kernel_ir(g) : NULL)
                           : x.cuda ? kad_grad_module_cuda(k, x.wrt, x.out, x.gflags, x.cuda == 2)
                                    : kad_grad_module_ex(k, x.wrt, x.out, x.gflags);
        rc = text ? write_output(x.outfile, text) : 1;
    } else if (!rc) {
        x.o.wrt = x.wrt;
        x.o.out = x.out;
        x.o.shapes = buf_str(&x.shapes);
        x.o.args = buf_str(&x.args);
        x.o.ranges = buf_str(&x.ranges);
        /* Testing aid (docs/AD.md): break one adjoint rule to prove the checker fails. */
        x.o.mutate = getenv("KAD_TEST_MUTATE");
        int passed = 0;
        const char *rep = kad_check(k, &x.o, &passed);
        if (rep)
            fputs(rep, stdout);
        rc = rep && passed ? 0 : 1;
    }
    if (rc == 1)
        fputs(kad_diagnostics(c), stderr);
    arena_free(a);
    kad_ctx_free(c);
    return rc;
}

/* kad revolve TRIPS SLOTS [--plan] | kad revolve TRIPS --programs N --slot-bytes B --budget BYTES [--esz 4|8]
 * [--plan]: the revolve schedule (docs/AD.md, "Bounded memory"): s, t, rows, iterations recomputed,
 * bytes; --plan prints the rows. */
static int cmd_revolve(int argc, char **argv)
{
    long long trips = -1, s = 0, programs = 0, slot_bytes = 0, budget = 0, esz = 4;
    bool plan = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (!strcmp(a, "--plan"))
            plan = true;
        else if (!strcmp(a, "--programs") && has)
            programs = strtoll(argv[++i], NULL, 10);
        else if (!strcmp(a, "--slot-bytes") && has)
            slot_bytes = strtoll(argv[++i], NULL, 10);
        else if (!strcmp(a, "--budget") && has)
            budget = strtoll(argv[++i], NULL, 10);
        else if (!strcmp(a, "--esz") && has)
            esz = strtoll(argv[++i], NULL, 10);
        else if (trips < 0)
            trips = strtoll(a, NULL, 10);
        else
            s = strtoll(a, NULL, 10);
    }
    if (trips < 0 || trips > INT32_MAX || (esz != 4 && esz != 8) ||
        (s < 1 && (programs < 1 || slot_bytes < 1 || budget < 1))) {
        fputs("usage: kad revolve TRIPS SLOTS [--plan]\n"
              "       kad revolve TRIPS --programs N --slot-bytes B --budget BYTES [--esz 4|8] [--plan]\n",
              stderr);
        return 1;
    }
    int64_t rows = 0, adv = 0;
    if (s < 1) {
        int64_t fs = 0;
        if (!revolve_fit(trips, programs, slot_bytes, esz, budget, &fs, &rows)) {
            fprintf(stderr, "kad revolve: even one checkpoint slot and the plan exceed %lld bytes\n", budget);
            return 1;
        }
        s = fs;
    }
    rows = revolve_plan(trips, s, NULL, &adv);
    int32_t *p = malloc(sizeof *p * (size_t)(RV_FIELDS * rows + 1));
    if (rows < 0 || !p || revolve_plan(trips, s, p, NULL) != rows) {
        free(p);
        fputs("kad revolve: out of memory\n", stderr);
        return 1;
    }
    long long t = trips > 0 ? revolve_reps(trips, s) : 0;
    printf("trips %lld slots %lld t %lld rows %lld recomputed %lld", trips, s, t, (long long)rows, (long long)adv);
    if (programs > 0 && slot_bytes > 0)
        printf(" bytes %lld", (long long)((1 + RV_FIELDS * rows) * esz + s * programs * slot_bytes));
    printf("\n");
    for (int64_t r = 0; plan && r < rows; r++) { /* one line per row: its actions in order */
        const int32_t *w = p + RV_FIELDS * r;
        const char *sep = "";
        if (w[RV_RESTORE] >= 0)
            printf("%srestore %d %d", sep, w[RV_RESTORE], w[RV_AT]), sep = "; ";
        if (w[RV_ADVANCE])
            printf("%sadvance %d", sep, w[RV_ADVANCE]), sep = "; ";
        if (w[RV_STORE] >= 0)
            printf("%sstore %d", sep, w[RV_STORE]), sep = "; ";
        if (w[RV_REVERSE])
            printf("%sreverse", sep);
        printf("\n");
    }
    free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        put_usage();
        return 1;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "ir"))
        return cmd_ir(argc - 2, argv + 2, 0);
    if (!strcmp(cmd, "emit"))
        return cmd_ir(argc - 2, argv + 2, 1);
    if (!strcmp(cmd, "audit"))
        return cmd_ir(argc - 2, argv + 2, 2);
    if (!strcmp(cmd, "opt"))
        return cmd_opt(argc - 2, argv + 2);
    if (!strcmp(cmd, "grad") || !strcmp(cmd, "check"))
        return cmd_ad(argc - 2, argv + 2, !strcmp(cmd, "check"), false);
    if (!strcmp(cmd, "jvp"))
        return cmd_ad(argc - 2, argv + 2, false, true);
    if (!strcmp(cmd, "access"))
        return cmd_access(argc - 2, argv + 2);
    if (!strcmp(cmd, "ast"))
        return cmd_ast(argc - 2, argv + 2);
    if (!strcmp(cmd, "revolve"))
        return cmd_revolve(argc - 2, argv + 2);
    if (!strcmp(cmd, "builtins")) {
        Arena *a = arena_new(0);
        if (!a)
            return 1;
        Buf b = {.a = a};
        builtin_surface(&b);
        fputs(buf_str(&b), stdout);
        arena_free(a);
        return 0;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("kad %s\n", kad_version());
        return 0;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        fputs(usage, stdout);
        return 0;
    }
    fprintf(stderr, "kad: unknown command '%s'\n", cmd);
            put_usage();
    return 1;
}
