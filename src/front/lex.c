/* lex.c -- Python source text -> tokens.
 *
 * The job: turn a whole Python file into tokens the way CPython's tokenizer
 * does, so that kad can read real, unchanged Triton modules.  Host code
 * (torch wrappers, autotune configs, f-strings, dict literals, ...) is
 * tokenized too; the parser skips what it does not need.
 *
 * Guarantees:
 *   - Every token has a Loc (1-based line, 1-based byte column) and points
 *     into the source (text, len).
 *   - Logical lines end in TK_NEWLINE; blank and comment-only lines produce
 *     nothing.  Indentation changes produce TK_INDENT / TK_DEDENT (tabs
 *     advance to the next multiple of 8, as in CPython).  Inside (), [], {}
 *     newlines and indentation are ignored; a backslash at the end of a line
 *     joins it with the next.
 *   - The array ends with NEWLINE (if the last line had tokens), the DEDENTs
 *     closing every open block, and TK_EOF.  It is balanced: as many INDENTs
 *     as DEDENTs, whatever errors were seen, so the parser can always skip a
 *     block by counting them.
 *   - Lexical errors (bad characters, unterminated strings, unbalanced
 *     brackets, inconsistent dedents) are reported to the Diags sink and
 *     lexing continues; the token array is still usable.
 *
 * Literals: TK_INT carries its value (Token.big marks a literal that does not
 * fit in int64; the parser reports it only where kernel code uses it, since
 * host code may legitimately hold such numbers).  TK_FLOAT carries a double
 * (imaginary literals like 2j lex as TK_FLOAT: the parser refuses them, again
 * only in kernel code).  TK_STRING carries the decoded value; for raw strings
 * no escapes are processed, and for f-strings and bytes the raw contents are
 * kept (the parser splits f-strings from Token.text, with lex_fstring_text
 * for their literal parts, and refuses bytes in kernel code; it recognizes
 * both by the prefix in Token.text).
 *
 * Requires a NUL-terminated text; a UTF-8 byte order mark is skipped.  Bytes
 * >= 0x80 are accepted in names (Python allows non-ASCII identifiers; kad does
 * not validate them further).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "front/triton.h"

static const char *tok_names[TK_COUNT] = {
#define X(e, s) [e] = s,
    KAD_TOKENS(X)
#undef X
};

const char *tok_kind_name(TokKind k) { return (unsigned)k < TK_COUNT ? tok_names[k] : "?"; }

/* CPython's limits: deeper nesting is an error there too. */
enum { MAX_INDENT = 100, MAX_PARENS = 200 };

typedef struct Lexer {
    Arena *a;
    Diags *d;
    const char *file;
    const char *src;       /* whole text */
    const char *p;         /* current position */
    const char *line_start; /* start of the current physical line */
    int line;
    Vec(Token) toks;
    int indents[MAX_INDENT]; /* open indentation columns; indents[0] == 0 */
    int nindent;
    char paren[MAX_PARENS];     /* open bracket characters */
    Loc paren_loc[MAX_PARENS];  /* where each was opened */
    int nparen;
    int nparen_over;      /* brackets opened beyond MAX_PARENS (reported once) */
    bool paren_error;     /* a bracket error was reported: no "never closed" echoes */
    bool line_has_tokens; /* a token was emitted on the current logical line */
} Lexer;

static Loc loc_at(const Lexer *L, const char *p)
{
    return (Loc){L->file, L->line, (int)(p - L->line_start) + 1};
}

static void lex_error(Lexer *L, const char *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_verror(L->d, loc_at(L, p), fmt, ap);
    va_end(ap);
}

static Token *push(Lexer *L, TokKind k, const char *start, int len)
{
    Token t = {0};
    t.kind = k;
    t.loc = loc_at(L, start);
    t.text = start;
    t.len = len;
    vec_push(L->a, L->toks, t);
    if (k != TK_NEWLINE && k != TK_INDENT && k != TK_DEDENT && k != TK_EOF)
        L->line_has_tokens = true;
    return &L->toks.v[L->toks.n - 1];
}

/* Called after consuming a '\n' (or "\r\n", or a lone '\r'). */
static void newline(Lexer *L, const char *after)
{
    L->line++;
    L->line_start = after;
}

/* If p is at a line break, returns the byte count of it (1 or 2), else 0. */
static int at_eol(const char *p)
{
    if (p[0] == '\n')
        return 1;
    if (p[0] == '\r')
        return p[1] == '\n' ? 2 : 1;
    return 0;
}

static bool is_name_start(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}
static bool is_name_char(unsigned char c) { return is_name_start(c) || (c >= '0' && c <= '9'); }
static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static int digit_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return 99;
}

/* ---- indentation ---- */

/* At the start of a logical line outside brackets: measures indentation,
 * skips blank and comment-only lines, and emits INDENT/DEDENT tokens.
 * Returns false at end of input. */
static bool begin_line(Lexer *L)
{
    for (;;) {
        int col = 0;
        const char *p = L->p;
        for (;; p++) {
            if (*p == ' ')
                col++;
            else if (*p == '\t')
                col = (col / 8 + 1) * 8;
            else if (*p == '\f')
                col = 0; /* CPython resets the count at a form feed */
            else
                break;
        }
        if (*p == '#')
            while (*p && !at_eol(p))
                p++;
        int eol = at_eol(p);
        if (eol) { /* blank or comment-only line: no tokens */
            L->p = p + eol;
            newline(L, L->p);
            continue;
        }
        if (*p == '\\' && at_eol(p + 1)) {
            /* A continuation on an otherwise empty line: CPython treats
             * the joined text as one line; measure from the first line. */
            L->p = p;
            break;
        }
        L->p = p;
        if (!*p)
            return false;
        int top = L->indents[L->nindent - 1];
        if (col > top) {
            if (L->nindent == MAX_INDENT) {
                lex_error(L, p, "too many levels of indentation (at most %d)", MAX_INDENT - 1);
            } else {
                L->indents[L->nindent++] = col;
                push(L, TK_INDENT, p, 0);
            }
        } else if (col < top) {
            while (L->nindent > 1 && col < L->indents[L->nindent - 1]) {
                L->nindent--;
                push(L, TK_DEDENT, p, 0);
            }
            if (col != L->indents[L->nindent - 1])
                lex_error(L, p, "unindent does not match any outer indentation level");
        }
        return true;
    }
    return true;
}

/* ---- numbers ---- */

/* Python keywords that may directly follow a number ("1if x else 2"). */
static bool starts_keyword_after_number(const char *p)
{
    static const char *const kws[] = {"and", "else", "for", "if", "in", "is", "not", "or"};
    for (size_t i = 0; i < sizeof kws / sizeof kws[0]; i++) {
        size_t n = strlen(kws[i]);
        if (!strncmp(p, kws[i], n) && !is_name_char((unsigned char)p[n]))
            return true;
    }
    return false;
}

/* Copies the digits of [s, e) without underscores into a NUL-terminated
 * string (for strtod). */
static char *strip_underscores(Arena *a, const char *s, const char *e)
{
    char *out = arena_alloc(a, (size_t)(e - s) + 1), *q = out;
    for (; s < e; s++)
        if (*s != '_')
            *q++ = *s;
    *q = 0;
    return out;
}

/* Consumes digits of the given base with single underscores between them.
 * Returns the end; reports misplaced underscores. */
static const char *scan_digits(Lexer *L, const char *p, int base)
{
    for (;;) {
        if (digit_value(*p) < base) {
            p++;
        } else if (*p == '_' && digit_value(p[1]) < base) {
            p++;
        } else {
            if (*p == '_')
                lex_error(L, p, "invalid number literal: '_' must separate digits");
            return p;
        }
    }
}

/* number: decinteger | 0[xX] hex | 0[oO] oct | 0[bB] bin | float [jJ]? */
static void lex_number(Lexer *L)
{
    const char *s = L->p, *p = s;
    int errors_before = L->d->nerrors; /* one message per literal */
    bool is_float = false;
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X' || p[1] == 'o' || p[1] == 'O' || p[1] == 'b' ||
                        p[1] == 'B')) {
        base = p[1] == 'x' || p[1] == 'X' ? 16 : p[1] == 'o' || p[1] == 'O' ? 8 : 2;
        p += 2;
        if (*p == '_')
            p++;
        const char *d0 = p;
        p = scan_digits(L, p, base);
        if (is_digit(*p)) /* "0o8", "0b2" */
            lex_error(L, p, "invalid digit '%c' in %s literal", *p, base == 8 ? "octal" : "binary");
        else if (p == d0)
            lex_error(L, s, "invalid number literal '%.*s': no digits after the prefix", (int)(p - s), s);
    } else {
        p = scan_digits(L, p, 10);
        if (*p == '.' && !(p[1] == '.' && p[2] == '.')) {
            is_float = true;
            p++;
            if (is_digit(*p))
                p = scan_digits(L, p, 10);
        }
        if ((*p == 'e' || *p == 'E') &&
            (is_digit(p[1]) || ((p[1] == '+' || p[1] == '-') && is_digit(p[2])))) {
            is_float = true;
            p += (p[1] == '+' || p[1] == '-') ? 2 : 1;
            p = scan_digits(L, p, 10);
        }
        if (!is_float && s[0] == '0') {
            /* "0777" is not Python 3; only zeros may follow a leading 0 */
            for (const char *q = s; q < p; q++)
                if (*q != '0' && *q != '_') {
                    lex_error(L, s, "leading zeros in decimal integer literals are not permitted; "
                                    "use an 0o prefix for octal integers");
                    break;
                }
        }
    }
    bool imag = false;
    if (base == 10 && (*p == 'j' || *p == 'J')) {
        imag = true;
        is_float = true;
        p++;
    }
    if (is_name_char((unsigned char)*p) && !starts_keyword_after_number(p)) {
        const char *e = p;
        while (is_name_char((unsigned char)*e))
            e++;
        if (L->d->nerrors == errors_before)
            lex_error(L, s, "invalid number literal '%.*s'", (int)(e - s), s);
        p = e;
    }
    Token *t = push(L, is_float ? TK_FLOAT : TK_INT, s, (int)(p - s));
    if (is_float) {
        char *digits = strip_underscores(L->a, s, imag ? p - 1 : p);
        t->fval = strtod(digits, NULL); /* overflow gives inf, as in Python */
    } else {
        /* Accumulate in uint64 and mark what does not fit in int64. */
        uint64_t v = 0;
        bool over = false;
        for (const char *q = base == 10 ? s : s + 2; q < p; q++) {
            int dv = digit_value(*q);
            if (*q == '_' || dv >= base)
                continue;
            if (v > (UINT64_MAX - (uint64_t)dv) / (uint64_t)base)
                over = true;
            v = v * (uint64_t)base + (uint64_t)dv;
        }
        if (over || v > (uint64_t)INT64_MAX) {
            t->big = true;
            /* 2**63 itself: INT64_MIN, so that -9223372036854775808 parses */
            t->ival = !over && v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : 0;
        } else {
            t->ival = (int64_t)v;
        }
    }
    L->p = p;
}

/* ---- strings ---- */

/* Appends the UTF-8 encoding of code point c to b. */
static void put_utf8(Buf *b, uint32_t c)
{
    if (c < 0x80) {
        buf_putc(b, (char)c);
    } else if (c < 0x800) {
        buf_putc(b, (char)(0xC0 | (c >> 6)));
        buf_putc(b, (char)(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
        buf_putc(b, (char)(0xE0 | (c >> 12)));
        buf_putc(b, (char)(0x80 | ((c >> 6) & 0x3F)));
        buf_putc(b, (char)(0x80 | (c & 0x3F)));
    } else {
        buf_putc(b, (char)(0xF0 | (c >> 18)));
        buf_putc(b, (char)(0x80 | ((c >> 12) & 0x3F)));
        buf_putc(b, (char)(0x80 | ((c >> 6) & 0x3F)));
        buf_putc(b, (char)(0x80 | (c & 0x3F)));
    }
}

/* Decodes one escape sequence starting after the backslash at p; appends
 * the result to b and returns the position after the sequence.  Unknown
 * escapes are kept verbatim, as Python does (it only warns). */
static const char *decode_escape(Lexer *L, const char *bs, Buf *b)
{
    const char *p = bs + 1;
    char c = *p;
    switch (c) {
    case '\\': buf_putc(b, '\\'); return p + 1;
    case '\'': buf_putc(b, '\''); return p + 1;
    case '"': buf_putc(b, '"'); return p + 1;
    case 'a': buf_putc(b, '\a'); return p + 1;
    case 'b': buf_putc(b, '\b'); return p + 1;
    case 'f': buf_putc(b, '\f'); return p + 1;
    case 'n': buf_putc(b, '\n'); return p + 1;
    case 'r': buf_putc(b, '\r'); return p + 1;
    case 't': buf_putc(b, '\t'); return p + 1;
    case 'v': buf_putc(b, '\v'); return p + 1;
    default: break;
    }
    if (c >= '0' && c <= '7') {
        unsigned v = 0;
        int i = 0;
        for (; i < 3 && p[i] >= '0' && p[i] <= '7'; i++)
            v = v * 8 + (unsigned)(p[i] - '0');
        put_utf8(b, v);
        return p + i;
    }
    if (c == 'x' || c == 'u' || c == 'U') {
        int n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        uint32_t v = 0;
        for (int i = 1; i <= n; i++) {
            if (digit_value(p[i]) >= 16) {
                lex_error(L, bs, "truncated \\%c escape in string literal (expected %d hex digits)", c, n);
                return p + i;
            }
            v = v * 16 + (uint32_t)digit_value(p[i]);
        }
        if (v > 0x10FFFF) {
            lex_error(L, bs, "invalid \\U escape: code point out of range");
            v = 0xFFFD;
        }
        put_utf8(b, v);
        return p + 1 + n;
    }
    /* \N{NAME} and unknown escapes: kept as written (kad has no Unicode
     * name table; such strings only matter in messages). */
    buf_putc(b, '\\');
    return p;
}

/* In an f-string's replacement field: skips a nested string literal at p
 * (any prefix-less quote; Python 3.12 allows the enclosing quote here). */
static const char *skip_nested_string(Lexer *L, const char *p);

/* string: prefix? (''' ... ''' | """ ... """ | '...' | "...")
 * prefix: r u b f t and their combinations, any case.
 * L->p is at the first quote; s is the start of the prefix. */
static void lex_string(Lexer *L, const char *s, bool raw, bool fmt, bool bytes)
{
    const char *p = L->p;
    char q = *p;
    bool triple = p[1] == q && p[2] == q;
    p += triple ? 3 : 1;
    Loc start = loc_at(L, s); /* taken before any newline inside the literal */
    Buf b = {.a = L->a};
    int depth = 0; /* f-string replacement-field nesting */
    for (;;) {
        if (!*p) {
            diag_error(L->d, start, "unterminated %sstring literal",
                       triple ? "triple-quoted " : "");
            break;
        }
        int eol = at_eol(p);
        if (eol) {
            if (!triple) {
                diag_error(L->d, start, "unterminated string literal");
                break; /* leave the newline for the caller */
            }
            buf_putc(&b, '\n'); /* "\r\n" reads as "\n", as Python's universal newlines */
            p += eol;
            newline(L, p);
            continue;
        }
        if (fmt && depth > 0) {
            if (*p == '\'' || *p == '"') {
                const char *e = skip_nested_string(L, p);
                while (p < e)
                    buf_putc(&b, *p++);
                continue;
            }
            if (*p == '{')
                depth++;
            else if (*p == '}')
                depth--;
            buf_putc(&b, *p++);
            continue;
        }
        if (*p == q && (!triple || (p[1] == q && p[2] == q))) {
            p += triple ? 3 : 1;
            break;
        }
        if (*p == '\\') {
            int e2 = at_eol(p + 1);
            if (e2) { /* backslash-newline: a line continuation inside the literal */
                if (raw || fmt || bytes) {
                    buf_putc(&b, '\\');
                    buf_putc(&b, '\n');
                }
                p += 1 + e2;
                newline(L, p);
                continue;
            }
            if (raw || fmt || bytes) {
                /* kept raw; a backslash still protects the next character
                 * (a quote above all), except an f-string brace: in
                 * rf'\{{' the braces are the escaped literal '{' */
                buf_putc(&b, *p++);
                if (*p && !(fmt && (*p == '{' || *p == '}')))
                    buf_putc(&b, *p++);
                continue;
            }
            p = decode_escape(L, p, &b);
            continue;
        }
        if (fmt && *p == '{') {
            if (p[1] == '{') {
                buf_puts(&b, "{{");
                p += 2;
                continue;
            }
            depth = 1;
        }
        buf_putc(&b, *p++);
    }
    Token t = {0};
    t.kind = TK_STRING;
    t.loc = start;
    t.text = s;
    t.len = (int)(p - s);
    t.str = arena_strdup(L->a, buf_str(&b));
    vec_push(L->a, L->toks, t);
    L->line_has_tokens = true;
    L->p = p;
}

static const char *skip_nested_string(Lexer *L, const char *p)
{
    char q = *p;
    bool triple = p[1] == q && p[2] == q;
    p += triple ? 3 : 1;
    while (*p) {
        if (*p == q && (!triple || (p[1] == q && p[2] == q)))
            return p + (triple ? 3 : 1);
        if (*p == '\\' && p[1])
            p++;
        if (at_eol(p) && !triple)
            return p; /* let the outer scan report the broken literal */
        if (at_eol(p)) {
            p += at_eol(p);
            newline(L, p);
            continue;
        }
        p++;
    }
    return p;
}

/* If the name [s, e) is a string prefix and a quote follows, returns true
 * and the prefix flags. */
static bool string_prefix(const char *s, const char *e, bool *raw, bool *fmt, bool *bytes)
{
    if (e - s > 2 || (*e != '\'' && *e != '"'))
        return false;
    *raw = *fmt = *bytes = false;
    bool u = false, t = false;
    for (const char *p = s; p < e; p++) {
        switch (*p) {
        case 'r': case 'R': if (*raw) return false; *raw = true; break;
        case 'f': case 'F': if (*fmt) return false; *fmt = true; break;
        case 'b': case 'B': if (*bytes) return false; *bytes = true; break;
        case 'u': case 'U': if (u) return false; u = true; break;
        case 't': case 'T': if (t) return false; t = true; break; /* template strings (3.14) */
        default: return false;
        }
    }
    if (u && e - s > 1)
        return false; /* "ur" is not Python 3 */
    if ((*fmt || t) && *bytes)
        return false;
    if (t)
        *fmt = true; /* same lexical rules as f-strings */
    return true;
}

/* ---- brackets ---- */

static void open_paren(Lexer *L, const char *p)
{
    if (L->nparen == MAX_PARENS) {
        if (L->nparen_over++ == 0)
            lex_error(L, p, "too many nested parentheses (at most %d)", MAX_PARENS);
        L->paren_error = true;
        return;
    }
    L->paren_loc[L->nparen] = loc_at(L, p);
    L->paren[L->nparen++] = *p;
}

static void close_paren(Lexer *L, const char *p)
{
    char want = *p == ')' ? '(' : *p == ']' ? '[' : '{';
    if (L->nparen_over > 0) {
        L->nparen_over--;
        return;
    }
    if (L->nparen == 0) {
        L->paren_error = true;
        lex_error(L, p, "unmatched '%c'", *p);
        return;
    }
    if (L->paren[L->nparen - 1] != want) {
        char open = L->paren[L->nparen - 1];
        lex_error(L, p, "closing parenthesis '%c' does not match opening parenthesis '%c' on line %d",
                  *p, open, L->paren_loc[L->nparen - 1].line);
        L->paren_error = true;
    }
    L->nparen--;
}

/* ---- operators ---- */

typedef struct OpTok {
    const char *s;
    TokKind k;
} OpTok;

/* Longest first within each leading character. */
static const OpTok op_toks[] = {
    {"**=", TK_DSTAREQ}, {"//=", TK_DSLASHEQ}, {">>=", TK_RSHIFTEQ}, {"<<=", TK_LSHIFTEQ},
    {"...", TK_ELLIPSIS}, {"->", TK_ARROW}, {":=", TK_WALRUS}, {"**", TK_DSTAR},
    {"//", TK_DSLASH}, {"<<", TK_LSHIFT}, {">>", TK_RSHIFT}, {"<=", TK_LE}, {">=", TK_GE},
    {"==", TK_EQ}, {"!=", TK_NE}, {"+=", TK_PLUSEQ}, {"-=", TK_MINUSEQ}, {"*=", TK_STAREQ},
    {"/=", TK_SLASHEQ}, {"%=", TK_PERCENTEQ}, {"&=", TK_AMPEQ}, {"|=", TK_PIPEEQ},
    {"^=", TK_CARETEQ}, {"@=", TK_ATEQ}, {"(", TK_LPAREN}, {")", TK_RPAREN},
    {"[", TK_LBRACKET}, {"]", TK_RBRACKET}, {"{", TK_LBRACE}, {"}", TK_RBRACE},
    {",", TK_COMMA}, {":", TK_COLON}, {";", TK_SEMI}, {".", TK_DOT}, {"@", TK_AT},
    {"=", TK_ASSIGN}, {"+", TK_PLUS}, {"-", TK_MINUS}, {"*", TK_STAR}, {"/", TK_SLASH},
    {"%", TK_PERCENT}, {"&", TK_AMP}, {"|", TK_PIPE}, {"^", TK_CARET}, {"~", TK_TILDE},
    {"<", TK_LT}, {">", TK_GT},
};

static bool lex_operator(Lexer *L)
{
    const char *p = L->p;
    for (size_t i = 0; i < sizeof op_toks / sizeof op_toks[0]; i++) {
        const char *s = op_toks[i].s;
        if (s[0] != p[0] || (s[1] && (s[1] != p[1] || (s[2] && s[2] != p[2]))))
            continue;
        size_t n = s[1] ? s[2] ? 3 : 2 : 1;
        TokKind k = op_toks[i].k;
        if (k == TK_LPAREN || k == TK_LBRACKET || k == TK_LBRACE)
            open_paren(L, p);
        else if (k == TK_RPAREN || k == TK_RBRACKET || k == TK_RBRACE)
            close_paren(L, p);
        push(L, k, p, (int)n);
        L->p = p + n;
        return true;
    }
    return false;
}

/* ---- driver ---- */

Token *lex(Arena *a, Diags *d, const char *file, const char *text, int *ntok)
{
    Lexer L = {0};
    L.a = a;
    L.d = d;
    L.file = file;
    L.src = text;
    L.p = text;
    if ((unsigned char)L.p[0] == 0xEF && (unsigned char)L.p[1] == 0xBB && (unsigned char)L.p[2] == 0xBF)
        L.p += 3; /* UTF-8 BOM; columns still count it, like the editor shows */
    L.line_start = text;
    L.line = 1;
    L.indents[0] = 0;
    L.nindent = 1;
    vec_reserve(a, L.toks, 256);

    bool at_line_start = true;
    for (;;) {
        if (at_line_start && L.nparen == 0) {
            if (!begin_line(&L))
                break;
            at_line_start = false;
        }
        const char *p = L.p;
        if (!*p)
            break;
        if (*p == ' ' || *p == '\t' || *p == '\f') {
            L.p++;
            continue;
        }
        if (*p == '#') {
            while (*L.p && !at_eol(L.p))
                L.p++;
            continue;
        }
        int eol = at_eol(p);
        if (eol) {
            if (L.nparen == 0 && L.line_has_tokens) {
                push(&L, TK_NEWLINE, p, 0);
                L.line_has_tokens = false;
            }
            L.p = p + eol;
            newline(&L, L.p);
            at_line_start = L.nparen == 0;
            continue;
        }
        if (*p == '\\') {
            int e2 = at_eol(p + 1);
            if (e2) { /* explicit line joining */
                L.p = p + 1 + e2;
                newline(&L, L.p);
                continue;
            }
            lex_error(&L, p, "unexpected character after line continuation character");
            L.p++;
            continue;
        }
        if (is_name_start((unsigned char)*p)) {
            const char *e = p;
            while (is_name_char((unsigned char)*e))
                e++;
            bool raw, fmt, bytes;
            if (string_prefix(p, e, &raw, &fmt, &bytes)) {
                L.p = e;
                lex_string(&L, p, raw, fmt, bytes);
                continue;
            }
            push(&L, TK_NAME, p, (int)(e - p));
            L.p = e;
            continue;
        }
        if (is_digit(*p) || (*p == '.' && is_digit(p[1]))) {
            lex_number(&L);
            continue;
        }
        if (*p == '\'' || *p == '"') {
            lex_string(&L, p, false, false, false);
            continue;
        }
        if (lex_operator(&L))
            continue;
        unsigned char c = (unsigned char)*p;
        if (c == '!')
            lex_error(&L, p, "invalid syntax: '!' (did you mean '!=' or 'not'?)");
        else if (c >= 0x20 && c < 0x7F)
            lex_error(&L, p, "invalid character '%c'", c);
        else
            lex_error(&L, p, "invalid character (byte 0x%02x)", c);
        L.p++;
    }
    /* End of input: close unclosed brackets, the last line, every block. */
    for (int i = 0; i < L.nparen && !L.paren_error; i++)
        diag_error(d, L.paren_loc[i], "'%c' was never closed", L.paren[i]);
    if (L.line_has_tokens)
        push(&L, TK_NEWLINE, L.p, 0);
    while (L.nindent > 1) {
        L.nindent--;
        push(&L, TK_DEDENT, L.p, 0);
    }
    push(&L, TK_EOF, L.p, 0);
    *ntok = L.toks.n;
    return L.toks.v;
}

const char *lex_fstring_text(Arena *a, Diags *d, const char *file, int line, const char *line_start,
                             const char *p, const char *end, bool raw)
{
    Lexer L = {0};
    L.a = a;
    L.d = d;
    L.file = file;
    L.src = line_start;
    L.line = line;
    L.line_start = line_start;
    Buf b = {.a = a};
    while (p < end) {
        int eol = at_eol(p);
        if (eol) {
            buf_putc(&b, '\n');
            p += eol;
            newline(&L, p);
            continue;
        }
        if ((*p == '{' || *p == '}') && p + 1 < end && p[1] == *p) {
            buf_putc(&b, *p);
            p += 2;
            continue;
        }
        if (*p == '\\' && p + 1 < end) {
            int e2 = at_eol(p + 1);
            if (e2 && !raw) { /* a line continuation inside the literal */
                p += 1 + e2;
                newline(&L, p);
                continue;
            }
            if (!raw && p[1] != '{' && p[1] != '}') {
                Buf one = {.a = a};
                const char *q = decode_escape(&L, p, &one);
                if (q > end)
                    q = end;
                buf_puts(&b, buf_str(&one));
                p = q;
                continue;
            }
        }
        buf_putc(&b, *p++);
    }
    return buf_str(&b);
}
