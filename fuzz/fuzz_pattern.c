/*
 * fuzz_pattern.c - libFuzzer target of trace patterns: the syntax check
 * (core/patterns.h), name matching and the "did you mean" suggestions
 * (base/pattern_match.h). Each input is "PATTERN\nNAME": the pattern is checked and,
 * when well formed, matched against the name and asked for suggestions among it and
 * a few fixed names.
 *
 * The checks: the sanitizers' and libFuzzer's timeout (a pattern with many wildcards
 * must not take exponential time), plus what pattern_match.h promises: a pattern
 * without a wildcard matches only the identical name, and a suggestion is one of
 * the names offered.
 *
 * Run: `make fuzz` (FUZZ_SECONDS per target); seeds in fuzz/corpus/pattern/.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/pattern_match.h"
#include "core/patterns.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 2 * PATTERN_MAX_LEN)
        return -1;
    char buf[2 * PATTERN_MAX_LEN + 1];
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *pattern = buf, *name = strchr(buf, '\n');
    if (name)
        *name++ = '\0';
    else
        name = "auth::User::validate";
    struct strobe_error e = {0};
    if (pattern_check(pattern, &e) != 0)
        return 0;
    bool matched = pattern_match_name(pattern, name);
    if (!strchr(pattern, '*') && matched != (strcmp(pattern, name) == 0))
        abort();
    const char *names[] = {name, "main", "std::vector<a::b>::push_back",
                           "f()::{lambda(std::string)#1}::operator()", "operator<<="};
    const char *out[4];
    size_t n = pattern_suggest(pattern, names, sizeof names / sizeof *names, out, 4);
    for (size_t i = 0; i < n; i++) {
        bool offered = false;
        for (size_t k = 0; k < sizeof names / sizeof *names; k++)
            offered |= out[i] == names[k];
        if (!offered)
            abort();
    }
    return 0;
}
