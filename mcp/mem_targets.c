/*
 * mem_targets.c - debug_memory's targets. See mem_targets.h.
 */
#include "mcp/mem_targets.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/args.h"

bool mem_parse_address(const char *s, uint64_t *out)
{
    if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
        return false;
    errno = 0;
    char *end;
    bool hex = s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    unsigned long long v = strtoull(s, &end, hex ? 16 : 10);
    if (errno || *end || v == 0)
        return false;
    *out = v;
    return true;
}

static const char *const target_fields[] = {"variable", "address", "size", "type", NULL};
static const char *const write_target_fields[] = {"variable", "address", "type", "value",
                                                  NULL};

static int one(const cJSON *t, int i, enum mem_targets_mode mode,
               struct collector_mem_target *out, struct strobe_error *e)
{
    bool allow_bytes = mode == MEM_TARGETS_READ, write = mode == MEM_TARGETS_WRITE;
    char where[32];
    snprintf(where, sizeof where, "targets[%d]", i);
    if (!cJSON_IsObject(t))
        return err_set(e, ERR_VALIDATION, "'%s' must be an object {variable} or {address, "
                       "type}, not %s.", where, args_type_name(t));
    const char *variable = NULL, *address = NULL, *type = NULL;
    int64_t size = 0;
    bool has_size = false;
    if (args_only(t, where, write ? write_target_fields : target_fields, e) != 0 ||
        args_string(t, "variable", false, &variable, e) != 0 ||
        args_string(t, "address", false, &address, e) != 0 ||
        args_string(t, "type", false, &type, e) != 0 ||
        args_int(t, "size", 1, MEMORY_MAX_BYTES, &size, &has_size, e) != 0)
        return -1;
    *out = (struct collector_mem_target){0};
    if (variable && address)
        return err_set(e, ERR_VALIDATION, "'%s' has both variable and address; give one.",
                       where);
    if (variable) {
        if (!*variable)
            return err_set(e, ERR_VALIDATION, "'%s.variable' is empty.", where);
        if (strlen(variable) > MEMORY_EXPR_MAX)
            return err_set(e, ERR_VALIDATION, "'%s.variable' is longer than %d characters.",
                           where, MEMORY_EXPR_MAX);
        if (type || has_size)
            return err_set(e, ERR_VALIDATION, "'%s': type and size go with an address; a "
                           "variable is read by its own type.", where);
        out->variable = variable;
        return 0;
    }
    if (!address)
        return err_set(e, ERR_VALIDATION, "'%s' needs a variable (\"cfg.max_retries\") or an "
                       "address (\"0x...\") with a type.", where);
    if (!mem_parse_address(address, &out->address))
        return err_set(e, ERR_VALIDATION, "'%s.address' must be a non-zero hex address like "
                       "\"0x4010a0\", not '%.64s'.", where, address);
    if (!type)
        return err_set(e, ERR_VALIDATION, "'%s' needs a type with its address: i8, u8, i16, "
                       "u16, i32, u32, i64, u64, f32, f64, pointer%s.", where,
                       allow_bytes ? " or bytes" : "");
    int hint = memory_hint_parse(type);
    if (hint < 0 || (!allow_bytes && hint == MEMH_BYTES))
        return err_set(e, ERR_VALIDATION, "'%s.type' must be i8, u8, i16, u16, i32, u32, "
                       "i64, u64, f32, f64, pointer%s; not '%.32s'%s.", where,
                       allow_bytes ? " or bytes" : "", type,
                       hint != MEMH_BYTES ? "" : write ? " (a write needs a typed value)"
                                                       : " (a poll samples values, not buffers)");
    out->hint = (enum memory_hint)hint;
    if (hint == MEMH_BYTES && !has_size)
        return err_set(e, ERR_VALIDATION, "'%s': type bytes needs a size (1-%u).", where,
                       MEMORY_MAX_BYTES);
    if (hint != MEMH_BYTES && has_size)
        return err_set(e, ERR_VALIDATION, "'%s': size goes with type bytes; %s has its own "
                       "size.", where, type);
    out->size = has_size ? (size_t)size : 0;
    return 0;
}

int mem_targets_parse(const cJSON *args, enum mem_targets_mode mode,
                      struct collector_mem_target out[MEMORY_MAX_TARGETS], int *n,
                      struct strobe_error *e)
{
    *n = 0;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(args, "targets");
    if (!arr)
        return err_set(e, ERR_VALIDATION, "'targets' is required: [{variable: \"name\"}] or "
                       "[{address: \"0x...\", type: \"i32\"}].");
    if (!cJSON_IsArray(arr))
        return err_set(e, ERR_VALIDATION, "'targets' must be an array of objects, not %s.",
                       args_type_name(arr));
    int count = cJSON_GetArraySize(arr);
    if (count == 0)
        return err_set(e, ERR_VALIDATION, "'targets' is empty; name 1 to %d targets.",
                       MEMORY_MAX_TARGETS);
    if (count > MEMORY_MAX_TARGETS)
        return err_set(e, ERR_LIMIT_EXCEEDED, "%d targets given; one call takes at most %d.",
                       count, MEMORY_MAX_TARGETS);
    int i = 0;
    for (const cJSON *t = arr->child; t; t = t->next, i++)
        if (one(t, i, mode, &out[i], e) != 0)
            return -1;
    *n = count;
    return 0;
}
