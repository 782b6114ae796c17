/*
 * test_budget.c - mcp/budget.c, the server's last cut of a tool answer: an answer
 * that fits is left alone; the largest part goes first (an array's last items, a
 * long string's tail), the rest of the answer stays whole, and truncated names the
 * cut, added to the tool's own sentence when it had one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/budget.h"

/* {"sessionId": "s", "events": [n items of ~200 bytes]} */
static cJSON *answer_with_events(int n)
{
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "sessionId", "s");
    cJSON *events = cJSON_AddArrayToObject(a, "events");
    char text[200];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    for (int i = 0; i < n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "i", i);
        cJSON_AddStringToObject(e, "text", text);
        cJSON_AddItemToArray(events, e);
    }
    return a;
}

static void test_fitting_answer_untouched(void **state)
{
    (void)state;
    cJSON *a = answer_with_events(3);
    char *before = cJSON_PrintUnformatted(a);
    tool_answer_fit(a, 16384);
    char *after = cJSON_PrintUnformatted(a);
    assert_string_equal(before, after);
    free(before);
    free(after);
    cJSON_Delete(a);
}

static void test_largest_array_loses_its_tail(void **state)
{
    (void)state;
    cJSON *a = answer_with_events(200); /* ~44 KB */
    tool_answer_fit(a, 8192);
    assert_true(tool_json_size(a) <= 8192);
    cJSON *events = cJSON_GetObjectItem(a, "events");
    int n = cJSON_GetArraySize(events);
    assert_true(n > 10 && n < 200);
    assert_int_equal(cJSON_GetArrayItem(events, n - 1)->child->valueint, n - 1);
    assert_string_equal(cJSON_GetObjectItem(a, "sessionId")->valuestring, "s");
    const char *t = cJSON_GetObjectItem(a, "truncated")->valuestring;
    char want[64];
    snprintf(want, sizeof want, "events (last %d of 200 items left out)", 200 - n);
    assert_non_null(strstr(t, want));
    assert_non_null(strstr(t, "answers.maxBytes"));
    cJSON_Delete(a);
}

static void test_long_string_cut_and_sentence_appended(void **state)
{
    (void)state;
    cJSON *a = cJSON_CreateObject();
    cJSON_AddStringToObject(a, "truncated", "The tool's own cut.");
    char *big = malloc(20000);
    memset(big, 'y', 19999);
    big[19999] = '\0';
    cJSON *r = cJSON_AddObjectToObject(a, "result");
    cJSON_AddStringToObject(r, "value", big);
    free(big);
    tool_answer_fit(a, 4096);
    assert_true(tool_json_size(a) <= 4096);
    const char *v = cJSON_GetObjectItem(r, "value")->valuestring;
    assert_non_null(strstr(v, "more bytes)"));
    const char *t = cJSON_GetObjectItem(a, "truncated")->valuestring;
    assert_true(strncmp(t, "The tool's own cut. Answer cut to fit 4 KB", 42) == 0);
    assert_non_null(strstr(t, "result.value (text cut)"));
    cJSON_Delete(a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fitting_answer_untouched),
        cmocka_unit_test(test_largest_array_loses_its_tail),
        cmocka_unit_test(test_long_string_cut_and_sentence_appended),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
