# MatrixFS — one non-recursive GNU Makefile. Each folder adds its own rules
# in <folder>/module.mk through the helpers defined here.
#
#   make            build everything into build/ (make SAN=1: ASan+UBSan into build-san/,
#                   make TSAN=1: ThreadSanitizer into build-tsan/)
#   make tsan-test  the engine and container tests under ThreadSanitizer
#   make test       install missing packages, build, run every test
#   make run        install missing packages, build, format and mount a default instance
#   make deps       apt-get install what pkg-config cannot find
#   make clean

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

$(BUILD)/obj/%.o: %.cc
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -c -o $@ $<

MODULES := base ssd nvm kvcore fuse mkfs tools tools/torture tests tests/fuzz
include $(patsubst %,%/module.mk,$(MODULES))

.PHONY: all deps test run clean check-deps install tsan-test
all: $(ALL_BINS)

# Installs, as root, the Debian packages that are missing. Nothing happens
# when everything is present, so it is cheap to call before every build.
DEB_PKGS := g++ make pkg-config libfuse3-dev fuse3 libpmem2-dev liburing-dev libxxhash-dev catch2 fio git rsync tar gcc groff-base
deps:
	@./tools/install-deps.sh $(DEB_PKGS)

test: deps
	@$(MAKE) --no-print-directory all
	@./tests/run-tests.sh $(BUILD)

run: deps
	@$(MAKE) --no-print-directory all
	@./tools/run-default.sh $(BUILD)

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
	rm -rf build build-san build-tsan

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
