# collectors/ — strata-collect, the collector daemon on the bpf/ skeletons, and its
# USDT test fixture (build/tests/strata-probe-fixture, fires the engine's probes).

# libbpf's usdt.bpf.h includes <linux/errno.h>, whose <asm/errno.h> lives in the
# multiarch include dir that -target bpf does not search.
BPF_CFLAGS += -I/usr/include/$(shell $(CC) -dumpmachine)

COLLECT_MODS := main collector catalogue support kernel_features layers layer_counts engine_layers disk_layer fs_layer wire wire_tc wire_ports disk_btf fs fs_names nfsd nfsd_io nfsd_export engine engine_names keys emit privileges
COLLECT_SRCS := $(patsubst %,collectors/%.c,$(COLLECT_MODS))
COLLECT_HDRS := $(patsubst %,collectors/%.h,$(filter-out main support layer_counts engine_layers disk_layer fs_layer nfsd nfsd_io,$(COLLECT_MODS))) \
	collectors/wire_config.h \
	collectors/statistics.def bpf/aggregate.h bpf/llhist.h bpf/wire_rpc.h engine/strata_probes.h
COLLECT_SKELS := $(BPFOUT)/nfs.skel.h $(BPFOUT)/cache.skel.h $(BPFOUT)/disk.skel.h $(BPFOUT)/vdev.skel.h \
	$(BPFOUT)/wire.skel.h $(BPFOUT)/fs.skel.h $(BPFOUT)/nfsd.skel.h $(BPFOUT)/nfsd_io.skel.h

$(BIN)/strata-collect: $(COLLECT_SRCS) $(COLLECT_HDRS) $(COLLECT_SKELS) | $(BIN)
	$(CC) $(CFLAGS) -Icollectors $(COLLECT_SRCS) -o $@ $(LDFLAGS) $$(pkg-config --libs libbpf json-c) -lelf -lz

$(BUILD)/tests/strata-probe-fixture: collectors/probe_fixture.c engine/strata_probes.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS)

# The catalogue (statistics.def) as the Python package's datasets/catalogue.json and as
# the tables of collectors/STATISTICS.md (between its catalogue markers); both are checked
# in, rewritten only when they change, and tests/test_catalogue.py fails when they are stale.
CATALOGUE_GEN := $(BUILD)/tools/strata-catalogue
CATALOGUE_SRCS := collectors/catalogue_gen.c collectors/catalogue.c collectors/keys.c collectors/nfsd_export.c collectors/emit.c

$(CATALOGUE_GEN): $(CATALOGUE_SRCS) collectors/catalogue.h collectors/keys.h collectors/emit.h \
		collectors/statistics.def bpf/aggregate.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) -Icollectors $(CATALOGUE_SRCS) -o $@ $(LDFLAGS)

datasets/catalogue.json: $(CATALOGUE_GEN)
	$< json > $(BUILD)/catalogue.json
	cmp -s $(BUILD)/catalogue.json $@ || cp $(BUILD)/catalogue.json $@; touch $@

collectors/STATISTICS.md: $(CATALOGUE_GEN)
	$< markdown > $(BUILD)/catalogue.md
	awk -v table=$(BUILD)/catalogue.md '/<!-- catalogue end -->/ { skip = 0 } !skip { print } \
		/<!-- catalogue begin/ { while ((getline line < table) > 0) print line; skip = 1 }' $@ > $(BUILD)/STATISTICS.md
	cmp -s $(BUILD)/STATISTICS.md $@ || cp $(BUILD)/STATISTICS.md $@; touch $@

ALL_TARGETS += $(BIN)/strata-collect $(BUILD)/tests/strata-probe-fixture datasets/catalogue.json \
	collectors/STATISTICS.md
