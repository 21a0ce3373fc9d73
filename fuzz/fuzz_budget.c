/*
 * fuzz_budget.c - budget contract bodies, as an operator could submit them:
 * the contract validator of the `budget` family, and what the budget service
 * reads from an accepted body. Checks: no crash; an accepted body has a
 * period of day or month, a token limit within its range (a number: 1e12 is
 * an integer to the schema and a real to jansson, which the service once
 * read as 0) and an action; the
 * period key of an accepted period is a UTC date or month.
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
		if (!period || (strcmp(period, "day") && strcmp(period, "month")) ||
		    !json_is_number(limit) || json_number_value(limit) < 0 ||
		    json_number_value(limit) > 1e12 || !action)
			abort();
		char key[16];
		aw_budget_period_key(period, key);
		if (strlen(key) != (strcmp(period, "day") ? 7u : 10u))
			abort();
	}
	json_decref(body);
	return 0;
}
