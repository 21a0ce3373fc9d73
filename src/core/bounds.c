/*
 * bounds.c - per-project bounds (bounds.h): "N" or "N,project=M,...".
 */
#include "awooop/bounds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/ident.h"

static int number(const char *s, size_t n, long lo, long hi, long *out)
{
	if (!n || n > 12)
		return -1;
	long v = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	if (v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

aw_err aw_bounds_parse(const char *spec, long def_value, long lo, long hi, const char *what,
		       aw_bounds *out, aw_error *err)
{
	memset(out, 0, sizeof *out);
	out->def = def_value;
	if (!spec || !*spec)
		return AW_OK;
	int first = 1;
	for (const char *p = spec;;) {
		size_t n = strcspn(p, ",");
		const char *eq = memchr(p, '=', n);
		if (first && !eq) {
			if (number(p, n, lo, hi, &out->def))
				goto bad;
		} else {
			size_t pn = eq ? (size_t)(eq - p) : 0;
			char project[AW_PROJECT_MAX + 1];
			if (!eq || !pn || pn > AW_PROJECT_MAX || out->n >= AW_BOUNDS_MAX)
				goto bad;
			memcpy(project, p, pn);
			project[pn] = 0;
			if (!aw_ident_project_ok(project) ||
			    number(eq + 1, n - pn - 1, lo, hi, &out->o[out->n].v))
				goto bad;
			memcpy(out->o[out->n].project, project, pn + 1);
			out->n++;
		}
		first = 0;
		if (!p[n])
			return AW_OK;
		p += n + 1;
	}
bad:
	return aw_fail(err, AW_E_CONFIG, "%s must be N or N,PROJECT=N,... with each N in %ld..%ld",
		       what, lo, hi);
}

long aw_bounds_of(const aw_bounds *b, const char *project)
{
	for (int i = 0; i < b->n; i++)
		if (!strcmp(b->o[i].project, project))
			return b->o[i].v;
	return b->def;
}
