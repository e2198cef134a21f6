/* tierstats.h — name/offset tables that let the stats socket print the
 * L2ARC, ZIL and device-model counter structs (all uint64_t fields) under
 * their arcstats-style names without knowing the structs:
 *   for (size_t i = 0; i < l2arc_stat_nfields; i++)
 *       printf("%s %llu\n", l2arc_stat_fields[i].name,
 *              (unsigned long long)tier_stat_value(&st, &l2arc_stat_fields[i])); */
#ifndef ENGINE_TIERSTATS_H
#define ENGINE_TIERSTATS_H

#include <stddef.h>
#include <stdint.h>

struct tier_stat_field {
	const char *name;
	size_t off;
};
#define TIER_STAT_FIELD(type, field) { #field, offsetof(type, field) }

static inline uint64_t tier_stat_value(const void *stats, const struct tier_stat_field *f)
{
	return *(const uint64_t *)((const char *)stats + f->off);
}

#endif
