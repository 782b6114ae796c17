/*
 * json_view.h - typed reads of a daemon answer's fields for the rooms of cli/ (the
 * renderers, strobectl, the REPL): absent or wrongly typed fields read as NULL / 0,
 * so a renderer prints what is there and never trips on what is not.
 */
#ifndef STROBE_JSON_VIEW_H
#define STROBE_JSON_VIEW_H

#include <cjson/cJSON.h>
#include <stdbool.h>

static inline const cJSON *json_get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* The string at key, or NULL. */
static inline const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = json_get(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static inline bool json_has_num(const cJSON *o, const char *key)
{
    return cJSON_IsNumber(json_get(o, key));
}

/* The number at key, or 0. */
static inline long long json_num(const cJSON *o, const char *key)
{
    const cJSON *v = json_get(o, key);
    return cJSON_IsNumber(v) ? (long long)v->valuedouble : 0;
}

#endif
