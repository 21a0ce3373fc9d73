/*
 * fuzz_budget.c - budget contract bodies, as an operator could submit them:
 * the contract validator of the `budget` family, and what the budget service
 * reads from an accepted body. Checks: no crash; an accepted body has a
 * period of day or month, a token limit within its range (a number: 1e12 is
 * an integer to the schema and a real to jansson, which the service once
 * read as 0) and an action; the period key of an accepted period is a UTC
 * date or month, or "rolling"; a cost limit fits micro-USD; every price
 * turns the largest token counts into a cost that neither overflows nor goes
 * negative.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "awooop/budget.h"
#include "awooop/contract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static aw_contracts *c;
	aw_error err = {0};
	if (!c && aw_contracts_new(NULL, &c, &err))
		abort();
	json_error_t je;
	json_t *body = json_loadb((const char *)data, size, 0, &je);
	if (!body)
		return 0;
	if (aw_contract_validate(c, "fuzz", "budget", "default", body, &err) == AW_OK) {
		const char *period = json_string_value(json_object_get(body, "period"));
		json_t *limit = json_object_get(body, "token_limit");
		const char *action = json_string_value(json_object_get(body, "action_on_exceed"));
		if (!period ||
		    (strcmp(period, "day") && strcmp(period, "month") &&
		     strcmp(period, "rolling")) ||
		    !json_is_number(limit) || json_number_value(limit) < 0 ||
		    json_number_value(limit) > 1e12 || !action)
			abort();
		char key[16];
		aw_budget_period_key(period, key);
		if (strlen(key) != (!strcmp(period, "day") ? 10u : 7u))
			abort();
		json_t *cl = json_object_get(body, "cost_limit_usd");
		if (cl && !(json_number_value(cl) >= 0 && json_number_value(cl) * 1e6 < 9e18))
			abort();
		const char *model;
		json_t *p;
		json_object_foreach (json_object_get(body, "prices"), model, p) {
			aw_budget_price pr = {
				json_number_value(json_object_get(p, "input_per_mtok")),
				json_number_value(json_object_get(p, "output_per_mtok")),
			};
			long long big = aw_budget_cost(&pr, 1000000000000LL, 100000000LL);
			if (big < 0 || aw_budget_cost(&pr, 0, 0) != 0)
				abort();
		}
	}
	json_decref(body);
	return 0;
}
