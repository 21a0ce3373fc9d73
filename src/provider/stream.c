/*
 * stream.c - the two upstream stream framings, parsed incrementally as bytes
 * arrive from libcurl (any split, one byte at a time included):
 *
 *   SSE (text/event-stream, WHATWG HTML §9.2): lines end in LF, CR or CRLF;
 *   "data:" lines (one optional space after the colon) accumulate, joined by
 *   LF; an empty line dispatches the event; ":" comments and other fields are
 *   ignored. NDJSON: one JSON document per LF-terminated line.
 *
 * Both keep at most `max` bytes of an unfinished line or event (AW_E_LIMIT).
 */
#include "awooop/llm_wire.h"

#include <string.h>

static aw_err stopped(void)
{
	return AW_E_INTERNAL;
}

void aw_sse_init(aw_sse *p, size_t max)
{
	memset(p, 0, sizeof *p);
	p->line = (aw_buf)AW_BUF_INIT(max);
	p->data = (aw_buf)AW_BUF_INIT(max);
}

void aw_sse_free(aw_sse *p)
{
	aw_buf_free(&p->line);
	aw_buf_free(&p->data);
}

/* One complete line (without its end). */
static aw_err sse_line(aw_sse *p, aw_llm_sink on_event, void *ud, aw_error *err)
{
	const char *l = aw_buf_str(&p->line);
	size_t n = p->line.len;
	aw_err e = AW_OK;
	if (n == 0) {
		if (p->has_data && on_event(ud, aw_buf_str(&p->data), p->data.len))
			e = stopped();
		aw_buf_truncate(&p->data, 0);
		p->has_data = 0;
	} else if (n >= 5 && memcmp(l, "data", 4) == 0 && (l[4] == ':')) {
		size_t off = 5 + (n > 5 && l[5] == ' ');
		if (p->has_data)
			e = aw_buf_add(&p->data, "\n", 1);
		if (!e)
			e = aw_buf_add(&p->data, l + off, n - off);
		p->has_data = 1;
		if (e)
			aw_fail(err, e, "an upstream event is over %zu bytes", p->data.max);
	} else if (n == 4 && memcmp(l, "data", 4) == 0) { /* "data" alone: empty data line */
		if (p->has_data)
			e = aw_buf_add(&p->data, "\n", 1);
		p->has_data = 1;
	}
	aw_buf_truncate(&p->line, 0);
	return e;
}

aw_err aw_sse_feed(aw_sse *p, const char *buf, size_t n, aw_llm_sink on_event, void *ud,
		   aw_error *err)
{
	size_t i = 0;
	while (i < n) {
		if (p->cr && buf[i] == '\n') { /* the LF of a CRLF */
			p->cr = 0;
			i++;
			continue;
		}
		p->cr = 0;
		size_t j = i;
		while (j < n && buf[j] != '\n' && buf[j] != '\r')
			j++;
		if (j > i && aw_buf_add(&p->line, buf + i, j - i))
			return aw_fail(err, AW_E_LIMIT, "an upstream event line is over %zu bytes",
				       p->line.max);
		if (j == n)
			return AW_OK;
		p->cr = buf[j] == '\r';
		aw_err e = sse_line(p, on_event, ud, err);
		if (e)
			return e;
		i = j + 1;
	}
	return AW_OK;
}

void aw_ndjson_init(aw_ndjson *p, size_t max)
{
	p->line = (aw_buf)AW_BUF_INIT(max);
}

void aw_ndjson_free(aw_ndjson *p)
{
	aw_buf_free(&p->line);
}

static aw_err nd_flush(aw_ndjson *p, aw_llm_sink on_line, void *ud)
{
	size_t n = p->line.len;
	const char *l = aw_buf_str(&p->line);
	while (n && (l[n - 1] == '\r' || l[n - 1] == ' '))
		n--;
	aw_err e = AW_OK;
	if (n && on_line(ud, l, n))
		e = stopped();
	aw_buf_truncate(&p->line, 0);
	return e;
}

aw_err aw_ndjson_feed(aw_ndjson *p, const char *buf, size_t n, aw_llm_sink on_line, void *ud,
		      aw_error *err)
{
	size_t i = 0;
	while (i < n) {
		const char *nl = memchr(buf + i, '\n', n - i);
		size_t j = nl ? (size_t)(nl - buf) : n;
		if (j > i && aw_buf_add(&p->line, buf + i, j - i))
			return aw_fail(err, AW_E_LIMIT, "an upstream line is over %zu bytes",
				       p->line.max);
		if (!nl)
			return AW_OK;
		aw_err e = nd_flush(p, on_line, ud);
		if (e)
			return e;
		i = j + 1;
	}
	return AW_OK;
}

aw_err aw_ndjson_end(aw_ndjson *p, aw_llm_sink on_line, void *ud, aw_error *err)
{
	(void)err;
	return nd_flush(p, on_line, ud);
}
