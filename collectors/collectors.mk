# collectors/ — strata-collect, the collector daemon on the bpf/ skeletons, and its
# USDT test fixture (build/tests/strata-probe-fixture, fires the engine's probes).

# libbpf's usdt.bpf.h includes <linux/errno.h>, whose <asm/errno.h> lives in the
# multiarch include dir that -target bpf does not search.
BPF_CFLAGS += -I/usr/include/$(shell $(CC) -dumpmachine)

# The daemon is every collectors/ source but the other programs' (features.mk, the
# catalogue tool, the fixture); its layers are collectors/layers/*.c, one per STAT_LAYER
# line of catalogue/statistics.def, on the skeletons of bpf/*.bpf.c.
COLLECT_OTHERS := collectors/strata_features.c collectors/catalogue_gen.c collectors/probe_fixture.c
COLLECT_SRCS := $(filter-out $(COLLECT_OTHERS),$(wildcard collectors/*.c collectors/layers/*.c))
COLLECT_HDRS := $(wildcard collectors/*.h collectors/layers/*.h) catalogue/statistics.def $(wildcard bpf/*.h) \
	$(wildcard lib/*.h) engine/strata_probes.h

$(BIN)/strata-collect: $(COLLECT_SRCS) $(COLLECT_HDRS) $(BPF_SKELS) | $(BIN)
	$(CC) $(CFLAGS) -Icollectors $(COLLECT_SRCS) -o $@ $(LDFLAGS) $$(pkg-config --libs libbpf json-c) -lelf -lz

$(BUILD)/tests/strata-probe-fixture: collectors/probe_fixture.c engine/strata_probes.h lib/clock.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS)

ALL_TARGETS += $(BIN)/strata-collect $(BUILD)/tests/strata-probe-fixture
