# kvbench and the other tools.
$(eval $(call program,fsbench,tools/fsbench.cc,))
# kvbench: db_bench-compatible MatrixKV benchmark (man/kvbench.1).
$(eval $(call program,kvbench,tools/kvbench.cc tools/histogram.cc,kvcore nvm ssd base))
# matrixfs-stat: live view of a mount's .matrixfs/ (man/matrixfs-stat.8).
$(eval $(call program,matrixfs-stat,tools/matrixfs_stat.cc,))
# mxfs-inject: damages an unmounted instance for the fsck tests.
$(eval $(call program,mxfs-inject,tools/mxfs_inject.cc,fuse kvcore nvm ssd base))
