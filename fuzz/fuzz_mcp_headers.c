/*
 * fuzz_mcp_headers.c - the 2026-07-28 header checks on arbitrary bytes: the
 * input is "proto\nmethod\nname\nbody". Accepted headers must equal the
 * body's version and method, and the decoded Mcp-Name the body's name; the
 * Base64 sentinel decoder never writes past its buffer nor yields a NUL.
 * The first line is also an Origin, checked against the default (loopback)
 * rule and against the second line as the allow list: an allowed origin is
 * listed, or loopback.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/mcp_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *in = malloc(size + 1);
	if (!in)
		return 0;
	memcpy(in, data, size);
	in[size] = 0;
	char *parts[4] = {in, NULL, NULL, NULL};
	for (int i = 1; i < 4; i++) {
		char *nl = parts[i - 1] ? strchr(parts[i - 1], '\n') : NULL;
		if (!nl)
			break;
		*nl = 0;
		parts[i] = nl + 1;
	}
	if (aw_mcp_origin_allowed(in, NULL) && strncasecmp(in, "http", 4))
		abort();
	if (parts[1] && *parts[1] && aw_mcp_origin_allowed(in, parts[1]) &&
	    !strcasestr(parts[1], in))
		abort();
	char dec[64];
	if (aw_mcp_header_value(in, dec, sizeof dec) == 0 && strlen(dec) >= sizeof dec)
		abort();
	if (parts[3]) {
		aw_mcp_msg m;
		aw_rpc_error re;
		size_t blen = size - (size_t)(parts[3] - in);
		if (aw_mcp_parse(parts[3], blen, &m, &re) == 0 &&
		    aw_mcp_check_headers(&m, parts[0], parts[1], *parts[2] ? parts[2] : NULL,
					 &re) == 0) {
			if (!m.version || strcmp(m.version, parts[0]) || !m.method ||
			    strcmp(m.method, parts[1]))
				abort();
			char name[4096];
			if (m.name && (aw_mcp_header_value(parts[2], name, sizeof name) ||
				       strcmp(name, m.name)))
				abort();
		}
		aw_mcp_msg_clear(&m);
	}
	free(in);
	return 0;
}
