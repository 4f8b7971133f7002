$(eval $(call static_lib,fuse,$(wildcard fuse/*.cc)))
