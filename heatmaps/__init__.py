"""strata.heatmaps — re-binning, figures and renderers of a QueryResult (views/ reads it)."""
