/* catalogue_gen.c — strata-catalogue, a build-time tool: prints the catalogue compiled
 * from statistics.def as the JSON the Python package reads (`json`: datasets/catalogue.json)
 * or as the Markdown tables of catalogue/STATISTICS.md (`markdown`). */
#include <stdio.h>
#include <string.h>
#include "catalogue.h"

static void print_dims(unsigned mask)
{
	int first = 1;

	for (int d = 1; d < AGG_DIM_COUNT; d++) {
		if (mask & (1u << d)) {
			printf("%s%s", first ? "" : ", ", dim_name(d));
			first = 0;
		}
	}
	printf("%s | ", first ? "–" : "");
}

/* What uses key set k: the statistics whose "op" it names, or the dimensions it names. */
static void print_users(enum keyset k)
{
	int first = 1;

	for (size_t i = 0; i < nstatistics; i++) {
		const struct statistic *s = &statistics[i];

		if (s->ops == k && ((s->breakdowns | s->filters) & (1u << AGG_DIM_OP))) {
			printf("%s`%s`", first ? "" : ", ", s->name);
			first = 0;
		}
	}
	for (int d = 1; d < AGG_DIM_COUNT; d++) {
		if (strcmp(dim_values(d), keyset_name(k)) == 0) {
			printf("%s`[%s]`", first ? "" : ", ", dim_name(d));
			first = 0;
		}
	}
}

static void markdown(void)
{
	static const char *const kinds[] = { "counter", "heatmap", "gauge" };

	printf("| statistic | unit | kind | breakdowns | filters | layer | probes | description |\n");
	printf("|---|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < nstatistics; i++) {
		const struct statistic *s = &statistics[i];

		printf("| `%s` | %s | %s | ", s->name, s->unit, kinds[s->kind]);
		print_dims(s->breakdowns);
		print_dims(s->filters);
		printf("%s | ", layer_name(s->layer));
		if (s->kind == KIND_GAUGE)
			printf("stats socket");
		for (int p = 0; p < STAT_MAX_PROBES && s->probes[p]; p++)
			printf("%s`%s:%s`", p ? ", " : "", layer_provider(s->layer), s->probes[p]);
		printf(" | %s |\n", s->description);
	}
	printf("\n| breakdown | key texts | meaning |\n|---|---|---|\n");
	for (int d = 1; d < AGG_DIM_COUNT; d++)
		printf("| `%s` | %s | %s |\n", dim_name(d), dim_values(d), dim_doc(d));
	printf("\n| key set | used by | texts | meaning |\n|---|---|---|---|\n");
	for (int k = 0; k < KEYSET_COUNT; k++) {
		int first = 1;

		printf("| `%s` | ", keyset_name(k));
		print_users(k);
		printf(" | ");
		for (size_t i = 0; i < nkey_texts; i++) {
			if (key_texts[i].set == (enum keyset)k) {
				printf("%s%s", first ? "" : " ", key_texts[i].text);
				first = 0;
			}
		}
		printf(" | %s |\n", keyset_doc(k));
	}
	printf("\n| statistic | records no op | why | counted by |\n|---|---|---|---|\n");
	for (size_t i = 0; i < nunrecorded_ops; i++) {
		const struct unrecorded_op *u = &unrecorded_ops[i];
		const struct statistic *s = statistic_of(u->agg_stat);

		printf("| `%s` | %s | %s | `%s[op=%s]` |\n", s->name, key_text_of(s->ops, u->op), u->why,
		       statistic_of(u->counted_by)->name, key_text_of(s->ops, u->op));
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "json") == 0) {
		catalogue_write(stdout, NULL, NULL);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "markdown") == 0) {
		markdown();
		return 0;
	}
	fprintf(stderr, "usage: strata-catalogue json|markdown\n");
	return 2;
}
