// The declaration in include/CFuzzerDriver.h is all this target provides; the driver itself is in libFuzzer,
// linked by `-sanitize=fuzzer`. SwiftPM needs one source file to build a C target.
#include "CFuzzerDriver.h"
