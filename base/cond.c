/*
 * cond.c - breakpoint conditions: a recursive-descent parser into a node array, and
 * an evaluator over it. See cond.h for the language.
 */
#include "base/cond.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_NODES 256
#define MAX_DEPTH 32
#define MAX_STRING 255
#define MAX_PATHS 32

enum op {
    OP_LIT,        /* val */
    OP_PATH,       /* path: index into paths */
    OP_NOT, OP_NEG,                      /* a */
    OP_OR, OP_AND, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, /* a, b */
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_BITAND, OP_BITOR, /* a, b: numbers */
};

struct node {
    enum op op;
    int a, b;                /* child node indexes */
    int path;
    struct cond_value val;   /* OP_LIT; strings point into the node's own copy */
    char *str;
};

struct cond {
    struct node nodes[MAX_NODES];
    int n, root;
    const char *paths[MAX_PATHS];
    size_t n_paths;
};

struct parser {
    struct cond *c;
    const char *text, *p;
    int depth;
    struct strobe_error *e;
    bool failed;
};

/* A condition that does not parse, or is beyond the limits: the first failure sets
 * e to VALIDATION, "column N: " and the sentence. */
static int fail(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct parser *ps, const char *fmt, ...)
{
    if (ps->failed)
        return -1;
    ps->failed = true;
    if (!ps->e)
        return -1;
    char what[sizeof ps->e->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return err_set(ps->e, ERR_VALIDATION, "column %d: %s", (int)(ps->p - ps->text) + 1, what);
}

/* As fail(), INTERNAL. */
static int out_of_memory(struct parser *ps)
{
    if (ps->failed)
        return -1;
    ps->failed = true;
    return err_set(ps->e, ERR_INTERNAL, "column %d: out of memory",
                   (int)(ps->p - ps->text) + 1);
}

static void skip_blanks(struct parser *ps)
{
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

/* Consumes tok (after blanks) when it comes next. */
static bool eat(struct parser *ps, const char *tok)
{
    skip_blanks(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) != 0)
        return false;
    /* "<" must not take the first half of "<=", nor "&" of "&&" ... */
    if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!') && ps->p[1] == '=')
        return false;
    if (n == 1 && (tok[0] == '&' || tok[0] == '|') && ps->p[1] == tok[0])
        return false;
    ps->p += n;
    return true;
}

static int new_node(struct parser *ps, enum op op, int a, int b)
{
    struct cond *c = ps->c;
    if (c->n == MAX_NODES)
        return fail(ps, "the condition is too long (more than %d operands and operators)",
                    MAX_NODES);
    c->nodes[c->n] = (struct node){.op = op, .a = a, .b = b, .path = -1};
    return c->n++;
}

static bool ident_start(char ch)
{
    return isalpha((unsigned char)ch) || ch == '_' || ch == '$';
}

static bool ident_char(char ch)
{
    return isalnum((unsigned char)ch) || ch == '_';
}

/* One character of a char or string literal, escapes decoded; -1 at its end. */
static int literal_char(struct parser *ps, char quote)
{
    char ch = *ps->p;
    if (ch == '\0')
        return fail(ps, "unterminated %s literal", quote == '"' ? "string" : "character"),
               -2;
    if (ch == quote)
        return -1;
    ps->p++;
    if (ch != '\\')
        return (unsigned char)ch;
    ch = *ps->p++;
    switch (ch) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case '0': return '\0';
    case '\\': case '\'': case '"': return (unsigned char)ch;
    default:
        ps->p--;
        return fail(ps, "unknown escape '\\%c' (use \\n \\t \\r \\0 \\\\ \\' \\\")",
                    ch ? ch : ' '), -2;
    }
}

static int parse_string(struct parser *ps)
{
    ps->p++; /* " */
    char buf[MAX_STRING + 1];
    size_t len = 0;
    for (int ch; (ch = literal_char(ps, '"')) != -1;) {
        if (ch == -2)
            return -1;
        if (len == MAX_STRING)
            return fail(ps, "string literals are limited to %d bytes", MAX_STRING);
        buf[len++] = (char)ch;
    }
    ps->p++; /* " */
    int n = new_node(ps, OP_LIT, -1, -1);
    if (n < 0)
        return -1;
    struct node *nd = &ps->c->nodes[n];
    nd->str = malloc(len + 1);
    if (!nd->str)
        return out_of_memory(ps);
    memcpy(nd->str, buf, len);
    nd->str[len] = '\0';
    nd->val = (struct cond_value){.kind = COND_STRING, .s = nd->str, .len = len};
    return n;
}

static int parse_char(struct parser *ps)
{
    ps->p++; /* ' */
    int ch = literal_char(ps, '\'');
    if (ch == -2)
        return -1;
    if (ch == -1)
        return fail(ps, "empty character literal");
    if (*ps->p != '\'')
        return fail(ps, "a character literal holds one character (use \"...\" for text)");
    ps->p++;
    int n = new_node(ps, OP_LIT, -1, -1);
    if (n >= 0)
        ps->c->nodes[n].val = (struct cond_value){.kind = COND_INT, .i = ch};
    return n;
}

static int parse_number(struct parser *ps)
{
    const char *start = ps->p;
    char *end;
    bool is_float = false;
    for (const char *q = start; isalnum((unsigned char)*q) || *q == '.' ||
                                ((*q == '+' || *q == '-') && (q[-1] == 'e' || q[-1] == 'E'));
         q++)
        if (*q == '.' || ((*q == 'e' || *q == 'E') && !(start[0] == '0' &&
                                                       (start[1] == 'x' || start[1] == 'X'))))
            is_float = true;
    struct cond_value v = {0};
    errno = 0;
    if (is_float) {
        v.kind = COND_FLOAT;
        v.f = strtod(start, &end);
    } else {
        v.u = strtoull(start, &end, 0);
        if (errno == ERANGE)
            return fail(ps, "integer literal out of range (at most 18446744073709551615)");
        if (v.u <= INT64_MAX) {
            v.kind = COND_INT;
            v.i = (int64_t)v.u;
        } else {
            v.kind = COND_UINT;
        }
        while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L')
            end++;
    }
    if (end == start || ident_char(*end) || *end == '.')
        return fail(ps, "malformed number");
    ps->p = end;
    int n = new_node(ps, OP_LIT, -1, -1);
    if (n >= 0)
        ps->c->nodes[n].val = v;
    return n;
}

/* The path's text without blanks, interned in c->paths. */
static int intern_path(struct parser *ps, const char *start, const char *end)
{
    char buf[COND_MAX_TEXT + 1];
    size_t len = 0;
    for (const char *q = start; q < end; q++)
        if (!isspace((unsigned char)*q))
            buf[len++] = *q;
    buf[len] = '\0';
    struct cond *c = ps->c;
    for (size_t i = 0; i < c->n_paths; i++)
        if (strcmp(c->paths[i], buf) == 0)
            return (int)i;
    if (c->n_paths == MAX_PATHS)
        return fail(ps, "a condition names at most %d variables", MAX_PATHS);
    char *copy = strdup(buf);
    if (!copy)
        return out_of_memory(ps);
    c->paths[c->n_paths] = copy;
    return (int)c->n_paths++;
}

static int parse_path(struct parser *ps)
{
    const char *start = ps->p;
    while (*ps->p == '*' || isspace((unsigned char)*ps->p))
        ps->p++;
    if (!ident_start(*ps->p))
        return fail(ps, "expected a variable name after '*'");
    for (;;) { /* identifier, with :: scopes */
        while (ident_char(*ps->p))
            ps->p++;
        if (ps->p[0] == ':' && ps->p[1] == ':' && ident_start(ps->p[2]))
            ps->p += 2;
        else
            break;
    }
    for (;;) { /* .member ->member [N] */
        const char *save = ps->p;
        skip_blanks(ps);
        if (*ps->p == '.' || (ps->p[0] == '-' && ps->p[1] == '>')) {
            ps->p += *ps->p == '.' ? 1 : 2;
            skip_blanks(ps);
            if (!ident_start(*ps->p))
                return fail(ps, "expected a member name");
            while (ident_char(*ps->p))
                ps->p++;
        } else if (*ps->p == '[') {
            ps->p++;
            skip_blanks(ps);
            if (isdigit((unsigned char)*ps->p)) {
                while (ident_char(*ps->p))
                    ps->p++;
            } else if (ident_start(*ps->p) || *ps->p == '*') {
                /* a variable or a path of its own: "a[i]", "q->items[q->head]" */
                int inner = parse_path(ps);
                if (inner < 0)
                    return -1;
                ps->c->n--; /* part of this path's text (its value is listed) */
            } else {
                return fail(ps, "an index must be an integer literal, a variable or a path");
            }
            skip_blanks(ps);
            if (*ps->p != ']')
                return fail(ps, "expected ']'");
            ps->p++;
        } else {
            ps->p = save;
            break;
        }
    }
    const char *end = ps->p;
    int n = new_node(ps, OP_PATH, -1, -1);
    if (n < 0)
        return -1;
    int path = intern_path(ps, start, end);
    if (path < 0)
        return -1;
    ps->c->nodes[n].path = path;
    return n;
}

static bool keyword(struct parser *ps, const char *kw)
{
    size_t n = strlen(kw);
    if (strncmp(ps->p, kw, n) != 0 || ident_char(ps->p[n]))
        return false;
    ps->p += n;
    return true;
}

static int parse_or(struct parser *ps);

static int parse_primary(struct parser *ps)
{
    skip_blanks(ps);
    char ch = *ps->p;
    if (ch == '(') {
        ps->p++;
        int n = parse_or(ps);
        if (n < 0)
            return -1;
        if (!eat(ps, ")"))
            return fail(ps, "expected ')'");
        return n;
    }
    if (ch == '"')
        return parse_string(ps);
    if (ch == '\'')
        return parse_char(ps);
    if (isdigit((unsigned char)ch) || (ch == '.' && isdigit((unsigned char)ps->p[1])))
        return parse_number(ps);
    static const struct { const char *kw; int64_t v; } words[] = {
        {"true", 1}, {"false", 0}, {"NULL", 0}, {"nullptr", 0},
    };
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (keyword(ps, words[i].kw)) {
            int n = new_node(ps, OP_LIT, -1, -1);
            if (n >= 0)
                ps->c->nodes[n].val = (struct cond_value){.kind = COND_INT, .i = words[i].v};
            return n;
        }
    if (ident_start(ch) || ch == '*')
        return parse_path(ps);
    if (ch == '\0')
        return fail(ps, "expected an operand (a variable, a number, a string), found the end");
    return fail(ps, "expected an operand (a variable, a number, a string), found '%c'", ch);
}

static int parse_unary(struct parser *ps)
{
    if (++ps->depth > MAX_DEPTH)
        return fail(ps, "nested more than %d levels", MAX_DEPTH);
    int n;
    if (eat(ps, "!")) {
        int a = parse_unary(ps);
        n = a < 0 ? -1 : new_node(ps, OP_NOT, a, -1);
    } else if (eat(ps, "-")) {
        int a = parse_unary(ps);
        n = a < 0 ? -1 : new_node(ps, OP_NEG, a, -1);
    } else {
        n = parse_primary(ps);
    }
    ps->depth--;
    return n;
}

/* One precedence level: operand (op operand)*, left-associative. */
static int parse_level(struct parser *ps, int (*operand)(struct parser *),
                       const char *const *toks, const enum op *ops, size_t n_ops)
{
    int left = operand(ps);
    while (left >= 0) {
        size_t i = 0;
        while (i < n_ops && !eat(ps, toks[i]))
            i++;
        if (i == n_ops)
            break;
        int right = operand(ps);
        left = right < 0 ? -1 : new_node(ps, ops[i], left, right);
    }
    return left;
}

static int parse_mul(struct parser *ps)
{
    static const char *const toks[] = {"*", "/", "%"};
    static const enum op ops[] = {OP_MUL, OP_DIV, OP_MOD};
    return parse_level(ps, parse_unary, toks, ops, 3);
}

static int parse_add(struct parser *ps)
{
    static const char *const toks[] = {"+", "-"};
    static const enum op ops[] = {OP_ADD, OP_SUB};
    return parse_level(ps, parse_mul, toks, ops, 2);
}

static int parse_rel(struct parser *ps)
{
    static const char *const toks[] = {"<=", ">=", "<", ">"};
    static const enum op ops[] = {OP_LE, OP_GE, OP_LT, OP_GT};
    return parse_level(ps, parse_add, toks, ops, 4);
}

static int parse_eq(struct parser *ps)
{
    static const char *const toks[] = {"==", "!="};
    static const enum op ops[] = {OP_EQ, OP_NE};
    return parse_level(ps, parse_rel, toks, ops, 2);
}

static int parse_bitand(struct parser *ps)
{
    static const char *const toks[] = {"&"};
    static const enum op ops[] = {OP_BITAND};
    return parse_level(ps, parse_eq, toks, ops, 1);
}

static int parse_bitor(struct parser *ps)
{
    static const char *const toks[] = {"|"};
    static const enum op ops[] = {OP_BITOR};
    return parse_level(ps, parse_bitand, toks, ops, 1);
}

static int parse_and(struct parser *ps)
{
    static const char *const toks[] = {"&&"};
    static const enum op ops[] = {OP_AND};
    return parse_level(ps, parse_bitor, toks, ops, 1);
}

static int parse_or(struct parser *ps)
{
    if (++ps->depth > MAX_DEPTH)
        return fail(ps, "nested more than %d levels", MAX_DEPTH);
    static const char *const toks[] = {"||"};
    static const enum op ops[] = {OP_OR};
    int n = parse_level(ps, parse_and, toks, ops, 1);
    ps->depth--;
    return n;
}

struct cond *cond_parse(const char *text, struct strobe_error *e)
{
    if (strlen(text) > COND_MAX_TEXT) {
        err_set(e, ERR_VALIDATION, "the condition is longer than %d characters",
                COND_MAX_TEXT);
        return NULL;
    }
    struct cond *c = calloc(1, sizeof *c);
    if (!c) {
        err_set(e, ERR_INTERNAL, "out of memory");
        return NULL;
    }
    struct parser ps = {.c = c, .text = text, .p = text, .e = e};
    c->root = parse_or(&ps);
    skip_blanks(&ps);
    if (c->root >= 0 && *ps.p) {
        if (*ps.p == '=' || *ps.p == '&' || *ps.p == '|')
            fail(&ps, "unexpected '%c' (comparisons are ==, logic is && and ||)", *ps.p);
        else
            fail(&ps, "unexpected '%c' after a complete expression", *ps.p);
    }
    if (ps.failed || c->root < 0) {
        cond_free(c);
        return NULL;
    }
    return c;
}

void cond_free(struct cond *c)
{
    if (!c)
        return;
    for (int i = 0; i < c->n; i++)
        free(c->nodes[i].str);
    for (size_t i = 0; i < c->n_paths; i++)
        free((char *)c->paths[i]);
    free(c);
}

size_t cond_paths(const struct cond *c, const char *const **paths)
{
    *paths = c->paths;
    return c->n_paths;
}

/* ---- evaluation ---------------------------------------------------------------- */

struct eval {
    const struct cond *c;
    cond_resolve_fn resolve;
    void *ctx;
    struct strobe_error *e;
};

static int eval_node(struct eval *ev, int n, struct cond_value *out);

static bool truthy(const struct cond_value *v)
{
    switch (v->kind) {
    case COND_INT: return v->i != 0;
    case COND_UINT: return v->u != 0;
    case COND_FLOAT: return v->f != 0;
    case COND_STRING: return v->s != NULL;
    }
    return false;
}

static double as_double(const struct cond_value *v)
{
    return v->kind == COND_FLOAT ? v->f : v->kind == COND_UINT ? (double)v->u : (double)v->i;
}

/* -1, 0 or 1 for two numbers, exact across signedness. */
static int cmp_numbers(const struct cond_value *a, const struct cond_value *b)
{
    if (a->kind == COND_FLOAT || b->kind == COND_FLOAT) {
        double x = as_double(a), y = as_double(b);
        return x < y ? -1 : x > y;
    }
    if (a->kind == COND_INT && b->kind == COND_INT)
        return a->i < b->i ? -1 : a->i > b->i;
    if (a->kind == COND_INT && a->i < 0)
        return -1;
    if (b->kind == COND_INT && b->i < 0)
        return 1;
    uint64_t x = a->kind == COND_INT ? (uint64_t)a->i : a->u;
    uint64_t y = b->kind == COND_INT ? (uint64_t)b->i : b->u;
    return x < y ? -1 : x > y;
}

static bool is_zero(const struct cond_value *v)
{
    return (v->kind == COND_INT && v->i == 0) || (v->kind == COND_UINT && v->u == 0);
}

/* Compares a and b for op; -1 when they do not compare. */
static int compare(struct eval *ev, enum op op, const struct cond_value *a,
                   const struct cond_value *b, bool *res)
{
    int c;
    bool sa = a->kind == COND_STRING, sb = b->kind == COND_STRING;
    if (sa && sb) {
        if (!a->s || !b->s) {
            c = (a->s != NULL) - (b->s != NULL);
        } else {
            size_t n = a->len < b->len ? a->len : b->len;
            c = memcmp(a->s, b->s, n);
            c = c ? (c > 0) - (c < 0) : (a->len > b->len) - (a->len < b->len);
        }
    } else if (sa || sb) {
        const struct cond_value *s = sa ? a : b, *num = sa ? b : a;
        if (!is_zero(num) || (op != OP_EQ && op != OP_NE)) {
            err_set(ev->e, ERR_VALIDATION, "a string compares with a string (\"...\") or, "
                    "with == and !=, with NULL; not with a number");
            return -1; /* plainly -1: the compiler must see that *res is set on 0 */
        }
        c = s->s != NULL;
    } else {
        c = cmp_numbers(a, b);
    }
    switch (op) {
    case OP_EQ: *res = c == 0; break;
    case OP_NE: *res = c != 0; break;
    case OP_LT: *res = c < 0; break;
    case OP_LE: *res = c <= 0; break;
    case OP_GT: *res = c > 0; break;
    default: *res = c >= 0; break;
    }
    return 0;
}

static int negate(struct eval *ev, struct cond_value *v)
{
    switch (v->kind) {
    case COND_FLOAT:
        v->f = -v->f;
        return 0;
    case COND_INT:
        if (v->i == INT64_MIN) {
            *v = (struct cond_value){.kind = COND_UINT, .u = (uint64_t)INT64_MAX + 1};
            return 0;
        }
        v->i = -v->i;
        return 0;
    case COND_UINT:
        if (v->u > (uint64_t)INT64_MAX + 1)
            break;
        *v = (struct cond_value){.kind = COND_INT,
                                 .i = v->u == (uint64_t)INT64_MAX + 1 ? INT64_MIN
                                                                      : -(int64_t)v->u};
        return 0;
    case COND_STRING:
        break;
    }
    return err_set(ev->e, ERR_VALIDATION,
                   "unary '-' applies to numbers within the 64-bit range");
}

static const char *op_name(enum op op)
{
    static const char *const names[] = {
        [OP_ADD] = "+", [OP_SUB] = "-", [OP_MUL] = "*", [OP_DIV] = "/", [OP_MOD] = "%",
        [OP_BITAND] = "&", [OP_BITOR] = "|",
    };
    return op >= OP_ADD && op <= OP_BITOR ? names[op] : "?";
}

/* An exact integer result as the narrowest kind that holds it. */
static int integer_result(struct eval *ev, enum op op, __int128 r, struct cond_value *out)
{
    if (r >= INT64_MIN && r <= INT64_MAX) {
        *out = (struct cond_value){.kind = COND_INT, .i = (int64_t)r};
        return 0;
    }
    if (r >= 0 && r <= (__int128)UINT64_MAX) {
        *out = (struct cond_value){.kind = COND_UINT, .u = (uint64_t)r};
        return 0;
    }
    return err_set(ev->e, ERR_VALIDATION, "'%s' overflows 64 bits", op_name(op));
}

/* a op b for the arithmetic and bitwise operators: exact on integers of either
 * signedness (computed in 128 bits), double when a float is involved. */
static int arith(struct eval *ev, enum op op, const struct cond_value *a,
                 const struct cond_value *b, struct cond_value *out)
{
    if (a->kind == COND_STRING || b->kind == COND_STRING)
        return err_set(ev->e, ERR_VALIDATION, "'%s' applies to numbers, not strings",
                       op_name(op));
    bool is_float = a->kind == COND_FLOAT || b->kind == COND_FLOAT;
    if (is_float && (op == OP_MOD || op == OP_BITAND || op == OP_BITOR))
        return err_set(ev->e, ERR_VALIDATION, "'%s' applies to integers, not floats",
                       op_name(op));
    if (is_float) {
        double x = as_double(a), y = as_double(b);
        double r = op == OP_ADD ? x + y : op == OP_SUB ? x - y : op == OP_MUL ? x * y : x / y;
        *out = (struct cond_value){.kind = COND_FLOAT, .f = r};
        return 0;
    }
    __int128 x = a->kind == COND_INT ? (__int128)a->i : (__int128)a->u;
    __int128 y = b->kind == COND_INT ? (__int128)b->i : (__int128)b->u;
    if ((op == OP_DIV || op == OP_MOD) && y == 0)
        return err_set(ev->e, ERR_VALIDATION, "'%s' by zero", op_name(op));
    switch (op) {
    case OP_ADD: return integer_result(ev, op, x + y, out);
    case OP_SUB: return integer_result(ev, op, x - y, out);
    case OP_MUL: {
        /* Two 65-bit operands can overflow even 128 bits (UINT64_MAX squared). */
        __int128 r;
        if (__builtin_mul_overflow(x, y, &r))
            return err_set(ev->e, ERR_VALIDATION, "'%s' overflows 64 bits", op_name(op));
        return integer_result(ev, op, r, out);
    }
    case OP_DIV: return integer_result(ev, op, x / y, out);
    case OP_MOD: return integer_result(ev, op, x % y, out);
    case OP_BITAND: return integer_result(ev, op, (__int128)((uint64_t)x & (uint64_t)y), out);
    default: return integer_result(ev, op, (__int128)((uint64_t)x | (uint64_t)y), out);
    }
}

static int eval_node(struct eval *ev, int n, struct cond_value *out)
{
    const struct node *nd = &ev->c->nodes[n];
    struct cond_value a, b;
    bool r;
    switch (nd->op) {
    case OP_LIT:
        *out = nd->val;
        return 0;
    case OP_PATH:
        *out = (struct cond_value){0};
        return ev->resolve(ev->ctx, ev->c->paths[nd->path], out, ev->e);
    case OP_NOT:
        if (eval_node(ev, nd->a, &a) != 0)
            return -1;
        *out = (struct cond_value){.kind = COND_INT, .i = !truthy(&a)};
        return 0;
    case OP_NEG:
        if (eval_node(ev, nd->a, out) != 0)
            return -1;
        return negate(ev, out);
    case OP_AND:
    case OP_OR:
        if (eval_node(ev, nd->a, &a) != 0)
            return -1;
        r = truthy(&a);
        if (r == (nd->op == OP_AND)) { /* not decided yet */
            if (eval_node(ev, nd->b, &b) != 0)
                return -1;
            r = truthy(&b);
        }
        *out = (struct cond_value){.kind = COND_INT, .i = r};
        return 0;
    default:
        if (eval_node(ev, nd->a, &a) != 0 || eval_node(ev, nd->b, &b) != 0)
            return -1;
        if (nd->op >= OP_ADD)
            return arith(ev, nd->op, &a, &b, out);
        if (compare(ev, nd->op, &a, &b, &r) != 0)
            return -1;
        *out = (struct cond_value){.kind = COND_INT, .i = r};
        return 0;
    }
}

int cond_eval(const struct cond *c, cond_resolve_fn resolve, void *ctx, bool *result,
              struct strobe_error *e)
{
    struct eval ev = {.c = c, .resolve = resolve, .ctx = ctx, .e = e};
    struct cond_value v;
    if (eval_node(&ev, c->root, &v) != 0)
        return -1;
    *result = truthy(&v);
    return 0;
}
