# collectors/features.mk — strata-features, the kernel feature prober behind `strata doctor`.

$(BIN)/strata-features: collectors/strata_features.c collectors/wire_tc.c collectors/kernel_features.c \
		collectors/disk_btf.c collectors/kernel_features.h $(BPFOUT)/features.skel.h | $(BIN)
	$(CC) $(CFLAGS) -Icollectors collectors/strata_features.c collectors/wire_tc.c collectors/kernel_features.c \
		collectors/disk_btf.c -o $@ $(LDFLAGS) $$(pkg-config --libs libbpf)

ALL_TARGETS += $(BIN)/strata-features
