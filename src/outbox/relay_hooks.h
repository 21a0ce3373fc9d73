/*
 * relay_hooks.h - fault injection for the relay's tests (not a public header):
 * aw_relay_fault_hook is called between publishing an event and marking it
 * delivered; a non-zero return abandons the round there (a crash, as far as
 * the store knows).
 */
#ifndef AW_OUTBOX_HOOKS_H
#define AW_OUTBOX_HOOKS_H

extern int (*aw_relay_fault_hook)(const char *event_id);

#endif
