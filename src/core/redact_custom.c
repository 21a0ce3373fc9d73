/*
 * redact_custom.c - a project's custom redaction patterns (redact.h): the
 * list's validation and compilation, the process's registry project ->
 * (version, compiled set), and the bounded matcher redact.c runs after the
 * built-in classes.
 *
 * A set is compiled once per list version and shared (reference-counted) by
 * every call of the project; the registry is read under a read lock only when
 * some project has a set (one atomic load otherwise), so projects without
 * custom patterns redact exactly as before.
 *
 * The matcher: a tenant's text and the platform's pattern can meet badly
 * ("(a|aa)+$" on runs of a's costs ~1,000 steps per start position, under
 * any per-start match limit, and PCRE2 restarts that limit at each start).
 * So start positions are tried in windows of WINDOW bytes (PCRE2's offset
 * limit), every pattern in a window before the next window, each seeing at most AW_REDACT_CUSTOM_SPAN bytes past its end (a
 * match reaching that horizon is cut there: a match of up to SPAN bytes is
 * always whole), and between windows the call's CPU budget is checked: a
 * window costs at most WINDOW starts x (WINDOW + SPAN) bytes scanned, and no
 * call runs on far past its budget. The clock is the monotonic one (~20 ns); the thread's CPU clock
 * (~700 ns on a VM) is read only once a call has run 1 ms, so a thread that
 * was merely descheduled is not cut.
 */
#include "redact_custom.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "awooop/alloc.h"
#include "awooop/ctx.h"
#include "awooop/metrics.h"
#include "awooop/pattern.h"
#include "awooop/str.h"

#define WINDOW 1024		  /* start positions per pcre2_match call */
#define BUDGET_BASE_NS 10000000LL /* 10 ms a call */
#define BUDGET_PER_BYTE_NS 50	  /* per byte and pattern */
#define BUDGET_PER_TEXT 64	  /* bytes counted per text (a JSON string's overhead) */
#define CPU_MARK_NS 1000000LL	  /* wall time before the CPU clock is consulted */

struct aw_redact_custom {
	atomic_int refs;
	int n;
	struct {
		char name[AW_REDACT_CUSTOM_NAME_MAX + 1];
		pcre2_code *re;
	} p[AW_REDACT_CUSTOM_MAX];
};

/* ------------------------------------------------------------ compiling */

static int name_ok(const char *s, size_t n)
{
	if (n < 1 || n > AW_REDACT_CUSTOM_NAME_MAX || !(s[0] >= 'a' && s[0] <= 'z'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

/* 1 when src uses \K (resets the match start: "x\K" reports an empty
 * match whatever its minimum length says); a look-behind says the same. */
static int has_reset(const char *src, size_t len)
{
	int quoted = 0; /* inside \Q...\E */
	for (size_t i = 0; i + 1 < len; i++) {
		if (src[i] != '\\')
			continue;
		char c = src[++i];
		if (quoted)
			quoted = c != 'E';
		else if (c == 'Q')
			quoted = 1;
		else if (c == 'K')
			return 1;
	}
	return 0;
}

static int count_callout(pcre2_callout_enumerate_block *b, void *ud)
{
	(void)b;
	++*(uint32_t *)ud;
	return 0;
}

/* Compiles one pattern, or fails with the reason at where (the entry). */
static aw_err compile_one(const char *src, size_t len, const char *where, pcre2_code **out,
			  aw_error *err)
{
	*out = NULL;
	if (len == 0 || len > AW_PATTERN_MAX || memchr(src, '\0', len))
		return aw_fail_at(err, AW_E_REDACT_PATTERN, where,
				  "a pattern is 1 to %d bytes, without NUL", AW_PATTERN_MAX);
	pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
	if (!cc)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	pcre2_set_max_pattern_length(cc, AW_PATTERN_MAX);
	pcre2_set_parens_nest_limit(cc, 32);
	int ec;
	PCRE2_SIZE eo;
	/* UTF, but any bytes in the text (logs are not always UTF-8); \C would
	 * split a character; the offset limit is how the matcher windows */
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)src, len,
				       PCRE2_UTF | PCRE2_MATCH_INVALID_UTF |
					       PCRE2_NEVER_BACKSLASH_C | PCRE2_USE_OFFSET_LIMIT,
				       &ec, &eo, cc);
	pcre2_compile_context_free(cc);
	if (!re) {
		PCRE2_UCHAR why[160];
		pcre2_get_error_message(ec, why, sizeof why);
		return aw_fail_at(err, AW_E_REDACT_PATTERN, where,
				  "the pattern does not compile: %s at offset %zu", (char *)why,
				  (size_t)eo);
	}
	uint32_t backrefmax = 0, callouts = 0, minlen = 0, empty = 1;
	pcre2_pattern_info(re, PCRE2_INFO_BACKREFMAX, &backrefmax);
	pcre2_pattern_info(re, PCRE2_INFO_MINLENGTH, &minlen);
	/* "might match empty" (a look-ahead alone, \K at the end): the
	   minimum length counts what a look-ahead needs to see */
	pcre2_pattern_info(re, PCRE2_INFO_MATCHEMPTY, &empty);
	pcre2_callout_enumerate(re, count_callout, &callouts);
	const char *why =
		backrefmax	      ? "back references are not allowed in a pattern"
		: callouts	      ? "callouts are not allowed in a pattern"
		: !minlen || empty    ? "the pattern can match the empty string (it would match"
					" everywhere): make it match at least one character"
		: has_reset(src, len) ? "\\K is not allowed in a pattern: use a look-behind"
				      : NULL;
	if (why) {
		pcre2_code_free(re);
		return aw_fail_at(err, AW_E_REDACT_PATTERN, where, "%s", why);
	}
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* best effort: the limits hold either way */
	*out = re;
	return AW_OK;
}

aw_err aw_redact_custom_compile(const json_t *list, aw_redact_custom **out, aw_error *err)
{
	*out = NULL;
	if (!json_is_array(list))
		return aw_fail_at(err, AW_E_REDACT_PATTERN, "",
				  "the patterns are an array of {\"name\", \"pattern\"}");
	if (json_array_size(list) > AW_REDACT_CUSTOM_MAX)
		return aw_fail_at(err, AW_E_REDACT_PATTERN, "", "at most %d patterns a project",
				  AW_REDACT_CUSTOM_MAX);
	aw_redact_custom *c = aw_calloc(1, sizeof *c);
	if (!c)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	atomic_init(&c->refs, 1);
	aw_err e = AW_OK;
	for (size_t i = 0; !e && i < json_array_size(list); i++) {
		json_t *it = json_array_get(list, i), *name = json_object_get(it, "name");
		json_t *pat = json_object_get(it, "pattern");
		char where[32];
		snprintf(where, sizeof where, "/%zu", i);
		if (!json_is_object(it) || json_object_size(it) != 2 || !json_is_string(name) ||
		    !json_is_string(pat)) {
			e = aw_fail_at(
				err, AW_E_REDACT_PATTERN, where,
				"an entry is {\"name\": ..., \"pattern\": ...} and nothing else");
			break;
		}
		const char *nm = json_string_value(name);
		size_t nl = json_string_length(name);
		if (!name_ok(nm, nl)) {
			e = aw_fail_at(err, AW_E_REDACT_PATTERN, where,
				       "a name matches [a-z][a-z0-9_]{0,%d}",
				       AW_REDACT_CUSTOM_NAME_MAX - 1);
			break;
		}
		for (int k = 0; k < c->n && !e; k++)
			if (strcmp(c->p[k].name, nm) == 0)
				e = aw_fail_at(err, AW_E_REDACT_PATTERN, where,
					       "the name %s is used twice", nm);
		if (e)
			break;
		if (!(e = compile_one(json_string_value(pat), json_string_length(pat), where,
				      &c->p[c->n].re, err))) {
			memcpy(c->p[c->n].name, nm, nl + 1);
			c->n++;
		}
	}
	if (e) {
		aw_redact_custom_free(c);
		return e;
	}
	*out = c;
	return AW_OK;
}

void rc_release(aw_redact_custom *c)
{
	if (!c || atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (int i = 0; i < c->n; i++)
		pcre2_code_free(c->p[i].re);
	free(c);
}

void aw_redact_custom_free(aw_redact_custom *c)
{
	rc_release(c);
}

int aw_redact_custom_count(const aw_redact_custom *c)
{
	return c ? c->n : 0;
}

const char *rc_name(const aw_redact_custom *c, int i)
{
	return c && i >= 0 && i < c->n ? c->p[i].name : "?";
}

/* ------------------------------------------------------------- registry */

#define BUCKETS 256

typedef struct reg {
	struct reg *next;
	char project[AW_PROJECT_MAX + 1];
	int64_t version;
	aw_redact_custom *set; /* NULL: none */
} reg;

static reg *buckets[BUCKETS];
static pthread_rwlock_t reg_mu = PTHREAD_RWLOCK_INITIALIZER;
static atomic_int reg_sets; /* entries with a set: 0 = nobody has one */

static unsigned bucket(const char *p)
{
	unsigned h = 2166136261u;
	for (; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	return h % BUCKETS;
}

/* Caller holds reg_mu. */
static reg *find(const char *project)
{
	for (reg *r = buckets[bucket(project)]; r; r = r->next)
		if (strcmp(r->project, project) == 0)
			return r;
	return NULL;
}

int aw_redact_custom_install(const char *project, int64_t version, aw_redact_custom *set)
{
	if (set && set->n == 0) {
		rc_release(set);
		set = NULL;
	}
	char key[AW_PROJECT_MAX + 1]; /* a longer project is no project's */
	if (!project || AW_STR_COPY(key, project) < 0) {
		rc_release(set);
		return 0;
	}
	aw_redact_custom *old = NULL;
	int done = 0;
	pthread_rwlock_wrlock(&reg_mu);
	reg *r = find(key);
	if (!r && (r = aw_calloc(1, sizeof *r))) {
		AW_COPY_ARRAY(r->project, key);
		unsigned b = bucket(key);
		r->next = buckets[b];
		buckets[b] = r;
	}
	if (r && version > r->version) {
		old = r->set;
		atomic_fetch_add(&reg_sets, (set != NULL) - (old != NULL));
		r->set = set;
		r->version = version;
		set = NULL;
		done = 1;
	}
	pthread_rwlock_unlock(&reg_mu);
	rc_release(old); /* calls still using it hold their own reference */
	rc_release(set);
	return done;
}

int64_t aw_redact_custom_version(const char *project)
{
	pthread_rwlock_rdlock(&reg_mu);
	reg *r = project ? find(project) : NULL;
	int64_t v = r ? r->version : 0;
	pthread_rwlock_unlock(&reg_mu);
	return v;
}

void aw_redact_custom_reset(void)
{
	pthread_rwlock_wrlock(&reg_mu);
	for (int b = 0; b < BUCKETS; b++) {
		for (reg *r = buckets[b], *next; r; r = next) {
			next = r->next;
			rc_release(r->set);
			free(r);
		}
		buckets[b] = NULL;
	}
	atomic_store(&reg_sets, 0);
	pthread_rwlock_unlock(&reg_mu);
}

aw_redact_custom *rc_lookup(const char *project)
{
	if (!project || !project[0] || atomic_load_explicit(&reg_sets, memory_order_acquire) == 0)
		return NULL;
	aw_redact_custom *c = NULL;
	pthread_rwlock_rdlock(&reg_mu);
	reg *r = find(project);
	if (r && r->set) {
		c = r->set;
		atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed);
	}
	pthread_rwlock_unlock(&reg_mu);
	return c;
}

/* -------------------------------------------------------------- matching */

pcre2_match_context *rc_match_context(void)
{
	pcre2_match_context *mc = pcre2_match_context_create(NULL);
	if (mc) {
		pcre2_set_match_limit(mc, AW_REDACT_CUSTOM_MATCH_LIMIT);
		pcre2_set_depth_limit(mc, AW_PATTERN_DEPTH_LIMIT);
		pcre2_set_heap_limit(mc, AW_PATTERN_HEAP_KB);
	}
	return mc;
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* 1 when the call has spent its budget. Cheap until the call has run 1 ms
 * (wall); from then on the thread's CPU time decides, read at most once a
 * millisecond (the first millisecond counted as CPU time). */
static int spent(aw_rc_run *r)
{
	int64_t now = clock_ns(CLOCK_MONOTONIC);
	if (!r->mono0) {
		r->mono0 = now;
		return 0;
	}
	int64_t wall = now - r->mono0;
	if (wall < CPU_MARK_NS)
		return 0;
	if (!r->cpu_marked) {
		r->cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID) - wall;
		r->cpu_marked = 1;
	} else if (now - r->cpu_at < CPU_MARK_NS) {
		return 0;
	}
	r->cpu_at = now;
	int64_t allow =
		BUDGET_BASE_NS + BUDGET_PER_BYTE_NS * (int64_t)r->bytes * (int64_t)r->set->n;
	return clock_ns(CLOCK_THREAD_CPUTIME_ID) - r->cpu0 > allow;
}

int rc_scan(aw_rc_run *run, const char *buf, size_t len, pcre2_match_data *md,
	    pcre2_match_context *mc, rc_emit emit, void *ud)
{
	const aw_redact_custom *c = run->set;
	if (!c || run->stopped || len == 0)
		return 0;
	run->bytes += len + BUDGET_PER_TEXT;
	/* window by window, every pattern in each: when the budget runs out,
	   the text before that point was searched for all of them */
	size_t from[AW_REDACT_CUSTOM_MAX] = {0};
	int live = (1 << c->n) - 1; /* bit i: pattern i has not hit a limit */
	for (size_t w = 0; w < len && live; w += WINDOW) {
		if (spent(run)) {
			run->stopped = 1;
			run->limited++;
			return 0;
		}
		size_t wend = len - w > WINDOW ? w + WINDOW : len;
		size_t send =
			len - wend > AW_REDACT_CUSTOM_SPAN ? wend + AW_REDACT_CUSTOM_SPAN : len;
		pcre2_set_offset_limit(mc, wend);
		for (int i = 0; i < c->n; i++) {
			while ((live >> i & 1) && from[i] < wend) {
				int rc = pcre2_match(c->p[i].re, (PCRE2_SPTR)buf, send, from[i], 0,
						     md, mc);
				if (rc == PCRE2_ERROR_NOMATCH) {
					from[i] = wend;
					break;
				}
				if (rc < 0) { /* a limit: match, depth, heap, JIT stack */
					live &= ~(1 << i);
					run->limited++;
					break;
				}
				/* a match that reaches the horizon (send < len) is cut
				   there and redacted as found: longer than the span,
				   or an end anchor or look-ahead that took the horizon
				   for the end - more redacted, never less */
				PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
				size_t ms = ov[0], me = ov[1];
				if (me > ms && emit(ud, ms, me, i))
					return -1;
				/* \K can report an empty match */
				from[i] = me > from[i] ? me : from[i] + 1;
			}
		}
	}
	return 0;
}

void rc_finish(aw_rc_run *run, const char *project, aw_redact_stats *stats)
{
	if (run->limited) {
		if (stats)
			stats->custom_limited += (uint64_t)run->limited;
		if (project)
			aw_metrics_redact_custom_limited(project, run->limited);
	}
	rc_release(run->set);
	run->set = NULL;
}
