/*
 * analyze.c - reads one convergence scenario's logs and prints its figures:
 *   activations.log   "<revision_id> <commit_ns> <acked_ns>" in activation order
 *                     (commit: the outbox event's created_at, before the commit;
 *                      acked: when the API answered, after it)
 *   w<N>.changes      awooop watch output: {"ts_ns":..,"revision_id":..,...}
 *   w<N>.calls        "<call start ns> <revision used>"
 *   w<N>.stats        the watch's final counters (calls, store_reads, ...)
 * Latency of (worker, activation k): first time the worker observed revision k
 * or a later one, minus k's commit. A guard violation: a call that started
 * more than max_staleness after activation k was acknowledged and still used a
 * revision older than k.
 * usage: analyze DIR WORKERS MAX_STALENESS_MS
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXA 4096

static char rev[MAXA][40];
static long long commit_ns[MAXA], acked_ns[MAXA];
static int na;

static int index_of(const char *r)
{
	for (int i = na - 1; i >= 0; i--)
		if (!strcmp(rev[i], r))
			return i;
	return -1;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: analyze DIR WORKERS MAX_STALENESS_MS\n");
		return 2;
	}
	const char *dir = argv[1];
	int workers = atoi(argv[2]);
	long long stale = atoll(argv[3]) * 1000000LL;
	char path[1024], line[512];
	snprintf(path, sizeof path, "%s/activations.log", dir);
	FILE *f = fopen(path, "r");
	if (!f)
		return perror(path), 1;
	while (na < MAXA &&
	       fscanf(f, "%39s %lld %lld", rev[na], &commit_ns[na], &acked_ns[na]) == 3)
		na++;
	fclose(f);
	long long *lat = malloc(sizeof *lat * (size_t)(na * workers + 1));
	long nlat = 0, missing = 0, violations = 0, calls = 0, errors = 0;
	unsigned long long tot_calls = 0, tot_reads = 0;
	for (int w = 0; w < workers; w++) {
		long long first_seen[MAXA];
		for (int k = 0; k < na; k++)
			first_seen[k] = 0;
		snprintf(path, sizeof path, "%s/w%d.changes", dir, w);
		if ((f = fopen(path, "r"))) {
			while (fgets(line, sizeof line, f)) {
				long long ts;
				char r[64];
				if (sscanf(line, "{\"ts_ns\":%lld,\"revision_id\":\"%39[^\"]\"",
					   &ts, r) != 2)
					continue;
				int k = index_of(r);
				for (int j = 0; j <= k;
				     j++) /* seeing k means 0..k are superseded */
					if (!first_seen[j])
						first_seen[j] = ts;
			}
			fclose(f);
		}
		for (int k = 0; k < na; k++) {
			if (first_seen[k])
				lat[nlat++] = first_seen[k] - commit_ns[k];
			else
				missing++;
		}
		snprintf(path, sizeof path, "%s/w%d.calls", dir, w);
		if ((f = fopen(path, "r"))) {
			int k = -1; /* latest activation acked more than `stale` before the call */
			while (fgets(line, sizeof line, f)) {
				long long start;
				char r[64];
				if (sscanf(line, "%lld %63s", &start, r) != 2)
					continue;
				calls++;
				while (k + 1 < na && acked_ns[k + 1] + stale < start)
					k++;
				if (!strcmp(r, "-")) {
					errors++;
					continue;
				}
				if (k >= 0 && index_of(r) < k)
					violations++;
			}
			fclose(f);
		}
		snprintf(path, sizeof path, "%s/w%d.stats", dir, w);
		if ((f = fopen(path, "r"))) { /* the counters are the last line */
			unsigned long long c = 0, rd = 0;
			while (fgets(line, sizeof line, f))
				if (sscanf(line, "{\"calls\":%llu,\"store_reads\":%llu", &c, &rd) ==
				    2) {
					tot_calls += c;
					tot_reads += rd;
				}
			fclose(f);
		}
	}
	qsort(lat, (size_t)nlat, sizeof *lat, cmp_ll);
	double p50 = nlat ? lat[nlat / 2] / 1e6 : -1,
	       p99 = nlat ? lat[(nlat * 99) / 100] / 1e6 : -1;
	double mx = nlat ? lat[nlat - 1] / 1e6 : -1;
	printf("  pairs %ld (workers %d x activations %d), not observed %ld\n", nlat + missing,
	       workers, na, missing);
	printf("  commit -> observed: p50 %.2f ms  p99 %.2f ms  max %.2f ms\n", p50, p99, mx);
	printf("  guarded calls %ld, errors %ld, guard violations %ld\n", calls, errors,
	       violations);
	printf("  store reads per 1000 guarded calls: %.1f\n",
	       tot_calls ? 1000.0 * (double)tot_reads / (double)tot_calls : 0);
	free(lat);
	return violations ? 1 : 0;
}
