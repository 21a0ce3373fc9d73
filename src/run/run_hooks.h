/*
 * run_hooks.h - fault injection for the run runtime's tests (not a public
 * header): aw_worker_fault_hook is called after a step executed, before its
 * journal entry is written; non-zero abandons the worker thread's batch there
 * (a crash).
 */
#ifndef AW_RUN_HOOKS_H
#define AW_RUN_HOOKS_H

extern int (*aw_worker_fault_hook)(const char *run_id, int step_no);

#endif
