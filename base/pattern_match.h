/*
 * pattern_match.h - whether a trace pattern (spec 003) matches a qualified name, and
 * the "did you mean" names for a pattern that selects nothing. Plain string work,
 * shared by the engine and every collector: syntax checking and the pending set
 * stay in core/patterns.h, and what a pattern selects among a program's functions
 * (@usercode, @file:, aliases) belongs to the collector that knows those functions
 * (ptrace/proc/match.h for native code).
 *
 * Names are qualified names without a parameter list: "auth::User::validate",
 * "std::vector<a::b>::push_back", "myapp::parser::parse" (Rust), "main" (C).
 *
 * Separators: a "::" in the name is a separator only at top level, i.e. outside
 * <...>, (...), [...] and {...} (nested). So "(anonymous namespace)::f" and
 * "f()::{lambda(std::string)#1}::operator()" split where a reader expects. The
 * characters of an operator name right after "operator" ("operator<", "operator<<=",
 * "operator->", "operator()") are not brackets. Unbalanced closers are ignored.
 *
 * Pattern rules (case-sensitive; every other character matches itself, "::" in the
 * pattern matches "::" in the name wherever it is):
 * - "*" matches any run of characters (possibly empty) that contains no character of
 *   a top-level separator. So "std::*::push_back" matches
 *   "std::vector<a::b>::push_back", "*" alone matches "main" and "vector<a::b>" but
 *   not "std::vector<a::b>" (that name has a top-level separator), and "*::validate"
 *   matches "User::validate" but neither "validate" nor "auth::User::validate".
 * - "**" matches any run of characters, separators included: "foo::**" matches
 *   everything below foo (not "foo" itself), "auth**" matches "auth::x" and "authz".
 * - A "**" that is a whole segment and is followed by "::" (pattern start or "::"
 *   before it) may also match zero segments: "auth::**::validate" matches
 *   "auth::validate" as well as "auth::a::b::validate"; "**::f" matches "f".
 * - A pattern without wildcards matches only the identical name.
 */
#ifndef STROBE_PATTERN_MATCH_H
#define STROBE_PATTERN_MATCH_H

#include <stdbool.h>
#include <stddef.h>

/* Whether pattern (well formed per pattern_check) matches qualified_name. */
bool pattern_match_name(const char *pattern, const char *qualified_name);

/* "Did you mean": stores in out[0..) up to max_out distinct names[] nearest to
 * pattern and returns how many. Distance (case-insensitive Levenshtein, '*'
 * removed from the pattern) is the smaller of the whole-name distance and the
 * distance between last segments (plus 1 when the pattern is qualified, as the
 * qualification then differs); a name is a candidate only within
 * max(2, length of the pattern's last segment / 3). Nearest first, ties by whole-name
 * distance then by name. */
size_t pattern_suggest(const char *pattern, const char *const *names, size_t n,
                       const char **out, size_t max_out);

#endif
