#ifndef ARBOR_FUZZER_DRIVER_H
#define ARBOR_FUZZER_DRIVER_H
#include <stddef.h>
#include <stdint.h>

/// Runs libFuzzer on `test` with the program's arguments and exits with its status: a fuzz
/// target's `main`. libFuzzer's own `main` is not linked into the build as a whole, because
/// the flags that instrument the build also reach the @Entity macro plugin, an executable.
__attribute__((noreturn))
void arbor_fuzz_main(int argc, char **argv, int (*test)(const uint8_t *data, size_t size));

#endif
