/*
 * tools_json.S - embeds the tool catalog, mcp/tools.json, as tools_json: its text
 * and a NUL, for cJSON_Parse. Read and checked by mcp/tools.c; the Makefile
 * rebuilds this object when the catalog changes.
 */
    .section .rodata
    .globl tools_json
    .type tools_json, @object
tools_json:
    .incbin "mcp/tools.json"
    .byte 0
    .size tools_json, . - tools_json

    .section .note.GNU-stack, "", @progbits
