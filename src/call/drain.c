/*
 * drain.c - a call's answer bytes as its client reads them (call.h): what
 * the LLM and MCP doors' readers share.
 */
#include "awooop/call.h"

ssize_t aw_call_drain(aw_buf *out, size_t *off, int eof, int *parked, char *buf, size_t max,
		      void (*park)(void *), void *pud)
{
	ssize_t n = (ssize_t)aw_buf_drain(out, off, buf, max);
	if (!n && eof)
		return -1;
	if (!n) {
		*parked = 1;
		park(pud);
	}
	return n;
}
