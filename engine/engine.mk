# engine/engine.mk — the companion cache engine: build/bin/strata-engine and
# a sanitizer build whose pytest run is `make test-san` (fuzzing: fuzz/fuzz.mk).

ENGINE_SRCS := main.c serve.c mkpool.c statcmd.c util.c xdr.c rpc.c net.c \
	nfs3.c nfs3_attr.c mount3.c fh.c siphash.c export.c rpcbind.c pool.c cksum.c \
	objset.c blkmap.c dir.c names.c meta.c txg.c stats.c probes.c arc.c arcsim.c arctrace.c \
	tiers.c ctl.c l2arc.c l2arc_log.c zil.c devmodel.c tierdev.c devlock.c
ENGINE_NET_SRCS := netloop.c netconn.c netaddr.c # the front-end's event loop, its connections, its per-address table
ENGINE_SRCS += $(ENGINE_NET_SRCS)
ENGINE_OBJ := $(OBJ)/engine
ENGINE_OBJS := $(addprefix $(ENGINE_OBJ)/,$(ENGINE_SRCS:.c=.o))
ENGINE_SAN_OBJS := $(addprefix $(BUILD)/san/engine/,$(ENGINE_SRCS:.c=.o))
ENGINE_HDRS := $(wildcard engine/*.h lib/*.h)

ALL_TARGETS += $(BIN)/strata-engine

$(ENGINE_OBJ)/%.o: engine/%.c $(ENGINE_HDRS) | $(OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(BIN)/strata-engine: $(ENGINE_OBJS) | $(BIN)
	$(CC) $(CFLAGS) $^ -o $@ $(LDFLAGS) -lzstd -llz4 -lm

# Sanitizer build (ASan + UBSan) and the engine tests run against it.
$(BUILD)/san/engine/%.o: engine/%.c $(ENGINE_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) -c $< -o $@

$(BUILD)/san/strata-engine: $(ENGINE_SAN_OBJS)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $^ -o $@ $(LDFLAGS) -lzstd -llz4 -lm

ENGINE_SAN_TESTS := tests/test_engine_copy.py tests/test_engine_robust.py tests/test_engine_protocol.py \
	tests/test_engine_tiers.py tests/test_engine_exports.py tests/test_engine_sparse.py \
	tests/test_engine_handles.py tests/test_engine_access.py
.PHONY: test-san
test-san: $(BUILD)/san/strata-engine
	# The server keeps its state until exit by design: leak checking is off. The kill -9
	# test runs 3 crash trials per log kind here (10 in the plain run).
	STRATA_ENGINE=$(abspath $(BUILD)/san/strata-engine) ASAN_OPTIONS=detect_leaks=0 STRATA_CRASH_TRIALS=3 \
		$(PY) -m pytest -q $(ENGINE_SAN_TESTS)
ENGINE_SAN_TESTS += tests/test_engine_limits.py

# ARC (the ARC engineer's part): the unit test (arcsim is in strata-engine).
TEST_BINS += $(BUILD)/tests/arc_test

# ARC unit test under ASan+UBSan (held buffers vs eviction, leaks).
$(BUILD)/tests/arc_test: engine/arc_test.c engine/arc.c engine/arc.h engine/unit_check.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) engine/arc_test.c engine/arc.c -o $@ $(LDFLAGS) -lm

# Sparse record map unit test under ASan+UBSan.
TEST_BINS += $(BUILD)/tests/blkmap_test
$(BUILD)/tests/blkmap_test: engine/blkmap_test.c engine/blkmap.c engine/blkmap.h engine/util.c engine/unit_check.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) engine/blkmap_test.c engine/blkmap.c engine/util.c -o $@ $(LDFLAGS) -lm

# SipHash-2-4 (file handle MAC) against the paper's test vectors.
TEST_BINS += $(BUILD)/tests/siphash_test
$(BUILD)/tests/siphash_test: engine/siphash_test.c engine/siphash.c engine/siphash.h engine/unit_check.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) engine/siphash_test.c engine/siphash.c -o $@ $(LDFLAGS)
