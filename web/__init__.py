"""strata.web: the browser worksheet of `strata web` (server, views, live columns, assets)."""
