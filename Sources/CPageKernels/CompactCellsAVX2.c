// The common-form check of a compact leaf's cells (Page.commonCompactCells), eight cells a
// step: the offsets loaded and widened at once, the first four bytes of the eight cells
// gathered, and each rule of the Swift loop applied to all lanes. Compiled for AVX2 per
// function, called only when arbor_cpu_has_avx2() says the CPU can.
#include "CPageKernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2")))
size_t arbor_compact_cells_avx2(const uint8_t *page, size_t size, size_t slotsStart, size_t slotsEnd, size_t count) {
    // Every value below fits a signed 32-bit lane: offsets and ends stay under 2^17.
    if (size < 4 || size > 65536 || slotsEnd > size || slotsStart + 2 * count > slotsEnd) return 0;
    const __m256i afterSlots = _mm256_set1_epi32((int)slotsEnd - 1);  // offset > slotsEnd - 1
    const __m256i readable = _mm256_set1_epi32((int)size - 3);        // offset + 4 <= size
    const __m256i pastEnd = _mm256_set1_epi32((int)size + 1);         // end <= size
    const __m256i zero = _mm256_setzero_si256(), two = _mm256_set1_epi32(2);
    const __m256i keyBits = _mm256_set1_epi32(0x7F), continues = _mm256_set1_epi32(0x0180);
    const __m256i byte = _mm256_set1_epi32(0xFF), high = _mm256_set1_epi32(0x80), sixBits = _mm256_set1_epi32(0x3F);
    size_t index = 0;
    for (; index + 8 <= count; index += 8) {
        __m256i offsets = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(page + slotsStart + 2 * index)));
        __m256i inside = _mm256_and_si256(_mm256_cmpgt_epi32(offsets, afterSlots), _mm256_cmpgt_epi32(readable, offsets));
        // A lane outside reads the page's first bytes instead; it fails through `inside`.
        __m256i words = _mm256_i32gather_epi32((const int *)page, _mm256_and_si256(offsets, inside), 1);
        // Byte 0 the key length, byte 1 the value header, byte 2 the header's second byte
        // when byte 1's high bit says it continues (a row's form; an index entry's has one).
        __m256i keyLength = _mm256_and_si256(words, keyBits);
        __m256i twoByteHeader = _mm256_cmpgt_epi32(zero, _mm256_slli_epi32(words, 16));
        __m256i second = _mm256_and_si256(_mm256_srli_epi32(words, 16), byte);
        // Refused: a key length of two bytes, an overflow value (the header's low bit), a
        // header of more than two bytes, an empty key.
        __m256i refused = _mm256_or_si256(_mm256_and_si256(words, continues),
                                          _mm256_and_si256(_mm256_and_si256(second, high), twoByteHeader));
        __m256i valueLength = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(words, 9), sixBits),
                                              _mm256_and_si256(_mm256_slli_epi32(second, 6), twoByteHeader));
        // The cell's end: offset, the key length's byte, the header's one or two bytes, key, value.
        __m256i end = _mm256_sub_epi32(_mm256_add_epi32(_mm256_add_epi32(offsets, two), _mm256_add_epi32(keyLength, valueLength)),
                                       twoByteHeader);
        __m256i good = _mm256_and_si256(_mm256_and_si256(inside, _mm256_cmpgt_epi32(pastEnd, end)),
                                        _mm256_andnot_si256(_mm256_cmpeq_epi32(keyLength, zero), _mm256_cmpeq_epi32(refused, zero)));
        if (_mm256_movemask_epi8(good) != -1) break;
    }
    return index;
}

#else

size_t arbor_compact_cells_avx2(const uint8_t *page, size_t size, size_t slotsStart, size_t slotsEnd, size_t count) {
    (void)page, (void)size, (void)slotsStart, (void)slotsEnd, (void)count;
    return 0;
}

#endif
