/*
 * install_json.h - adds and removes one member of a JSON configuration file by
 * editing its text. The scanner is tolerant of JSONC (comments, trailing commas,
 * as VS Code and Cursor write them) and never rewrites what it does not change.
 */
#ifndef STROBE_INSTALL_JSON_H
#define STROBE_INSTALL_JSON_H

#include "cli/install/install_edit.h"

/*
 * Sets member `key` of the object `parent` (a member of the top-level object) to
 * `value` (JSON text, one line). The member goes first in its object; a missing
 * parent is created, first in the top-level object; a member with other text gets
 * its value replaced. Whitespace-only text becomes a new document. On EDIT_ERROR,
 * err holds a sentence naming the line.
 */
enum edit_result jsonc_set(const char *text, size_t len, const char *parent, const char *key,
                           const char *value, struct splice *sp, char *err, size_t errlen);

/*
 * Removes member `key` of `parent`, and the parent too when jsonc_set created it,
 * so that remove after set gives back the original bytes. EDIT_NONE when absent.
 */
enum edit_result jsonc_remove(const char *text, size_t len, const char *parent,
                              const char *key, struct splice *sp, char *err, size_t errlen);

#endif
