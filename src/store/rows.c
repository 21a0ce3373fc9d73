/*
 * rows.c - the materialised result set shared by both drivers.
 */
#include <stdlib.h>

#include "driver.h"

#include "awooop/alloc.h"

aw_rows *rows_new(int nrows, int ncols, char **cells, int64_t affected)
{
	aw_rows *r = aw_calloc(1, sizeof *r);
	if (!r)
		return NULL;
	r->nrows = nrows;
	r->ncols = ncols;
	r->cells = cells;
	r->affected = affected;
	return r;
}

const char *rows_get(const aw_rows *r, int row, int col)
{
	if (!r || row < 0 || row >= r->nrows || col < 0 || col >= r->ncols)
		return NULL;
	return r->cells[(size_t)row * (size_t)r->ncols + (size_t)col];
}

void rows_free(aw_rows *r)
{
	if (!r)
		return;
	size_t n = (size_t)r->nrows * (size_t)r->ncols;
	for (size_t i = 0; i < n; i++)
		free(r->cells[i]);
	free(r->cells);
	free(r);
}
