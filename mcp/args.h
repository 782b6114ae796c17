/*
 * args.h - validation of tool arguments. Every failure is a VALIDATION_ERROR whose
 * sentence names the field, what it must be and what was given, so the agent can
 * fix its call without reading documentation.
 */
#ifndef STROBE_ARGS_H
#define STROBE_ARGS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* Rejects fields not in `allowed` (NULL-terminated), suggesting the closest one. */
int args_only(const cJSON *obj, const char *where, const char *const *allowed,
              struct strobe_error *e);

/* Each getter: absent and not required -> 0 with *present false (when given).
 * Wrong type, empty required string or out of range -> -1 with e set. */
int args_string(const cJSON *obj, const char *field, bool required, const char **out,
                struct strobe_error *e);
int args_bool(const cJSON *obj, const char *field, bool *out, struct strobe_error *e);
int args_int(const cJSON *obj, const char *field, int64_t min, int64_t max, int64_t *out,
             bool *present, struct strobe_error *e);
/* An array of strings; *out is malloc'd (free it), pointing into obj. */
int args_strings(const cJSON *obj, const char *field, const char ***out, int *n,
                 struct strobe_error *e);
/* An object or absent: *out NULL when absent. */
int args_object(const cJSON *obj, const char *field, const cJSON **out,
                struct strobe_error *e);

/* The JSON type of v as a word for messages ("string", "number", ...). */
const char *args_type_name(const cJSON *v);

#endif
