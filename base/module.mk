$(eval $(call static_lib,base,$(wildcard base/*.cc)))
