/*
 * pattern.c - tenants' regular expressions (pattern.h) on PCRE2 with limits.
 * A match may backtrack at most AW_PATTERN_MATCH_LIMIT times, nest
 * AW_PATTERN_DEPTH_LIMIT deep and use AW_PATTERN_HEAP_KB of heap, so its cost is bounded whatever the pattern and
 * the text; past a limit it ends as "no match" (-1). Back references
 * (\1, \k<name>, (?P=name)) make matching exponential in ways the limits only
 * cut short, and callouts run code: both are refused at compile time, so a
 * revision using them is refused when it is written.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "awooop/alloc.h"
#include "awooop/pattern.h"

#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

struct aw_pattern {
	pcre2_code *re;
	pcre2_match_context *mc;
};

static int count_callout(pcre2_callout_enumerate_block *b, void *ud)
{
	(void)b;
	++*(uint32_t *)ud;
	return 0;
}

aw_err aw_pattern_compile(const char *src, aw_pattern **out, aw_error *err)
{
	*out = NULL;
	if (!src || strlen(src) > AW_PATTERN_MAX)
		return aw_fail(err, AW_E_REQ_INVALID, "a pattern is a string of at most %d bytes",
			       AW_PATTERN_MAX);
	pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
	if (!cc)
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	pcre2_set_max_pattern_length(cc, AW_PATTERN_MAX);
	pcre2_set_parens_nest_limit(cc, 32);
	int ec;
	PCRE2_SIZE eo;
	/* NEVER_BACKSLASH_C: \C splits a UTF-8 character; no auto-callouts */
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED,
				       PCRE2_UTF | PCRE2_NEVER_BACKSLASH_C, &ec, &eo, cc);
	pcre2_compile_context_free(cc);
	if (!re) {
		PCRE2_UCHAR why[160];
		pcre2_get_error_message(ec, why, sizeof why);
		return aw_fail(err, AW_E_REQ_INVALID, "not a pattern: %s at offset %zu",
			       (char *)why, (size_t)eo);
	}
	uint32_t backrefmax = 0, callouts = 0;
	pcre2_pattern_info(re, PCRE2_INFO_BACKREFMAX, &backrefmax);
	pcre2_callout_enumerate(re, count_callout, &callouts);
	if (backrefmax || callouts) {
		pcre2_code_free(re);
		return aw_fail(err, AW_E_REQ_INVALID,
			       backrefmax ? "back references are not allowed in a pattern"
					  : "callouts are not allowed in a pattern");
	}
	aw_pattern *p = aw_calloc(1, sizeof *p);
	pcre2_match_context *mc = p ? pcre2_match_context_create(NULL) : NULL;
	if (!mc) {
		free(p);
		pcre2_code_free(re);
		return aw_fail(err, AW_E_NOMEM, "out of memory");
	}
	pcre2_set_match_limit(mc, AW_PATTERN_MATCH_LIMIT);
	pcre2_set_depth_limit(mc, AW_PATTERN_DEPTH_LIMIT);
	pcre2_set_heap_limit(mc, AW_PATTERN_HEAP_KB);
	pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* best effort: limits hold either way */
	p->re = re;
	p->mc = mc;
	*out = p;
	return AW_OK;
}

int aw_pattern_match(const aw_pattern *p, const char *text, size_t len)
{
	pcre2_match_data *md = pcre2_match_data_create(1, NULL);
	if (!md)
		return -1;
	int rc = pcre2_match(p->re, (PCRE2_SPTR)text, len, 0, 0, md, p->mc);
	pcre2_match_data_free(md);
	if (rc >= 0)
		return 1;
	return rc == PCRE2_ERROR_NOMATCH ? 0 : -1;
}

void aw_pattern_free(aw_pattern *p)
{
	if (!p)
		return;
	pcre2_match_context_free(p->mc);
	pcre2_code_free(p->re);
	free(p);
}

aw_err aw_pattern_check(const char *src, aw_error *err)
{
	aw_pattern *p = NULL;
	aw_err e = aw_pattern_compile(src, &p, err);
	aw_pattern_free(p);
	return e;
}
