/*
 * buf.h - the one growable byte buffer, with a ceiling.
 *
 * Every buffer filled from outside input (request bodies, step responses, JSON
 * pointers, patches) has a maximum size: appending past it fails with
 * AW_E_LIMIT and leaves the buffer as it was, so nothing is ever cut silently.
 * Errors are sticky: after the first failure every append returns it again, so
 * a builder may append a sequence and check once at the end (aw_buf_err).
 * The contents are always NUL-terminated (aw_buf_str is "" when empty).
 *
 * Ownership: the buffer owns its bytes until aw_buf_free, or aw_buf_take which
 * hands a malloc'd string to the caller (free()).
 */
#ifndef AWOOOP_BUF_H
#define AWOOOP_BUF_H

#include <stddef.h>

#include "awooop/err.h"

typedef struct aw_buf {
	char *p;
	size_t len, cap, max; /* max: the most bytes it may hold (without the NUL) */
	aw_err err;	      /* first failure, sticky */
} aw_buf;

#define AW_BUF_INIT(maxbytes)                 \
	{                                     \
		NULL, 0, 0, (maxbytes), AW_OK \
	}

aw_err aw_buf_add(aw_buf *b, const void *data, size_t n);
aw_err aw_buf_adds(aw_buf *b, const char *s);
aw_err aw_buf_addf(aw_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Shortens to len bytes (len <= b->len); keeps the error state. */
void aw_buf_truncate(aw_buf *b, size_t len);
/* Appends s[0..n) as a JSON string, quotes included, with the minimal
 * escapes (RFC 8785: '"', '\\', \b \f \n \r \t, other control characters
 * as \u00xx); bytes from 0x20 up are copied as they are (s is UTF-8). */
aw_err aw_buf_add_jstr(aw_buf *b, const char *s, size_t n);
/* A queue of bytes read from the front: copies up to max bytes of b from
 * *off into dst and moves *off; once all are read b is emptied and *off
 * reset. Returns the bytes copied (0: none waiting). */
size_t aw_buf_drain(aw_buf *b, size_t *off, char *dst, size_t max);
static inline aw_err aw_buf_err(const aw_buf *b)
{
	return b->err;
}
static inline const char *aw_buf_str(const aw_buf *b)
{
	return b->p ? b->p : "";
}
/* The contents as a malloc'd string (never NULL unless out of memory); the
 * buffer is empty afterwards. */
char *aw_buf_take(aw_buf *b);
void aw_buf_free(aw_buf *b);

#endif
