# workloads/ — strata-load, the multi-client NFSv3 load generator (libnfs).

LOAD_SRCS := $(wildcard workloads/load_*.c)
LOAD_HDRS := $(wildcard workloads/load_*.h lib/*.h) bpf/llhist.h

$(BIN)/strata-load: $(LOAD_SRCS) $(LOAD_HDRS) | $(BIN)
	$(CC) $(CFLAGS) $$(pkg-config --cflags libnfs) $(LOAD_SRCS) -o $@ $(LDFLAGS) \
		$$(pkg-config --libs libnfs) -lm

ALL_TARGETS += $(BIN)/strata-load
