/*
 * provider_hooks.h - test-only control of the LLM gateway (not a public
 * header): move the UTC day the emergency cap counts in, to test the
 * rollover at midnight without waiting for it.
 */
#ifndef AWOOOP_PROVIDER_HOOKS_H
#define AWOOOP_PROVIDER_HOOKS_H

void aw_llm_test_shift_days(int days);

#endif
