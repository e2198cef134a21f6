/* catalogue_test.c — checks the compiled catalogue (catalogue/statistics.def, the layers' keys)
 * against the pinned vectors: every statistic's kind, unit and layer, and the key bytes
 * each filter text selects (or that it is refused). */
#include <stdio.h>
#include <string.h>
#include "catalogue.h"
#include "layers.h"

static const char *const kinds[] = { "counter", "heatmap", "gauge" };

static int hexbytes(const char *hex, uint8_t out[AGG_KEY_BYTES])
{
	if (strlen(hex) != 2 * AGG_KEY_BYTES)
		return -1;
	for (int i = 0; i < AGG_KEY_BYTES; i++)
		if (sscanf(hex + 2 * i, "%2hhx", &out[i]) != 1)
			return -1;
	return 0;
}

static int check_statistic(const char *name, const char *kind, const char *unit, const char *layer)
{
	const struct statistic *s = statistic_find(name);

	if (!s) {
		fprintf(stderr, "catalogue_test: %s is pinned but not in the catalogue\n", name);
		return 1;
	}
	if (strcmp(kinds[s->kind], kind) || strcmp(s->unit, unit) || strcmp(layer_name(s->layer), layer)) {
		fprintf(stderr, "catalogue_test: %s is %s/%s/%s, pinned %s/%s/%s\n", name, kinds[s->kind], s->unit,
			layer_name(s->layer), kind, unit, layer);
		return 1;
	}
	return 0;
}

static int check_key(const char *name, const char *field, const char *text, const char *hex)
{
	const struct statistic *s = statistic_find(name);
	uint8_t want[AGG_KEY_BYTES], got[AGG_KEY_BYTES];
	char err[256], back[128];
	int dim = dim_parse(field), rc;

	if (!s || dim <= 0 || !(s->filters & (1u << dim))) {
		fprintf(stderr, "catalogue_test: %s cannot be filtered by %s\n", name, field);
		return 1;
	}
	rc = layer_key_parse(s, dim, text, got, err, sizeof(err));
	if (!hex) {
		if (rc == 0)
			fprintf(stderr, "catalogue_test: %s %s=%s accepted, pinned as refused\n", name, field, text);
		return rc == 0;
	}
	if (hexbytes(hex, want) < 0 || rc < 0 || memcmp(got, want, AGG_KEY_BYTES)) {
		fprintf(stderr, "catalogue_test: %s %s=%s: %s\n", name, field, text, rc < 0 ? err : "other key bytes");
		return 1;
	}
	layer_key_format(s, dim, got, back, sizeof(back));
	if (dim != AGG_DIM_CLIENT && strcmp(back, text)) { /* addresses print canonically */
		fprintf(stderr, "catalogue_test: %s %s=%s prints back as %s\n", name, field, text, back);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "tests/vectors/catalogue.json";
	char line[512], a[128], b[128], c[128], d[128];
	int nstats = 0, nkeys = 0, bad = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "catalogue_test: cannot open %s\n", path);
		return 1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, " {\"statistic\": \"%127[^\"]\", \"kind\": \"%127[^\"]\", \"unit\": \"%127[^\"]\", "
				 "\"layer\": \"%127[^\"]\"", a, b, c, d) == 4) {
			bad += check_statistic(a, b, c, d);
			nstats++;
		} else if (sscanf(line, " {\"statistic\": \"%127[^\"]\", \"field\": \"%127[^\"]\", \"text\": \"%127[^\"]\", "
					"\"key\": \"%127[0-9a-f]\"", a, b, c, d) == 4) {
			bad += check_key(a, b, c, d);
			nkeys++;
		} else if (sscanf(line, " {\"statistic\": \"%127[^\"]\", \"field\": \"%127[^\"]\", \"text\": \"%127[^\"]\", "
					"\"key\": nul%1[l]", a, b, c, d) == 4) {
			bad += check_key(a, b, c, NULL);
			nkeys++;
		}
	}
	fclose(f);
	if ((size_t)nstats != nstatistics) {
		fprintf(stderr, "catalogue_test: %d statistics pinned, %zu in the catalogue\n", nstats, nstatistics);
		bad++;
	}
	if (nkeys < 50) {
		fprintf(stderr, "catalogue_test: %d key cases in %s, expected at least 50\n", nkeys, path);
		bad++;
	}
	printf("catalogue_test: %d statistics, %d key cases, %d failed\n", nstats, nkeys, bad);
	return bad != 0;
}
