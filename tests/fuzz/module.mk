# libFuzzer targets for every on-media reader (tests/fuzz/*_fuzz.cc), their
# seed corpus (tests/fuzz/corpus/<name>/, made by make_fuzz_corpus from the
# real writers) and the crashing inputs kept as regression tests
# (tests/fuzz/regressions/, replayed by tests/<layer>/fuzz_regression_test.cc
# in the normal g++ build).
#
#   make fuzz                 install clang, build, run each target FUZZ_SECONDS (60) s
#   make fuzz-smoke           the same, FUZZ_SMOKE_SECONDS (5) s per target
#   make fuzz FUZZ_TARGETS=table FUZZ_SECONDS=600
#   make fuzz-corpus          regenerate the seed corpus (g++ build)
#
# The compiler. libFuzzer needs clang (-fsanitize=fuzzer); the project is
# C++23 with std::expected (base/status.h's Result<T>) from g++ 12's
# libstdc++, whose <expected> is only enabled when __cpp_concepts >= 202002L.
# We use clang-16 with its fuzzer/sanitizer runtimes (libclang-rt-16-dev),
# both from Debian 12 (bookworm has no libclang-rt-15-dev, and clang-16 is
# its newest clang). Clang 16 implements P0848 (conditionally trivial special
# member functions, which <expected> relies on) but still advertises
# __cpp_concepts 201907L: the macro was only raised in a later release,
# after corner cases of deleted functions that std::expected does not use.
# So we compile with -std=c++2b and define __cpp_concepts=202002L
# (-Wno-macro-redefined); every library source builds with -Wall -Wextra
# -Werror that way and runs cleanly under ASan+UBSan.
#
# Objects are compiled again with clang into $(FUZZ_BUILD) (never mixed with
# the g++ objects in $(BUILD)).

FUZZ_CXX ?= clang++-16
FUZZ_BUILD ?= build/fuzz
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 5
FUZZ_DEB_PKGS := clang-16 libclang-rt-16-dev
FUZZ_ALL := table block blob row_table pool pm_wal container log_reader version_edit write_batch superblock schema
FUZZ_TARGETS ?= $(FUZZ_ALL)

FUZZ_LIB_SRCS := $(wildcard base/*.cc ssd/*.cc nvm/*.cc) \
  kvcore/log_reader.cc kvcore/log_writer.cc kvcore/version_edit.cc kvcore/write_batch.cc \
  kvcore/dbformat.cc kvcore/memtable.cc kvcore/arena.cc \
  fuse/schema.cc fuse/superblock.cc
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CXXFLAGS := -std=c++2b -D__cpp_concepts=202002L -Wno-macro-redefined -O1 -g -fno-omit-frame-pointer \
  $(FUZZ_SAN) -fsanitize=fuzzer-no-link -Wall -Wextra -Werror -MMD -MP -I. $(PKG_CFLAGS) -D_FILE_OFFSET_BITS=64
FUZZ_OBJS := $(patsubst %.cc,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_LIB_SRCS))
FUZZ_BINS := $(patsubst %,$(FUZZ_BUILD)/bin/%_fuzz,$(FUZZ_TARGETS))

$(FUZZ_BUILD)/obj/%.o: %.cc
	@mkdir -p $(@D)
	$(FUZZ_CXX) $(FUZZ_CXXFLAGS) -c -o $@ $<

$(FUZZ_BUILD)/lib/libfuzzmxfs.a: $(FUZZ_OBJS)
	@mkdir -p $(@D)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ_BUILD)/bin/%_fuzz: $(FUZZ_BUILD)/obj/tests/fuzz/%_fuzz.o $(FUZZ_BUILD)/lib/libfuzzmxfs.a
	@mkdir -p $(@D)
	$(FUZZ_CXX) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

# The seed-corpus generator runs the real writers (g++ build).
$(eval $(call program,make_fuzz_corpus,tests/fuzz/make_corpus.cc,kvcore nvm ssd base fuse))

.PHONY: fuzz fuzz-smoke fuzz-deps fuzz-build fuzz-corpus
fuzz-deps:
	@./tools/install-deps.sh $(FUZZ_DEB_PKGS)

fuzz-build: $(FUZZ_BINS)

fuzz: fuzz-deps
	@$(MAKE) --no-print-directory fuzz-build
	@./tests/fuzz/run-fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS) $(FUZZ_TARGETS)

fuzz-smoke: fuzz-deps
	@$(MAKE) --no-print-directory fuzz-build
	@./tests/fuzz/run-fuzz.sh $(FUZZ_BUILD) $(FUZZ_SMOKE_SECONDS) $(FUZZ_TARGETS)

fuzz-corpus: $(BIN)/make_fuzz_corpus
	$(BIN)/make_fuzz_corpus tests/fuzz/corpus

-include $(shell find $(FUZZ_BUILD)/obj -name '*.d' 2>/dev/null)

# Keep the targets' objects (make would delete them as intermediates).
.SECONDARY: $(patsubst %,$(FUZZ_BUILD)/obj/tests/fuzz/%_fuzz.o,$(FUZZ_ALL))
