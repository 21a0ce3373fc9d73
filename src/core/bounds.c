/*
 * bounds.c - per-project bounds (bounds.h): "N" or "N,project=M,...".
 */
#include "awooop/bounds.h"

#include <pthread.h>
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

/* ------------------------------------------------------------ slots */

typedef struct slot {
	char project[AW_PROJECT_MAX + 1];
	long held;
	struct slot *next;
} slot;

struct aw_slots {
	pthread_mutex_t mu;
	aw_bounds b;
	slot *list; /* projects holding a slot; gone at zero */
};

aw_slots *aw_slots_new(const aw_bounds *b)
{
	aw_slots *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	s->b = *b;
	return s;
}

void aw_slots_free(aw_slots *s)
{
	if (!s)
		return;
	for (slot *x = s->list, *nx; x; x = nx) {
		nx = x->next;
		free(x);
	}
	pthread_mutex_destroy(&s->mu);
	free(s);
}

int aw_slots_take(aw_slots *s, const char *project, long *held, long *bound)
{
	long b = aw_bounds_of(&s->b, project);
	pthread_mutex_lock(&s->mu);
	slot *x = s->list;
	while (x && strcmp(x->project, project))
		x = x->next;
	int ok = !b || !x || x->held < b;
	if (ok && !x && (x = calloc(1, sizeof *x))) {
		snprintf(x->project, sizeof x->project, "%s", project);
		x->next = s->list;
		s->list = x;
	}
	if (ok && x)
		x->held++;
	*held = x ? x->held : 0;
	*bound = b;
	pthread_mutex_unlock(&s->mu);
	return ok && x; /* out of memory: refused */
}

void aw_slots_give(aw_slots *s, const char *project)
{
	pthread_mutex_lock(&s->mu);
	for (slot **p = &s->list; *p; p = &(*p)->next)
		if (!strcmp((*p)->project, project)) {
			if (--(*p)->held <= 0) {
				slot *gone = *p;
				*p = gone->next;
				free(gone);
			}
			break;
		}
	pthread_mutex_unlock(&s->mu);
}
