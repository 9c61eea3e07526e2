#ifndef OFFER_SIGNER_CSYSTEM_SHIM_H
#define OFFER_SIGNER_CSYSTEM_SHIM_H

// Linux calls that Swift cannot import as they are: prctl(2) is variadic.

#ifdef __linux__
#include <sys/prctl.h>

/// prctl(PR_SET_DUMPABLE, value): 0 makes the process non-dumpable (no core dump, no ptrace or /proc/PID/mem
/// access by other processes of the same user).
static inline int offer_set_dumpable(int value) {
    return prctl(PR_SET_DUMPABLE, value, 0, 0, 0);
}

/// prctl(PR_GET_DUMPABLE): 1 when dumpable, 0 when not, -1 on error.
static inline int offer_get_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
}
#endif

#endif
