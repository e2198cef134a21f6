# `make install` / `make uninstall`: the compiled programs, the strata Python package
# in a private virtual environment with a `strata` launcher, the systemd unit and a
# default configuration. PREFIX (default /usr/local) and DESTDIR are honoured; the
# configuration goes to DESTDIR/etc/strata/collect.toml and is never overwritten.
# Python wheels (strata and its pinned dependencies, from PyPI or pip's cache) are
# kept in build/wheelhouse, so a second install needs no network.
# PIP_INSTALL_FLAGS=--no-compile skips compiling the package's bytecode at install
# (it is then compiled on first use).

PREFIX     ?= /usr/local
DESTDIR    ?=
SYSCONFDIR ?= /etc
UNITDIR    ?= $(PREFIX)/lib/systemd/system
PYTHON3    ?= python3
PIP_INSTALL_FLAGS ?=
WHEELHOUSE := $(BUILD)/wheelhouse
STRATA_LIB := $(PREFIX)/lib/strata
PROGRAMS   := strata-engine strata-collect strata-load strata-features
PY_SOURCES := pyproject.toml $(wildcard datasets/*.py datasets/*.md prometheus/*.py prometheus/*.proto checks/*.py lab/*.py heatmaps/*.py views/*.py collect/*.py demos/*.py cli/*.py)

.PHONY: install uninstall wheels
wheels: $(WHEELHOUSE)/.complete
$(WHEELHOUSE)/.complete: $(PY_SOURCES)
	mkdir -p $(WHEELHOUSE)
	rm -f $(WHEELHOUSE)/strata-*.whl
	$(PY) -m pip wheel --quiet --wheel-dir $(WHEELHOUSE) .
	touch $@

install: all venv wheels
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)/strata
	install -m 755 $(addprefix $(BIN)/,$(PROGRAMS)) $(DESTDIR)$(PREFIX)/bin/
	rm -rf $(DESTDIR)$(STRATA_LIB)
	$(PYTHON3) -m venv $(DESTDIR)$(STRATA_LIB)
	$(DESTDIR)$(STRATA_LIB)/bin/python -m pip install --quiet $(PIP_INSTALL_FLAGS) --no-index --find-links $(WHEELHOUSE) strata
	install -m 755 contrib/strata.sh $(DESTDIR)$(PREFIX)/bin/strata
	sed 's|/usr/local/|$(PREFIX)/|g; s|/etc/strata/|$(SYSCONFDIR)/strata/|g' contrib/systemd/strata-collect.service \
		> $(DESTDIR)$(UNITDIR)/strata-collect.service
	chmod 644 $(DESTDIR)$(UNITDIR)/strata-collect.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/strata/collect.toml ] || \
		install -m 644 contrib/collect.toml $(DESTDIR)$(SYSCONFDIR)/strata/collect.toml

# The configuration is kept when it differs from the default (a user's edits).
uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,$(PROGRAMS) strata)
	rm -rf $(DESTDIR)$(STRATA_LIB)
	rm -f $(DESTDIR)$(UNITDIR)/strata-collect.service
	if cmp -s contrib/collect.toml $(DESTDIR)$(SYSCONFDIR)/strata/collect.toml; then \
		rm -f $(DESTDIR)$(SYSCONFDIR)/strata/collect.toml; rmdir $(DESTDIR)$(SYSCONFDIR)/strata 2>/dev/null || true; fi
