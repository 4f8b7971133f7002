# mxfs-torture: crash torture of the daemon (RELIABILITY.md, "Crash torture").
$(eval $(call program,mxfs-torture,tools/torture/torture_main.cc tools/torture/fs_model.cc tools/torture/daemon.cc,))

# make torture [ROUNDS=1000] [TORTURE_TIME=3600] [TORTURE_ARGS="--seed 5 -v"]:
# the long run, both instance kinds, as root (it mounts).
ROUNDS ?= 1000
TORTURE_TIME ?= 3600
.PHONY: torture
torture: $(BIN)/mxfs-torture $(BIN)/matrixfs $(BIN)/fsck.matrixfs
	$(BIN)/mxfs-torture --bin $(BIN) --rounds $(ROUNDS) --time-limit $(TORTURE_TIME) $(TORTURE_ARGS)
