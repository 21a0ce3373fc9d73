/*
 * provider_hooks.h - test-only control of the LLM gateway (not a public
 * header): move the UTC day the emergency cap counts in, to test the
 * rollover at midnight without waiting for it; count the projects watched.
 */
#ifndef AWOOOP_PROVIDER_HOOKS_H
#define AWOOOP_PROVIDER_HOOKS_H

#include "awooop/llm.h"

void llm_test_shift_days(int days);
/* How many projects the gateway watches (calls in flight, or reservations
 * it may reap). */
int llm_test_watched(aw_llm *g);

#endif
