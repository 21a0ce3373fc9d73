/*
 * buf.c - the bounded growable buffer (see buf.h). Growth doubles up to the
 * buffer's maximum; a failed append changes nothing but the sticky error.
 */
#include "awooop/alloc.h"
#include "awooop/buf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static aw_err reserve(aw_buf *b, size_t n)
{
	if (b->err)
		return b->err;
	if (n > b->max || b->len > b->max - n)
		return b->err = AW_E_LIMIT;
	size_t need = b->len + n + 1;
	if (need <= b->cap)
		return AW_OK;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > SIZE_MAX / 2 ? need : cap * 2;
	if (b->max < SIZE_MAX && cap > b->max + 1) /* SIZE_MAX: no ceiling but memory */
		cap = b->max + 1;
	char *p = aw_realloc(b->p, cap);
	if (!p)
		return b->err = AW_E_NOMEM;
	b->p = p;
	b->cap = cap;
	return AW_OK;
}

aw_err aw_buf_add(aw_buf *b, const void *data, size_t n)
{
	aw_err e = reserve(b, n);
	if (e)
		return e;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return AW_OK;
}

aw_err aw_buf_adds(aw_buf *b, const char *s)
{
	return aw_buf_add(b, s, strlen(s));
}

aw_err aw_buf_addf(aw_buf *b, const char *fmt, ...)
{
	va_list ap, ap2;
	va_start(ap, fmt);
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	aw_err e = n < 0 ? (b->err = AW_E_INTERNAL) : reserve(b, (size_t)n);
	if (!e) {
		vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap2);
		b->len += (size_t)n;
	}
	va_end(ap2);
	return e;
}

aw_err aw_buf_add_jstr(aw_buf *b, const char *s, size_t n)
{
	aw_buf_add(b, "\"", 1);
	size_t run = 0; /* the bytes before i that need no escape, copied at once */
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		aw_buf_add(b, s + run, i - run);
		run = i + 1;
		char esc[8] = {'\\', (char)c, 0};
		size_t len = 2;
		switch (c) {
		case '"':
		case '\\': break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default: len = (size_t)snprintf(esc, sizeof esc, "\\u%04x", c);
		}
		aw_buf_add(b, esc, len);
	}
	aw_buf_add(b, s + run, n - run);
	return aw_buf_add(b, "\"", 1);
}

void aw_buf_truncate(aw_buf *b, size_t len)
{
	if (len < b->len) {
		b->len = len;
		b->p[len] = '\0';
	}
}

size_t aw_buf_drain(aw_buf *b, size_t *off, char *dst, size_t max)
{
	size_t avail = b->len - *off, n = avail < max ? avail : max;
	if (n)
		memcpy(dst, b->p + *off, n);
	*off += n;
	if (*off == b->len) { /* all read: start again at the front */
		aw_buf_truncate(b, 0);
		*off = 0;
	}
	return n;
}

char *aw_buf_take(aw_buf *b)
{
	char *s = b->p ? b->p : aw_strdup("");
	b->p = NULL;
	b->len = b->cap = 0;
	return s;
}

void aw_buf_free(aw_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}
