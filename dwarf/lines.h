/*
 * lines.h - the DWARF line tables of one ELF file, for breakpoints and stepping: the
 * addresses where a source line's code starts (break FILE:LINE), where a function's
 * body starts after its prologue (break FUNCTION), and every line row of the function
 * around an address (step, next, finish).
 *
 * Addresses are the ELF file's own (link-time) addresses: add the load bias of the
 * running process. Files are opened through openfiles.c's cache of open ELF files (one
 * mutex serializes every call of both modules; a file is opened once and reopened when
 * it changes on disk). Only rows that begin a statement (is_stmt) are used to bind
 * breakpoints; end-of-sequence rows (one past the code) never appear in results.
 *
 * A "function instance" is one physical copy of a function's code: the out-of-line
 * function, or one inlined copy of it (a DW_TAG_inlined_subroutine). The instance of an
 * address is the innermost DW_TAG_subprogram or DW_TAG_inlined_subroutine whose ranges
 * hold it.
 */
#ifndef STROBE_LINES_H
#define STROBE_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One place a source line binds to. */
struct dw_line_loc {
    uint64_t addr;   /* link-time address where the line's code starts in one function
                        instance: the lowest is_stmt row of the line in that instance */
    char *function;  /* the instance's function, named as dw_frame_sites names its
                        innermost site (an inlined callee's name when inlined); NULL when
                        no function DIE covers addr */
    bool inlined;    /* the instance is an inlined copy */
    char *file;      /* absolute and normalized, as the line table names it */
    int line;
};

enum dw_line_status {
    DWL_OK,          /* bound to the requested line */
    DWL_MOVED,       /* the requested line has no code: bound to a later one */
    DWL_NO_FILE,     /* no source file of the debug info matches (or there is none) */
    DWL_NO_CODE,     /* nothing to bind: no code at or after the line (in its function) */
};

struct dw_line_result {
    enum dw_line_status status;
    int line;                 /* the line that bound: the requested one unless MOVED */
    struct dw_line_loc *locs; /* sorted by address, one per address; NULL when none */
    size_t n_locs;            /* 0 unless OK or MOVED */
    char message[512];        /* "" when OK; else a sentence saying what happened */
};

/* Resolves "break FILE:LINE" in the ELF file at path, as gdb does:
 *
 * Files. file matches a source file named in a line table by its exact absolute path
 * (after removing "." and ".." segments), else by suffix at a path-component boundary
 * ("src/calc.c" matches "/x/src/calc.c"), else by basename ("/old/tree/calc.c" matches
 * "/x/calc.c"): the first of these three tests that matches any file decides, and every
 * file it matches is used (a header included by several CUs is one file per CU).
 *
 * Binding. The is_stmt rows of the matched files at line, in every CU, grouped by
 * function instance, keeping the lowest address per instance: a line that is a whole
 * for loop binds once, at its initialization; a line of an inlined function binds in
 * every inlined copy. status DWL_OK.
 *
 * Moving. When line has no row, the function it is in is taken to be the one declared
 * last at or before it in the file (DW_AT_decl_line). If that function has rows after
 * line, the smallest later line with rows in it (any instance of it) binds; if it has
 * no code anywhere, nothing binds (DWL_NO_CODE, "line 30 of calc.c is in function sq,
 * which the compiler inlined everywhere or never called"); otherwise (no function
 * before line, or line is past its last row: between functions) the smallest later
 * line with rows in the file binds. A line that binds this way gives DWL_MOVED and
 * "line 12 of calc.c has no code; bound to line 14, the next line that has code".
 * No later line: DWL_NO_CODE, "calc.c has no code at or after line 900; its last line
 * with code is 88".
 *
 * No file: DWL_NO_FILE, "no file matching 'calc.c' in the debug info of /path/prog; its
 * source files include: calc2.c, main.c, ..." (at most 8 basenames of files that have
 * code, the closest to file's basename by edit distance first), or "/path/prog has no
 * debug info (DWARF)".
 *
 * Messages name the file as the caller wrote it. Returns 0 (free out with
 * dw_line_result_free), or -1 when the ELF file cannot be read, with out->message
 * saying so and nothing to free. */
int dw_line_resolve(const char *path, const char *file, int line, struct dw_line_result *out);
void dw_line_result_free(struct dw_line_result *r);

/* Where "break FUNCTION" goes: the link-time address after the prologue of the
 * function of the ELF file at path whose code starts at entry (link-time). Within the
 * function's address range that holds entry, [entry, end):
 *   - the lowest row flagged prologue_end (clang writes them, gcc does not);
 *   - else, when the is_stmt rows at entry all name one line, the first is_stmt row
 *     after entry naming another line (gcc's -O0 prologue is the "{" line's code);
 *   - else, in a one-line function (every row on that line), the first is_stmt row
 *     after entry: gcc starts a row of the same line where the body begins;
 *   - else entry (the body starts at entry: optimized code).
 * Returns entry when no function or no line table covers entry. */
uint64_t dw_after_prologue(const char *path, uint64_t entry);

/* One row of a line table. */
struct dw_line_row {
    uint64_t addr;     /* link-time */
    int line;          /* 0: code that belongs to no source line */
    const char *file;  /* absolute when it can be made so; NULL when unknown; owned by
                          the struct dw_func_lines it is in */
    bool is_stmt;      /* a recommended breakpoint location (begins a statement) */
    bool inlined;      /* inside an inlined copy of a function */
};

struct dw_addr_range {
    uint64_t lo, hi;   /* [lo, hi), link-time */
};

/* The line rows of one out-of-line function, for stepping. */
struct dw_func_lines {
    uint64_t lo, hi;                /* the range of the function that holds pc */
    struct dw_addr_range *ranges;   /* all its ranges (a function split into hot and
                                       cold parts has several), sorted by lo */
    size_t n_ranges;
    struct dw_line_row *rows;       /* every row whose address is in one of the ranges,
                                       sorted by address (rows at one address keep the
                                       line table's order); no end-of-sequence rows */
    size_t n_rows;
    char **files;                   /* the distinct file names rows point to */
    size_t n_files;
};

/* The rows of the out-of-line function whose code holds link-time address pc in the
 * ELF file at path (pc in an inlined copy: the function it is inlined into). 0 (free
 * with dw_func_lines_free), or -1 with *out zeroed when no function or no line table
 * covers pc or the file cannot be read. */
int dw_function_lines(const char *path, uint64_t pc, struct dw_func_lines *out);
void dw_func_lines_free(struct dw_func_lines *f);

/* The source line of link-time address pc: the row at or before pc in its sequence,
 * as dw_frame_sites' innermost site has it, without naming functions or walking
 * scopes (a step checks it at every instruction). *file gets the absolute path (the
 * caller frees it; pass NULL when not wanted). 0, or -1 when no line table covers pc
 * or the file cannot be read. */
int dw_line_at(const char *path, uint64_t pc, char **file, int *line);

#endif
