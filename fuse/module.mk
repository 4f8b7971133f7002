$(eval $(call static_lib,fuse,$(wildcard fuse/*.cc)))
# The daemon; its source lives in fuse/prog/ so the library glob leaves it out.
$(eval $(call program,matrixfs,fuse/prog/main.cc,fuse kvcore nvm ssd base))
# mount(8) helper: mount -t matrixfs DATADIR MOUNTPOINT -o opts
$(BIN)/mount.matrixfs: fuse/prog/mount.matrixfs
	@mkdir -p $(@D)
	install -m 0755 $< $@
ALL_BINS += $(BIN)/mount.matrixfs
