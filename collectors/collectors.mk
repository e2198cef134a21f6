# collectors/ — strata-collect, the collector daemon on the bpf/ skeletons, and its
# USDT test fixture (build/tests/strata-probe-fixture, fires the engine's probes).

# libbpf's usdt.bpf.h includes <linux/errno.h>, whose <asm/errno.h> lives in the
# multiarch include dir that -target bpf does not search.
BPF_CFLAGS += -I/usr/include/$(shell $(CC) -dumpmachine)

COLLECT_MODS := main collector catalogue support kernel_features layers layer_counts engine_layers disk_layer fs_layer wire wire_tc wire_ports disk_btf fs fs_names nfsd nfsd_io nfsd_export engine engine_names keys emit privileges
COLLECT_SRCS := $(patsubst %,collectors/%.c,$(COLLECT_MODS))
COLLECT_HDRS := $(patsubst %,collectors/%.h,$(filter-out main support layer_counts engine_layers disk_layer fs_layer nfsd nfsd_io,$(COLLECT_MODS))) \
	collectors/wire_config.h \
	catalogue/statistics.def bpf/aggregate.h bpf/llhist.h bpf/wire_rpc.h engine/strata_probes.h
COLLECT_SKELS := $(BPFOUT)/nfs.skel.h $(BPFOUT)/cache.skel.h $(BPFOUT)/disk.skel.h $(BPFOUT)/vdev.skel.h \
	$(BPFOUT)/wire.skel.h $(BPFOUT)/fs.skel.h $(BPFOUT)/nfsd.skel.h $(BPFOUT)/nfsd_io.skel.h

$(BIN)/strata-collect: $(COLLECT_SRCS) $(COLLECT_HDRS) $(COLLECT_SKELS) | $(BIN)
	$(CC) $(CFLAGS) -Icollectors $(COLLECT_SRCS) -o $@ $(LDFLAGS) $$(pkg-config --libs libbpf json-c) -lelf -lz

$(BUILD)/tests/strata-probe-fixture: collectors/probe_fixture.c engine/strata_probes.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS)

ALL_TARGETS += $(BIN)/strata-collect $(BUILD)/tests/strata-probe-fixture
