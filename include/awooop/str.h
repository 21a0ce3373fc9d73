/*
 * str.h - copying a C string into a fixed-size buffer whole, or not at all.
 *
 * A copy that cuts a too-long source silently turns one identifier into
 * another (a project id into a shorter tenant's prefix, a model name into a
 * different model). So a copy here either fits or fails:
 *
 *   aw_str_copy(dst, cap, src)  the source's length is not known to fit: 0 and
 *                               the whole string, or -1 and "" (never a cut
 *                               prefix); the caller turns -1 into an error.
 *   AW_STR_COPY(dst, src)       the same into an array dst (its size is taken
 *                               by the macro, and a pointer dst is refused at
 *                               compile time).
 *   AW_COPY_ARRAY(dst, src)     array (or string literal) to array, the bound
 *                               proved at compile time: dst is at least as
 *                               large as src, so it cannot fail.
 *   aw_str_show(dst, cap, src)  text for people only (a message, a log
 *                               detail): a longer one is shortened visibly,
 *                               ending "..." at a whole UTF-8 character.
 *                               Never for a name a program reads back.
 *
 * scripts/check-style.sh refuses snprintf(dst, n, "%s", src) copies in src/.
 */
#ifndef AWOOOP_STR_H
#define AWOOOP_STR_H

#include <stddef.h>

/* Copies src (NULL reads as "") with its NUL into dst[0..cap) and returns 0;
 * when strlen(src) >= cap writes "" (cap > 0) and returns -1. */
int aw_str_copy(char *dst, size_t cap, const char *src) __attribute__((warn_unused_result));

/* Copies src (NULL: "") into dst[0..cap) for people to read: whole, or its
 * first bytes up to a whole UTF-8 character and then "..." (cap >= 4). */
void aw_str_show(char *dst, size_t cap, const char *src);

/* 1 when a is an array (or a string literal), 0 for a pointer: an array's
 * type differs from the type of a pointer to its first element. */
#define AW_IS_ARRAY(a) (!__builtin_types_compatible_p(__typeof__(a), __typeof__(&(a)[0])))

#define AW_STR_COPY(dst, src)                                                                      \
	(__extension__({                                                                           \
		_Static_assert(AW_IS_ARRAY(dst), "AW_STR_COPY: dst must be an array (aw_str_copy " \
						 "takes a pointer and its size)");                 \
		aw_str_copy((dst), sizeof(dst), (src));                                            \
	}))

#define AW_COPY_ARRAY(dst, src)                                                                   \
	do {                                                                                      \
		_Static_assert(AW_IS_ARRAY(dst) && AW_IS_ARRAY(src),                              \
			       "AW_COPY_ARRAY: dst and src must be arrays (else AW_STR_COPY)");   \
		_Static_assert(sizeof(dst) >= sizeof(src),                                        \
			       "AW_COPY_ARRAY: src may not fit dst (AW_STR_COPY and handle -1)"); \
		(void)!aw_str_copy((dst), sizeof(dst), (src));                                    \
	} while (0)

#endif
