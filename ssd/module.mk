$(eval $(call static_lib,ssd,$(wildcard ssd/*.cc)))
