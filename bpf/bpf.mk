# bpf/ — vmlinux.h from the running kernel's BTF, BPF objects and skeletons.
# Any bpf/NAME.bpf.c becomes build/bpf/NAME.bpf.o and build/bpf/NAME.skel.h.

VMLINUX_H := $(BUILD)/vmlinux.h
BPF_SRCS  := $(wildcard bpf/*.bpf.c)
BPF_OBJS  := $(patsubst bpf/%.bpf.c,$(BPFOUT)/%.bpf.o,$(BPF_SRCS))
BPF_SKELS := $(patsubst bpf/%.bpf.c,$(BPFOUT)/%.skel.h,$(BPF_SRCS))
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_x86 -D__bpf__ -Wall -I$(BUILD) -Ibpf -Iengine -Icatalogue

ALL_TARGETS += $(BPF_OBJS) $(BPF_SKELS)

# Generated once per kernel: cached in build/, regenerated when the BTF changes.
$(VMLINUX_H): /sys/kernel/btf/vmlinux | $(BPFOUT)
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BPFOUT)/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H) $(wildcard bpf/*.h) engine/strata_probes.h catalogue/statistics.def \
		| $(BPFOUT)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BPFOUT)/%.skel.h: $(BPFOUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@
