/*
 * alloc.c - the project's allocation door (alloc.h): the C library's
 * allocator behind an optional failure hook.
 */
#include "awooop/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int (*fail_hook)(size_t n);

void aw_alloc_fail_hook(int (*fail)(size_t n))
{
	fail_hook = fail;
}

static int fails(size_t n)
{
	if (fail_hook && fail_hook(n)) {
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *aw_malloc(size_t n)
{
	return fails(n) ? NULL : malloc(n);
}

void *aw_calloc(size_t n, size_t size)
{
	return fails(n * size) ? NULL : calloc(n, size);
}

void *aw_realloc(void *p, size_t n)
{
	return fails(n) ? NULL : realloc(p, n);
}

char *aw_strdup(const char *s)
{
	return fails(strlen(s) + 1) ? NULL : strdup(s);
}

char *aw_strndup(const char *s, size_t n)
{
	return fails(strnlen(s, n) + 1) ? NULL : strndup(s, n);
}
