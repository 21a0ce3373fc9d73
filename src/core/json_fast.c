/*
 * json_fast.c - a one-pass JSON reader building jansson values and a
 * one-pass compact writer, for the bodies on every call's path (the LLM and
 * MCP doors' requests, an upstream's payload and answer, audit payloads).
 * jansson's own reader takes every byte through a stream callback and scans
 * each string twice; on a chat request (a 1 KB prompt) it was an eighth of
 * the LLM gateway's CPU per call, and writing the upstream's payload back
 * another twentieth.
 *
 * It accepts only what jansson accepts and builds the same values (the same
 * members in the same order, integers and reals as jansson tells them apart).
 * Whatever it is not sure of - any malformed text, a duplicate member when
 * they are refused, \u0000, a lone surrogate, a number with more than 18
 * digits or out of the double's range, nesting past 256 - it leaves to
 * json_loadb, whose answer (and error text) is then the answer. So the
 * difference from json_loadb is only speed. The writer likewise leaves to
 * json_dumps what it does not write itself (a real's text, invalid UTF-8, a
 * cycle, nesting past 256, other flags). fuzz/fuzz_body.c checks both on
 * arbitrary bytes against jansson.
 */
#include "awooop/json.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/alloc.h"

#define DEPTH_MAX 256

typedef struct {
	const unsigned char *p, *end;
	int dup_refused;
	char *tmp; /* a string's decoded bytes */
	size_t tmp_cap;
} rd;

static void ws(rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\n' || *r->p == '\r' || *r->p == '\t'))
		r->p++;
}

static int hex4(const unsigned char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			return -1;
		v = v << 4 | d;
	}
	*out = v;
	return 0;
}

/* The length of the valid UTF-8 sequence at p (first byte >= 0x80), 0 if it
 * is not one (overlong, a surrogate, past U+10FFFF, cut short). */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0];
	size_t n;
	unsigned v;
	if (c >= 0xC2 && c <= 0xDF) {
		n = 2;
		v = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		n = 3;
		v = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		n = 4;
		v = c & 0x07;
	} else {
		return 0;
	}
	if ((size_t)(end - p) < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		v = v << 6 | (p[i] & 0x3F);
	}
	if ((n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10FFFF)) ||
	    (v >= 0xD800 && v <= 0xDFFF))
		return 0;
	return n;
}

static int tmp_room(rd *r, size_t need)
{
	if (need <= r->tmp_cap)
		return 0;
	size_t cap = r->tmp_cap ? r->tmp_cap : 256;
	while (cap < need)
		cap *= 2;
	char *t = aw_realloc(r->tmp, cap);
	if (!t)
		return -1;
	r->tmp = t;
	r->tmp_cap = cap;
	return 0;
}

/* A string at r->p (after its quote): its decoded bytes in *s (r->tmp or the
 * input itself when it has no escape), *n long. -1: leave it to jansson. */
static int string(rd *r, const char **s, size_t *n)
{
	const unsigned char *start = r->p, *p = r->p;
	while (p < r->end && *p != '"' && *p != '\\') {
		if (*p < 0x20)
			return -1;
		if (*p < 0x80) {
			p++;
			continue;
		}
		size_t k = utf8_len(p, r->end);
		if (!k)
			return -1;
		p += k;
	}
	if (p >= r->end)
		return -1;
	if (*p == '"') { /* no escape: the input's own bytes */
		*s = (const char *)start;
		*n = (size_t)(p - start);
		r->p = p + 1;
		return 0;
	}
	/* escapes: decoded into tmp (never longer than the text) */
	size_t o = (size_t)(p - start);
	if (tmp_room(r, (size_t)(r->end - start) + 1))
		return -1;
	memcpy(r->tmp, start, o);
	while (p < r->end && *p != '"') {
		if (*p < 0x20)
			return -1;
		if (*p >= 0x80) {
			size_t k = utf8_len(p, r->end);
			if (!k)
				return -1;
			memcpy(r->tmp + o, p, k);
			o += k;
			p += k;
			continue;
		}
		if (*p != '\\') {
			r->tmp[o++] = (char)*p++;
			continue;
		}
		if (r->end - p < 2)
			return -1;
		unsigned char e = p[1];
		p += 2;
		char c;
		switch (e) {
		case '"': c = '"'; break;
		case '\\': c = '\\'; break;
		case '/': c = '/'; break;
		case 'b': c = '\b'; break;
		case 'f': c = '\f'; break;
		case 'n': c = '\n'; break;
		case 'r': c = '\r'; break;
		case 't': c = '\t'; break;
		case 'u': c = 0; break;
		default: return -1;
		}
		if (e != 'u') {
			r->tmp[o++] = c;
			continue;
		}
		unsigned v;
		if (r->end - p < 4 || hex4(p, &v) || v == 0)
			return -1;
		p += 4;
		if (v >= 0xDC00 && v <= 0xDFFF)
			return -1;
		if (v >= 0xD800 && v <= 0xDBFF) { /* a pair, or jansson's error */
			unsigned lo;
			if (r->end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) ||
			    lo < 0xDC00 || lo > 0xDFFF)
				return -1;
			p += 6;
			v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
		}
		/* encoded: at most 4 bytes for the 6 or 12 read */
		if (v < 0x80) {
			r->tmp[o++] = (char)v;
		} else if (v < 0x800) {
			r->tmp[o++] = (char)(0xC0 | v >> 6);
			r->tmp[o++] = (char)(0x80 | (v & 0x3F));
		} else if (v < 0x10000) {
			r->tmp[o++] = (char)(0xE0 | v >> 12);
			r->tmp[o++] = (char)(0x80 | (v >> 6 & 0x3F));
			r->tmp[o++] = (char)(0x80 | (v & 0x3F));
		} else {
			r->tmp[o++] = (char)(0xF0 | v >> 18);
			r->tmp[o++] = (char)(0x80 | (v >> 12 & 0x3F));
			r->tmp[o++] = (char)(0x80 | (v >> 6 & 0x3F));
			r->tmp[o++] = (char)(0x80 | (v & 0x3F));
		}
	}
	if (p >= r->end)
		return -1;
	r->p = p + 1;
	*s = r->tmp;
	*n = o;
	return 0;
}

static int digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* jansson's grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
static json_t *number(rd *r)
{
	const unsigned char *s = r->p, *p = r->p;
	int real = 0;
	if (p < r->end && *p == '-')
		p++;
	if (p >= r->end || !digit(*p))
		return NULL;
	if (*p == '0') {
		p++;
		if (p < r->end && digit(*p))
			return NULL;
	} else {
		while (p < r->end && digit(*p))
			p++;
	}
	if (p < r->end && *p == '.') {
		real = 1;
		p++;
		if (p >= r->end || !digit(*p))
			return NULL;
		while (p < r->end && digit(*p))
			p++;
	}
	if (p < r->end && (*p == 'e' || *p == 'E')) {
		real = 1;
		p++;
		if (p < r->end && (*p == '+' || *p == '-'))
			p++;
		if (p >= r->end || !digit(*p))
			return NULL;
		while (p < r->end && digit(*p))
			p++;
	}
	size_t len = (size_t)(p - s);
	if (len > 40)
		return NULL;
	char buf[48];
	memcpy(buf, s, len);
	buf[len] = 0;
	r->p = p;
	if (!real) {
		if (len - (s[0] == '-') > 18) /* jansson checks the overflow */
			return NULL;
		return json_integer((json_int_t)strtoll(buf, NULL, 10));
	}
	errno = 0;
	double d = strtod(buf, NULL);
	if (errno || !isfinite(d)) /* jansson's overflow error, or not ours to say */
		return NULL;
	return json_real(d);
}

static json_t *value(rd *r, int depth);

static json_t *object(rd *r, int depth)
{
	json_t *o = json_object();
	if (!o)
		return NULL;
	ws(r);
	if (r->p < r->end && *r->p == '}') {
		r->p++;
		return o;
	}
	for (;;) {
		ws(r);
		if (r->p >= r->end || *r->p != '"')
			goto bad;
		r->p++;
		const char *k;
		size_t kn;
		if (string(r, &k, &kn))
			goto bad;
		/* jansson's keys are NUL-terminated text: copied before the value
		 * (which may reuse tmp) */
		char kb[128], *key = kn < sizeof kb ? kb : aw_malloc(kn + 1);
		if (!key)
			goto bad;
		memcpy(key, k, kn);
		key[kn] = 0;
		ws(r);
		json_t *v = NULL;
		int ok = r->p < r->end && *r->p == ':';
		if (ok) {
			r->p++;
			ws(r);
			v = value(r, depth);
		}
		if (v && r->dup_refused && json_object_getn(o, key, kn)) {
			json_decref(v);
			v = NULL;
		}
		int set = v ? json_object_setn_new_nocheck(o, key, kn, v) : -1;
		if (key != kb)
			free(key);
		if (set)
			goto bad;
		ws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == '}') {
			r->p++;
			return o;
		}
		goto bad;
	}
bad:
	json_decref(o);
	return NULL;
}

static json_t *array(rd *r, int depth)
{
	json_t *a = json_array();
	if (!a)
		return NULL;
	ws(r);
	if (r->p < r->end && *r->p == ']') {
		r->p++;
		return a;
	}
	for (;;) {
		ws(r);
		json_t *v = value(r, depth);
		if (!v || json_array_append_new(a, v))
			goto bad;
		ws(r);
		if (r->p < r->end && *r->p == ',') {
			r->p++;
			continue;
		}
		if (r->p < r->end && *r->p == ']') {
			r->p++;
			return a;
		}
		goto bad;
	}
bad:
	json_decref(a);
	return NULL;
}

static int word(rd *r, const char *w, size_t n)
{
	if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n))
		return -1;
	r->p += n;
	return 0;
}

static json_t *value(rd *r, int depth)
{
	if (r->p >= r->end)
		return NULL;
	switch (*r->p) {
	case '{':
		if (depth >= DEPTH_MAX)
			return NULL;
		r->p++;
		return object(r, depth + 1);
	case '[':
		if (depth >= DEPTH_MAX)
			return NULL;
		r->p++;
		return array(r, depth + 1);
	case '"': {
		r->p++;
		const char *s;
		size_t n;
		return string(r, &s, &n) ? NULL : json_stringn_nocheck(s, n);
	}
	case 't': return word(r, "true", 4) ? NULL : json_true();
	case 'f': return word(r, "false", 5) ? NULL : json_false();
	case 'n': return word(r, "null", 4) ? NULL : json_null();
	default: return number(r);
	}
}

json_t *aw_json_loadb(const char *buf, size_t len, size_t flags, json_error_t *je)
{
	rd r = {.p = (const unsigned char *)buf,
		.end = (const unsigned char *)buf + len,
		.dup_refused = (flags & JSON_REJECT_DUPLICATES) != 0};
	json_t *v = NULL;
	if (buf && !(flags & ~(size_t)(JSON_REJECT_DUPLICATES | JSON_DECODE_ANY))) {
		ws(&r);
		/* without JSON_DECODE_ANY jansson takes only an object or an array */
		if (r.p < r.end && ((flags & JSON_DECODE_ANY) || *r.p == '{' || *r.p == '['))
			v = value(&r, 0);
		ws(&r);
		if (v && r.p != r.end) {
			json_decref(v);
			v = NULL;
		}
	}
	free(r.tmp);
	return v ? v : json_loadb(buf, len, flags, je);
}

/* The writer: jansson's compact text, written in one pass into one buffer. */
typedef struct {
	char *p;
	size_t len, cap;
	int bad; /* out of memory, or a value left to json_dumps */
} wr;

static void room(wr *w, size_t n)
{
	if (w->bad || w->len + n <= w->cap)
		return;
	size_t cap = w->cap ? w->cap : 256;
	while (cap < w->len + n)
		cap *= 2;
	char *p = aw_realloc(w->p, cap);
	if (!p) {
		w->bad = 1;
		return;
	}
	w->p = p;
	w->cap = cap;
}

static void put(wr *w, const char *s, size_t n)
{
	room(w, n);
	if (w->bad)
		return;
	memcpy(w->p + w->len, s, n);
	w->len += n;
}

/* A string as jansson writes it without JSON_ENSURE_ASCII or
 * JSON_ESCAPE_SLASH: '"', '\\' and the control characters escaped, UTF-8
 * as it is (invalid UTF-8: jansson refuses it, so json_dumps says). */
static void put_str(wr *w, const char *s, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	room(w, n + 2);
	if (w->bad)
		return;
	w->p[w->len++] = '"';
	while (p < end && !w->bad) {
		const unsigned char *run = p;
		while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\')
			p++;
		put(w, (const char *)run, (size_t)(p - run));
		if (p >= end)
			break;
		if (*p >= 0x80) {
			size_t k = utf8_len(p, end);
			if (!k) {
				w->bad = 1;
				return;
			}
			put(w, (const char *)p, k);
			p += k;
			continue;
		}
		char e[6] = {'\\', 0};
		size_t en = 2;
		switch (*p) {
		case '"': e[1] = '"'; break;
		case '\\': e[1] = '\\'; break;
		case '\b': e[1] = 'b'; break;
		case '\f': e[1] = 'f'; break;
		case '\n': e[1] = 'n'; break;
		case '\r': e[1] = 'r'; break;
		case '\t': e[1] = 't'; break;
		default:
			e[1] = 'u';
			e[2] = '0';
			e[3] = '0';
			e[4] = hex[*p >> 4];
			e[5] = hex[*p & 15];
			en = 6;
		}
		put(w, e, en);
		p++;
	}
	put(w, "\"", 1);
}

static void put_value(wr *w, const json_t *v, int depth)
{
	if (w->bad)
		return;
	switch (json_typeof(v)) {
	case JSON_OBJECT: {
		if (depth >= DEPTH_MAX) { /* deep, or a cycle: json_dumps says */
			w->bad = 1;
			return;
		}
		put(w, "{", 1);
		const char *k;
		size_t kn;
		json_t *x;
		int first = 1;
		json_object_keylen_foreach((json_t *)v, k, kn, x)
		{
			if (!first)
				put(w, ",", 1);
			first = 0;
			put_str(w, k, kn);
			put(w, ":", 1);
			put_value(w, x, depth + 1);
		}
		put(w, "}", 1);
		return;
	}
	case JSON_ARRAY: {
		if (depth >= DEPTH_MAX) {
			w->bad = 1;
			return;
		}
		put(w, "[", 1);
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i)
				put(w, ",", 1);
			put_value(w, json_array_get(v, i), depth + 1);
		}
		put(w, "]", 1);
		return;
	}
	case JSON_STRING: put_str(w, json_string_value(v), json_string_length(v)); return;
	case JSON_INTEGER: {
		char b[32];
		int n = snprintf(b, sizeof b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		put(w, b, (size_t)n);
		return;
	}
	case JSON_REAL: { /* jansson's own form of a double */
		char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		if (!s) {
			w->bad = 1;
			return;
		}
		put(w, s, strlen(s));
		free(s);
		return;
	}
	case JSON_TRUE: put(w, "true", 4); return;
	case JSON_FALSE: put(w, "false", 5); return;
	case JSON_NULL: put(w, "null", 4); return;
	}
}

char *aw_json_dumps(const json_t *v, size_t flags)
{
	if (!v || (flags & ~(size_t)(JSON_COMPACT | JSON_ENCODE_ANY)) != 0 ||
	    !(flags & JSON_COMPACT) ||
	    (!(flags & JSON_ENCODE_ANY) && !json_is_object(v) && !json_is_array(v)))
		return json_dumps(v, flags);
	wr w = {0};
	put_value(&w, v, 0);
	put(&w, "", 1);
	if (!w.bad)
		return w.p;
	free(w.p);
	return json_dumps(v, flags);
}
