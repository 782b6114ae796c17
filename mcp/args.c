/*
 * args.c - tool argument validation. See args.h.
 */
#include "mcp/args.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *args_type_name(const cJSON *v)
{
    if (!v)
        return "missing";
    if (cJSON_IsString(v))
        return "a string";
    if (cJSON_IsNumber(v))
        return "a number";
    if (cJSON_IsBool(v))
        return "a boolean";
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsArray(v))
        return "an array";
    return "an object";
}

/* Levenshtein distance, small strings only: for "did you mean". */
static int distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 99;
    int row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int sub = prev + (a[i - 1] != b[j - 1]);
            int del = row[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
            prev = cur;
        }
    }
    return row[lb];
}

int args_only(const cJSON *obj, const char *where, const char *const *allowed,
              struct strobe_error *e)
{
    for (const cJSON *f = obj->child; f; f = f->next) {
        const char *best = NULL;
        int best_d = 4;
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++) {
            known = strcmp(*a, f->string) == 0;
            int d = distance(*a, f->string);
            if (strcasecmp(*a, f->string) == 0)
                d = 0;
            if (d < best_d) {
                best_d = d;
                best = *a;
            }
        }
        if (known)
            continue;
        char list[512] = "";
        for (const char *const *a = allowed; *a; a++) {
            strncat(list, *a, sizeof list - strlen(list) - 3);
            if (a[1])
                strncat(list, ", ", sizeof list - strlen(list) - 1);
        }
        if (best)
            return err_set(e, ERR_VALIDATION, "unknown field '%s' in %s; did you mean '%s'? "
                           "Fields: %s.", f->string, where, best, list);
        return err_set(e, ERR_VALIDATION, "unknown field '%s' in %s. Fields: %s.", f->string,
                       where, list);
    }
    return 0;
}

int args_string(const cJSON *obj, const char *field, bool required, const char **out,
                struct strobe_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    *out = NULL;
    if (!v) {
        if (required)
            return err_set(e, ERR_VALIDATION, "'%s' is required (a string).", field);
        return 0;
    }
    if (!cJSON_IsString(v))
        return err_set(e, ERR_VALIDATION, "'%s' must be a string, not %s.", field,
                       args_type_name(v));
    if (required && !v->valuestring[0])
        return err_set(e, ERR_VALIDATION, "'%s' must not be empty.", field);
    *out = v->valuestring;
    return 0;
}

int args_bool(const cJSON *obj, const char *field, bool *out, struct strobe_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (!v)
        return 0;
    if (!cJSON_IsBool(v))
        return err_set(e, ERR_VALIDATION, "'%s' must be true or false, not %s.", field,
                       args_type_name(v));
    *out = cJSON_IsTrue(v);
    return 0;
}

int args_int(const cJSON *obj, const char *field, int64_t min, int64_t max, int64_t *out,
             bool *present, struct strobe_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    if (present)
        *present = v != NULL;
    if (!v)
        return 0;
    double d = v->valuedouble;
    if (!cJSON_IsNumber(v) || d != floor(d))
        return err_set(e, ERR_VALIDATION, "'%s' must be an integer, not %s.", field,
                       cJSON_IsNumber(v) ? "a fraction" : args_type_name(v));
    if (d < (double)min || d > (double)max)
        return err_set(e, ERR_VALIDATION, "'%s' must be between %lld and %lld, not %.0f.",
                       field, (long long)min, (long long)max, d);
    *out = (int64_t)d;
    return 0;
}

int args_strings(const cJSON *obj, const char *field, const char ***out, int *n,
                 struct strobe_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    *out = NULL;
    *n = 0;
    if (!v)
        return 0;
    if (!cJSON_IsArray(v))
        return err_set(e, ERR_VALIDATION, "'%s' must be an array of strings, not %s.", field,
                       args_type_name(v));
    int count = cJSON_GetArraySize(v);
    const char **arr = calloc((size_t)count + 1, sizeof *arr);
    if (!arr)
        return err_set(e, ERR_INTERNAL, "out of memory");
    int i = 0;
    for (const cJSON *item = v->child; item; item = item->next, i++) {
        if (!cJSON_IsString(item)) {
            free(arr);
            return err_set(e, ERR_VALIDATION, "'%s[%d]' must be a string, not %s.", field, i,
                           args_type_name(item));
        }
        arr[i] = item->valuestring;
    }
    *out = arr;
    *n = count;
    return 0;
}

int args_object(const cJSON *obj, const char *field, const cJSON **out,
                struct strobe_error *e)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, field);
    *out = NULL;
    if (!v)
        return 0;
    if (!cJSON_IsObject(v))
        return err_set(e, ERR_VALIDATION, "'%s' must be an object, not %s.", field,
                       args_type_name(v));
    *out = v;
    return 0;
}
