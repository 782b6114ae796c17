/*
 * fuzz_dwarf.c - libFuzzer target of the ELF/DWARF reader (dwarf/): each input is
 * an ELF file, written to a memfd and read through its /proc/self/fd path as the
 * daemon reads a program under test: the function index (dw_index_get, with a
 * lookup by address), the line table (dw_line_resolve of a file:line) and the
 * variables (dw_global_find), with every cache dropped after each input so the next
 * one is read afresh.
 *
 * The check is the sanitizers': no crash, leak, out-of-bounds read or undefined
 * behaviour on any file, however broken.
 *
 * Run: `make fuzz` (FUZZ_SECONDS per target). Seeds are generated at build time:
 * fixtures of tests/fixtures/ compiled into build-fuzz/corpus/dwarf/.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dwarf/dwarf.h"
#include "dwarf/frame.h"
#include "dwarf/globals.h"
#include "dwarf/lines.h"

static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fd = memfd_create("fuzz-elf", 0);
    if (fd < 0)
        abort();
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    const struct dw_index *ix = dw_index_get(path, NULL);
    const char *file = "main.c";
    int line = 10;
    if (ix && ix->n_functions) {
        const struct dw_function *f = &ix->functions[ix->n_functions / 2];
        dw_function_at(ix, f->entry);
        struct dw_site sites[8];
        dw_sites_free(sites, dw_frame_sites(path, f->entry, sites, 8));
        if (f->decl_file) {
            file = f->decl_file;
            line = f->decl_line + 1;
        }
    }

    /* A line of the function above: binding, moving and the instance search. */
    struct dw_line_result lines;
    if (dw_line_resolve(path, file, line, &lines) == 0)
        dw_line_result_free(&lines);

    struct dw_global g;
    dw_global_find(path, "g_point", &g);
    dw_global_find(path, "counter", &g);
    struct dw_near near = {0};
    dw_global_near(path, "g_pont", &near);

    dw_cache_clear();
    dw_frame_cache_clear();
    return 0;
}
