/*
 * settings.c - settings layers. See settings.h. The table below is the single list
 * of keys, defaults and ranges.
 */
#include "core/settings.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct setting_def {
    const char *key;
    size_t offset;
    int64_t def, min, max;
    bool global_only; /* daemon-wide: a project file may not set it */
    /* A setting named by words: the JSON string choices[i] stores i (min 0, max the
     * last index); NULL: an integer setting. */
    const char *const *choices;
};

/* trace.mode: how a traced function's calls are recorded (settings.h). */
static const char *const trace_modes[] = {"int3", "fast", NULL};

static const struct setting_def defs[] = {
    {"events.maxPerSession", offsetof(struct settings, events_max_per_session),
     200000, 1, 10000000, false, NULL},
    {"test.statusRetryMs", offsetof(struct settings, test_status_retry_ms),
     5000, 500, 60000, false, NULL},
    {"output.maxBytesPerSession", offsetof(struct settings, output_max_bytes),
     50LL * 1024 * 1024, 1024, 1024LL * 1024 * 1024, false, NULL},
    {"trace.hotCallsPerSecond", offsetof(struct settings, hot_calls_per_second),
     100000, 100, 10000000, false, NULL},
    {"trace.sampleAfter", offsetof(struct settings, sample_after), 5000, 0, 100000000, false,
     NULL},
    {"trace.overheadBudgetPercent", offsetof(struct settings, overhead_budget_percent),
     50, 1, 100, false, NULL},
    {"output.orderAtTraps", offsetof(struct settings, output_order_at_traps), 1, 0, 1,
     false, NULL},
    {"trace.captureExits", offsetof(struct settings, capture_exits), 1, 0, 1, false, NULL},
    {"trace.pinCpu", offsetof(struct settings, pin_cpu), 1, 0, 1, false, NULL},
    {"trace.mode", offsetof(struct settings, trace_mode), TRACE_MODE_FAST, 0, 1, false,
     trace_modes},
    {"answers.maxBytes", offsetof(struct settings, answers_max_bytes),
     16384, 4096, 1048576, true, NULL},
    {"retention.maxAgeDays", offsetof(struct settings, retention_max_age_days),
     7, 1, 3650, true, NULL},
    {"retention.maxTotalBytes", offsetof(struct settings, retention_max_total_bytes),
     10LL * 1024 * 1024 * 1024, 1024 * 1024, 1LL << 50, true, NULL},
};
#define N_DEFS (sizeof defs / sizeof defs[0])

static void warn(struct settings *s, const char *fmt, const char *a, const char *b)
{
    if (s->n_warnings >= SETTINGS_MAX_WARNINGS)
        return;
    snprintf(s->warnings[s->n_warnings++], sizeof s->warnings[0], fmt, a, b);
}

static char *read_small_file(const char *path, int *err)
{
    FILE *f = fopen(path, "re");
    if (!f) {
        *err = errno;
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (len + 1 == cap) {
            if (cap >= 1 << 20) {
                free(buf);
                buf = NULL;
                *err = EFBIG;
                break;
            }
            char *bigger = realloc(buf, cap *= 2);
            if (!bigger) {
                free(buf);
                buf = NULL;
                *err = ENOMEM;
            }
            buf = bigger;
        }
    }
    fclose(f);
    if (buf)
        buf[len] = '\0';
    return buf;
}

static void apply_file(struct settings *s, const char *path, bool project)
{
    int err = 0;
    char *text = read_small_file(path, &err);
    if (!text) {
        if (err != ENOENT)
            warn(s, "settings file %s ignored: %s", path, strerror(err));
        return;
    }
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(root)) {
        warn(s, "settings file %s ignored: %s", path, "it is not a JSON object");
        cJSON_Delete(root);
        return;
    }
    for (cJSON *item = root->child; item; item = item->next) {
        const struct setting_def *d = NULL;
        for (size_t i = 0; i < N_DEFS; i++)
            if (strcmp(defs[i].key, item->string) == 0)
                d = &defs[i];
        if (!d) {
            warn(s, "unknown setting '%s' in %s ignored", item->string, path);
            continue;
        }
        if (project && d->global_only) {
            warn(s, strncmp(item->string, "answers.", 8) == 0
                        ? "setting '%s' in %s ignored: it applies to every answer of the "
                          "daemon, set it in $STROBE_HOME/settings.json"
                        : "setting '%s' in %s ignored: it applies to the whole database, "
                          "set it in $STROBE_HOME/settings.json",
                 item->string, path);
            continue;
        }
        if (d->choices) {
            int64_t i = 0;
            while (d->choices[i] && (!cJSON_IsString(item) ||
                                     strcmp(d->choices[i], item->valuestring) != 0))
                i++;
            if (!d->choices[i]) {
                char words[96] = "";
                for (int j = 0; d->choices[j]; j++)
                    snprintf(words + strlen(words), sizeof words - strlen(words), "%s\"%s\"",
                             j ? ", " : "", d->choices[j]);
                warn(s, "setting '%s' must be one of %s; default kept", item->string, words);
                continue;
            }
            *(int64_t *)((char *)s + d->offset) = i;
            continue;
        }
        double v = item->valuedouble;
        if (!cJSON_IsNumber(item) || v != floor(v) || v < (double)d->min ||
            v > (double)d->max) {
            char range[96];
            snprintf(range, sizeof range, "an integer from %lld to %lld; default kept",
                     (long long)d->min, (long long)d->max);
            warn(s, "setting '%s' must be %s", item->string, range);
            continue;
        }
        *(int64_t *)((char *)s + d->offset) = (int64_t)v;
    }
    cJSON_Delete(root);
}

void settings_load(struct settings *out, const char *global_path, const char *project_root)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < N_DEFS; i++)
        *(int64_t *)((char *)out + defs[i].offset) = defs[i].def;
    if (global_path)
        apply_file(out, global_path, false);
    if (project_root) {
        char path[PATH_MAX];
        int n = snprintf(path, sizeof path, "%s/.strobe/settings.json", project_root);
        if (n > 0 && (size_t)n < sizeof path)
            apply_file(out, path, true);
    }
}
