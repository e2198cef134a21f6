# tests/ — C unit tests (run by `make test-c`) and BPF test fixtures (run from pytest).

TESTOUT := $(BUILD)/tests
$(TESTOUT):
	mkdir -p $@

$(TESTOUT)/llhist_test: tests/llhist_test.c tests/llhist_vectors.h bpf/llhist.h | $(TESTOUT)
	$(CC) $(CFLAGS) -Itests $< -o $@ $(LDFLAGS)

# BPF fixtures: tests/NAME.bpf.c -> build/tests/NAME.bpf.o + NAME.skel.h
$(TESTOUT)/%.bpf.o: tests/%.bpf.c $(VMLINUX_H) bpf/llhist.h | $(TESTOUT)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(TESTOUT)/%.skel.h: $(TESTOUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(TESTOUT)/llhist_bpf_test: tests/llhist_bpf_test.c $(TESTOUT)/llhist_vectors.skel.h tests/llhist_vectors.h
	$(CC) $(CFLAGS) -Itests -I$(TESTOUT) $< -o $@ $(LDFLAGS) $$(pkg-config --libs libbpf)

TEST_BINS   += $(TESTOUT)/llhist_test
ALL_TARGETS += $(TESTOUT)/llhist_bpf_test

$(TESTOUT)/wire_test_run: tests/wire_test_run.c $(BPFOUT)/wire.skel.h bpf/aggregate.h bpf/wire_rpc.h \
		catalogue/statistics.def | $(TESTOUT)
	$(CC) $(CFLAGS) -Icollectors $< -o $@ $(LDFLAGS) $$(pkg-config --libs libbpf)

ALL_TARGETS += $(TESTOUT)/wire_test_run

# The compiled catalogue against the pinned vectors (tests/vectors/catalogue.json), with
# the collector's layers naming and parsing the keys.
CATALOGUE_TEST_SRCS := tests/catalogue_test.c $(filter-out collectors/main.c,$(COLLECT_SRCS))
$(TESTOUT)/catalogue_test: $(CATALOGUE_TEST_SRCS) $(COLLECT_HDRS) $(BPF_SKELS) | $(TESTOUT)
	$(CC) $(CFLAGS) -Icollectors $(CATALOGUE_TEST_SRCS) -o $@ $(LDFLAGS) $$(pkg-config --libs libbpf json-c) -lelf -lz

TEST_BINS += $(TESTOUT)/catalogue_test

# A libnfs NFSv4.0 client sending COMPOUNDs of known main ops (tests/test_collect_wire_nfs4.py).
$(TESTOUT)/nfs4_ops: tests/nfs4_ops.c | $(TESTOUT)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS) -lnfs

ALL_TARGETS += $(TESTOUT)/nfs4_ops

# The rpcbind reply parser (collectors/wire_ports.c) on crafted and mutated replies.
$(TESTOUT)/wire_ports_test: tests/wire_ports_test.c collectors/wire_ports.c collectors/wire_ports.h \
		bpf/wire_rpc.h | $(TESTOUT)
	$(CC) $(CFLAGS) -Icollectors -Ibpf tests/wire_ports_test.c collectors/wire_ports.c -o $@ $(LDFLAGS)

TEST_BINS += $(TESTOUT)/wire_ports_test

# The kernel matrix (tests/test_kernels.py, tests/vm/): `make test` runs the newest Debian 12
# kernel (6.1-security) in a qemu guest; `make test-kernels` runs KERNELS (default: the newest
# point release and security build of each series, tests/vm/kernels.py, and this host) and
# rewrites the README's kernel table from the results.
KERNELS ?= 5.10 5.10-security 6.1 6.1-security 6.12 host
.PHONY: test-kernels kernel-table
test-kernels: test-deps
	$(MAKE) -j$(TEST_JOBS) $(ALL_TARGETS)
	KERNELS="$(KERNELS)" KERNEL_JOBS=2 $(PY) -m pytest -p no:cacheprovider tests/test_kernels.py tests/test_collect_nfsd.py
	$(MAKE) kernel-table

kernel-table: venv
	PYTHONPATH=tests $(PY) -m vm table README.md
