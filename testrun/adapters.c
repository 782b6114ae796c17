/*
 * adapters.c - the table of test frameworks and the choice among them
 * (adapter.h). To add a framework, see the recipe at the top of adapter.h.
 */
#include "testrun/adapter.h"

#include <strings.h>

/* Detection asks every adapter; on equal confidence the earlier row wins. Generic
 * stays last: it accepts everything with confidence 1. */
const struct test_adapter *const test_adapters[] = {
    &test_adapter_cargo,
    &test_adapter_gtest,
    &test_adapter_catch2,
    &test_adapter_ctest,
    &test_adapter_pytest,
    &test_adapter_go,
    &test_adapter_vitest,
    &test_adapter_jest,
    &test_adapter_mocha,
    &test_adapter_unittest,
    &test_adapter_generic,
};
const size_t test_adapters_count = sizeof test_adapters / sizeof *test_adapters;

const struct test_adapter *test_adapter_named(const char *name)
{
    for (size_t i = 0; i < test_adapters_count; i++)
        if (strcasecmp(test_adapters[i]->name, name) == 0)
            return test_adapters[i];
    return NULL;
}

const struct test_adapter *test_adapter_detect(const char *project_root, const char *command,
                                               int *confidence)
{
    const struct test_adapter *best = &test_adapter_generic;
    int best_conf = 0;
    for (size_t i = 0; i < test_adapters_count; i++) {
        int c = test_adapters[i]->detect(project_root, command);
        if (c > best_conf) {
            best = test_adapters[i];
            best_conf = c;
        }
    }
    *confidence = best_conf;
    return best;
}
