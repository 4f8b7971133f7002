# mkfs.matrixfs and fsck.matrixfs (issue 5). The check logic lives in
# mkfs/fsck*.cc, listed in each program that needs it (mkfs/ is not a library).
$(eval $(call program,mkfs.matrixfs,mkfs/mkfs_main.cc,fuse kvcore nvm ssd base))
$(eval $(call program,fsck.matrixfs,$(wildcard mkfs/fsck*.cc),fuse kvcore nvm ssd base))
