$(eval $(call static_lib,kvcore,$(wildcard kvcore/*.cc)))
