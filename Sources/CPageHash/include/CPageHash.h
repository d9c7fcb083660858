// XXH3-64's long-input accumulation with AVX2, for the page checksum (see XXH3.swift).
#ifndef CPAGEHASH_H
#define CPAGEHASH_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU runs AVX2 instructions and the OS saves their registers (x86-64); 0 otherwise.
int arbor_page_hash_has_avx2(void);

/// XXH3-64's accumulation of `length` bytes (more than 240) at `input` into the eight lanes of
/// `accumulators`, with the 192-byte `secret`: every stripe, a scramble after each block, the
/// last stripes and the final stripe, as XXH3.hashLong's portable loop does. Callers check
/// arbor_page_hash_has_avx2() first; elsewhere this does nothing.
void arbor_page_hash_accumulate_avx2(uint64_t accumulators[8], const uint8_t *input, size_t length, const uint8_t *secret);

#endif
