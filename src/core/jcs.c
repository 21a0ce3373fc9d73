/*
 * jcs.c - RFC 8785 canonical JSON (see jcs.h). Numbers: integers whose
 * magnitude is at most 2^53 print as integers; everything else goes through
 * the shortest round-trip double and ECMAScript's formatting rules (fixed
 * notation for exponents -7..20, else d.ddde+N).
 */
#include "awooop/alloc.h"
#include "awooop/jcs.h"

#include "awooop/buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/crypto.h"

/* The canonical form is built in one bounded buffer (no JSON awooop accepts
 * comes near the ceiling; past it the result is an error, never a cut). */
#define JCS_MAX ((size_t)256 << 20)
typedef aw_buf sb;

static void put(sb *b, const char *s, size_t n)
{
	aw_buf_add(b, s, n);
}

static void puts_(sb *b, const char *s)
{
	put(b, s, strlen(s));
}

static void put_string(sb *b, const char *s, size_t n)
{
	aw_buf_add_jstr(b, s, n);
}

/* ECMAScript Number::toString for a finite double. */
static void put_double(sb *b, double d)
{
	if (d == 0) {
		puts_(b, "0");
		return;
	}
	char tmp[64];
	int prec;
	for (prec = 0; prec < 17; prec++) { /* shortest digits that round-trip */
		snprintf(tmp, sizeof tmp, "%.*e", prec, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	/* tmp = [-]D[.DDD]e[+-]XX -> digits and exponent n (value = 0.digits * 10^n) */
	char digits[32];
	size_t nd = 0;
	const char *p = tmp;
	int neg = *p == '-';
	if (neg)
		p++;
	for (; *p && *p != 'e'; p++)
		if (*p >= '0' && *p <= '9')
			digits[nd++] = *p;
	digits[nd] = '\0';
	int e10 = (int)strtol(p + 1, NULL, 10);
	int k = (int)nd, n = e10 + 1;
	char out[64];
	size_t o = 0;
	if (neg)
		out[o++] = '-';
	if (k <= n && n <= 21) {
		memcpy(out + o, digits, (size_t)k);
		o += (size_t)k;
		for (int i = 0; i < n - k; i++)
			out[o++] = '0';
	} else if (0 < n && n <= 21) {
		memcpy(out + o, digits, (size_t)n);
		o += (size_t)n;
		out[o++] = '.';
		memcpy(out + o, digits + n, (size_t)(k - n));
		o += (size_t)(k - n);
	} else if (-6 < n && n <= 0) {
		out[o++] = '0';
		out[o++] = '.';
		for (int i = 0; i < -n; i++)
			out[o++] = '0';
		memcpy(out + o, digits, (size_t)k);
		o += (size_t)k;
	} else {
		out[o++] = digits[0];
		if (k > 1) {
			out[o++] = '.';
			memcpy(out + o, digits + 1, (size_t)(k - 1));
			o += (size_t)(k - 1);
		}
		o += (size_t)snprintf(out + o, sizeof out - o, "e%c%d", n - 1 >= 0 ? '+' : '-',
				      abs(n - 1));
	}
	put(b, out, o);
}

/* Compares two UTF-8 keys by their UTF-16 code units, as RFC 8785 requires. */
static int utf16_cmp(const char *a, const char *b)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;
	for (;;) {
		unsigned ux[2], uy[2];
		int nx = 0, ny = 0;
		const unsigned char **ps[2] = {&x, &y};
		unsigned *us[2] = {ux, uy};
		int *ns[2] = {&nx, &ny};
		for (int w = 0; w < 2; w++) {
			const unsigned char *s = *ps[w];
			unsigned cp;
			int len;
			if (!*s) {
				*ns[w] = 0;
				continue;
			}
			if (*s < 0x80) {
				cp = *s;
				len = 1;
			} else if ((*s & 0xE0) == 0xC0) {
				cp = *s & 0x1F;
				len = 2;
			} else if ((*s & 0xF0) == 0xE0) {
				cp = *s & 0x0F;
				len = 3;
			} else {
				cp = *s & 0x07;
				len = 4;
			}
			for (int i = 1; i < len && s[i]; i++)
				cp = cp << 6 | (s[i] & 0x3F);
			*ps[w] = s + len;
			if (cp >= 0x10000) {
				cp -= 0x10000;
				us[w][0] = 0xD800 + (cp >> 10);
				us[w][1] = 0xDC00 + (cp & 0x3FF);
				*ns[w] = 2;
			} else {
				us[w][0] = cp;
				*ns[w] = 1;
			}
		}
		if (!nx || !ny)
			return nx - ny;
		for (int i = 0; i < (nx < ny ? nx : ny); i++)
			if (ux[i] != uy[i])
				return ux[i] < uy[i] ? -1 : 1;
		if (nx != ny)
			return nx < ny ? -1 : 1;
	}
}

static int key_cmp(const void *a, const void *b)
{
	return utf16_cmp(*(const char *const *)a, *(const char *const *)b);
}

static void emit(sb *b, const json_t *v)
{
	char num[32];
	switch (json_typeof(v)) {
	case JSON_NULL: puts_(b, "null"); break;
	case JSON_TRUE: puts_(b, "true"); break;
	case JSON_FALSE: puts_(b, "false"); break;
	case JSON_STRING: put_string(b, json_string_value(v), json_string_length(v)); break;
	case JSON_INTEGER: {
		json_int_t i = json_integer_value(v);
		if (i <= (1LL << 53) && i >= -(1LL << 53)) {
			snprintf(num, sizeof num, "%lld", (long long)i);
			puts_(b, num);
		} else {
			put_double(b, (double)i);
		}
		break;
	}
	case JSON_REAL: put_double(b, json_real_value(v)); break;
	case JSON_ARRAY: {
		put(b, "[", 1);
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i)
				put(b, ",", 1);
			emit(b, json_array_get(v, i));
		}
		put(b, "]", 1);
		break;
	}
	case JSON_OBJECT: {
		size_t n = json_object_size(v), i = 0;
		const char **keys = aw_malloc((n ? n : 1) * sizeof *keys);
		if (!keys) {
			b->err = AW_E_NOMEM;
			return;
		}
		const char *k;
		json_t *x;
		json_object_foreach ((json_t *)v, k, x)
			keys[i++] = k;
		qsort(keys, n, sizeof *keys, key_cmp);
		put(b, "{", 1);
		for (i = 0; i < n; i++) {
			if (i)
				put(b, ",", 1);
			put_string(b, keys[i], strlen(keys[i]));
			put(b, ":", 1);
			emit(b, json_object_get(v, keys[i]));
		}
		put(b, "}", 1);
		free(keys);
		break;
	}
	}
}

char *aw_jcs(const json_t *v)
{
	sb b = AW_BUF_INIT(JCS_MAX);
	emit(&b, v);
	if (aw_buf_err(&b)) {
		aw_buf_free(&b);
		return NULL;
	}
	return aw_buf_take(&b);
}

int aw_jcs_sha256(const json_t *v, char *hex)
{
	char *s = aw_jcs(v);
	if (!s)
		return -1;
	aw_sha256_hex(s, strlen(s), hex);
	free(s);
	return 0;
}
