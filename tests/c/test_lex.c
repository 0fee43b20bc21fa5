/* test_lex.c -- the lexer and the Python parser (lex.c, parse_py.c).
 *
 * The golden files in tests/parse/ and tests/errors/parse_* cover the AST
 * and the messages; these tests check what the dump does not show: token
 * kinds and values, INDENT/DEDENT balance, expression locations, the
 * resource limits, and that garbage never crashes. */

/* Lexes text and returns the kinds as a string of tok_kind_name()s. */
static const char *lex_kinds(Arena *a, const char *text, int *nerr)
{
    Diags d;
    diag_init(&d, a);
    int n;
    Token *t = lex(a, &d, "t.py", text, &n);
    Buf b = {.a = a};
    for (int i = 0; i < n; i++) {
        if (i)
            buf_putc(&b, ' ');
        switch (t[i].kind) {
        case TK_NAME:
        case TK_INT:
        case TK_FLOAT:
            buf_printf(&b, "%.*s", t[i].len, t[i].text);
            break;
        case TK_STRING: buf_puts(&b, "STR"); break;
        case TK_NEWLINE: buf_puts(&b, "NL"); break;
        case TK_INDENT: buf_puts(&b, "IN"); break;
        case TK_DEDENT: buf_puts(&b, "DE"); break;
        case TK_EOF: buf_puts(&b, "EOF"); break;
        default: buf_puts(&b, tok_kind_name(t[i].kind)); break;
        }
    }
    if (nerr)
        *nerr = d.nerrors;
    return buf_str(&b);
}

static void test_lex_structure(T *t)
{
    Arena *a = arena_new(0);
    int ne;
    /* blocks, blank and comment lines, brackets spanning lines */
    const char *k = lex_kinds(a,
                              "def f(x,\n"
                              "      y):  # comment\n"
                              "\n"
                              "    # only a comment\n"
                              "    if x:\n"
                              "\ty = [1,\n"
                              "  2]\n"
                              "    return y\n",
                              &ne);
    CHECK(t, ne == 0);
    CHECK(t, !strcmp(k, "def f ( x , y ) : NL IN if x : NL IN y = [ 1 , 2 ] NL DE return y NL DE EOF"));
    /* no final newline; backslash continuation; every operator */
    k = lex_kinds(a, "a = b \\\n  + c", &ne);
    CHECK(t, ne == 0 && !strcmp(k, "a = b + c NL EOF"));
    k = lex_kinds(a, "a**=b//=c>>=d<<=e...->:=!=<=>===@=@", &ne);
    CHECK(t, ne == 0 && !strcmp(k, "a **= b //= c >>= d <<= e ... -> := != <= >= == @= @ NL EOF"));
    /* CRLF and lone CR line endings */
    k = lex_kinds(a, "if x:\r\n    y\r\nz\rw", &ne);
    CHECK(t, ne == 0 && !strcmp(k, "if x : NL IN y NL DE z NL w NL EOF"));
    /* empty input and comment-only input */
    CHECK(t, !strcmp(lex_kinds(a, "", &ne), "EOF") && ne == 0);
    CHECK(t, !strcmp(lex_kinds(a, "# nothing\n\n   \n", &ne), "EOF") && ne == 0);
    /* "1if" lexes as 1 if (Python accepts it) */
    CHECK(t, !strcmp(lex_kinds(a, "x = 1if y else 2", &ne), "x = 1 if y else 2 NL EOF") && ne == 0);
    arena_free(a);
}

static void test_lex_values(T *t)
{
    Arena *a = arena_new(0);
    Diags d;
    diag_init(&d, a);
    int n;
    Token *k = lex(a, &d, "t.py",
                   "0x_ff 0o17 0b101 1_000 9223372036854775807 9223372036854775808 "
                   "99999999999999999999 1.5e-3 .25 1e400 2j 'a\\x41\\u00e9\\n' r'\\n' f'{x!r}' b'\\x00'",
                   &n);
    CHECK(t, d.nerrors == 0 && n == 15 + 2);
    CHECK(t, k[0].kind == TK_INT && k[0].ival == 255 && !k[0].big);
    CHECK(t, k[1].ival == 15 && k[2].ival == 5 && k[3].ival == 1000);
    CHECK(t, k[4].ival == INT64_MAX && !k[4].big);
    CHECK(t, k[5].big && k[5].ival == INT64_MIN); /* exactly 2**63 */
    CHECK(t, k[6].big && k[6].ival == 0);
    CHECK(t, k[7].kind == TK_FLOAT && k[7].fval == 1.5e-3 && k[8].fval == 0.25);
    CHECK(t, isinf(k[9].fval));
    CHECK(t, k[10].kind == TK_FLOAT && k[10].fval == 2.0); /* the parser refuses imaginary */
    CHECK(t, k[11].kind == TK_STRING && !strcmp(k[11].str, "aA\xc3\xa9\n"));
    CHECK(t, !strcmp(k[12].str, "\\n"));
    CHECK(t, !strcmp(k[13].str, "{x!r}") && k[13].text[0] == 'f');
    CHECK(t, k[14].text[0] == 'b');
    /* locations: 1-based byte columns, lines advanced inside triple quotes */
    k = lex(a, &d, "t.py", "x = '''a\nb'''\n  \ty = 1\n", &n);
    CHECK(t, k[2].kind == TK_STRING && k[2].loc.line == 1 && k[2].loc.col == 5);
    CHECK(t, k[3].kind == TK_NEWLINE && k[3].loc.line == 2);
    CHECK(t, k[4].kind == TK_INDENT && k[4].loc.line == 3 && k[4].loc.col == 4);
    CHECK(t, k[5].kind == TK_NAME && k[5].loc.col == 4);
    arena_free(a);
}

static void test_lex_errors(T *t)
{
    Arena *a = arena_new(0);
    int ne;
    lex_kinds(a, "x = 'abc\ny = 2\n", &ne);
    CHECK(t, ne == 1);
    lex_kinds(a, "x = (1, [2)\n", &ne);
    CHECK(t, ne == 1); /* the mismatch, no "never closed" echo */
    lex_kinds(a, "if x:\n        a\n    b\n", &ne);
    CHECK(t, ne == 1); /* inconsistent dedent */
    lex_kinds(a, "x = 0777 + 1__0 + 0x + 0b2\n", &ne);
    CHECK(t, ne == 4);
    /* the token stream stays balanced after errors */
    const char *k = lex_kinds(a, "if x:\n        a\n    b $\n", &ne);
    CHECK(t, !strcmp(k, "if x : NL IN a NL DE b NL EOF"));
    arena_free(a);
}

/* Parses text; returns the module (errors counted in *nerr). */
static Module *py_parse_text(Arena *a, const char *text, int *nerr, Diags *dout)
{
    Diags d;
    diag_init(&d, a);
    diag_add_source(&d, "t.py", text);
    Module *m = parse_module(a, &d, "t.py", text);
    if (nerr)
        *nerr = d.nerrors;
    if (dout)
        *dout = d;
    return m;
}

static void test_pyparse_locations(T *t)
{
    Arena *a = arena_new(0);
    int ne;
    Module *m = py_parse_text(a,
                           "import triton\n"
                           "@triton.jit\n"
                           "def k(x_ptr, BLOCK: tl.constexpr = 4):\n"
                           "    y = tl.load(x_ptr).to(tl.float32) + x[:, None] * 2\n"
                           "    z = a < b and c if d else e\n",
                           &ne, NULL);
    CHECK(t, ne == 0 && m->funcs.n == 1);
    FuncDef *fn = m->funcs.v[0];
    CHECK(t, fn->loc.line == 3 && fn->loc.col == 1);
    CHECK(t, fn->nparams == 2 && fn->params[1].loc.col == 14 && fn->params[1].dflt->ival == 4);
    Stmt *s = fn->body.v[0];
    CHECK(t, s->kind == ST_ASSIGN && s->loc.line == 4 && s->loc.col == 5);
    Expr *add = s->assign.value;
    CHECK(t, add->kind == EX_BINOP && add->bin.op == BO_ADD && add->loc.col == 39); /* at '+' */
    Expr *call = add->bin.l;
    CHECK(t, call->kind == EX_CALL && call->loc.col == 24);               /* at 'to' */
    CHECK(t, call->call.func->kind == EX_ATTR && call->call.func->loc.col == 24);
    CHECK(t, call->call.func->attr.value->loc.col == 12);                /* at 'load' */
    Expr *mul = add->bin.r;
    CHECK(t, mul->kind == EX_BINOP && mul->loc.col == 52);
    CHECK(t, mul->bin.l->kind == EX_SUBSCRIPT && mul->bin.l->loc.col == 42); /* at '[' */
    CHECK(t, mul->bin.l->sub.nindex == 2 && mul->bin.l->sub.index[0]->kind == EX_SLICE &&
                 mul->bin.l->sub.index[1]->kind == EX_NONE);
    Expr *ife = fn->body.v[1]->assign.value;
    CHECK(t, ife->kind == EX_IFEXP && ife->loc.col == 21);                   /* at 'if' */
    CHECK(t, ife->ifexp.then->kind == EX_BOOLOP && ife->ifexp.then->loc.col == 15); /* 'and' */
    CHECK(t, ife->ifexp.then->boolop.xs[0]->kind == EX_COMPARE &&
                 ife->ifexp.then->boolop.xs[0]->loc.col == 11);              /* at '<' */
    arena_free(a);
}

static void test_pyparse_errors_continue(T *t)
{
    Arena *a = arena_new(0);
    int ne;
    Diags d;
    /* one error per statement; the statements after it still parse */
    Module *m = py_parse_text(a,
                           "import triton\n"
                           "@triton.jit\n"
                           "def k(x):\n"
                           "    a = lambda: 1 + {}\n"
                           "    if x +:\n"
                           "        b = 1\n"
                           "    else:\n"
                           "        b = 2\n"
                           "    c = [i for i in x]\n"
                           "    return x\n"
                           "@triton.jit\n"
                           "def ok(y):\n"
                           "    return y\n",
                           &ne, &d);
    CHECK(t, ne == 3);
    CHECK(t, d.list.n == 3 && d.list.v[0].loc.line == 4 && d.list.v[1].loc.line == 5 &&
                 d.list.v[2].loc.line == 9);
    CHECK(t, m->funcs.n == 2 && m->funcs.v[0]->body.n == 1 && m->funcs.v[1]->body.n == 1);
    /* host code with any syntax: no errors, nothing kept */
    m = py_parse_text(a,
                   "x = {k: v for k, v in y.items()}\n"
                   "class C:\n    def f(self, *a, **k): return lambda: (yield)\n"
                   "with open(f) as g:\n    pass\n"
                   "print(f'{x!r:>{w}}', *a, **k)\n",
                   &ne, NULL);
    CHECK(t, ne == 0 && m->funcs.n == 0 && m->globals.n == 0);
    arena_free(a);
}

/* Deep nesting is an error, never a stack overflow. */
static void test_pyparse_limits(T *t)
{
    Arena *a = arena_new(0);
    Buf b = {.a = a};
    buf_puts(&b, "import triton\n@triton.jit\ndef k(x):\n    y = x");
    for (int i = 0; i < 5000; i++)
        buf_puts(&b, " + x");
    buf_puts(&b, "\n    z = ");
    for (int i = 0; i < 5000; i++)
        buf_puts(&b, "-~");
    buf_puts(&b, "x\n");
    int ne;
    Diags d;
    py_parse_text(a, buf_str(&b), &ne, &d);
    CHECK(t, ne == 2);
    CHECK(t, d.list.n == 2 && strstr(d.list.v[0].msg, "too deeply nested") &&
                 strstr(d.list.v[1].msg, "too deeply nested"));
    /* 1000 levels are fine */
    b = (Buf){.a = a};
    buf_puts(&b, "import triton\n@triton.jit\ndef k(x):\n    y = x");
    for (int i = 0; i < 900; i++)
        buf_puts(&b, " + x");
    buf_puts(&b, "\n");
    py_parse_text(a, buf_str(&b), &ne, NULL);
    CHECK(t, ne == 0);
    arena_free(a);
}

/* Lexes and parses one input under an arena limit; records whether the
 * token stream was balanced and ended in EOF.  (A function of its own so
 * that nothing the longjmp could clobber lives across the setjmp.) */
static void garbage_one(const char *text, bool *balanced, bool *ended)
{
    Arena *a = arena_new(1 << 24);
    jmp_buf oom;
    arena_set_oom(a, &oom);
    if (setjmp(oom) == 0) {
        Diags d;
        diag_init(&d, a);
        int n, depth = 0;
        Token *k = lex(a, &d, "g.py", text, &n);
        for (int i = 0; i < n; i++) {
            depth += k[i].kind == TK_INDENT;
            depth -= k[i].kind == TK_DEDENT;
            if (depth < 0)
                *balanced = false;
        }
        if (depth != 0)
            *balanced = false;
        if (n < 1 || k[n - 1].kind != TK_EOF)
            *ended = false;
        Module *m = parse_module(a, &d, "g.py", text);
        Buf out = {.a = a};
        ast_dump(&out, m);
        (void)diag_render(&d);
    }
    arena_free(a);
}

/* Deterministic pseudo-random inputs built from Python fragments: the
 * lexer's stream stays balanced and the parser never crashes or hangs. */
static void test_pyparse_garbage(T *t)
{
    static const char *const frags[] = {
        "@triton.jit\n", "def ", "k", "(", ")", ":", "\n", "    ", "\t", "if ", "else", "elif x:",
        "for i in ", "while ", "return", " x", "[", "]", "{", "}", ",", "'", "\"", "'''", "\\",
        "\\\n", "#", "1", "0x", "1e", ".", "..", "lambda", "=", "+=", "**", "-", "not ", "and",
        "tl.load(", "None", "f'{", "}'", ";", "import triton\n", "from . import x\n", "\r",
        "x = ", "9223372036854775808", ":=", "*", "@", "\x80", "$",
    };
    enum { NF = sizeof frags / sizeof frags[0] };
    uint64_t seed = 0x9E3779B97F4A7C15u;
    bool balanced = true, ended = true;
    Arena *a = arena_new(0);
    for (int round = 0; round < 3000; round++) {
        Buf b = {.a = a};
        int len = (int)(seed % 60);
        for (int i = 0; i < len; i++) {
            seed = seed * 6364136223846793005u + 1442695040888963407u;
            buf_puts(&b, frags[(seed >> 33) % NF]);
        }
        garbage_one(buf_str(&b), &balanced, &ended);
        seed = seed * 6364136223846793005u + 1442695040888963407u;
    }
    arena_free(a);
    CHECK(t, balanced);
    CHECK(t, ended);
}

static void tests_lex(T *t)
{
    RUN(t, test_lex_structure);
    RUN(t, test_lex_values);
    RUN(t, test_lex_errors);
    RUN(t, test_pyparse_locations);
    RUN(t, test_pyparse_errors_continue);
    RUN(t, test_pyparse_limits);
    RUN(t, test_pyparse_garbage);
}
