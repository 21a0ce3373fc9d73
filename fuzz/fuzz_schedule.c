/*
 * fuzz_schedule.c - the schedule request decoder (POST
 * /v1/projects/{p}/schedules bodies) on arbitrary bytes: strict JSON, the
 * name, the cron expression, the zone (read from the zone database), the
 * catch-up policy and the run template. A refusal carries a stable code; an
 * accepted request names a zone that loads and an expression that ticks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/clock.h"
#include "awooop/cron.h"
#include "awooop/schedule.h"
#include "awooop/tz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	aw_schedule_request req;
	aw_error err = {0};
	aw_err e = aw_schedule_request_decode((const char *)data, size, &req, &err);
	if (e) {
		if (e == AW_OK || e >= AW_ERR__COUNT || !err.msg[0])
			abort();
		return 0;
	}
	aw_cron c;
	aw_tz *tz = NULL;
	int64_t t;
	if (aw_cron_parse(req.cron, &c, NULL) || aw_tz_load(req.timezone, &tz, NULL) ||
	    aw_cron_next(&c, tz, aw_clock_wall_ms(), &t) || !req.run ||
	    (strcmp(req.catch_up, "skip") && strcmp(req.catch_up, "once")))
		abort();
	aw_tz_free(tz);
	aw_schedule_request_free(&req);
	return 0;
}
