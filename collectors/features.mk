# collectors/features.mk — strata-features, the kernel feature prober behind `strata doctor`.

$(BIN)/strata-features: collectors/strata_features.c $(BPFOUT)/features.skel.h | $(BIN)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $$(pkg-config --libs libbpf)

ALL_TARGETS += $(BIN)/strata-features
