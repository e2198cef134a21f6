# bench/ — helper binaries the benchmarks run (built by `make all`, run only by `make bench`).

$(BUILD)/bench/strata-probe-cost: bench/probe_cost.c engine/strata_probes.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS)

ALL_TARGETS += $(BUILD)/bench/strata-probe-cost

$(BUILD)/bench/strata-wait-cost: bench/wait_cost.c
	mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ $(LDFLAGS)

ALL_TARGETS += $(BUILD)/bench/strata-wait-cost
