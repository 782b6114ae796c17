/*
 * value_short.c - a value in one short line. See value_short.h.
 */
#include "mcp/value_short.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

/* A buffer that stops taking text past its limit, remembering it was cut. */
struct line {
    char *buf;
    size_t len, limit;
    bool cut;
};

static void put(struct line *l, const char *s, size_t n)
{
    if (l->cut)
        return;
    if (l->len + n > l->limit) {
        n = l->limit - l->len;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--; /* never split a UTF-8 sequence */
        l->cut = true;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void puts_(struct line *l, const char *s) { put(l, s, strlen(s)); }

static void render(struct line *l, const cJSON *v)
{
    char num[40];
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == (double)(long long)d && d > -9e15 && d < 9e15)
            snprintf(num, sizeof num, "%lld", (long long)d);
        else
            snprintf(num, sizeof num, "%.6g", d);
        puts_(l, num);
    } else if (cJSON_IsString(v)) {
        puts_(l, "\"");
        puts_(l, v->valuestring);
        puts_(l, "\"");
    } else if (cJSON_IsBool(v)) {
        puts_(l, cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
        bool obj = cJSON_IsObject(v);
        const cJSON *c = v->child;
        /* A pointer followed to its struct: the address, then what it points at. */
        if (obj && c && c->string && strcmp(c->string, "@ptr") == 0 && cJSON_IsString(c)) {
            puts_(l, c->valuestring);
            c = c->next;
            if (!c)
                return;
            puts_(l, "->");
        }
        puts_(l, obj ? "{" : "[");
        for (bool first = true; c && !l->cut; c = c->next, first = false) {
            if (!first)
                puts_(l, ", ");
            if (obj && c->string) {
                puts_(l, c->string);
                puts_(l, ": ");
            }
            render(l, c);
        }
        puts_(l, obj ? "}" : "]");
    } else {
        puts_(l, "null");
    }
}

bool value_short(const char *json, bool is_args, char *out, size_t cap)
{
    cJSON *v = json ? cJSON_Parse(json) : NULL;
    if (!v || cap < 4 || (is_args && (!cJSON_IsArray(v) || !v->child))) {
        cJSON_Delete(v);
        return false;
    }
    size_t limit = cap - 1 < VALUE_SHORT_MAX ? cap - 1 : VALUE_SHORT_MAX;
    struct line l = {out, 0, limit - 3, false};
    if (is_args) {
        for (const cJSON *a = v->child; a && !l.cut; a = a->next) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(a, "name");
            if (a != v->child)
                puts_(&l, ", ");
            if (cJSON_IsString(name)) {
                puts_(&l, name->valuestring);
                puts_(&l, "=");
            }
            const cJSON *value = cJSON_GetObjectItemCaseSensitive(a, "value");
            if (value)
                render(&l, value);
            else
                render(&l, a);
        }
    } else {
        render(&l, v);
    }
    cJSON_Delete(v);
    if (l.cut) {
        memcpy(out + l.len, "...", 3);
        l.len += 3;
    }
    out[l.len] = '\0';
    return true;
}
