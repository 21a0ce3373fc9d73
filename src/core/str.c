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

void aw_str_show(char *dst, size_t cap, const char *src)
{
	if (!cap || aw_str_copy(dst, cap, src) == 0)
		return;
	if (cap < 4)
		return; /* "" */
	size_t end = cap - 4;
	while (end > 0 && ((unsigned char)src[end] & 0xC0) == 0x80)
		end--; /* src[end] starts a character: cut before it */
	memcpy(dst, src, end);
	memcpy(dst + end, "...", 4);
}
