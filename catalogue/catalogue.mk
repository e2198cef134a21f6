# catalogue/ — the one catalogue of statistics (statistics.def), which bpf/, collectors/
# and the Python package all read: every C compile finds it by -Icatalogue.

# strata-catalogue (collectors/catalogue_gen.c) writes it as the Python package's
# datasets/catalogue.json and as the tables of catalogue/STATISTICS.md (between its
# catalogue markers); both are checked in, rewritten only when they change, and tests/test_catalogue.py fails when they are stale.
CATALOGUE_GEN := $(BUILD)/tools/strata-catalogue
CATALOGUE_SRCS := collectors/catalogue_gen.c collectors/catalogue.c collectors/keys.c collectors/emit.c

$(CATALOGUE_GEN): $(CATALOGUE_SRCS) collectors/catalogue.h collectors/keys.h collectors/emit.h \
		catalogue/statistics.def bpf/aggregate.h
	mkdir -p $(@D)
	$(CC) $(CFLAGS) -Icollectors $(CATALOGUE_SRCS) -o $@ $(LDFLAGS)

datasets/catalogue.json: $(CATALOGUE_GEN)
	$< json > $(BUILD)/catalogue.json
	cmp -s $(BUILD)/catalogue.json $@ || cp $(BUILD)/catalogue.json $@; touch $@

catalogue/STATISTICS.md: $(CATALOGUE_GEN)
	$< markdown > $(BUILD)/catalogue.md
	awk -v table=$(BUILD)/catalogue.md '/<!-- catalogue end -->/ { skip = 0 } !skip { print } \
		/<!-- catalogue begin/ { while ((getline line < table) > 0) print line; skip = 1 }' $@ > $(BUILD)/STATISTICS.md
	cmp -s $(BUILD)/STATISTICS.md $@ || cp $(BUILD)/STATISTICS.md $@; touch $@

ALL_TARGETS += datasets/catalogue.json catalogue/STATISTICS.md
