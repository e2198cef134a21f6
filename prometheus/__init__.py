"""Prometheus: the OpenMetrics and protobuf exposition of the datasets, the metrics
HTTP server (exporter-toolkit web config: TLS, basic auth), and the reader that asks a
Prometheus server for a fleet's data as the archive's QueryResult."""
