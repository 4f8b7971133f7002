# One Catch2 binary per layer: every tests/<layer>/*_test.cc is linked with
# the shared catch_main.cc and that layer's libraries and those below it.
# New test files need no edit here.
TEST_MAIN_OBJ := $(BUILD)/obj/tests/catch_main.o
test_libs_base := base
test_libs_ssd := ssd base
test_libs_nvm := nvm base
test_libs_kvcore := kvcore nvm ssd base
test_libs_fuse := fuse kvcore nvm ssd base
test_libs_mkfs := fuse kvcore nvm ssd base
define test_bin
ifneq ($$(wildcard tests/$(1)/*.cc),)
$(BIN)/test_$(1): $$(patsubst %.cc,$(BUILD)/obj/%.o,$$(wildcard tests/$(1)/*.cc)) $(TEST_MAIN_OBJ) $$(call lib_deps,$$(test_libs_$(1)))
	@mkdir -p $$(@D)
	$$(CXX) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
ALL_BINS += $(BIN)/test_$(1)
ALL_TESTS += $(BIN)/test_$(1)
endif
endef
$(foreach l,base ssd nvm kvcore fuse mkfs,$(eval $(call test_bin,$(l))))
