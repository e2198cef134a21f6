# engine/fuzz/fuzz.mk — fuzz targets over the decoders of untrusted bytes:
#   rpc    ONC RPC calls through NFSv3 and MOUNT (engine/fuzz/rpc.c)
#   l2arc  an L2ARC cache device's superblock and log-block chain (l2arc.c)
#   zil    a ZIL region's superblock and log blocks, replayed (zil.c)
#   wire_ports  the collector's rpcbind DUMP reply parser (wire_ports.c, collectors/wire_ports.c)
#   codec  the archive's record decoder, datasets/codec.py (tests/fuzz/codec.py, atheris)
#   archive  whole archive files: verify, salvage and the reader (tests/fuzz/archive.py, atheris)
# Each target's seeds and regression inputs are in engine/fuzz/NAME/corpus
# (tests/fuzz/codec/corpus, tests/fuzz/archive/corpus), read but never written: new inputs go to build/fuzz.
#   make fuzz            every target for FUZZ_SECONDS each
#   make fuzz-smoke      every target for FUZZ_SMOKE_SECONDS from its corpus (part of `make test`)
#   make fuzz-coverage   line coverage of the checked-in corpora (llvm-cov table)
#   make fuzz-merge      minimises build/fuzz/corpus/NAME + the checked-in corpus into build/fuzz/merged/NAME
# The RPC corpus is recorded from a libnfs session: engine/fuzz/README.md.

FUZZ_SECONDS ?= 600
FUZZ_SMOKE_SECONDS ?= 5
FUZZ_CC ?= clang-14
LLVM_PROFDATA ?= llvm-profdata-14
LLVM_COV ?= llvm-cov-14
FUZZ := $(BUILD)/fuzz
FUZZ_TARGETS := rpc l2arc zil wire_ports
# The engine objects each target links (beyond its harness).
FUZZ_LIB_rpc := fuzz/xdr_mutator net netloop netconn netaddr xdr rpc nfs3 nfs3_attr mount3 fh siphash export objset blkmap dir \
	pool cksum util txg meta probes arc tiers l2arc l2arc_log zil devmodel tierdev devlock
FUZZ_LIB_l2arc := fuzz/image l2arc l2arc_log cksum tierdev devlock devmodel probes util
FUZZ_LIB_zil := fuzz/image zil cksum tierdev devlock devmodel probes util
FUZZ_LIB_wire_ports := collectors/wire_ports
FUZZ_CFLAGS := -g -O1 -std=gnu11 -D_GNU_SOURCE -pthread -Ilib -Iengine \
	-DFUZZ_SESSION='"$(abspath engine/fuzz/rpc/session.rec)"'
FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_COV := -fsanitize=fuzzer -fprofile-instr-generate -fcoverage-mapping
FUZZ_COV_FILES := nfs3 xdr rpc mount3 l2arc_log zil

$(FUZZ)/san/%.o: engine/%.c $(ENGINE_HDRS) $(wildcard engine/fuzz/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(subst fuzzer,fuzzer-no-link,$(FUZZ_SAN)) -c $< -o $@
$(FUZZ)/cov/%.o: engine/%.c $(ENGINE_HDRS) $(wildcard engine/fuzz/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(subst fuzzer,fuzzer-no-link,$(FUZZ_COV)) -c $< -o $@

# The collector's parsers of untrusted bytes (build/fuzz/VARIANT/collectors/NAME.o).
$(FUZZ)/san/collectors/%.o: collectors/%.c collectors/%.h bpf/wire_rpc.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Icollectors -Ibpf $(subst fuzzer,fuzzer-no-link,$(FUZZ_SAN)) -c $< -o $@
$(FUZZ)/cov/collectors/%.o: collectors/%.c collectors/%.h bpf/wire_rpc.h
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Icollectors -Ibpf $(subst fuzzer,fuzzer-no-link,$(FUZZ_COV)) -c $< -o $@
$(FUZZ)/san/fuzz/wire_ports.o $(FUZZ)/cov/fuzz/wire_ports.o: FUZZ_CFLAGS += -Icollectors

# fuzz_target(NAME, VARIANT, FLAGS): build/fuzz/VARIANT/fuzz_NAME
define fuzz_target
$(FUZZ)/$(2)/fuzz_$(1): $(addprefix $(FUZZ)/$(2)/,$(addsuffix .o,fuzz/$(1) $(FUZZ_LIB_$(1))))
	$(FUZZ_CC) $(3) $$^ -o $$@ -pthread -llz4 -lm
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_target,$(t),san,$(FUZZ_SAN))))
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_target,$(t),cov,$(FUZZ_COV))))

fuzz_dict = $(if $(wildcard engine/fuzz/$(1)/$(1).dict),-dict=engine/fuzz/$(1)/$(1).dict)
FUZZ_PY := codec archive

.PHONY: fuzz fuzz-smoke fuzz-coverage fuzz-merge
fuzz: $(foreach t,$(FUZZ_TARGETS),$(FUZZ)/san/fuzz_$(t)) venv
	@set -e; for t in $(FUZZ_TARGETS); do mkdir -p $(FUZZ)/corpus/$$t; \
		echo "== fuzz $$t ($(FUZZ_SECONDS) s)"; \
		$(FUZZ)/san/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(FUZZ)/crash-$$t- \
			$$( [ -f engine/fuzz/$$t/$$t.dict ] && echo -dict=engine/fuzz/$$t/$$t.dict ) \
			$(FUZZ)/corpus/$$t engine/fuzz/$$t/corpus; done
	@set -e; for t in $(FUZZ_PY); do mkdir -p $(FUZZ)/corpus/$$t; echo "== fuzz $$t ($(FUZZ_SECONDS) s)"; \
		$(PY) tests/fuzz/$$t.py -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=$(FUZZ)/crash-$$t- \
			$(FUZZ)/corpus/$$t tests/fuzz/$$t/corpus; done

fuzz-smoke: $(foreach t,$(FUZZ_TARGETS),$(FUZZ)/san/fuzz_$(t)) venv
	@set -e; for t in $(FUZZ_TARGETS); do rm -rf $(FUZZ)/smoke/$$t; mkdir -p $(FUZZ)/smoke/$$t; \
		echo "== fuzz-smoke $$t ($(FUZZ_SMOKE_SECONDS) s)"; \
		$(FUZZ)/san/fuzz_$$t -max_total_time=$(FUZZ_SMOKE_SECONDS) -artifact_prefix=$(FUZZ)/crash-$$t- \
			$$( [ -f engine/fuzz/$$t/$$t.dict ] && echo -dict=engine/fuzz/$$t/$$t.dict ) \
			$(FUZZ)/smoke/$$t engine/fuzz/$$t/corpus 2>&1 | grep -E "INITED|DONE|ERROR|SUMMARY|==[0-9]+==|fuzz_[a-z0-9]+:" ; \
		[ $${PIPESTATUS[0]} = 0 ]; done
	@set -e; for t in $(FUZZ_PY); do rm -rf $(FUZZ)/smoke/$$t; mkdir -p $(FUZZ)/smoke/$$t; \
		echo "== fuzz-smoke $$t ($(FUZZ_SMOKE_SECONDS) s)"; \
		$(PY) tests/fuzz/$$t.py -max_total_time=$(FUZZ_SMOKE_SECONDS) -artifact_prefix=$(FUZZ)/crash-$$t- \
			$(FUZZ)/smoke/$$t tests/fuzz/$$t/corpus 2>&1 | grep -E "INITED|DONE|ERROR|Uncaught|Error" ; \
		[ $${PIPESTATUS[0]} = 0 ]; done

fuzz-coverage: $(foreach t,$(FUZZ_TARGETS),$(FUZZ)/cov/fuzz_$(t))
	@set -e; rm -f $(FUZZ)/cov/*.profraw; for t in $(FUZZ_TARGETS); do \
		LLVM_PROFILE_FILE=$(FUZZ)/cov/$$t.profraw $(FUZZ)/cov/fuzz_$$t -runs=0 engine/fuzz/$$t/corpus \
			> $(FUZZ)/cov/$$t.log 2>&1; done
	@$(LLVM_PROFDATA) merge -sparse $(FUZZ)/cov/*.profraw -o $(FUZZ)/cov/all.profdata
	@$(LLVM_COV) report $(FUZZ)/cov/fuzz_rpc $(foreach t,$(filter-out rpc,$(FUZZ_TARGETS)),-object $(FUZZ)/cov/fuzz_$(t)) \
		-instr-profile=$(FUZZ)/cov/all.profdata $(addprefix engine/,$(addsuffix .c,$(FUZZ_COV_FILES))) \
		| awk 'BEGIN { printf "%-14s %7s %7s %8s\n", "file", "lines", "missed", "cover" } \
			NF == 13 { printf "%-14s %7s %7s %8s\n", $$1, $$8, $$9, $$10 }'

fuzz-merge: $(foreach t,$(FUZZ_TARGETS),$(FUZZ)/san/fuzz_$(t))
	@set -e; for t in $(FUZZ_TARGETS); do rm -rf $(FUZZ)/merged/$$t; mkdir -p $(FUZZ)/merged/$$t $(FUZZ)/corpus/$$t; \
		$(FUZZ)/san/fuzz_$$t -merge=1 $(FUZZ)/merged/$$t engine/fuzz/$$t/corpus $(FUZZ)/corpus/$$t; done

# The libnfs client session the RPC corpus is recorded from (record_rpc_corpus.py;
# tests/test_fuzz_corpus.py runs it).
ALL_TARGETS += $(BUILD)/tests/strata-rpc-session
$(BUILD)/tests/strata-rpc-session: engine/fuzz/rpc_session.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $< -o $@ -lnfs
