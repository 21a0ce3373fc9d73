/*
 * list.c - the OTEL_* key=value lists (otel.h: aw_otel_parse_list), as
 * OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES are written: pairs
 * separated by commas, blanks around them ignored, values percent-encoded.
 * Keys are tokens (RFC 9110); a decoded value holds no control character,
 * so a header line can never be split; a refusal names the entry and its
 * key, never its value (it may be a credential). Fuzzed (fuzz_otel_list).
 */
#include <stdio.h>
#include <string.h>

#include "awooop/crypto.h"
#include "otel_internal.h"

static int token_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

char *otel_trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	return s;
}

aw_err aw_otel_parse_list(const char *list, const char *what,
			  int (*each)(void *ud, const char *key, const char *value), void *ud,
			  aw_error *err)
{
	char buf[8193];
	size_t len = strlen(list);
	if (len >= sizeof buf)
		return aw_fail(err, AW_E_CONFIG, "%s: longer than %zu bytes", what, sizeof buf - 1);
	memcpy(buf, list, len + 1);
	int idx = 0;
	for (char *p = buf, *next; p; p = next, idx++) {
		next = strchr(p, ',');
		if (next)
			*next++ = '\0';
		char *item = otel_trim(p);
		if (!item[0])
			continue; /* an empty entry (a trailing comma) */
		char *eq = strchr(item, '=');
		if (!eq)
			return aw_fail(err, AW_E_CONFIG, "%s: entry %d has no '='", what, idx + 1);
		*eq = '\0';
		char *key = otel_trim(item), *val = otel_trim(eq + 1);
		if (!key[0])
			return aw_fail(err, AW_E_CONFIG, "%s: entry %d has no key", what, idx + 1);
		for (char *k = key; *k; k++)
			if (!token_char((unsigned char)*k))
				return aw_fail(
					err, AW_E_CONFIG,
					"%s: entry %d: the key holds a character a key may not",
					what, idx + 1);
		char *o = val; /* percent-decoded in place */
		for (char *v = val; *v; v++) {
			unsigned char c = (unsigned char)*v;
			if (c == '%') {
				int hi = aw_hex_digit(v[1]), lo = hi < 0 ? -1 : aw_hex_digit(v[2]);
				if (hi < 0 || lo < 0)
					return aw_fail(err, AW_E_CONFIG,
						       "%s: entry %d (%s): a broken %%-escape",
						       what, idx + 1, key);
				c = (unsigned char)(hi << 4 | lo);
				v += 2;
			}
			if (c < 0x20 || c == 0x7f)
				return aw_fail(
					err, AW_E_CONFIG,
					"%s: entry %d (%s): a control character in the value", what,
					idx + 1, key);
			*o++ = (char)c;
		}
		*o = '\0';
		if (each(ud, key, val))
			return aw_fail(err, AW_E_CONFIG, "%s: entry %d (%s) is refused", what,
				       idx + 1, key);
	}
	return AW_OK;
}
