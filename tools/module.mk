# kvbench and the other tools.
$(eval $(call program,fsbench,tools/fsbench.cc,))
# kvbench: db_bench-compatible MatrixKV benchmark (man/kvbench.1).
$(eval $(call program,kvbench,tools/kvbench.cc tools/histogram.cc,kvcore nvm ssd base))
