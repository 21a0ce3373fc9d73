/*
 * bench_redact.c - redaction throughput and precision per log format, side by
 * side in one run (formats: loggen.h):
 *   engine    aw_redact_text / the 64 KiB stream that `awooop redact` uses:
 *             Hyperscan + shape scanner prefilter, PCRE2-JIT confirmation
 *   baseline  the naive way: each class's exact PCRE2-JIT regex (same patterns,
 *             same validators) applied in turn over the whole text
 * on a clean corpus (nothing to redact: every changed line is a false
 * positive) and a dense one (a secret about every 1 KB).
 * usage: bench_redact [MB] [FORMAT ...]   (default 20 MB, every format;
 *        FORMAT may be grid:LINELEN:RUNS:ENDNUM, loggen.h)
 * Prints a table and one "ROW ..." line per corpus for scripts.
 *
 * bench_redact --custom PATTERN [MB] [FORMAT ...]: the engine (the 64 KiB
 * stream) without and with one custom pattern of a project (redact.h),
 * interleaved, median of 5 each; the dense corpus also carries an id the
 * pattern matches ("EMP-" and 6 digits) about every 1 KB. Prints a table and
 * one "CROW format kind without with ratio custom_found" line per corpus.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "awooop/redact.h"
#include "core/redact_hook.h"
#include "loggen.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The naive baseline: one full pass per class. */
static size_t baseline(const char *in, size_t len, double *secs)
{
	pcre2_code *re[AW_RC__COUNT] = {0};
	for (int c = 0; c < AW_RC__COUNT; c++) {
		const char *p = redact_pcre_pattern((aw_redact_class)c);
		if (!p)
			continue;
		int ec;
		PCRE2_SIZE eo;
		re[c] = pcre2_compile((PCRE2_SPTR)p, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
		pcre2_jit_compile(re[c], PCRE2_JIT_COMPLETE);
	}
	pcre2_match_data *md = pcre2_match_data_create(4, NULL);
	/* markers are at most ~3x the text they replace */
	size_t cap = len * 3 + 1024;
	char *cur = malloc(cap), *next = malloc(cap);
	memcpy(cur, in, len);
	size_t clen = len, total = 0;
	double t0 = now();
	for (int c = 0; c < AW_RC__COUNT; c++) {
		if (!re[c])
			continue;
		size_t o = 0, pos = 0, start = 0;
		int rc;
		while (start < clen &&
		       (rc = pcre2_match(re[c], (PCRE2_SPTR)cur, clen, start, 0, md, NULL)) >= 0) {
			PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
			size_t rs = ov[0], re_ = ov[1];
			if (rc >= 2 && ov[2] != PCRE2_UNSET) {
				rs = ov[2];
				re_ = ov[3];
			}
			start = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
			if (!redact_validate((aw_redact_class)c, cur + rs, re_ - rs))
				continue;
			memcpy(next + o, cur + pos, rs - pos);
			o += rs - pos;
			o += (size_t)snprintf(next + o, cap - o, "[REDACTED:%s]",
					      aw_redact_class_label((aw_redact_class)c));
			pos = re_;
			total++;
		}
		memcpy(next + o, cur + pos, clen - pos);
		o += clen - pos;
		char *t = cur;
		cur = next;
		next = t;
		clen = o;
	}
	*secs = now() - t0;
	free(cur);
	free(next);
	pcre2_match_data_free(md);
	for (int c = 0; c < AW_RC__COUNT; c++)
		pcre2_code_free(re[c]);
	return total;
}

static int discard(void *ud, const char *d, size_t n)
{
	(void)d;
	*(size_t *)ud += n;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Lines of in that the engine changed (in a clean corpus: false positives). */
static size_t changed_lines(const char *in, size_t len, const char *out, size_t outlen)
{
	size_t n = 0, i = 0, o = 0;
	while (i < len && o < outlen) {
		const char *ie = memchr(in + i, '\n', len - i),
			   *oe = memchr(out + o, '\n', outlen - o);
		size_t il = ie ? (size_t)(ie - in - i) : len - i,
		       ol = oe ? (size_t)(oe - out - o) : outlen - o;
		n += il != ol || memcmp(in + i, out + o, il) != 0;
		i += il + 1;
		o += ol + 1;
	}
	return n;
}

typedef struct {
	double stream, whole, base;
	size_t found, base_found, fp;
} result;

static result measure(const char *buf, size_t len)
{
	result r = {0};
	double mb = (double)len / 1e6;
	aw_redact_stats st = {0};
	char *out = NULL;
	size_t outlen = 0;
	double t[3];
	for (int k = 0; k < 3; k++) { /* median of 3 */
		memset(&st, 0, sizeof st);
		double t0 = now();
		aw_redact_text(buf, len, &out, &outlen, &st);
		t[k] = now() - t0;
		if (k < 2)
			free(out);
	}
	qsort(t, 3, sizeof t[0], cmp_double);
	r.whole = mb / t[1];
	for (int c = 0; c < AW_RC__COUNT; c++)
		r.found += st.count[c];
	r.fp = changed_lines(buf, len, out, outlen);
	free(out);
	for (int k = 0; k < 3; k++) {
		size_t emitted = 0;
		double t0 = now();
		aw_redact_stream *s = aw_redact_stream_new(discard, &emitted, NULL);
		for (size_t off = 0; off < len; off += 65536)
			aw_redact_stream_feed(s, buf + off, len - off < 65536 ? len - off : 65536);
		aw_redact_stream_finish(s);
		t[k] = now() - t0;
	}
	qsort(t, 3, sizeof t[0], cmp_double);
	r.stream = mb / t[1];
	double tb;
	r.base_found = baseline(buf, len, &tb);
	r.base = mb / tb;
	return r;
}

/* Writes "EMP-" and 6 digits after the first space past every 1 KB of buf
 * (where the 10 bytes hold no line end): the custom pattern's matches. */
static size_t plant_ids(char *buf, size_t len)
{
	size_t n = 0;
	for (size_t at = 1024; at + 64 < len; at += 1024) {
		char *sp = memchr(buf + at, ' ', 32);
		if (!sp || memchr(sp + 1, '\n', 10))
			continue;
		char id[11];
		snprintf(id, sizeof id, "EMP-%06zu", n % 1000000);
		memcpy(sp + 1, id, 10);
		n++;
	}
	return n;
}

static double stream_mbs(const char *buf, size_t len, const char *project)
{
	size_t emitted = 0;
	double t0 = now();
	aw_redact_stream *s = aw_redact_stream_new_for(project, discard, &emitted, NULL);
	for (size_t off = 0; off < len; off += 65536)
		aw_redact_stream_feed(s, buf + off, len - off < 65536 ? len - off : 65536);
	aw_redact_stream_finish(s);
	return (double)len / 1e6 / (now() - t0);
}

static int custom_mode(const char *pattern, size_t mb, const char *const *want, int nw)
{
	json_t *list = json_pack("[{s:s, s:s}]", "name", "employee_id", "pattern", pattern);
	aw_redact_custom *c = NULL;
	aw_error err = {0};
	if (aw_redact_custom_compile(list, &c, &err) != AW_OK) {
		fprintf(stderr, "the pattern is refused: %s\n", err.msg);
		return 2;
	}
	json_decref(list);
	aw_redact_custom_install("bench", 1, c);
	printf("bench/redact --custom '%s': one thread, %zu MB per corpus, engine (stream),"
	       " median of 5 interleaved\n",
	       pattern, mb);
	printf("%-11s %-5s %12s %12s %7s %9s\n", "format", "kind", "without", "with", "ratio",
	       "custom");
	for (int w = 0; w < nw; w++) {
		for (int dense = 0; dense < 2; dense++) {
			size_t len, planted;
			char *buf = loggen_named(want[w], mb * 1000000, dense, &len, &planted);
			if (!buf) {
				fprintf(stderr, "unknown format %s\n", want[w]);
				return 2;
			}
			if (dense)
				plant_ids(buf, len);
			double a[5], b[5];
			for (int k = 0; k < 5; k++) {
				a[k] = stream_mbs(buf, len, NULL);
				b[k] = stream_mbs(buf, len, "bench");
			}
			qsort(a, 5, sizeof a[0], cmp_double);
			qsort(b, 5, sizeof b[0], cmp_double);
			aw_redact_stats st = {0};
			char *out = NULL;
			aw_redact_text_for("bench", buf, len, &out, NULL, &st);
			free(out);
			free(buf);
			printf("%-11s %-5s %7.0f MB/s %7.0f MB/s %6.2fx %9llu\n", want[w],
			       dense ? "dense" : "clean", a[2], b[2], b[2] / a[2],
			       (unsigned long long)st.count[AW_RC_CUSTOM]);
			printf("CROW %s %s %.1f %.1f %.3f %llu\n", want[w],
			       dense ? "dense" : "clean", a[2], b[2], b[2] / a[2],
			       (unsigned long long)st.count[AW_RC_CUSTOM]);
			fflush(stdout);
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *custom = NULL;
	if (argc > 2 && strcmp(argv[1], "--custom") == 0) {
		custom = argv[2];
		argc -= 2;
		argv += 2;
	}
	size_t mb = argc > 1 ? strtoul(argv[1], NULL, 10) : 20;
	if (!mb || aw_redact_init(NULL) != AW_OK) {
		fprintf(stderr, "usage: bench_redact [MB] [FORMAT ...] (engine must compile)\n");
		return 2;
	}
	const char *want[64];
	int nw = 0;
	for (int i = 2; i < argc && nw < 64; i++)
		want[nw++] = argv[i]; /* a format or grid:LINELEN:RUNS:ENDNUM */
	if (!nw)		      /* every format */
		for (int i = 0; loggen_formats[i] && nw < 64; i++)
			want[nw++] = loggen_formats[i];
	if (custom)
		return custom_mode(custom, mb, want, nw);
	printf("bench/redact: one thread, %zu MB per corpus, median of 3\n", mb);
	printf("%-11s %-5s %10s %10s %10s %7s %9s %9s %6s\n", "format", "kind", "stream", "whole",
	       "baseline", "ratio", "found", "planted", "fp");
	double worst = 1e18;
	const char *worst_name = "";
	for (int w = 0; w < nw; w++) {
		for (int dense = 0; dense < 2; dense++) {
			size_t len, planted;
			char *buf = loggen_named(want[w], mb * 1000000, dense, &len, &planted);
			if (!buf) {
				fprintf(stderr, "unknown format %s\n", want[w]);
				return 2;
			}
			result r = measure(buf, len);
			free(buf);
			const char *name = want[w];
			printf("%-11s %-5s %6.0f MB/s %6.0f MB/s %6.1f MB/s %6.1fx %9zu %9zu %6zu\n",
			       name, dense ? "dense" : "clean", r.stream, r.whole, r.base,
			       r.stream / r.base, r.found, planted, dense ? 0 : r.fp);
			printf("ROW %s %s %.1f %.1f %.1f %zu %zu %zu %zu\n", name,
			       dense ? "dense" : "clean", r.stream, r.whole, r.base, r.found,
			       r.base_found, planted, dense ? 0 : r.fp);
			if (!dense && r.stream < worst) {
				worst = r.stream;
				worst_name = name;
			}
			fflush(stdout);
		}
	}
	printf("worst clean format (stream): %s at %.0f MB/s\n", worst_name, worst);
	return 0;
}
