# engine/tiers.mk — issue 7's building blocks: L2ARC (l2arc*.c), ZIL/SLOG
# (zil.c), device latency models (devmodel.c) and their shared device access
# (tierdev.c).  Objects for linking into strata-engine: $(TIERS_OBJS) with
# $(TIERS_LIBS) (they also need engine/cksum.c, already in the engine).
# C unit tests (ASan+UBSan, built from the sources) join TEST_BINS.

TIERS_SRCS := engine/tierdev.c engine/l2arc.c engine/l2arc_log.c engine/zil.c engine/devmodel.c
TIERS_OBJS := $(patsubst engine/%.c,$(OBJ)/tiers/%.o,$(TIERS_SRCS))
TIERS_HDRS := engine/tierdev.h engine/tierstats.h engine/l2arc.h engine/l2arc_impl.h engine/zil.h \
	engine/devmodel.h engine/strata_probes.h engine/cksum.h engine/arc.h
TIERS_LIBS := $(shell pkg-config --libs liblz4) -lm
TIERS_TESTOUT := $(BUILD)/tests

$(OBJ)/tiers/%.o: engine/%.c $(TIERS_HDRS) | $(OBJ)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

L2ARC_TEST_SRCS := engine/l2arc_test.c engine/l2arc.c engine/l2arc_log.c engine/tierdev.c engine/cksum.c \
	engine/devmodel.c
$(TIERS_TESTOUT)/l2arc_test: $(L2ARC_TEST_SRCS) $(TIERS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $(L2ARC_TEST_SRCS) -o $@ $(LDFLAGS) $(TIERS_LIBS)

ZIL_TEST_SRCS := engine/zil_test.c engine/zil.c engine/tierdev.c engine/cksum.c engine/devmodel.c
$(TIERS_TESTOUT)/zil_test: $(ZIL_TEST_SRCS) $(TIERS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $(ZIL_TEST_SRCS) -o $@ $(LDFLAGS) -lm

DEVMODEL_TEST_SRCS := engine/devmodel_test.c engine/devmodel.c
$(TIERS_TESTOUT)/devmodel_test: $(DEVMODEL_TEST_SRCS) $(TIERS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $(DEVMODEL_TEST_SRCS) -o $@ $(LDFLAGS) -lm

.PHONY: tiers test-tiers
tiers: $(TIERS_OBJS)
test-tiers: $(TIERS_TESTOUT)/l2arc_test $(TIERS_TESTOUT)/zil_test $(TIERS_TESTOUT)/devmodel_test
	@set -e; for t in $^; do echo "== $$t"; $$t; done

ALL_TARGETS += $(TIERS_OBJS)
TEST_BINS   += $(TIERS_TESTOUT)/l2arc_test $(TIERS_TESTOUT)/zil_test $(TIERS_TESTOUT)/devmodel_test
