/*
 * budget.h - the size limit of every tool answer (setting answers.maxBytes, default
 * 16384 bytes of compact JSON; $STROBE_HOME/settings.json only): the consumer is an
 * LLM whose context is the scarce resource.
 */
#ifndef STROBE_BUDGET_H
#define STROBE_BUDGET_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* answers.maxBytes as the settings say now (re-read at each call). */
size_t tool_answer_budget(void);

/* The bytes of o as compact JSON: what an answer's budget counts. */
size_t tool_json_size(const cJSON *o);

/* Cuts answer, a tool's result object, until its compact JSON fits budget bytes:
 * the largest part first (an array or object loses its last members, a long
 * string its tail), and says what was cut in answer.truncated (a sentence, added
 * to the tool's own when it had one). An answer that fits is left alone. */
void tool_answer_fit(cJSON *answer, size_t budget);

#endif
