# engine/tiers.mk — unit tests of the engine's tiers: L2ARC (l2arc*.c),
# ZIL/SLOG (zil.c), device latency models (devmodel.c) and their shared
# device access (tierdev.c), built from the sources under ASan+UBSan; they
# join TEST_BINS.  (strata-engine links the same sources: engine.mk.)

TIERS_HDRS := engine/tierdev.h engine/tierstats.h engine/l2arc.h engine/l2arc_impl.h engine/l2arc_log.h engine/zil.h \
	engine/devmodel.h engine/strata_probes.h engine/cksum.h engine/arc.h engine/unit_check.h
TIERS_LIBS := $(shell pkg-config --libs liblz4) -lm
TIERS_TESTOUT := $(BUILD)/tests

L2ARC_TEST_SRCS := engine/l2arc_test.c engine/l2arc.c engine/l2arc_log.c engine/tierdev.c engine/devlock.c engine/cksum.c \
	engine/devmodel.c engine/util.c
$(TIERS_TESTOUT)/l2arc_test: $(L2ARC_TEST_SRCS) $(TIERS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $(L2ARC_TEST_SRCS) -o $@ $(LDFLAGS) $(TIERS_LIBS)

ZIL_TEST_SRCS := engine/zil_test.c engine/zil.c engine/tierdev.c engine/devlock.c engine/cksum.c engine/devmodel.c engine/util.c
$(TIERS_TESTOUT)/zil_test: $(ZIL_TEST_SRCS) $(TIERS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $(ZIL_TEST_SRCS) -o $@ $(LDFLAGS) -lm

DEVMODEL_TEST_SRCS := engine/devmodel_test.c engine/devmodel.c engine/util.c
$(TIERS_TESTOUT)/devmodel_test: $(DEVMODEL_TEST_SRCS) $(TIERS_HDRS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SAN_FLAGS) $(DEVMODEL_TEST_SRCS) -o $@ $(LDFLAGS) -lm

.PHONY: test-tiers
test-tiers: $(TIERS_TESTOUT)/l2arc_test $(TIERS_TESTOUT)/zil_test $(TIERS_TESTOUT)/devmodel_test
	@set -e; for t in $^; do echo "== $$t"; $$t; done

TEST_BINS   += $(TIERS_TESTOUT)/l2arc_test $(TIERS_TESTOUT)/zil_test $(TIERS_TESTOUT)/devmodel_test
