/*
 * alloc.h - the one door every allocation of the project goes through.
 *
 * aw_malloc, aw_calloc, aw_realloc, aw_strdup and aw_strndup allocate from
 * the C library (free() frees what they return) after asking the failure
 * hook, if one is set, whether this allocation fails: the allocation-failure
 * test sets it, with jansson's allocator, so that an injected failure reaches
 * the project's own allocations as well as JSON's. The style check refuses
 * a bare malloc/calloc/realloc/strdup/strndup in src/ outside alloc.c.
 */
#ifndef AWOOOP_ALLOC_H
#define AWOOOP_ALLOC_H

#include <stddef.h>

void *aw_malloc(size_t n);
void *aw_calloc(size_t n, size_t size);
void *aw_realloc(void *p, size_t n);
char *aw_strdup(const char *s);
char *aw_strndup(const char *s, size_t n);

/* Set (or with NULL clear) the hook: it returns nonzero to make an
 * allocation of n bytes fail (NULL, errno ENOMEM). For tests; not
 * thread-safe against allocations in flight: set it while single-threaded. */
void aw_alloc_fail_hook(int (*fail)(size_t n));

#endif
