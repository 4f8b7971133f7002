# One Catch2 binary per layer: every tests/<layer>/*_test.cc is linked with
# the shared catch_main.cc and all libraries. New test files need no edit here.
TEST_LAYERS := base ssd nvm kvcore fuse
TEST_MAIN_OBJ := $(BUILD)/obj/tests/catch_main.o
define test_bin
ifneq ($$(wildcard tests/$(1)/*.cc),)
$(BIN)/test_$(1): $$(patsubst %.cc,$(BUILD)/obj/%.o,$$(wildcard tests/$(1)/*.cc)) $(TEST_MAIN_OBJ) $$(call lib_deps,$(LAYERS))
	@mkdir -p $$(@D)
	$$(CXX) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
ALL_BINS += $(BIN)/test_$(1)
ALL_TESTS += $(BIN)/test_$(1)
endif
endef
$(foreach l,$(TEST_LAYERS),$(eval $(call test_bin,$(l))))
