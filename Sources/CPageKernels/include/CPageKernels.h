// Loops over a page's bytes in AVX2, for the CPUs that have it: the checksum's accumulation
// (see XXH3.swift) and the check of a compact leaf's cells (see Page+Validation.swift). The
// package builds for baseline x86-64, so each function is compiled for AVX2 alone and the
// Swift side calls it only when arbor_cpu_has_avx2() says it can run. And prefetches, which
// Swift cannot ask for: of a page's bytes (Page+SearchPrefixes.swift) and of an identity map's
// entry (IdentityMap.swift).
#ifndef CPAGEKERNELS_H
#define CPAGEKERNELS_H

#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU runs AVX2 instructions and the OS saves their registers (x86-64); 0 otherwise.
int arbor_cpu_has_avx2(void);

/// XXH3-64's accumulation of `length` bytes (more than 240) at `input` into the eight lanes of
/// `accumulators`, with the 192-byte `secret`: every stripe, a scramble after each block, the
/// last stripes and the final stripe, as XXH3.hashLong's portable loop does. Elsewhere than
/// x86-64 this does nothing.
void arbor_page_hash_accumulate_avx2(uint64_t accumulators[8], const uint8_t *input, size_t length, const uint8_t *secret);

/// How many leading cells of the compact leaf at `page` (`size` bytes, at most 65,536) pass
/// Page.commonCompactCells's check, counted eight at a time: a multiple of eight, ending before
/// the first group of eight that holds a cell refused, or one starting less than four bytes
/// before the page's end. The caller's loop goes on from there. The `count` 16-bit
/// little-endian slots start at `slotsStart`; the cell area starts at `slotsEnd`. Returns 0
/// elsewhere than x86-64, or when the slots do not fit the page.
size_t arbor_compact_cells_avx2(const uint8_t *page, size_t size, size_t slotsStart, size_t slotsEnd, size_t count);

/// Asks the CPU to bring the `length` bytes at `bytes` into its caches, a line of 64 bytes at
/// a time, without waiting for them: the loads of a search that follows then wait for one
/// memory access, not one for each line they reach in turn.
static inline void arbor_prefetch(const void *bytes, size_t length) {
    const char *start = (const char *)bytes;
    size_t offset = 0;
    // Eight lines a step: the loop's own instructions would otherwise outnumber the prefetches.
    for (; offset + 512 <= length; offset += 512) {
        __builtin_prefetch(start + offset, 0, 3);
        __builtin_prefetch(start + offset + 64, 0, 3);
        __builtin_prefetch(start + offset + 128, 0, 3);
        __builtin_prefetch(start + offset + 192, 0, 3);
        __builtin_prefetch(start + offset + 256, 0, 3);
        __builtin_prefetch(start + offset + 320, 0, 3);
        __builtin_prefetch(start + offset + 384, 0, 3);
        __builtin_prefetch(start + offset + 448, 0, 3);
    }
    for (; offset < length; offset += 64) __builtin_prefetch(start + offset, 0, 3);
}

/// Asks the CPU to bring the `length` bytes at `bytes` (at most a few lines) into its caches
/// for writing, without waiting (an identity map's entry about to be filled).
static inline void arbor_prefetch_for_write(const void *bytes, size_t length) {
    const char *start = (const char *)bytes;
    __builtin_prefetch(start, 1, 3);
    if (length > 0) __builtin_prefetch(start + length - 1, 1, 3);
}

#endif
