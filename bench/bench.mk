# bench/ — helper binaries the benchmarks run (built by `make all`, run only by `make bench`).

$(BUILD)/bench/strata-probe-cost: bench/probe_cost.c engine/strata_probes.h lib/clock.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS)

ALL_TARGETS += $(BUILD)/bench/strata-probe-cost

$(BUILD)/bench/strata-wait-cost: bench/wait_cost.c lib/clock.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS)

ALL_TARGETS += $(BUILD)/bench/strata-wait-cost

$(BUILD)/bench/strata-syscall-cost: bench/syscall_cost.c lib/clock.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS)

ALL_TARGETS += $(BUILD)/bench/strata-syscall-cost

# The syscall hook flavours compared by bench/collect_fs.sh (a BPF object of the bench's own).
$(BPFOUT)/syscall_hooks.bpf.o: bench/syscall_hooks.bpf.c $(VMLINUX_H) | $(BPFOUT)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bench/strata-syscall-hooks: bench/syscall_hooks.c $(BPFOUT)/syscall_hooks.skel.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $$(pkg-config --libs libbpf) -lelf -lz

ALL_TARGETS += $(BUILD)/bench/strata-syscall-hooks

# The diagnosis of the disk layer's missed completions (bench/disk_missed.py).
$(BPFOUT)/disk_missed.bpf.o: bench/disk_missed.bpf.c $(VMLINUX_H) | $(BPFOUT)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/bench/strata-disk-missed: bench/disk_missed.c $(BPFOUT)/disk_missed.skel.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) $$(pkg-config --libs libbpf) -lelf -lz

ALL_TARGETS += $(BUILD)/bench/strata-disk-missed
