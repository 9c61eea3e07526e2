#ifndef OFFER_SIGNER_C_FUZZER_DRIVER_H
#define OFFER_SIGNER_C_FUZZER_DRIVER_H

#include <stddef.h>
#include <stdint.h>

// libFuzzer's entry point for programs with their own main (compiler-rt FuzzerDriver.cpp): parses libFuzzer's flags
// from argv, runs the corpus and the fuzzing loop with `callback`, and returns the exit code.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
