/*
 * str.c - the whole-or-nothing string copy of str.h. A source that does not
 * fit leaves "" behind, not a prefix that could be read as another name.
 */
#include "awooop/str.h"

#include <string.h>

int aw_str_copy(char *dst, size_t cap, const char *src)
{
	if (!src)
		src = "";
	size_t n = strnlen(src, cap);
	if (n >= cap) {
		if (cap)
			dst[0] = '\0';
		return -1;
	}
	memmove(dst, src, n + 1); /* src may lie inside dst */
	return 0;
}
