/*
 * encode.c - client values to the bytes of a typed variable, for writes. See
 * encode.h for the rules. Integers are parsed as a sign and a 64-bit magnitude and
 * compared with the type's exact bounds, so no value is ever rounded or wrapped.
 */
#include "ptrace/vars/encode.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dwarf/value.h"

static const char *type_name(const struct dw_type *t)
{
    return t->name ? t->name : "this type";
}

static const char *value_text(const struct collector_value *v)
{
    return v->kind == CV_BOOL ? (v->boolean ? "true" : "false") : v->text;
}

/* A decimal or hex integer with an optional sign, the whole text; false when text
 * is something else, or its magnitude does not fit 64 bits (*huge). */
static bool parse_int(const char *text, bool *negative, uint64_t *mag, bool *huge)
{
    const char *p = text;
    *negative = *huge = false;
    if (*p == '-' || *p == '+')
        *negative = *p++ == '-';
    int base = 10;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        base = 16;
        p += 2;
    }
    if (!isxdigit((unsigned char)*p) || (base == 10 && !isdigit((unsigned char)*p)))
        return false;
    char *end;
    errno = 0;
    *mag = strtoull(p, &end, base);
    if (*end != '\0')
        return false;
    *huge = errno == ERANGE;
    return true;
}

/* The bounds of an n-byte integer as text, for sentences. */
static void bounds_text(bool is_signed, size_t n, char *out, size_t cap)
{
    unsigned bits = (unsigned)n * 8;
    if (is_signed)
        snprintf(out, cap, "%" PRId64 " to %" PRId64,
                 bits == 64 ? INT64_MIN : -(INT64_C(1) << (bits - 1)),
                 bits == 64 ? INT64_MAX : (INT64_C(1) << (bits - 1)) - 1);
    else
        snprintf(out, cap, "0 to %" PRIu64, bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1);
}

static int out_of_range(const struct dw_type *t, const char *label, const char *text,
                        bool is_signed, struct strobe_error *e)
{
    char range[64];
    bounds_text(is_signed, t->size, range, sizeof range);
    return err_set(e, ERR_VALUE_OUT_OF_RANGE,
                   "%s is out of range for %s (%s): %s holds integers from %s.", text, label,
                   type_name(t), type_name(t), range);
}

/* The integer in text as t->size little-endian bytes, range-checked. */
static int encode_int(const struct dw_type *t, const char *label, const char *text,
                      bool is_signed, unsigned char *out, struct strobe_error *e)
{
    bool negative, huge;
    uint64_t mag;
    if (!parse_int(text, &negative, &mag, &huge)) {
        char range[64];
        bounds_text(is_signed, t->size, range, sizeof range);
        return err_set(e, ERR_VALUE_OUT_OF_RANGE,
                       "'%s' is not an integer; %s (%s) takes an integer from %s (decimal, or "
                       "hex as \"0x1f\").", text, label, type_name(t), range);
    }
    unsigned bits = (unsigned)t->size * 8;
    uint64_t max_pos = is_signed ? (UINT64_C(1) << (bits - 1)) - 1
                       : bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
    uint64_t max_neg = is_signed ? UINT64_C(1) << (bits - 1) : 0;
    if (huge || (negative ? mag > max_neg : mag > max_pos))
        return out_of_range(t, label, text, is_signed, e);
    uint64_t raw = negative ? (uint64_t)0 - mag : mag;
    for (size_t i = 0; i < t->size; i++)
        out[i] = (unsigned char)(raw >> (8 * i));
    return 0;
}

static int encode_float(const struct dw_type *t, const char *label,
                        const struct collector_value *v, unsigned char *out,
                        struct strobe_error *e)
{
    if (v->kind == CV_BOOL || (t->size != 4 && t->size != 8 && t->size != 10 &&
                               t->size != 12 && t->size != 16) ||
        (t->size == 16 && t->name && strstr(t->name, "128")))
        return err_set(e, ERR_VALUE_OUT_OF_RANGE, "%s (%s) takes a number%s.", label,
                       type_name(t), v->kind == CV_BOOL ? ", not a boolean"
                                                        : "; this size of float is not written");
    long double x;
    if (strcmp(v->text, "NaN") == 0) {
        x = NAN;
    } else if (strcmp(v->text, "Infinity") == 0 || strcmp(v->text, "-Infinity") == 0) {
        x = v->text[0] == '-' ? -INFINITY : INFINITY;
    } else {
        char *end;
        errno = 0;
        x = strtold(v->text, &end);
        if (end == v->text || *end != '\0' || isnan(x) || isinf(x))
            return err_set(e, ERR_VALUE_OUT_OF_RANGE,
                           "'%s' is not a finite number for %s (%s); use a number, or "
                           "\"NaN\", \"Infinity\", \"-Infinity\".", v->text, label, type_name(t));
    }
    long double limit = t->size == 4 ? FLT_MAX : t->size == 8 ? DBL_MAX : LDBL_MAX;
    if (isfinite(x) && fabsl(x) > limit)
        return err_set(e, ERR_VALUE_OUT_OF_RANGE,
                       "%s is out of range for %s (%s): its largest magnitude is %Lg.",
                       v->text, label, type_name(t), limit);
    if (t->size == 4) {
        float f = (float)x;
        memcpy(out, &f, 4);
    } else if (t->size == 8) {
        double d = (double)x;
        memcpy(out, &d, 8);
    } else {
        memset(out, 0, t->size);
        memcpy(out, &x, 10); /* x87 extended: 10 significant bytes */
    }
    return 0;
}

static int encode_enum(const struct dw_type *t, const char *label,
                       const struct collector_value *v, unsigned char *out,
                       struct strobe_error *e)
{
    bool is_signed = value_int_signed(t);
    if (v->kind == CV_STRING)
        for (size_t i = 0; i < t->n_enumerators; i++)
            if (t->enumerators[i].name && strcmp(t->enumerators[i].name, v->text) == 0) {
                char num[32];
                snprintf(num, sizeof num, "%" PRId64, t->enumerators[i].value);
                return encode_int(t, label, num, is_signed, out, e);
            }
    bool negative, huge;
    uint64_t mag;
    if (v->kind != CV_BOOL && parse_int(v->text, &negative, &mag, &huge))
        return encode_int(t, label, v->text, is_signed, out, e);
    char names[256] = "";
    size_t len = 0;
    for (size_t i = 0; i < t->n_enumerators && len < sizeof names - 8; i++)
        len += (size_t)snprintf(names + len, sizeof names - len, "%s%s", len ? ", " : "",
                                t->enumerators[i].name ? t->enumerators[i].name : "?");
    if (len >= sizeof names - 8)
        snprintf(names + sizeof names - 8, 8, ", ...");
    return err_set(e, ERR_VALUE_OUT_OF_RANGE,
                   "'%s' is not an enumerator of %s (%s); it takes one of: %s, or a number.",
                   value_text(v), label, type_name(t), names);
}

static int encode_char_array(const struct dw_type *t, const char *label,
                             const struct collector_value *v, unsigned char *out,
                             struct strobe_error *e)
{
    if (v->kind != CV_STRING)
        return err_set(e, ERR_VALUE_OUT_OF_RANGE, "%s (%s) takes a string.", label,
                       type_name(t));
    size_t len = strlen(v->text);
    if (!t->count || len + 1 > t->count)
        return err_set(e, ERR_VALUE_OUT_OF_RANGE,
                       "\"%.40s%s\" is %zu bytes; %s (%s) holds at most %" PRIu64 " and the "
                       "terminating NUL.", v->text, len > 40 ? "..." : "", len, label,
                       type_name(t), t->count ? t->count - 1 : 0);
    memset(out, 0, t->size);
    memcpy(out, v->text, len);
    return 0;
}

static int refuse(const struct dw_type *t, const char *label, struct strobe_error *e)
{
    switch (t->kind) {
    case DWT_STRUCT:
    case DWT_UNION:
        return err_set(e, ERR_VALIDATION,
                       "%s is %s: a write sets one value; write a member, e.g. '%s.%s'.", label,
                       type_name(t), label,
                       t->n_members && t->members[0].name ? t->members[0].name : "member");
    case DWT_ARRAY:
        return err_set(e, ERR_VALIDATION,
                       "%s is %s: a write sets one value; write an element, e.g. '%s[0]'.",
                       label, type_name(t), label);
    default:
        return err_set(e, ERR_VALIDATION, "%s is %s, which a write cannot set.", label,
                       t->kind == DWT_VOID && !t->name ? "of unknown type" : type_name(t));
    }
}

int encode_value(const struct dw_type *t, const char *label, const struct collector_value *v,
                 unsigned char *out, size_t cap, struct strobe_error *e)
{
    if (t->size > cap)
        return err_set(e, ERR_VALIDATION, "%s is %" PRIu64 " bytes; a write sets at most %zu.",
                       label, t->size, cap);
    bool is_char_array = t->kind == DWT_ARRAY && t->target && t->target->size == 1 &&
                         t->target->kind == DWT_CHAR;
    bool is_int = t->kind == DWT_SIGNED || t->kind == DWT_UNSIGNED || t->kind == DWT_CHAR;
    if ((is_int || t->kind == DWT_ENUM || t->kind == DWT_POINTER || t->kind == DWT_BOOL) &&
        (t->size == 0 || t->size > 8))
        return err_set(e, ERR_VALIDATION, "%s is a %" PRIu64 "-byte %s, which a write cannot "
                       "set.", label, t->size, type_name(t));
    switch (t->kind) {
    case DWT_BOOL:
        if (v->kind == CV_BOOL || (v->kind == CV_NUMBER && (!strcmp(v->text, "0") ||
                                                            !strcmp(v->text, "1")))) {
            memset(out, 0, t->size);
            out[0] = v->kind == CV_BOOL ? v->boolean : v->text[0] == '1';
            return 0;
        }
        return err_set(e, ERR_VALUE_OUT_OF_RANGE, "'%s' is not a boolean; %s (%s) takes "
                       "true or false.", value_text(v), label, type_name(t));
    case DWT_CHAR:
        if (v->kind == CV_STRING) {
            if (strlen(v->text) != 1)
                return err_set(e, ERR_VALUE_OUT_OF_RANGE,
                               "\"%.40s\" is not one character; %s (%s) takes a one-character "
                               "string or the character's number.", v->text, label,
                               type_name(t));
            memset(out, 0, t->size);
            out[0] = (unsigned char)v->text[0];
            return 0;
        }
        /* fall through - a number is the character's code */
    case DWT_SIGNED:
    case DWT_UNSIGNED:
        if (v->kind == CV_BOOL)
            return err_set(e, ERR_VALUE_OUT_OF_RANGE, "%s (%s) takes an integer, not a "
                           "boolean.", label, type_name(t));
        return encode_int(t, label, v->text, value_int_signed(t), out, e);
    case DWT_FLOAT:
        return encode_float(t, label, v, out, e);
    case DWT_ENUM:
        return encode_enum(t, label, v, out, e);
    case DWT_POINTER:
        if (v->kind == CV_STRING && (!strcmp(v->text, "NULL") || !strcmp(v->text, "null"))) {
            memset(out, 0, t->size);
            return 0;
        }
        if (v->kind == CV_BOOL || (v->text[0] == '-' && strcmp(v->text, "-0") != 0))
            return err_set(e, ERR_VALUE_OUT_OF_RANGE,
                           "'%s' is not an address; %s (%s) takes an address as a hex string "
                           "(\"0x7ffd1000\") or a non-negative number, 0 for NULL.",
                           value_text(v), label, type_name(t));
        return encode_int(t, label, v->text, false, out, e);
    case DWT_ARRAY:
        if (is_char_array)
            return encode_char_array(t, label, v, out, e);
        return refuse(t, label, e);
    default:
        return refuse(t, label, e);
    }
}
