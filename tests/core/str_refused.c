/*
 * str_refused.c - must NOT compile (test str_copy_checks): AW_COPY_ARRAY
 * refuses a pointer (-DPOINTER) and a source array larger than its
 * destination (-DLARGER) at compile time, with its message.
 */
#include "awooop/str.h"

void refused(const char *p);
void refused(const char *p)
{
	char dst[8];
#ifdef POINTER
	AW_COPY_ARRAY(dst, p); /* a pointer's length is not known here */
#endif
#ifdef LARGER
	char src[9] = "";
	AW_COPY_ARRAY(dst, src); /* 9 > 8: may not fit */
#endif
	(void)p;
	(void)dst;
}
