"""strata.heatmaps — re-binning and renderers."""
