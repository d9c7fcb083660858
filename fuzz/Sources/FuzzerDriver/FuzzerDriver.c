#include "FuzzerDriver.h"
#include <stdlib.h>

// libFuzzer's entry for programs with a main of their own (libclang_rt.fuzzer).
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*test)(const uint8_t *data, size_t size));

void arbor_fuzz_main(int argc, char **argv, int (*test)(const uint8_t *data, size_t size)) {
    exit(LLVMFuzzerRunDriver(&argc, &argv, test));
}
