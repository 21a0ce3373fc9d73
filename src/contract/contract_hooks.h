/*
 * contract_hooks.h - fault injection for the contract registry's tests (not a public
 * header): aw_contract_fault_hook is called at named points of an activation
 * ("after_pointer"); a non-zero return aborts the activation there.
 */
#ifndef AW_CONTRACT_HOOKS_H
#define AW_CONTRACT_HOOKS_H

extern int (*aw_contract_fault_hook)(const char *point);

#endif
