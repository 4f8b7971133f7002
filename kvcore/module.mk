$(eval $(call static_lib,kvcore,$(wildcard kvcore/*.cc)))
# blob-gc-bench: blob-file space left by a rewrite-heavy workload, with and
# without garbage-triggered compactions (BENCHMARKS.md).
$(eval $(call program,blob-gc-bench,kvcore/bench/blob_gc_bench.cc,kvcore nvm ssd base))
