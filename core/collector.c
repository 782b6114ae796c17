/*
 * collector.c - the registry of collectors. See collector.h.
 *
 * Registration happens once, in strobe.c, before the daemon serves: the table is
 * written before any request thread exists and only read afterwards.
 */
#include "core/collector.h"

#define MAX_COLLECTORS 8

static const struct collector_methods *registered[MAX_COLLECTORS];
static int n_registered;

int collector_register(const struct collector_methods *m)
{
    if (!m || m->version < 1 || m->version > COLLECTOR_VERSION || n_registered == MAX_COLLECTORS)
        return -1;
    registered[n_registered++] = m;
    return 0;
}

void collectors_init(const char *cache_dir)
{
    for (int i = 0; i < n_registered; i++)
        if (registered[i]->init)
            registered[i]->init(cache_dir);
}

void collectors_shutdown(void)
{
    for (int i = 0; i < n_registered; i++)
        if (registered[i]->shutdown)
            registered[i]->shutdown();
}

const struct collector_methods *collector_for(const char *path, struct collector_probe *out)
{
    for (int i = 0; i < n_registered; i++) {
        *out = (struct collector_probe){0};
        if (registered[i]->probe(path, out))
            return registered[i];
    }
    return NULL;
}

int collector_unsupported(const struct collector_methods *m, const char *what,
                          struct strobe_error *e)
{
    return err_set(e, ERR_NOT_IMPLEMENTED, "%s is not supported for %s programs (the %s "
                   "collector does not implement it yet).", what, m->language, m->name);
}
