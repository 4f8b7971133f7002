# MatrixFS — one non-recursive GNU Makefile. Each folder adds its own rules
# in <folder>/module.mk through the helpers defined here.
#
#   make            build everything into build/ (make SAN=1: ASan+UBSan into build-san/,
#                   make TSAN=1: ThreadSanitizer into build-tsan/)
#   make tsan-test  the engine and container tests under ThreadSanitizer
#   make test       install missing packages, build, run every test (one line per suite)
#   make run        install missing packages, build the programs, format and mount a
#                   default instance under var/ and say where it is
#   make stop       unmount the default instance (its data stays for the next make run)
#   make deps       apt-get install what pkg-config cannot find
#   make bench-deps apt-get install what tools/bench/*.sh and tools/load/*.sh call
#   make deb        a Debian package in build/deb/ (tools/deb/build-deb.sh)
#   make install    PREFIX=/usr/local, DESTDIR honoured
#   make clean      make stop, delete the default instance and its pool, and the build folders
#
# make run, test and deb build with every core unless -j is given (on the
# command line or in MAKEFLAGS, as .ci/run does). The compiler runs through
# ccache when it is installed (make bench-deps installs it; CCACHE= turns
# it off).

SHELL := /bin/bash
.DEFAULT_GOAL := all

CXX ?= g++
ifeq ($(CXX),c++)
  CXX := g++
endif
PKGS := fuse3 liburing libpmem2 libxxhash

ifeq ($(SAN),1)
  BUILD ?= build-san
  OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  SANLD := -fsanitize=address,undefined
else ifeq ($(TSAN),1)
  BUILD ?= build-tsan
  OPT := -O1 -g -fno-omit-frame-pointer -fsanitize=thread
  SANLD := -fsanitize=thread
else
  BUILD ?= build
  OPT := -O2 -g
  SANLD :=
endif

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

CXXFLAGS := -std=c++23 $(OPT) -Wall -Wextra -Werror -MMD -MP -I. $(PKG_CFLAGS) -D_FILE_OFFSET_BITS=64 $(EXTRA_CXXFLAGS)
LDFLAGS := $(SANLD) $(EXTRA_LDFLAGS)
LDLIBS := $(PKG_LIBS) -lpthread

BIN := $(BUILD)/bin
ALL_BINS :=
ALL_TESTS :=

# $(call static_lib,NAME,SOURCES): builds $(BUILD)/lib/libNAME.a.
define static_lib
$(1)_OBJS := $$(patsubst %.cc,$(BUILD)/obj/%.o,$(2))
$(BUILD)/lib/lib$(1).a: $$($(1)_OBJS)
	@mkdir -p $$(@D)
	@rm -f $$@
	ar rcs $$@ $$^
endef

# Link order, highest layer first.
LAYERS := fuse kvcore nvm ssd base
# $(call lib_deps,LIBS): the archives for LIBS in link order.
lib_deps = $(foreach l,$(LAYERS),$(if $(filter $(l),$(1)),$(BUILD)/lib/lib$(l).a))

# $(call program,NAME,SOURCES,LIBS): links $(BIN)/NAME.
define program
$(BIN)/$(1): $$(patsubst %.cc,$(BUILD)/obj/%.o,$(2)) $$(call lib_deps,$(3))
	@mkdir -p $$(@D)
	$$(CXX) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
ALL_BINS += $(BIN)/$(1)
endef

ifeq ($(origin CCACHE),undefined)
  CCACHE := $(shell command -v ccache 2>/dev/null)
endif

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(@D)
	$(CCACHE) $(CXX) $(CXXFLAGS) -c -o $@ $<

MODULES := base ssd nvm kvcore fuse mkfs tools tools/torture tests tests/fuzz
include $(patsubst %,%/module.mk,$(MODULES))

.PHONY: all deps bench-deps test run run-programs stop clean install tsan-test
all: $(ALL_BINS)

# A sub-make with every core, unless the caller chose a -j itself.
SUBMAKE = $(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))

# Installs, as root, the Debian packages that are missing. Nothing happens
# when everything is present, so it is cheap to call before every build.
DEB_PKGS := g++ make pkg-config libfuse3-dev fuse3 libpmem2-dev liburing-dev libxxhash-dev catch2 fio git rsync tar gcc groff-base
deps:
	@./tools/install-deps.sh $(DEB_PKGS)

# What the benchmark and load scripts call besides the build: gnuplot for
# their plots, RocksDB's db_bench, fs_mark, fio, python3, a C compiler and
# libfuse's examples (fs_vs_ext4.sh builds passthrough_ll), top and free;
# ccache makes the rebuilds at each measured commit cheap.
BENCH_DEB_PKGS := gnuplot-nox rocksdb-tools fsmark fio ccache python3 gcc pkg-config libfuse3-dev procps
bench-deps: deps
	@./tools/install-deps.sh $(BENCH_DEB_PKGS)

# The build's output goes to $(BUILD)/test-logs/build.log like the suites'.
test: deps
	+@./tests/run-tests.sh $(BUILD) $(SUBMAKE) all

# What make run starts and what its message tells the user to call.
RUN_PROGRAMS := matrixfs mount.matrixfs mkfs.matrixfs fsck.matrixfs matrixfs-stat
run-programs: $(addprefix $(BIN)/,$(RUN_PROGRAMS))
	@:

run: deps
	@$(SUBMAKE) run-programs
	@./tools/run-default.sh start $(BUILD)

stop:
	@./tools/run-default.sh stop $(BUILD)

# The engine and container tests under ThreadSanitizer (issue 20): run it,
# as make SAN=1 test, before calling a change to kvcore/, nvm/ or ssd/ done.
TSAN_TESTS := test_ssd test_nvm test_kvcore
tsan-test: deps
	@$(MAKE) --no-print-directory TSAN=1 $(addprefix build-tsan/bin/,$(TSAN_TESTS))
	@set -e; for t in $(TSAN_TESTS); do \
	  log=build-tsan/$$t.log; \
	  if build-tsan/bin/$$t --use-colour no > $$log 2>&1; then echo "$$t (ThreadSanitizer): $$(grep -E '^All tests passed' $$log)"; \
	  else tail -60 $$log; echo "$$t (ThreadSanitizer) failed; full log: $$log"; exit 1; fi; \
	done

clean:
	@./tools/run-default.sh delete $(BUILD)
	rm -rf build build-san build-tsan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
