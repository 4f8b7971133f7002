$(eval $(call static_lib,nvm,$(wildcard nvm/*.cc)))
# A lookup benchmark: cross-row hints and blooms on and off.
$(eval $(call program,nvm_row_search_bench,nvm/bench/row_search_bench.cc,nvm base))
