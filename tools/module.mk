# kvbench and the other tools.
$(eval $(call program,fsbench,tools/fsbench.cc,))
# kvbench: db_bench-compatible MatrixKV benchmark (man/kvbench.1).
$(eval $(call program,kvbench,$(wildcard tools/kvbench*.cc) tools/histogram.cc,kvcore nvm ssd base))
# matrixfs-stat: live view of a mount's .matrixfs/ (man/matrixfs-stat.8).
$(eval $(call program,matrixfs-stat,tools/matrixfs_stat.cc,))
# mxfs-inject: damages an unmounted instance for the fsck tests.
$(eval $(call program,mxfs-inject,tools/mxfs_inject.cc,fuse kvcore nvm ssd base))
# mxfs-meta-storm: the metadata half of tools/load/load_run.sh.
$(eval $(call program,mxfs-meta-storm,tools/load/meta_storm.cc,))

# make install [PREFIX=/usr/local] [DESTDIR=]: the daemon, its mount(8)
# helper (also as mount.fuse.matrixfs, which mount -o remount runs for a
# mount not in fstab), mkfs and fsck into sbin; matrixfs-stat and kvbench into bin; the
# man pages into share/man (mount.matrixfs.8 a link to matrixfs.8). Installs
# what is built (builds it if needed).
PREFIX ?= /usr/local
INSTALL_SBIN := matrixfs mount.matrixfs mkfs.matrixfs fsck.matrixfs
INSTALL_BIN := matrixfs-stat kvbench
install: $(addprefix $(BIN)/,$(INSTALL_SBIN) $(INSTALL_BIN))
	install -d $(DESTDIR)$(PREFIX)/sbin $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(addprefix $(BIN)/,$(INSTALL_SBIN)) $(DESTDIR)$(PREFIX)/sbin/
	install -m 0755 $(addprefix $(BIN)/,$(INSTALL_BIN)) $(DESTDIR)$(PREFIX)/bin/
	for s in 1 5 8; do \
	  install -d $(DESTDIR)$(PREFIX)/share/man/man$$s && \
	  install -m 0644 man/*.$$s $(DESTDIR)$(PREFIX)/share/man/man$$s/ || exit 1; \
	done
	ln -sf matrixfs.8 $(DESTDIR)$(PREFIX)/share/man/man8/mount.matrixfs.8
	ln -sf matrixfs.8 $(DESTDIR)$(PREFIX)/share/man/man8/mount.fuse.matrixfs.8
	ln -sf mount.matrixfs $(DESTDIR)$(PREFIX)/sbin/mount.fuse.matrixfs

# make deb: build/deb/matrixfs_VERSION_ARCH.deb, built with dpkg-deb over a
# staged make install (tools/deb/build-deb.sh; lintian checks it when installed).
.PHONY: deb
deb: deps
	@./tools/install-deps.sh dpkg-dev
	+@./tools/deb/build-deb.sh build/deb $(SUBMAKE)
