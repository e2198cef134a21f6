"""Comparisons of latency distributions for CI: the statistics (paired rounds, duet blocks,
stored baseline runs) and the checks that run and judge them (`strata check`)."""
