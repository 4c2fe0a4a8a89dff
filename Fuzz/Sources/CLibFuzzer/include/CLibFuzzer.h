// libFuzzer's driver (compiler-rt, linked by -sanitize=fuzzer). A fuzz target's own main calls it:
// SwiftPM links an executable's `main` to the module's entry point, so libFuzzer's `main` is not used.
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
