/* irparse.c -- textual IR -> Func.
 *
 * Job: read back what ir_print writes (docs/IR.md, "Textual IR"), so every
 * pass can be tested on its own and IR can be written by hand.
 *
 * Requires: nothing of the input -- any byte string is accepted without a
 * crash (the fuzzer feeds garbage); nesting of regions is bounded.
 * Guarantees: a Func built with the ir.c builders whose Locs point into the
 * IR text (file:line:col); every name used was defined before, in the same
 * region or an enclosing one; no name is defined twice; op names, result
 * counts, operand keywords and attributes have the right syntax.  Types of
 * operands are NOT checked here: that is the verifier's job (ir_verify),
 * which callers run next.
 *
 * Lines matter: an instruction ends at the end of its line, which gives
 * errors a precise place ("expected ':' and a type after the operands" at
 * the end of the line).  Blank lines and comments (`#` to end of line) are
 * skipped.  Value names are `%[A-Za-z0-9_.]+`; purely numeric names carry
 * no hint, others become the value's source-name hint, so printing the
 * parsed Func gives the same names back.
 *
 * The first error stops the parse (longjmp to ir_parse): later errors would
 * mostly be consequences of the first.  ir_parse_next reads one kernel of a
 * longer text (a Program's: plan/text.c reads its kernels one after the other
 * and its plan), leaving the position after it.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/base.h"
#include "ir/ir.h"

#define MAX_DEPTH 100  /* regions nested deeper are refused */
#define MAX_VALUES 256 /* operands / results / iter_args of one instruction */

typedef enum PTok {
    P_EOF, P_NL, P_VAL, P_AT, P_ID, P_INT, P_FLOAT, P_STR,
    P_LPAREN, P_RPAREN, P_LBRACK, P_RBRACK, P_LBRACE, P_RBRACE,
    P_COMMA, P_COLON, P_EQ, P_STAR, P_ARROW,
} PTok;

static const char *const ptok_names[] = {
    "end of input", "end of line", "value name", "'@' name", "name", "integer", "float", "string",
    "'('", "')'", "'['", "']'", "'{'", "'}'", "','", "':'", "'='", "'*'", "'->'",
};

typedef struct Tok {
    PTok kind;
    Loc loc;
    const char *text; /* P_VAL, P_AT: the name after the sigil; else the token */
    int len;
    int64_t ival;     /* P_INT */
    bool big;         /* P_INT above INT64_MAX: ival holds the u64 bit pattern */
    double fval;      /* P_FLOAT (also P_INT's value) */
    const char *str;  /* P_STR: decoded */
} Tok;

/* One name of the function: defined once; visible while its region is open. */
typedef struct Entry {
    const char *name;
    ValId v;
    bool visible;
} Entry;

typedef struct P {
    Arena *a;
    Diags *d;
    Func *f;
    const char *file;
    const char *src, *pos; /* the text; where the lexer stands (after tok) */
    int line;
    const char *line_start;
    Tok tok;               /* the current token */
    jmp_buf fail;
    Vec(Entry) ents;
    int *table; /* open addressing: entry index + 1, 0 = empty */
    uint32_t mask;
    Vec(int) scope; /* entries defined in the open regions, innermost last */
    IrPlanText *pt; /* the header's tapes, spread and fold */
} P;

static _Noreturn void perr(P *p, Loc loc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_verror(p->d, loc, fmt, ap);
    va_end(ap);
    longjmp(p->fail, 1);
}

/* ------------------------------------------------------------------ */
/* Lexer                                                               */
/* ------------------------------------------------------------------ */

static bool is_name_char(char c)
{
    return c == '_' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z');
}

static Loc loc_here(P *p, const char *at)
{
    return (Loc){p->file, p->line, (int)(at - p->line_start) + 1};
}

/* What the current token looks like, for messages. */
static const char *tok_desc(P *p, const Tok *t)
{
    switch (t->kind) {
    case P_VAL:
        return arena_printf(p->a, "'%%%.*s'", t->len, t->text);
    case P_AT:
        return arena_printf(p->a, "'@%.*s'", t->len, t->text);
    case P_ID: case P_INT: case P_FLOAT:
        return arena_printf(p->a, "'%.*s'", t->len > 40 ? 40 : t->len, t->text);
    default:
        return ptok_names[t->kind];
    }
}

/* Number: [-]digits[.digits][(e|E)[+-]digits], or [-]inf / nan. */
static void lex_number(P *p, Tok *t, const char *s)
{
    const char *q = s;
    if (*q == '-')
        q++;
    if (!strncmp(q, "inf", 3) && !is_name_char(q[3])) {
        t->kind = P_FLOAT;
        t->fval = *s == '-' ? -INFINITY : INFINITY;
        t->len = (int)(q + 3 - s);
        return;
    }
    if (*q < '0' || *q > '9')
        perr(p, t->loc, "expected a number after '-'");
    bool is_float = false;
    while (*q >= '0' && *q <= '9')
        q++;
    if (*q == '.') {
        is_float = true;
        q++;
        while (*q >= '0' && *q <= '9')
            q++;
    }
    if (*q == 'e' || *q == 'E') {
        const char *e = q + 1;
        if (*e == '+' || *e == '-')
            e++;
        if (*e >= '0' && *e <= '9') {
            is_float = true;
            q = e;
            while (*q >= '0' && *q <= '9')
                q++;
        }
    }
    if (is_name_char(*q))
        perr(p, t->loc, "malformed number '%.*s'", (int)(q - s + 1), s);
    t->len = (int)(q - s);
    char *tmp = arena_strndup(p->a, s, (size_t)t->len);
    errno = 0;
    if (is_float) {
        t->kind = P_FLOAT;
        t->fval = strtod(tmp, NULL);
    } else {
        t->kind = P_INT;
        t->ival = strtoll(tmp, NULL, 10);
        if (errno == ERANGE && *s != '-') { /* u64 constants above INT64_MAX */
            errno = 0;
            t->ival = (int64_t)strtoull(tmp, NULL, 10);
            t->big = true;
        }
        if (errno == ERANGE)
            perr(p, t->loc, "integer %s out of the range of i64 and u64", tmp);
        t->fval = (double)t->ival;
    }
}

/* "..." with escapes \" \\ \n \t \xNN. */
/* Reads the quoted string at s (s[0] == '"'): the escapes \n \t \" \\ and \xHH (not \x00).
 * Returns its text in a and *end after the closing quote; NULL on an error, with *err the
 * message and *at where it stands.  The IR's lexer and a Program's text (plan/text.c) read
 * strings with it. */
static const char *str_fail(const char **at, const char **err, const char *where, const char *msg)
{
    *at = where, *err = msg;
    return NULL;
}

const char *ir_string_read(Arena *a, const char *s, const char **end, const char **at, const char **err)
{
    Buf b = {.a = a};
    buf_puts(&b, "");
    const char *q = s + 1;
    for (;;) {
        char c = *q;
        if (c == '\0' || c == '\n')
            return str_fail(at, err, s, "unterminated string");
        q++;
        if (c == '"')
            break;
        if (c != '\\') {
            buf_putc(&b, c);
            continue;
        }
        c = *q++;
        if (c == 'n')
            buf_putc(&b, '\n');
        else if (c == 't')
            buf_putc(&b, '\t');
        else if (c == '"' || c == '\\')
            buf_putc(&b, c);
        else if (c == 'x' && q[0] && strchr("0123456789abcdefABCDEF", q[0]) && q[1] &&
                 strchr("0123456789abcdefABCDEF", q[1])) {
            char hex[3] = {q[0], q[1], 0};
            int v = (int)strtol(hex, NULL, 16);
            if (v == 0)
                return str_fail(at, err, q - 2, "'\\x00' is not allowed in a string");
            buf_putc(&b, (char)v);
            q += 2;
        } else {
            return str_fail(at, err, q - 2, "unknown escape sequence in string");
        }
    }
    *end = q;
    return buf_str(&b);
}

static void lex_string(P *p, Tok *t, const char *s)
{
    const char *end, *at, *err;
    const char *text = ir_string_read(p->a, s, &end, &at, &err);
    if (!text) {
        if (at == s)
            perr(p, t->loc, "%s", err);
        perr(p, loc_here(p, at), "%s", err);
    }
    t->kind = P_STR;
    t->str = text;
    t->len = (int)(end - s);
}

/* Scans the token at p->pos into p->tok. */
static void next(P *p)
{
    const char *s = p->pos;
    for (;;) {
        while (*s == ' ' || *s == '\t' || *s == '\r')
            s++;
        if (*s == '#')
            while (*s && *s != '\n')
                s++;
        else
            break;
    }
    Tok *t = &p->tok;
    memset(t, 0, sizeof *t);
    t->loc = loc_here(p, s);
    t->text = s;
    t->len = 1;
    char c = *s;
    if (c == '\0') {
        t->kind = P_EOF;
        t->len = 0;
    } else if (c == '\n') {
        t->kind = P_NL;
        p->line++;
        p->line_start = s + 1;
    } else if (c == '%' || c == '@') {
        const char *q = s + 1;
        while (is_name_char(*q))
            q++;
        if (q == s + 1)
            perr(p, t->loc, "expected a name after '%c'", c);
        t->kind = c == '%' ? P_VAL : P_AT;
        t->text = s + 1;
        t->len = (int)(q - s - 1);
        s = q - 1;
    } else if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        const char *q = s;
        while (is_name_char(*q))
            q++;
        t->kind = P_ID;
        t->len = (int)(q - s);
        if ((t->len == 3 && !memcmp(s, "inf", 3)) || (t->len == 3 && !memcmp(s, "nan", 3))) {
            t->kind = P_FLOAT;
            t->fval = s[0] == 'i' ? INFINITY : NAN;
        }
        s = q - 1;
    } else if ((c >= '0' && c <= '9') || (c == '-' && s[1] != '>')) {
        lex_number(p, t, s);
        s += t->len - 1;
    } else if (c == '"') {
        lex_string(p, t, s);
        s += t->len - 1;
    } else {
        static const char punct[] = "()[]{},:=*";
        static const PTok kinds[] = {P_LPAREN, P_RPAREN, P_LBRACK, P_RBRACK, P_LBRACE,
                                     P_RBRACE, P_COMMA, P_COLON, P_EQ, P_STAR};
        const char *k = strchr(punct, c);
        if (c == '-') {
            t->kind = P_ARROW;
            t->len = 2;
            s++;
        } else if (k) {
            t->kind = kinds[k - punct];
        } else if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f) {
            perr(p, t->loc, "unexpected character '%c'", c);
        } else {
            perr(p, t->loc, "unexpected byte 0x%02x", (unsigned char)c);
        }
    }
    p->pos = s + (c ? 1 : 0);
}

static bool at(P *p, PTok k) { return p->tok.kind == k; }

static bool at_id(P *p, const char *w)
{
    return p->tok.kind == P_ID && (size_t)p->tok.len == strlen(w) && !memcmp(p->tok.text, w, (size_t)p->tok.len);
}

static bool accept(P *p, PTok k)
{
    if (!at(p, k))
        return false;
    next(p);
    return true;
}

static Tok expect(P *p, PTok k, const char *what)
{
    if (!at(p, k))
        perr(p, p->tok.loc, "expected %s, found %s", what, tok_desc(p, &p->tok));
    Tok t = p->tok;
    next(p);
    return t;
}

static void expect_id(P *p, const char *w)
{
    if (!at_id(p, w))
        perr(p, p->tok.loc, "expected '%s', found %s", w, tok_desc(p, &p->tok));
    next(p);
}

static void skip_nls(P *p)
{
    while (at(p, P_NL))
        next(p);
}

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

static uint32_t hash_name(const char *s, int n)
{
    uint32_t h = 2166136261u;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return h;
}

/* The slot of name in the table: its entry, or the empty slot for it. */
static int *lookup_slot(P *p, const char *s, int n)
{
    for (uint32_t i = hash_name(s, n) & p->mask;; i = (i + 1) & p->mask) {
        int e = p->table[i];
        if (!e)
            return &p->table[i];
        const char *name = p->ents.v[e - 1].name;
        if ((int)strlen(name) == n && !memcmp(name, s, (size_t)n))
            return &p->table[i];
    }
}

static void grow_table(P *p)
{
    uint32_t cap = (p->mask + 1) * 2;
    p->table = arena_alloc(p->a, cap * sizeof *p->table);
    p->mask = cap - 1;
    for (int e = 0; e < p->ents.n; e++) {
        const char *name = p->ents.v[e].name;
        *lookup_slot(p, name, (int)strlen(name)) = e + 1;
    }
}

/* Defines the name of token t (a P_VAL) as a new value of type ty, in the
 * innermost open region: a kernel parameter, a parameter of block
 * params_of or, with neither, an instruction result that the caller
 * stores.  Purely numeric names carry no hint. */
static ValId define_(P *p, const Tok *t, Type ty, Block *params_of, bool kernel_param)
{
    int *slot = lookup_slot(p, t->text, t->len);
    if (*slot) {
        Entry *e = &p->ents.v[*slot - 1];
        perr(p, t->loc, "redefinition of %%%s (first defined at %d:%d)", e->name,
             p->f->vals.v[e->v].loc.line, p->f->vals.v[e->v].loc.col);
    }
    bool numeric = true;
    for (int i = 0; i < t->len; i++)
        if (t->text[i] < '0' || t->text[i] > '9')
            numeric = false;
    const char *name = arena_strndup(p->a, t->text, (size_t)t->len);
    const char *hint = numeric ? NULL : name;
    ValId v = kernel_param ? ir_param_add(p->f, ty, hint, t->loc)
              : params_of             ? ir_block_param_add(p->f, params_of, ty, hint, t->loc)
                                      : ir_value_new(p->f, ty, hint, t->loc);
    Entry e = {name, v, true};
    vec_push(p->a, p->ents, e);
    *slot = p->ents.n;
    vec_push(p->a, p->scope, p->ents.n - 1);
    if ((uint32_t)p->ents.n * 2 > p->mask)
        grow_table(p);
    return v;
}
#define define(p, t, ty, params_of) define_((p), (t), (ty), (params_of), false)

/* The value a name token refers to. */
static ValId use(P *p, const Tok *t)
{
    int e = *lookup_slot(p, t->text, t->len);
    if (!e)
        perr(p, t->loc, "use of undefined value %%%.*s", t->len, t->text);
    if (!p->ents.v[e - 1].visible)
        perr(p, t->loc, "use of %%%.*s outside the region that defines it", t->len, t->text);
    return p->ents.v[e - 1].v;
}

static ValId parse_use(P *p)
{
    Tok t = expect(p, P_VAL, "a value name (%name)");
    return use(p, &t);
}

/* Regions: names defined inside are hidden when the region closes. */
static int scope_open(P *p) { return p->scope.n; }
static void scope_close(P *p, int mark)
{
    while (p->scope.n > mark)
        p->ents.v[p->scope.v[--p->scope.n]].visible = false;
}

/* ------------------------------------------------------------------ */
/* Types and attributes                                                */
/* ------------------------------------------------------------------ */

/* type := ['*'] dtype ['[' int (',' int)* ']'] */
static Type parse_type(P *p)
{
    Loc loc = p->tok.loc;
    bool ptr = accept(p, P_STAR);
    if (!at(p, P_ID))
        perr(p, p->tok.loc, "expected a type, found %s", tok_desc(p, &p->tok));
    Dtype dt = dtype_parse(p->tok.text, (size_t)p->tok.len);
    if (dt == DT_VOID || dt == DT_PTR)
        perr(p, p->tok.loc, "unknown type '%.*s'", p->tok.len, p->tok.text);
    next(p);
    int32_t shape[KAD_MAX_RANK];
    int rank = 0;
    if (accept(p, P_LBRACK)) {
        do {
            Tok d = p->tok;
            if (!at(p, P_INT) || d.ival <= 0 || d.ival > INT32_MAX)
                perr(p, d.loc, "expected a dimension (a positive integer), found %s", tok_desc(p, &d));
            if (rank == KAD_MAX_RANK)
                perr(p, d.loc, "tiles have at most %d dimensions", KAD_MAX_RANK);
            shape[rank++] = (int32_t)d.ival;
            next(p);
        } while (accept(p, P_COMMA));
        expect(p, P_RBRACK, "']' after the dimensions");
    }
    int64_t numel = 1;
    for (int i = 0; i < rank; i++) {
        numel *= shape[i]; /* stays below 2^62: checked after each factor */
        if (numel > INT32_MAX)
            perr(p, loc, "tile of more than 2^31-1 elements");
    }
    return ptr ? type_ptr(dt, rank, shape) : type_tile(dt, rank, shape);
}

typedef enum AKind { A_FLAG, A_INT, A_LIST, A_ID, A_STR } AKind;
typedef struct Attr {
    const char *key;
    AKind kind;
    Loc loc;
    int64_t ival;
    int32_t ints[KAD_MAX_RANK];
    int nints;
    const char *s; /* A_ID, A_STR */
} Attr;

/* attrs := '{' attr (',' attr)* '}'
 * attr  := name ['=' (int | '[' int (',' int)* ']' | name | string)] */
static int parse_attrs(P *p, Attr *out, int max)
{
    int n = 0;
    expect(p, P_LBRACE, "'{'");
    do {
        Tok k = expect(p, P_ID, "an attribute name");
        if (n == max)
            perr(p, k.loc, "too many attributes");
        Attr *at_ = &out[n++];
        memset(at_, 0, sizeof *at_);
        at_->key = arena_strndup(p->a, k.text, (size_t)k.len);
        at_->loc = k.loc;
        for (int i = 0; i < n - 1; i++)
            if (!strcmp(out[i].key, at_->key))
                perr(p, k.loc, "attribute '%s' given twice", at_->key);
        if (!accept(p, P_EQ)) {
            at_->kind = A_FLAG;
            continue;
        }
        if (at(p, P_INT)) {
            at_->kind = A_INT;
            at_->ival = p->tok.ival;
            next(p);
        } else if (accept(p, P_LBRACK)) {
            at_->kind = A_LIST;
            do {
                Tok v = p->tok;
                if (!at(p, P_INT) || v.ival < INT32_MIN || v.ival > INT32_MAX)
                    perr(p, v.loc, "expected an integer (i32) in the list, found %s", tok_desc(p, &v));
                if (at_->nints == KAD_MAX_RANK)
                    perr(p, v.loc, "lists have at most %d elements", KAD_MAX_RANK);
                at_->ints[at_->nints++] = (int32_t)v.ival;
                next(p);
            } while (accept(p, P_COMMA));
            expect(p, P_RBRACK, "']' after the list");
        } else if (at(p, P_ID)) {
            at_->kind = A_ID;
            at_->s = arena_strndup(p->a, p->tok.text, (size_t)p->tok.len);
            next(p);
        } else if (at(p, P_STR)) {
            at_->kind = A_STR;
            at_->s = p->tok.str;
            next(p);
        } else {
            perr(p, p->tok.loc, "expected an attribute value, found %s", tok_desc(p, &p->tok));
        }
    } while (accept(p, P_COMMA));
    expect(p, P_RBRACE, "'}' after the attributes");
    return n;
}

static bool is_reduction(OpKind op)
{
    return op == OP_SUM || op == OP_MAX || op == OP_MIN || op == OP_ARGMAX || op == OP_ARGMIN;
}

/* Stores the attributes of an op into in; unknown, missing or ill-typed
 * attributes are errors. */
static void apply_attrs(P *p, Inst *in, const Attr *as, int n, Loc oploc)
{
    OpKind op = (OpKind)in->op;
    const char *name = op_info[op].name;
    bool has_axis = is_reduction(op) || op == OP_CUMSUM || op == OP_CUMPROD || op == OP_EXPAND_DIMS ||
                    op == OP_FLIP || op == OP_GATHER;
    /* the one integer attribute of split, sort, histogram */
    const char *int_key = op == OP_SPLIT ? "half" : op == OP_SORT ? "k" : op == OP_HISTOGRAM ? "bins"
                        : op == OP_BARRIER ? "lanes" : NULL;
    bool seen_int = false;
    bool has_list = op == OP_PERMUTE || op == OP_MULTIPLE_OF || op == OP_MAX_CONTIGUOUS;
    const char *list_key = op == OP_PERMUTE ? "perm" : "values";
    bool seen_axis = false, seen_list = false;
    for (int i = 0; i < n; i++) {
        const Attr *a = &as[i];
        AKind want;
        if (has_axis && !strcmp(a->key, "axis")) {
            want = A_INT;
            in->ival = a->ival;
            seen_axis = true;
        } else if (is_reduction(op) && !strcmp(a->key, "keep_dims")) {
            want = A_FLAG;
            in->flags |= IF_KEEP_DIMS;
        } else if ((op == OP_CUMSUM || op == OP_CUMPROD) && !strcmp(a->key, "reverse")) {
            want = A_FLAG;
            in->flags |= IF_REVERSE;
        } else if (int_key && !strcmp(a->key, int_key)) {
            want = A_INT;
            in->ival = a->ival;
            seen_int = true;
        } else if (op == OP_SORT && !strcmp(a->key, "descending")) {
            want = A_FLAG;
            in->flags |= IF_REVERSE;
        } else if (has_list && !strcmp(a->key, list_key)) {
            want = A_LIST;
            memcpy(in->ints, a->ints, sizeof in->ints);
            in->nints = a->nints;
            seen_list = true;
        } else if (op == OP_DOT && !strcmp(a->key, "precision")) {
            want = A_ID;
            int k = 0;
            while (k < 4 && !(a->kind == A_ID && !strcmp(a->s, ir_dot_prec_name(k))))
                k++;
            if (a->kind == A_ID && k == 4)
                perr(p, a->loc, "unknown dot precision '%s' (expected default, tf32, tf32x3 or ieee)", a->s);
            in->ival = k;
        } else if ((op == OP_CUSTOM_VJP || op == OP_CUSTOM_JVP) && !strcmp(a->key, "rule")) {
            want = A_INT;
            in->ival = a->ival;
            seen_axis = true;
        } else if ((op == OP_ADD_ROUND || op == OP_SUB_ROUND || op == OP_MUL_ROUND || op == OP_DIV_ROUND ||
                    op == OP_SQRT_ROUND || op == OP_RCP_ROUND || op == OP_FMA_ROUND) && !strcmp(a->key, "round")) {
            want = A_ID;
            int k = 0;
            while (k < 4 && !(a->kind == A_ID && !strcmp(a->s, libm_rounding_names[k])))
                k++;
            if (a->kind == A_ID && k == 4)
                perr(p, a->loc, "unknown rounding '%s' (expected rn, rz, rd or ru)", a->s);
            in->ival = k & 3;
        } else if (op == OP_ASSERT && !strcmp(a->key, "msg")) {
            want = A_STR;
            in->sattr = a->s;
        } else {
            perr(p, a->loc, "unknown attribute '%s' for '%s'", a->key, name);
        }
        if (a->kind != want) {
            static const char *const what[] = {"no value", "an integer", "a list of integers",
                                               "a name", "a string"};
            perr(p, a->loc, "attribute '%s' of '%s' takes %s", a->key, name, what[want]);
        }
    }
    if ((op == OP_CUSTOM_VJP || op == OP_CUSTOM_JVP) && !seen_axis)
        perr(p, oploc, "'%s' needs the attribute {rule = N}", name);
    if (has_axis && !seen_axis)
        perr(p, oploc, "'%s' needs the attribute {axis = N}", name);
    if (int_key && !seen_int && op != OP_BARRIER) /* a plain barrier has none */
        perr(p, oploc, "'%s' needs the attribute {%s = N}", name, int_key);
    if (has_list && !seen_list)
        perr(p, oploc, "'%s' needs the attribute {%s = [...]}", name, list_key);
    if (op == OP_ASSERT && !in->sattr)
        in->sattr = "";
}

/* ------------------------------------------------------------------ */
/* Instructions and regions                                            */
/* ------------------------------------------------------------------ */

static void parse_block(P *p, Block *b, int depth, Loc open);

static void expect_eol(P *p, const char *after)
{
    if (!at(p, P_NL) && !at(p, P_EOF))
        perr(p, p->tok.loc, "expected the end of the line after %s, found %s", after, tok_desc(p, &p->tok));
}

/* region := '{' NL inst* '}' ; the region's params are already defined. */
static void parse_region_body(P *p, Block *b, int depth)
{
    Tok open = expect(p, P_LBRACE, "'{' to open a region");
    if (!at(p, P_NL))
        perr(p, p->tok.loc, "expected the end of the line after '{', found %s", tok_desc(p, &p->tok));
    parse_block(p, b, depth + 1, open.loc);
    expect(p, P_RBRACE, "'}'");
}

/* '-> (' type (',' type)* ')', or nothing. */
static int parse_result_types(P *p, Type *tys, int max)
{
    int n = 0;
    if (!accept(p, P_ARROW))
        return 0;
    expect(p, P_LPAREN, "'(' after '->'");
    do {
        if (n == max)
            perr(p, p->tok.loc, "too many results");
        tys[n++] = parse_type(p);
    } while (accept(p, P_COMMA));
    expect(p, P_RPAREN, "')' after the result types");
    return n;
}

/* bindings := '(' [%param '=' %init (',' %param '=' %init)*] ')'
 * Reads the names; the params are defined by the caller once the region
 * opens (inits are uses in the enclosing region). */
static int parse_bindings(P *p, Tok *names, ValId *inits, int max)
{
    int n = 0;
    expect(p, P_LPAREN, "'('");
    if (accept(p, P_RPAREN))
        return 0;
    do {
        if (n == max)
            perr(p, p->tok.loc, "too many loop-carried values");
        names[n] = expect(p, P_VAL, "a value name (%name)");
        expect(p, P_EQ, "'=' after the loop-carried value's name");
        inits[n] = parse_use(p);
        n++;
    } while (accept(p, P_COMMA));
    expect(p, P_RPAREN, "')'");
    return n;
}

/* Emits a control-flow instruction whose regions are already built, then
 * defines its results (visible only after it). */
static void emit_cf(P *p, Block *b, OpKind op, const ValId *args, int nargs, Block **regs, int nregs,
                    const Tok *res, const Type *tys, int nres, Loc loc)
{
    Inst *in = ir_emit(p->f, b, op, args, nargs, NULL, 0, loc);
    in->regions = arena_alloc(p->a, (size_t)nregs * sizeof *in->regions);
    memcpy(in->regions, regs, (size_t)nregs * sizeof *regs);
    in->nregions = nregs;
    if (nres) {
        ValId *rv = arena_alloc(p->a, (size_t)nres * sizeof *rv);
        for (int i = 0; i < nres; i++)
            rv[i] = define(p, &res[i], tys[i], NULL);
        in = &b->insts.v[b->insts.n - 1]; /* define() does not touch b, but stay safe */
        in->res = rv;
        in->nres = nres;
    }
}

static void check_result_count(P *p, int nres, int ntys, Loc loc, const char *what)
{
    if (nres != ntys)
        perr(p, loc, "'%s' names %d result%s but lists %d result type%s", what, nres, nres == 1 ? "" : "s",
             ntys, ntys == 1 ? "" : "s");
}

static Type type_of(P *p, ValId v) { return p->f->vals.v[v].ty; }

/* for := results '=' 'for' %iv '=' %lb 'to' %ub 'step' %st
 *        ['iter_args' bindings] ['->' '(' types ')'] region */
static void parse_for(P *p, Block *b, const Tok *res, int nres, Loc loc, int depth)
{
    Tok iv = expect(p, P_VAL, "the induction variable (%name)");
    expect(p, P_EQ, "'=' after the induction variable");
    ValId args[MAX_VALUES + 3];
    args[0] = parse_use(p);
    expect_id(p, "to");
    args[1] = parse_use(p);
    expect_id(p, "step");
    args[2] = parse_use(p);
    int32_t hints[LH_N] = {-1, -1, 0, 0};
    bool has_hints = false;
    if (at_id(p, "hints")) { /* hints {num_stages = 3, flatten = 1} */
        next(p);
        Attr as[6];
        int na = parse_attrs(p, as, 6);
        has_hints = true;
        for (int i = 0; i < na; i++) {
            int h = 0;
            while (h < 6 && strcmp(ir_loop_hints[h].name, as[i].key) != 0)
                h++;
            if (h == 6 || as[i].kind != A_INT || as[i].ival < 0 || as[i].ival > INT32_MAX ||
                (ir_loop_hints[h].bit && as[i].ival > 1))
                perr(p, as[i].loc, "'for' hints: expected num_stages, loop_unroll_factor (ints >= 0) or flatten, "
                     "warp_specialize, disallow_acc_multi_buffer, disable_licm (0 or 1), found '%s'", as[i].key);
            if (!ir_loop_hints[h].bit) {
                hints[h == 0 ? LH_STAGES : LH_UNROLL] = (int32_t)as[i].ival;
            } else {
                hints[LH_GIVEN] |= ir_loop_hints[h].bit;
                if (as[i].ival)
                    hints[LH_TRUE] |= ir_loop_hints[h].bit;
            }
        }
    }
    Tok names[MAX_VALUES];
    int n = 0;
    if (at_id(p, "iter_args")) {
        next(p);
        n = parse_bindings(p, names, args + 3, MAX_VALUES);
    }
    Type tys[MAX_VALUES];
    int ntys = parse_result_types(p, tys, MAX_VALUES);
    check_result_count(p, nres, ntys, loc, "for");
    if (ntys != n)
        perr(p, loc, "'for' has %d iter_args but %d result types", n, ntys);
    Block *body = ir_block_new(p->f);
    int mark = scope_open(p);
    define(p, &iv, type_of(p, args[0]), body);
    for (int i = 0; i < n; i++)
        define(p, &names[i], type_of(p, args[3 + i]), body);
    parse_region_body(p, body, depth);
    scope_close(p, mark);
    emit_cf(p, b, OP_FOR, args, n + 3, &body, 1, res, tys, nres, loc);
    if (has_hints) {
        Inst *in = &b->insts.v[b->insts.n - 1];
        memcpy(in->ints, hints, sizeof hints);
        in->nints = LH_N;
    }
}

/* if := [results '='] 'if' %cond ['->' '(' types ')'] region ['else' region] */
static void parse_if(P *p, Block *b, const Tok *res, int nres, Loc loc, int depth)
{
    ValId cond = parse_use(p);
    Type tys[MAX_VALUES];
    int ntys = parse_result_types(p, tys, MAX_VALUES);
    check_result_count(p, nres, ntys, loc, "if");
    Block *regs[2] = {ir_block_new(p->f), ir_block_new(p->f)};
    int mark = scope_open(p);
    parse_region_body(p, regs[0], depth);
    scope_close(p, mark);
    if (at_id(p, "else")) {
        next(p);
        mark = scope_open(p);
        parse_region_body(p, regs[1], depth);
        scope_close(p, mark);
    } else if (nres) {
        perr(p, p->tok.loc, "an 'if' with results needs an 'else' region");
    } else {
        ir_emit(p->f, regs[1], OP_YIELD, NULL, 0, NULL, 0, loc); /* `if` without else */
    }
    emit_cf(p, b, OP_IF, &cond, 1, regs, 2, res, tys, nres, loc);
}

/* while := [results '='] 'while' bindings ['->' '(' types ')'] region
 *          'do' '(' [%param (',' %param)*] ')' region */
static void parse_while(P *p, Block *b, const Tok *res, int nres, Loc loc, int depth)
{
    Tok names[MAX_VALUES];
    ValId inits[MAX_VALUES];
    int n = parse_bindings(p, names, inits, MAX_VALUES);
    Type tys[MAX_VALUES];
    int ntys = parse_result_types(p, tys, MAX_VALUES);
    check_result_count(p, nres, ntys, loc, "while");
    if (ntys != n)
        perr(p, loc, "'while' has %d loop-carried values but %d result types", n, ntys);
    Block *regs[2] = {ir_block_new(p->f), ir_block_new(p->f)};
    int mark = scope_open(p);
    for (int i = 0; i < n; i++)
        define(p, &names[i], type_of(p, inits[i]), regs[0]);
    parse_region_body(p, regs[0], depth);
    scope_close(p, mark);
    expect_id(p, "do");
    expect(p, P_LPAREN, "'(' after 'do'");
    mark = scope_open(p);
    int nb = 0;
    if (!at(p, P_RPAREN)) {
        do {
            Tok t = expect(p, P_VAL, "a value name (%name)");
            if (nb == n)
                perr(p, t.loc, "'do' names more values than the while carries (%d)", n);
            define(p, &t, type_of(p, inits[nb]), regs[1]);
            nb++;
        } while (accept(p, P_COMMA));
    }
    Tok close = expect(p, P_RPAREN, "')'");
    if (nb != n)
        perr(p, close.loc, "'do' names %d values but the while carries %d", nb, n);
    parse_region_body(p, regs[1], depth);
    scope_close(p, mark);
    emit_cf(p, b, OP_WHILE, inits, n, regs, 2, res, tys, nres, loc);
}

/* scan := results '=' 'scan' %x (',' %x)* '{' 'axis' '=' INT [',' 'reverse'] '}' '->' '(' types ')'
 *         'combine' '(' %p (',' %p)* ')' region
 * reduce := the same with 'reduce' and no 'reverse'.
 * The combine params are scalars of the operands' dtypes, twice over. */
static void parse_scan(P *p, Block *b, OpKind op, const Tok *res, int nres, Loc loc, int depth)
{
    const char *on = op_info[op].name;
    /* arena arrays: this frame is on the recursion of nested regions */
    ValId *args = arena_alloc(p->a, sizeof *args * MAX_VALUES);
    Type *tys = arena_alloc(p->a, sizeof *tys * MAX_VALUES);
    int n = 0;
    do {
        if (n == MAX_VALUES / 2)
            perr(p, p->tok.loc, "too many operands");
        args[n++] = parse_use(p);
    } while (accept(p, P_COMMA));
    Attr as[2];
    int na = parse_attrs(p, as, 2);
    int64_t axis = -1;
    uint16_t flags = 0;
    for (int i = 0; i < na; i++) {
        if (!strcmp(as[i].key, "axis") && as[i].kind == A_INT)
            axis = as[i].ival;
        else if (op == OP_SCAN && !strcmp(as[i].key, "reverse") && as[i].kind == A_FLAG)
            flags |= IF_REVERSE;
        else
            perr(p, as[i].loc, "'%s' takes the attributes {axis = N%s}, found '%s'", on,
                 op == OP_SCAN ? "[, reverse]" : "", as[i].key);
    }
    if (axis < 0)
        perr(p, loc, "'%s' needs the attribute {axis = N}", on);
    int ntys = parse_result_types(p, tys, MAX_VALUES);
    check_result_count(p, nres, ntys, loc, on);
    if (ntys != n)
        perr(p, loc, "'%s' has %d operands but %d result types", on, n, ntys);
    expect_id(p, "combine");
    expect(p, P_LPAREN, "'(' after 'combine'");
    Block *body = ir_block_new(p->f);
    int mark = scope_open(p), np = 0;
    if (!at(p, P_RPAREN)) {
        do {
            Tok t = expect(p, P_VAL, "a value name (%name)");
            if (np == 2 * n)
                perr(p, t.loc, "'combine' names more than the %d parameters of a %s of %d operands", 2 * n, on, n);
            Type st = type_with_shape(type_of(p, args[np % n]), 0, NULL);
            define(p, &t, st, body);
            np++;
        } while (accept(p, P_COMMA));
    }
    Tok close = expect(p, P_RPAREN, "')'");
    if (np != 2 * n)
        perr(p, close.loc, "'combine' names %d parameters but a %s of %d operands has %d", np, on, n, 2 * n);
    parse_region_body(p, body, depth);
    scope_close(p, mark);
    emit_cf(p, b, op, args, n, &body, 1, res, tys, nres, loc);
    Inst *in = &b->insts.v[b->insts.n - 1];
    in->ival = axis;
    in->flags = flags;
}

/* inst := [%r (',' %r)* '='] op [imm] [operand (',' operand)*] [attrs] [':' type] NL
 * operand := ['mask' | 'other'] %v        (keywords: load/store/atomic_add)
 * imm := number  (const, program_id, num_programs, arange) */
static void parse_inst(P *p, Block *b, int depth)
{
    Loc loc = p->tok.loc;
    Tok res[MAX_VALUES];
    int nres = 0;
    if (at(p, P_VAL)) {
        do {
            if (nres == MAX_VALUES)
                perr(p, p->tok.loc, "too many results");
            res[nres++] = expect(p, P_VAL, "a result name (%name)");
        } while (accept(p, P_COMMA));
        expect(p, P_EQ, "'=' after the result names");
    }
    if (!at(p, P_ID))
        perr(p, p->tok.loc, "expected an op name, found %s", tok_desc(p, &p->tok));
    Tok optok = p->tok;
    OpKind op = op_by_name(optok.text, (size_t)optok.len);
    if (op == OP_COUNT)
        perr(p, optok.loc, "unknown op '%.*s'", optok.len, optok.text);
    next(p);
    const OpInfo *oi = &op_info[op];
    if (op == OP_FOR || op == OP_IF || op == OP_WHILE || op == OP_SCAN || op == OP_REDUCE) {
        if (depth >= MAX_DEPTH)
            perr(p, optok.loc, "regions nested more than %d deep", MAX_DEPTH);
        if (op == OP_SCAN || op == OP_REDUCE)
            parse_scan(p, b, op, res, nres, loc, depth);
        else if (op == OP_FOR)
            parse_for(p, b, res, nres, loc, depth);
        else if (op == OP_IF)
            parse_if(p, b, res, nres, loc, depth);
        else
            parse_while(p, b, res, nres, loc, depth);
        expect_eol(p, "'}'");
        return;
    }
    if (nres != oi->nres)
        perr(p, loc, "'%s' has %d result%s, %d named", oi->name, oi->nres, oi->nres == 1 ? "" : "s", nres);

    /* immediate */
    Tok imm = {0};
    bool has_imm = op == OP_CONST || op == OP_PROGRAM_ID || op == OP_NUM_PROGRAMS || op == OP_ARANGE;
    if (has_imm) {
        imm = p->tok;
        if (!at(p, P_INT) && !(op == OP_CONST && at(p, P_FLOAT)))
            perr(p, imm.loc, "expected %s after '%s', found %s",
                 op == OP_CONST ? "a number" : "an integer", oi->name, tok_desc(p, &imm));
        next(p);
    }

    /* operands */
    ValId args[MAX_VALUES];
    int nargs = 0;
    uint16_t flags = 0;
    bool mem = op == OP_LOAD || op_writes_memory(op);
    int nfixed = op == OP_LOAD ? 1 : 2;
    if (at(p, P_VAL) || (mem && (at_id(p, "mask") || at_id(p, "other") || at_id(p, "desc")))) {
        do {
            if (nargs == MAX_VALUES)
                perr(p, p->tok.loc, "too many operands");
            if (mem && at_id(p, "desc")) {
                /* a tensor descriptor's operands (ir.h, ir_desc_at); the verifier checks them */
                if (op_is_atomic(op) || nargs < nfixed || (flags & IF_DESC))
                    perr(p, p->tok.loc, "'desc' must follow the other operands of 'load' or 'store'");
                flags |= IF_DESC;
                next(p);
            } else if (flags & IF_DESC) {
                /* the descriptor's operands continue */
            } else if (mem && at_id(p, "mask")) {
                if (nargs != nfixed || (flags & IF_HAS_MASK))
                    perr(p, p->tok.loc, "'mask' must follow the %s operand%s of '%s'",
                         op == OP_LOAD ? "pointer" : "pointer and value", op == OP_LOAD ? "" : "s", oi->name);
                flags |= IF_HAS_MASK;
                next(p);
            } else if (mem && at_id(p, "other")) {
                if (op != OP_LOAD)
                    perr(p, p->tok.loc, "'other' is only an operand of 'load'");
                if (nargs != 2 || !(flags & IF_HAS_MASK) || (flags & IF_HAS_OTHER))
                    perr(p, p->tok.loc, "'other' must follow the 'mask' operand of 'load'");
                flags |= IF_HAS_OTHER;
                next(p);
            } else if (mem && nargs >= nfixed) {
                perr(p, p->tok.loc, "extra operands of '%s' must be 'mask %%m'%s", oi->name,
                     op == OP_LOAD ? " or 'other %o'" : "");
            }
            args[nargs++] = parse_use(p);
        } while (accept(p, P_COMMA));
    }
    if (oi->nargs >= 0 && nargs != oi->nargs)
        perr(p, optok.loc, "'%s' takes %d operand%s, %d given", oi->name, oi->nargs, oi->nargs == 1 ? "" : "s",
             nargs);
    if (mem && nargs < nfixed)
        perr(p, optok.loc, "'%s' takes %s", oi->name,
             op == OP_LOAD ? "a pointer operand" : "a pointer and a value operand");

    Attr attrs[8];
    int nattrs = 0;
    if (at(p, P_LBRACE))
        nattrs = parse_attrs(p, attrs, 8);

    Type ty = {0};
    if (oi->nres == 1) {
        if (!accept(p, P_COLON))
            perr(p, p->tok.loc, "expected ':' and a type after the operands, found %s", tok_desc(p, &p->tok));
        ty = parse_type(p);
    }
    expect_eol(p, oi->nres ? "the type" : "the operands");

    Inst *in = ir_emit(p->f, b, op, args, nargs, NULL, 0, loc);
    in->flags = flags;
    apply_attrs(p, in, attrs, nattrs, optok.loc);
    if (has_imm) {
        if (op == OP_CONST && dtype_is_float((Dtype)ty.dt)) {
            in->fval = imm.fval;
        } else if (imm.kind != P_INT) {
            perr(p, imm.loc, "a constant of type %s needs an integer value", dtype_name((Dtype)ty.dt));
        } else if (imm.big && !(op == OP_CONST && ty.dt == DT_U64)) {
            perr(p, imm.loc, "integer %.*s out of range", imm.len, imm.text);
        } else {
            in->ival = imm.ival;
        }
    }
    if (oi->nres == 1) {
        ValId r = define(p, &res[0], ty, NULL);
        in = &b->insts.v[b->insts.n - 1];
        in->res = arena_alloc(p->a, sizeof *in->res);
        in->res[0] = r;
        in->nres = 1;
    }
}

/* block := (inst NL | NL)* up to the closing '}' */
static void parse_block(P *p, Block *b, int depth, Loc open)
{
    for (;;) {
        skip_nls(p);
        if (at(p, P_RBRACE))
            return;
        if (at(p, P_EOF))
            perr(p, p->tok.loc, "expected '}' to close the region opened at %d:%d", open.line, open.col);
        parse_inst(p, b, depth);
    }
}

/* consts := '[' NAME '=' value (',' NAME '=' value)* ']'
 * A value is kept as written (Python spelling): a quoted string, or the
 * text up to the next ',' or ']'.  Scanned by hand from the lexer's
 * position, since values such as tl.float16 or 'relu' are not IR tokens. */
static void parse_consts(P *p)
{
    const char *s = p->pos;
    for (;;) {
        while (*s == ' ' || *s == '\t')
            s++;
        const char *n0 = s;
        while (is_name_char(*s))
            s++;
        if (s == n0 || (*n0 >= '0' && *n0 <= '9'))
            perr(p, loc_here(p, n0), "expected a constexpr parameter name");
        const char *name = arena_strndup(p->a, n0, (size_t)(s - n0));
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s != '=')
            perr(p, loc_here(p, s), "expected '=' after constexpr parameter '%s'", name);
        s++;
        while (*s == ' ' || *s == '\t')
            s++;
        const char *v0 = s;
        if (*s == '\'' || *s == '"') {
            char q = *s++;
            while (*s && *s != q && *s != '\n')
                s += (*s == '\\' && s[1] && s[1] != '\n') ? 2 : 1;
            if (*s != q)
                perr(p, loc_here(p, v0), "unterminated string");
            s++;
        } else {
            while (*s && *s != ',' && *s != ']' && *s != '\n' && *s != '#')
                s++;
        }
        const char *v1 = s;
        while (v1 > v0 && (v1[-1] == ' ' || v1[-1] == '\t'))
            v1--;
        if (v1 == v0)
            perr(p, loc_here(p, v0), "expected a value for constexpr parameter '%s'", name);
        for (int i = 0; i < p->f->consts.n; i++)
            if (!strcmp(p->f->consts.v[i].name, name))
                perr(p, loc_here(p, n0), "constexpr parameter '%s' given twice", name);
        /* pos 0: the text does not say where the constexpr stood in the def */
        ConstParam cp = {.name = name, .value = arena_strndup(p->a, v0, (size_t)(v1 - v0))};
        vec_push(p->a, p->f->consts, cp);
        while (*s == ' ' || *s == '\t')
            s++;
        if (*s == ',') {
            s++;
            continue;
        }
        if (*s != ']')
            perr(p, loc_here(p, s), "expected ',' or ']' in the constexpr list");
        p->pos = s + 1;
        next(p);
        return;
    }
}

/* fold := 'fold' '(' 'axes' '=' '[' [INT (',' INT)*] ']' ',' 'programs' '=' '[' [%p (',' %p)*] ']'
 *          (',' %p '=' NAME ':' dtype 'span' %p ['load_store'] ['rows' INT ['flag' %p]])* ')'
 * A folded backward's plan (write/fold.c; axes = [] when only site rows);
 * its sum kernel is a kernel of the Program's text (plan_parse reads it). */
static void parse_fold(P *p)
{
    Func *f = p->f;
    Loc loc = p->tok.loc;
    expect_id(p, "fold");
    expect(p, P_LPAREN, "'(' after fold");
    expect_id(p, "axes");
    expect(p, P_EQ, "'='");
    expect(p, P_LBRACK, "'['");
    FoldPlan *pl = arena_alloc(p->a, sizeof *pl);
    pl->axis = -1;
    while (p->tok.kind == P_INT) {
        Tok ax = expect(p, P_INT, "a folded grid axis");
        if (ax.ival < 0 || ax.ival > 2 || (pl->axes & (1u << ax.ival)) || (pl->axis >= 0 && ax.ival < pl->axis))
            perr(p, ax.loc, "fold axes are distinct, increasing, among 0, 1, 2");
        if (pl->axis < 0)
            pl->axis = (int)ax.ival;
        pl->axes |= 1u << ax.ival;
        if (!accept(p, P_COMMA))
            break;
    }
    expect(p, P_RBRACK, "']'");
    expect(p, P_COMMA, "','");
    expect_id(p, "programs");
    expect(p, P_EQ, "'='");
    expect(p, P_LBRACK, "'['");
    for (int k = 0, n = 0; k < 3; k++)
        if (pl->axes & (1u << k)) {
            if (n++)
                expect(p, P_COMMA, "','");
            pl->programs[k] = parse_use(p);
        }
    expect(p, P_RBRACK, "']'");
    Vec(FoldInput) ins = {0};
    while (accept(p, P_COMMA)) {
        FoldInput in = {0};
        ValId part = parse_use(p);
        in.slot = -1;
        for (int i = 0; i < f->nparams; i++)
            if (f->params[i] == part)
                in.slot = i;
        expect(p, P_EQ, "'='");
        Tok nm = expect(p, P_ID, "the input's name");
        in.name = arena_strndup(p->a, nm.text, (size_t)nm.len);
        expect(p, P_COLON, "':'");
        Tok dt = expect(p, P_ID, "the input's dtype");
        in.dt = dtype_parse(dt.text, (size_t)dt.len);
        expect_id(p, "span");
        in.span = parse_use(p);
        if (at_id(p, "load_store")) {
            next(p);
            in.load_store = true;
        }
        if (at_id(p, "rows")) {
            next(p);
            Tok r = expect(p, P_INT, "the number of site rows");
            if (r.ival < 1 || r.ival > 1024)
                perr(p, r.loc, "site rows: between 1 and 1024");
            in.rows = (int)r.ival;
            if (at_id(p, "flag")) {
                next(p);
                in.flag = parse_use(p);
                if (ir_type(f, in.flag).dt != DT_I1 || ir_type(f, in.flag).rank)
                    perr(p, r.loc, "a site rows' flag is an i1 parameter");
            }
        }
        Type pt = ir_type(f, part);
        if (in.slot < 0 || pt.dt != DT_PTR || in.dt == DT_VOID || in.dt == DT_PTR ||
            pt.elem != fold_partial_dtype(in.dt) || ir_type(f, in.span).dt != DT_I64)
            perr(p, nm.loc, "bad fold input '%s' (a partials parameter *%s, the input's dtype, an i64 span)",
                 in.name, dtype_name(fold_partial_dtype(in.dt)));
        in.pdt = (Dtype)pt.elem;
        vec_push(p->a, ins, in);
    }
    expect(p, P_RPAREN, "')' after the fold plan");
    pl->n = ins.n;
    pl->in = ins.v;
    int naxes = 0;
    for (int k = 0; k < 3; k++)
        naxes += (pl->axes >> k) & 1;
    pl->nargs = f->nparams - pl->n - naxes;
    for (int k = 0, at = f->nparams - naxes; k < 3; k++)
        if (pl->axes & (1u << k))
            if (pl->nargs < 0 || f->params[at++] != pl->programs[k] || ir_type(f, pl->programs[k]).dt != DT_I32)
                perr(p, loc, "a fold plan's programs parameters (i32) come last, one per folded axis in order");
    if (pl->n < 1)
        perr(p, loc, "a fold plan needs at least one input");
    for (int j = 0; j < pl->n; j++)
        if (!pl->axes && !pl->in[j].rows)
            perr(p, loc, "a fold plan without axes has site rows only");
    for (int j = 0; j < pl->n; j++)
        if (f->params[pl->nargs + j] != pl->in[j].span || pl->in[j].slot >= pl->nargs)
            perr(p, loc, "a fold plan's span parameters follow the contract's parameters, in its inputs' order");
    p->pt->fold = pl;
}

/* texpr := INT | %p | ('grid' | 'pid') '(' INT ')' | OP '(' texpr ',' texpr ')'
 * (OP: add sub mul div rem max min cdiv; %p an int parameter) */
static const TapeExpr *parse_tape_expr(P *p, int depth)
{
    Func *f = p->f;
    TapeExpr *e = arena_alloc(p->a, sizeof *e);
    Tok t = p->tok;
    if (depth > 64)
        perr(p, t.loc, "a trip count nested too deeply");
    if (at(p, P_INT)) {
        next(p);
        e->op = TX_CONST;
        e->v = t.ival;
        return e;
    }
    if (at(p, P_VAL)) {
        ValId v = parse_use(p);
        e->op = TX_PARAM;
        e->v = -1;
        for (int i = 0; i < f->nparams; i++)
            if (f->params[i] == v)
                e->v = i;
        Type ty = ir_type(f, v);
        if (e->v < 0 || ty.rank || ty.dt == DT_PTR || ty.dt == DT_I1 || dtype_is_float((Dtype)ty.dt))
            perr(p, t.loc, "a trip count names only integer parameters");
        return e;
    }
    Tok nm = expect(p, P_ID, "a trip count (an integer, an int parameter, grid(K) or an operation)");
    expect(p, P_LPAREN, "'('");
    bool pid = nm.len == 3 && !strncmp(nm.text, "pid", 3);
    if ((nm.len == 4 && !strncmp(nm.text, "grid", 4)) || pid) {
        Tok k = expect(p, P_INT, "a grid axis");
        if (k.ival < 0 || k.ival > 2)
            perr(p, k.loc, "grid axes are 0, 1, 2");
        expect(p, P_RPAREN, "')'");
        e->op = pid ? TX_PID : TX_GRID;
        e->v = k.ival;
        return e;
    }
    e->op = -1;
    for (int op = TX_ADD; op <= TX_CDIV; op++)
        if (strlen(ir_tape_expr_op_name(op)) == (size_t)nm.len &&
            !strncmp(ir_tape_expr_op_name(op), nm.text, (size_t)nm.len))
            e->op = op;
    if (e->op < 0)
        perr(p, nm.loc, "unknown trip count operation '%.*s'", nm.len, nm.text);
    e->x = parse_tape_expr(p, depth + 1);
    expect(p, P_COMMA, "','");
    e->y = parse_tape_expr(p, depth + 1);
    expect(p, P_RPAREN, "')'");
    return e;
}

/* tape := 'tape' '(' %p 'trips' texpr 'slot' INT (',' %p 'trips' texpr 'slot' INT)* ')'
 * A backward's tapes (ad_tape.c): pointer parameters after the flags,
 * before a fold plan's. */
static void parse_tapes(P *p)
{
    Func *f = p->f;
    Loc loc = p->tok.loc;
    expect_id(p, "tape");
    expect(p, P_LPAREN, "'(' after tape");
    do {
        Tok pt = p->tok;
        FuncTape t = {0};
        t.param = parse_use(p);
        t.loc = loc;
        bool isparam = false;
        for (int i = 0; i < f->nparams; i++)
            isparam |= f->params[i] == t.param;
        Type ty = ir_type(f, t.param);
        if (!isparam || ty.dt != DT_PTR || ty.rank || (ty.elem != DT_F32 && ty.elem != DT_F64))
            perr(p, pt.loc, "a tape is a parameter, a pointer to fp32 or fp64");
        expect_id(p, "trips");
        t.trips = parse_tape_expr(p, 0);
        expect_id(p, "slot");
        Tok n = expect(p, P_INT, "the elements of a tape slot");
        if (n.ival < 0 || n.ival > INT32_MAX) /* 0: a loop whose reverse reads nothing back (ad_tape.c) */
            perr(p, n.loc, "a tape slot holds 0 to 2**31 - 1 elements");
        t.slot = n.ival;
        if (at_id(p, "bounded")) { /* a `while` loop's: a capacity, a head first */
            next(p);
            t.bounded = true;
        }
        if (at_id(p, "checkpointed")) { /* a `for` loop's under a tape budget: segments of ceil(sqrt(trips)) */
            next(p);
            Tok bgt = expect(p, P_INT, "the tape budget in bytes");
            t.ckpt = true;
            t.budget = bgt.ival;
            if (at_id(p, "revolve")) { /* binomial checkpointing: a plan in the tape's head */
                next(p);
                t.revolve = true;
            }
        }
        vec_push(p->a, p->pt->tapes, t);
    } while (accept(p, P_COMMA));
    expect(p, P_RPAREN, "')' after the tapes");
    for (int j = 0; j < p->pt->tapes.n; j++) /* consecutive, at the end (a fold plan's follow, checked there) */
        for (int k = 0; k < j; k++)
            if (p->pt->tapes.v[k].param == p->pt->tapes.v[j].param)
                perr(p, loc, "a tape parameter named twice");
}

/* spread := 'spread' '(' %p 'trips' texpr ['lanes' INT] ')'
 * A backward's spread loop (write/spread.c): its i32 parameter, the last; the
 * tile's lanes when the loop is split_lanes'. */
static void parse_spread(P *p)
{
    Func *f = p->f;
    Loc loc = p->tok.loc;
    expect_id(p, "spread");
    expect(p, P_LPAREN, "'(' after spread");
    Tok pt = p->tok;
    FuncSpread *sp = arena_alloc(p->a, sizeof *sp);
    sp->param = parse_use(p);
    sp->loc = loc;
    Type ty = ir_type(f, sp->param);
    if (!f->nparams || f->params[f->nparams - 1] != sp->param || ty.rank || ty.dt != DT_I32)
        perr(p, pt.loc, "a spread's parameter is the kernel's last, an i32");
    expect_id(p, "trips");
    sp->trips = parse_tape_expr(p, 0);
    if (at_id(p, "lanes")) {
        next(p);
        Tok n = expect(p, P_INT, "the tile's lanes");
        if (n.big || n.ival <= 0 || n.ival > INT32_MAX)
            perr(p, n.loc, "a spread's lanes are a positive count");
        sp->lanes = (int32_t)n.ival;
    }
    expect(p, P_RPAREN, "')' after the spread");
    p->pt->spread = sp;
}

/* func := 'kernel' '@' NAME '(' [param (',' param)*] ')' [consts] [fold]
 * param := %p ':' type ['in' '[' INT ',' INT ']']
 *         region EOF */
static void parse_func(P *p)
{
    skip_nls(p);
    expect_id(p, "kernel");
    Tok name = expect(p, P_AT, "'@' and the kernel's name");
    p->f = ir_func_new(p->a, arena_strndup(p->a, name.text, (size_t)name.len), name.loc);
    expect(p, P_LPAREN, "'(' after the kernel's name");
    if (!at(p, P_RPAREN)) {
        do {
            Tok t = expect(p, P_VAL, "a parameter name (%name)");
            expect(p, P_COLON, "':' and a type after the parameter name");
            Type ty = parse_type(p);
            define_(p, &t, ty, NULL, true);
            if (at_id(p, "in")) { /* 'in' '[' INT ',' INT ']': a ParamRange */
                Loc rl = p->tok.loc;
                next(p);
                expect(p, P_LBRACK, "'[' after 'in'");
                int64_t b[2];
                for (int k = 0; k < 2; k++) {
                    Tok v = p->tok;
                    if (!at(p, P_INT) || v.big)
                        perr(p, v.loc, "expected an int bound of the parameter's range, found %s", tok_desc(p, &v));
                    next(p);
                    b[k] = v.ival;
                    if (!k)
                        expect(p, P_COMMA, "',' between the range's bounds");
                }
                expect(p, P_RBRACK, "']' after the range");
                if (ty.rank || !dtype_is_int((Dtype)ty.dt) || ty.dt == DT_I1 || b[0] > b[1])
                    perr(p, rl, "a parameter's range is for a scalar int parameter, lo <= hi");
                ParamRange r = {p->f->nparams - 1, b[0], b[1]};
                vec_push(p->a, p->f->ranges, r);
            }
        } while (accept(p, P_COMMA));
    }
    expect(p, P_RPAREN, "')' after the parameters");
    if (at(p, P_LBRACK))
        parse_consts(p);
    if (at_id(p, "tape"))
        parse_tapes(p);
    if (at_id(p, "spread")) {
        if (p->pt->tapes.n)
            perr(p, p->tok.loc, "a backward with tapes has no spread loop");
        parse_spread(p);
    }
    if (at_id(p, "fold")) {
        if (p->pt->spread)
            perr(p, p->tok.loc, "a folded backward has no spread loop");
        parse_fold(p);
    }
    for (int j = 0, at0 = (p->pt->fold ? p->pt->fold->nargs : p->f->nparams) - p->pt->tapes.n; j < p->pt->tapes.n; j++)
        if (at0 < 0 || p->f->params[at0 + j] != p->pt->tapes.v[j].param)
            perr(p, p->tok.loc, "a backward's tape parameters come in the tape plan's order, after the others "
                                "(before a fold plan's)");
    parse_region_body(p, p->f->body, 0);
    skip_nls(p);
    /* rule := 'rule' INT '(' %p ':' type (',' %p ':' type)* ')' region  (custom_vjp's rules, in order) */
    while (at_id(p, "rule")) {
        next(p);
        Tok nt = p->tok;
        if (!at(p, P_INT) || nt.ival != p->f->rules.n)
            perr(p, nt.loc, "expected rule number %d, found %s", p->f->rules.n, tok_desc(p, &nt));
        next(p);
        Block *rb = ir_block_new(p->f);
        vec_push(p->a, p->f->rules, rb);
        int mark = scope_open(p);
        expect(p, P_LPAREN, "'(' after the rule's number");
        if (!at(p, P_RPAREN)) {
            do {
                Tok t = expect(p, P_VAL, "a parameter name (%name)");
                expect(p, P_COLON, "':' and a type after the parameter name");
                Type ty = parse_type(p);
                define(p, &t, ty, rb);
            } while (accept(p, P_COMMA));
        }
        expect(p, P_RPAREN, "')' after the rule's parameters");
        parse_region_body(p, rb, 0);
        scope_close(p, mark);
        skip_nls(p);
    }
}

Func *ir_parse(Arena *a, Diags *d, const char *file, const char *text)
{
    IrPlanText pt = {0};
    return ir_parse_plan(a, d, file, text, &pt);
}


/* A parser of the text src from pos (line line of file), the header's plan into *pt. */
static void parser_init(P *p, Arena *a, Diags *d, const char *file, const char *src, const char *pos, int line,
                        IrPlanText *pt)
{
    *p = (P){0};
    *pt = (IrPlanText){0};
    p->pt = pt;
    p->a = a;
    p->d = d;
    p->file = arena_strdup(a, file ? file : "<ir>");
    p->src = src;
    p->pos = p->line_start = pos;
    p->line = line;
    while (p->line_start > src && p->line_start[-1] != '\n')
        p->line_start--;
    p->mask = 255;
    p->table = arena_alloc(a, 256 * sizeof *p->table);
}

Func *ir_parse_plan(Arena *a, Diags *d, const char *file, const char *text, IrPlanText *pt)
{
    P p;
    parser_init(&p, a, d, file, text ? text : "", text ? text : "", 1, pt);
    if (setjmp(p.fail))
        return NULL;
    next(&p);
    parse_func(&p);
    if (!at(&p, P_EOF))
        perr(&p, p.tok.loc, "expected the end of the input after the kernel, found %s", tok_desc(&p, &p.tok));
    return p.f;
}

Func *ir_parse_next(Arena *a, Diags *d, const char *file, const char *src, const char **pos, int *line,
                    IrPlanText *pt)
{
    P p;
    parser_init(&p, a, d, file, src, *pos, *line, pt);
    if (setjmp(p.fail))
        return NULL;
    next(&p);
    parse_func(&p);
    /* where the next token starts (a value or '@' name's text is after its sigil) */
    *pos = p.tok.text - (p.tok.kind == P_VAL || p.tok.kind == P_AT);
    *line = p.tok.loc.line;
    return p.f;
}
