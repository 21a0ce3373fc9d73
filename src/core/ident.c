/*
 * ident.c - identifier grammars (see ident.h). Pure functions; fuzzed through
 * the request decoders.
 */
#include "awooop/ident.h"

#include <string.h>

#include "awooop/ctx.h"

static int lower_or_digit(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

int aw_ident_project_ok(const char *s)
{
	if (!s)
		return 0;
	size_t n = strlen(s);
	if (n < 2 || n > 63 || !lower_or_digit(s[0]))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!lower_or_digit(s[i]) && s[i] != '_' && s[i] != '-')
			return 0;
	return 1;
}

int aw_ident_project_reserved(const char *s)
{
	/* "platform" would share the Redis namespace of the platform resources */
	return s && (strcmp(s, AW_PLATFORM_PROJECT) == 0 || strncmp(s, "__", 2) == 0 ||
		     strcmp(s, "platform") == 0);
}

int aw_ident_name_ok(const char *s)
{
	if (!s)
		return 0;
	size_t n = strlen(s);
	if (n < 1 || n > 63)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		int alnum =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		if (!alnum && (i == 0 || (c != '.' && c != '_' && c != '-')))
			return 0;
	}
	return 1;
}
