$(eval $(call static_lib,nvm,$(wildcard nvm/*.cc)))
