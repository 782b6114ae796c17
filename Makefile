# Strobe: ptrace-native debugger engine for LLM coding agents.
#
#   make            build build/strobe and build/strobectl
#   make demo       launch a sample program under strobe, trace it, query it
#   make check      unit + end-to-end suites, on the normal and the ASan+UBSan builds,
#                   plus valgrind on the daemon
#   make layers     the layering rule: includes (scripts/check-layers.sh), calls
#                   and names (scripts/check-calls.py)
#   make bench      benchmarks (results go to BENCHMARKS.md by hand)
#   make fuzz       libFuzzer targets of fuzz/, FUZZ_SECONDS each (not in CI; TESTING.md)
#   make install    PREFIX=/usr/local
#
# Every public target first runs scripts/deps.sh, which apt-installs what is missing,
# and only then builds, in a sub-make: with any -j nothing is compiled (and
# pkg-config is not asked) before the packages are there.
# SAN=1 builds into build-san/ with AddressSanitizer and UndefinedBehaviorSanitizer.
# FUZZ=1 builds into build-fuzz/ with clang, libFuzzer's coverage and both sanitizers.

PREFIX ?= /usr/local
PKGS := libelf libdw libunwind libunwind-ptrace sqlite3 libcjson capstone libpcre2-8 expat libedit

ifeq ($(FUZZ),1)
B := build-fuzz
CC := clang
OPT := -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
       -fno-sanitize-recover=undefined
else ifeq ($(SAN),1)
B := build-san
OPT := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
else
B := build
OPT := -O2
endif

CC ?= cc
CFLAGS_ALL = -std=gnu11 -D_GNU_SOURCE -Wall -Wextra -Werror $(OPT) -g -I. -pthread \
             $(shell pkg-config --cflags $(PKGS)) $(CFLAGS)
LDLIBS_ALL = $(shell pkg-config --libs $(PKGS)) -liberty -lm -pthread $(LDLIBS)

# The library is every C and assembler file below the product's folders, which are
# README.md's Layout table less the folders of tools around it (scripts/check-layers.sh
# --folders reads the table: a new collector's folder builds once it has its row).
# The recorder (ptrace/hooks/fastrec/) runs inside the target and is built apart.
TOOL_DIRS := tests bench fuzz man
LIB_DIRS := $(filter-out $(TOOL_DIRS),$(shell scripts/check-layers.sh --folders))
LIB_SRC := $(shell find $(LIB_DIRS) -path '*/fastrec' -prune -o \( -name '*.c' -o -name '*.S' \) -print | LC_ALL=C sort)
LIB_SRC := $(filter-out cli/ctl/strobectl.c,$(LIB_SRC))
LIB_OBJ := $(patsubst %,$(B)/obj/%.o,$(basename $(LIB_SRC)))
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%)
FIXTURE_SRC := $(wildcard tests/fixtures/*.c tests/fixtures/*.cpp tests/fixtures/*.rs)
FIXTURE_BIN := $(patsubst tests/fixtures/%,$(B)/fixtures/%,$(basename $(FIXTURE_SRC)))
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(B)/bench/%)

.PHONY: all demo check unit e2e valgrind bench install clean fixtures layers \
        build-all build-demo build-unit build-e2e build-valgrind build-bench \
        build-install build-fixtures fuzz build-fuzz
all:

# Public targets: packages first (scripts/deps.sh LEVEL), then the build-* target of
# the same name in a sub-make, which inherits -j and SAN.
all demo install fixtures:
	@scripts/deps.sh build
	@$(MAKE) --no-print-directory build-$@
unit e2e valgrind:
	@scripts/deps.sh check
	@$(MAKE) --no-print-directory build-$@
bench:
	@scripts/deps.sh bench
	@$(MAKE) --no-print-directory build-bench
fuzz:
	@scripts/deps.sh fuzz
	@$(MAKE) --no-print-directory FUZZ=1 build-fuzz

# The whole test suite, one step after the other: the layering rule (the includes,
# then, once built, the calls), both builds' unit and end-to-end suites, then the
# daemon under valgrind. Each step builds what
# it needs with one job per CPU unless make was given a -j of its own (the suites
# themselves run one after the other: they share the machine's CPUs).
NPROC := $(shell nproc 2>/dev/null || echo 2)
PAR = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))
check:
	@scripts/deps.sh check
	@scripts/check-layers.sh
	@$(MAKE) --no-print-directory $(PAR) build-unit
	@scripts/check-calls.py build
	@$(MAKE) --no-print-directory $(PAR) build-e2e
	@$(MAKE) --no-print-directory $(PAR) SAN=1 build-unit
	@$(MAKE) --no-print-directory $(PAR) SAN=1 build-e2e
	@$(MAKE) --no-print-directory $(PAR) build-valgrind

layers:
	@scripts/deps.sh build
	@scripts/check-layers.sh
	@$(MAKE) --no-print-directory $(PAR) build-all
	@scripts/check-calls.py build

build-all: $(B)/strobe $(B)/strobectl

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# Assembler sources see the build directory's generated headers and files.
$(B)/obj/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -I$(B) -MMD -MP -c $< -o $@

# The fast path's recorder (ptrace/hooks/fastrec/): code that runs inside the traced
# process, copied there as a flat image. Its flags are its own, never $(OPT): no
# sanitizer, no stack protector, no xmm register, no call to anything (the loop
# patterns would become memcpy calls), no jump tables; gcc whatever CC is (FUZZ=1
# uses clang). The image must have no undefined symbol, only PC-relative
# relocations in its object, and no writable data: each is checked, and fails the
# build.
BLOBCC := gcc
BLOBFLAGS := -std=gnu11 -Wall -Wextra -Werror -O2 -I. -ffreestanding -fPIC \
             -fno-stack-protector -mgeneral-regs-only -fno-asynchronous-unwind-tables \
             -fno-unwind-tables -fno-builtin -nostdlib -fno-tree-loop-distribute-patterns \
             -fno-jump-tables -fvisibility=hidden
$(B)/fastrec/recorder.o: ptrace/hooks/fastrec/recorder.c ptrace/hooks/fast_abi.h
	@mkdir -p $(dir $@)
	$(BLOBCC) $(BLOBFLAGS) -c $< -o $@
	@if nm -u $@ | grep -q .; then \
	    echo "fastrec: the recorder calls outside itself:"; nm -u $@; rm -f $@; exit 1; fi
	@if readelf -rW $@ | awk '/^[0-9a-f]+ /' | grep -vE 'R_X86_64_(PC32|PLT32) '; then \
	    echo "fastrec: the recorder has a relocation that is not PC-relative"; \
	    rm -f $@; exit 1; fi
$(B)/fastrec/recorder.elf: $(B)/fastrec/recorder.o ptrace/hooks/fastrec/recorder.ld
	$(BLOBCC) -nostdlib -static -Wl,--build-id=none -Wl,-T,ptrace/hooks/fastrec/recorder.ld \
	    -o $@ $<
	@if ! readelf -rW $@ | grep -q 'no relocations'; then \
	    echo "fastrec: the recorder image has relocations"; rm -f $@; exit 1; fi
	@if readelf -SW $@ | awk 'sub(/^ +\[ *[0-9]+\] /, "") && $$7 ~ /W/' | grep .; then \
	    echo "fastrec: the recorder has writable data"; rm -f $@; exit 1; fi
$(B)/fastrec/recorder.bin: $(B)/fastrec/recorder.elf
	objcopy -O binary -j .text $< $@
$(B)/fastrec/fastrec_offsets.h: $(B)/fastrec/recorder.elf
	nm $< | awk '$$3 == "fast_enter" { e = $$1 } $$3 == "fast_exit" { x = $$1 } \
	    END { if (e == "" || x == "") exit 1; \
	          print "#define FASTREC_ENTER_OFF 0x" e; print "#define FASTREC_EXIT_OFF 0x" x }' \
	    > $@.tmp && mv $@.tmp $@
$(B)/obj/ptrace/hooks/fastrec_blob.o: $(B)/fastrec/recorder.bin $(B)/fastrec/fastrec_offsets.h
# The Python agent's files are in the daemon (python/agent_blob.S, .incbin).
$(B)/obj/python/agent_blob.o: $(wildcard python/agent/_strobe_agent/*.py)

# The MCP tool catalog, data built into the binary (.incbin, which the compiler's
# dependency lists do not see).
$(B)/obj/mcp/tools_json.o: mcp/tools.json

$(B)/libstrobe.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/strobe: $(B)/obj/strobe.o $(B)/libstrobe.a
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(B)/strobectl: $(B)/obj/cli/ctl/strobectl.o $(B)/libstrobe.a
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

$(B)/tests/%: tests/unit/%.c $(B)/libstrobe.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL) $(shell pkg-config --libs cmocka)

$(B)/bench/%: bench/%.c $(B)/libstrobe.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -o $@ $^ $(LDLIBS_ALL)

# Fixtures are the programs under test: always plain -O0 -g builds, never sanitized
# (except the ones that ask for it in their own name).
FIXFLAGS := -O0 -g -Wall -pthread
$(B)/fixtures/%: tests/fixtures/%.c
	@mkdir -p $(dir $@)
	cc $(FIXFLAGS) -o $@ $<
$(B)/fixtures/%: tests/fixtures/%.cpp
	@mkdir -p $(dir $@)
	c++ $(FIXFLAGS) -o $@ $<
# Rust fixtures: NAME_v0.rs builds with the v0 symbol mangling, the others with legacy.
$(B)/fixtures/%: tests/fixtures/%.rs
	@mkdir -p $(dir $@)
	MAKEFLAGS= rustc -g -C opt-level=0 $(if $(filter %_v0,$*),-C symbol-mangling-version=v0) -o $@ $<
# NAME_O2.c: optimized, endbr64 prologues; NAME_nocf_O2.c: optimized, no endbr64.
$(B)/fixtures/%_O2: tests/fixtures/%_O2.c
	@mkdir -p $(dir $@)
	cc -O2 -g -Wall -fcf-protection=full -o $@ $<
$(B)/fixtures/%_nocf_O2: tests/fixtures/%_nocf_O2.c
	@mkdir -p $(dir $@)
	cc -O2 -g -Wall -fcf-protection=none -o $@ $<
# NAME_asan.c: AddressSanitizer, whose reports the crash tests read.
$(B)/fixtures/%_asan: tests/fixtures/%_asan.c
	@mkdir -p $(dir $@)
	cc -O0 -g -Wall -fsanitize=address -fno-omit-frame-pointer -o $@ $<
# fork_exec runs a fixture from its own directory.
$(B)/fixtures/fork_exec: | $(B)/fixtures/hello_exit3
# shapes_lib.c is the shared library libshapes.so, which uses_lib links.
FIXTURE_BIN := $(filter-out $(B)/fixtures/shapes_lib,$(FIXTURE_BIN)) $(B)/fixtures/libshapes.so
$(B)/fixtures/libshapes.so: tests/fixtures/shapes_lib.c tests/fixtures/shapes_lib.h
	@mkdir -p $(dir $@)
	cc $(FIXFLAGS) -shared -fPIC -o $@ $<
$(B)/fixtures/uses_lib: tests/fixtures/uses_lib.c $(B)/fixtures/libshapes.so
	cc $(FIXFLAGS) -o $@ $< -L$(B)/fixtures -lshapes -Wl,-rpath,'$$ORIGIN'
# cext_lib.c is libcext.so, a C library tests/fixtures/python/cext_wait.py calls.
FIXTURE_BIN := $(filter-out $(B)/fixtures/cext_lib,$(FIXTURE_BIN)) $(B)/fixtures/libcext.so
$(B)/fixtures/libcext.so: tests/fixtures/cext_lib.c
	@mkdir -p $(dir $@)
	cc $(FIXFLAGS) -shared -fPIC -o $@ $<
# globals_lib.c is libglobals.so (-O2: one of its statics is optimized out), which
# globals_all links.
FIXTURE_BIN := $(filter-out $(B)/fixtures/globals_lib,$(FIXTURE_BIN)) $(B)/fixtures/libglobals.so
$(B)/fixtures/libglobals.so: tests/fixtures/globals_lib.c tests/fixtures/globals_lib.h
	@mkdir -p $(dir $@)
	cc -O2 -g -Wall -shared -fPIC -o $@ $<
$(B)/fixtures/globals_all: tests/fixtures/globals_all.c $(B)/fixtures/libglobals.so
	cc $(FIXFLAGS) -o $@ $< -L$(B)/fixtures -lglobals -Wl,-rpath,'$$ORIGIN'
build-fixtures: $(FIXTURE_BIN)

build-demo: build-all $(B)/fixtures/demo_orders
	@scripts/demo.sh $(B)

build-unit: $(UNIT_BIN) build-fixtures # test_dwarf reads the fixtures
	@scripts/run-unit.sh $(UNIT_BIN)

build-e2e: build-all build-fixtures
	@scripts/run-e2e.sh $(B)

build-valgrind: build-all build-fixtures
	@STROBE_VALGRIND=1 scripts/run-e2e.sh $(B)

build-bench: build-all build-fixtures $(BENCH_BIN)
	@scripts/run-bench.sh $(B)

build-install: build-all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
	           $(DESTDIR)$(PREFIX)/share/man/man7
	install -m 0755 $(B)/strobe $(B)/strobectl $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 $(wildcard man/*.1) $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 $(wildcard man/*.7) $(DESTDIR)$(PREFIX)/share/man/man7/

# Fuzzing (FUZZ=1): each target runs FUZZ_SECONDS on its corpus in $(B)/corpus/,
# seeded from fuzz/corpus/TARGET/ or, for dwarf, compiled from fixtures, with the
# dictionary fuzz/TARGET.dict when there is one; a crash, a leak or an input slower
# than 10 s leaves its input in $(B)/ (TARGET-crash-HASH, -leak-, -timeout-) and
# fails the run, with the end of the target's log, $(B)/fuzz_TARGET.log.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := mcp dwarf cond pattern
$(B)/fuzz/fuzz_%: fuzz/fuzz_%.c $(B)/libstrobe.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -o $@ $^ $(LDLIBS_ALL)
# The ELF seeds: an executable, a relocatable object, a shared library, DWARF 4 and
# optimized code (location lists, inlined copies).
FUZZ_ELF := $(B)/corpus/dwarf/hello_exit3 $(B)/corpus/dwarf/globals_all.o \
            $(B)/corpus/dwarf/libshapes.so $(B)/corpus/dwarf/bp_lines_dwarf4 \
            $(B)/corpus/dwarf/opt_O2
$(B)/corpus/dwarf/%: tests/fixtures/%.c
	@mkdir -p $(dir $@)
	cc $(FIXFLAGS) -o $@ $<
$(B)/corpus/dwarf/%.o: tests/fixtures/%.c
	@mkdir -p $(dir $@)
	cc $(FIXFLAGS) -c -o $@ $<
$(B)/corpus/dwarf/libshapes.so: tests/fixtures/shapes_lib.c
	@mkdir -p $(dir $@)
	cc $(FIXFLAGS) -shared -fPIC -o $@ $<
$(B)/corpus/dwarf/bp_lines_dwarf4: tests/fixtures/bp_lines.c
	@mkdir -p $(dir $@)
	cc $(FIXFLAGS) -gdwarf-4 -o $@ $<
$(B)/corpus/dwarf/opt_O2: tests/fixtures/opt_O2.c
	@mkdir -p $(dir $@)
	cc -O2 -g -o $@ $<
build-fuzz: $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz_%) $(FUZZ_ELF)
	@set -e; for t in $(FUZZ_TARGETS); do \
	    mkdir -p $(B)/corpus/$$t; \
	    if [ -d fuzz/corpus/$$t ]; then cp fuzz/corpus/$$t/* $(B)/corpus/$$t/; fi; \
	    echo "fuzz_$$t: $(FUZZ_SECONDS) s"; \
	    dict=; if [ -f fuzz/$$t.dict ]; then dict=-dict=fuzz/$$t.dict; fi; \
	    $(B)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 $$dict \
	        -print_final_stats=1 -artifact_prefix=$(B)/$$t- $(B)/corpus/$$t \
	        2>$(B)/fuzz_$$t.log \
	        || { tail -n 60 $(B)/fuzz_$$t.log; exit 1; }; \
	    grep -E '^stat::(number_of_executed_units|new_units_added)' $(B)/fuzz_$$t.log; \
	done

clean:
	rm -rf build build-san build-fuzz

-include $(LIB_OBJ:.o=.d) $(B)/obj/strobe.d $(B)/obj/cli/ctl/strobectl.d
