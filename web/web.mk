# web/: the page's plotly, plotly.js's cartesian bundle (scatter and heatmap traces: what
# strata draws; about a third of plotly.py's full bundle), from the npm registry at build
# time (npm checks the tarball against the registry's integrity hash). Not checked in;
# `strata web` serves plotly.py's full bundle where it was not built.

PLOTLY_CARTESIAN := plotly.js-cartesian-dist-min@3.4.0

web/static/plotly-cartesian.min.js: web/web.mk
	rm -rf $(BUILD)/web-plotly && mkdir -p $(BUILD)/web-plotly
	cd $(BUILD)/web-plotly && npm pack --silent $(PLOTLY_CARTESIAN) >/dev/null && tar xzf plotly.js-cartesian-dist-min-*.tgz
	cp $(BUILD)/web-plotly/package/plotly-cartesian.min.js $@

ALL_TARGETS += web/static/plotly-cartesian.min.js
