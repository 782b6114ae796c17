/*
 * fake_mem.h - a fake target address space for the unit tests of value and ABI
 * decoding: FAKE_MEM_SIZE bytes at FAKE_MEM_BASE (both defined by the includer),
 * read through the same mem_read_fn the tracer uses; reads outside it fail, as
 * unmapped memory does.
 */
#ifndef STROBE_TEST_FAKE_MEM_H
#define STROBE_TEST_FAKE_MEM_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static uint8_t mem[FAKE_MEM_SIZE];

static bool mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
    (void)ctx;
    if (addr < FAKE_MEM_BASE || addr - FAKE_MEM_BASE > FAKE_MEM_SIZE ||
        len > FAKE_MEM_SIZE - (addr - FAKE_MEM_BASE))
        return false;
    memcpy(buf, mem + (addr - FAKE_MEM_BASE), len);
    return true;
}

static void poke(uint64_t addr, const void *data, size_t len)
{
    memcpy(mem + (addr - FAKE_MEM_BASE), data, len);
}

static void poke64(uint64_t addr, uint64_t v) { poke(addr, &v, 8); }

#endif
