# kvbench and the other tools.
$(eval $(call program,fsbench,tools/fsbench.cc,))
