// XXH3-64's long-input loop with its eight lanes in two 256-bit vectors. Compiled for AVX2 per
// function (the target attribute), and called only when arbor_cpu_has_avx2() says the
// CPU can: the package builds for baseline x86-64.
#include "CPageKernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

enum { secretSize = 192, stripeLength = 64, stripesPerBlock = (secretSize - stripeLength) / 8 };

// One stripe of 64 bytes: each lane adds its neighbour's input word and the product of the
// low and high halves of its own word xored with the secret.
__attribute__((target("avx2"))) static inline void stripe(__m256i lanes[2], const uint8_t *input, const uint8_t *secret) {
    for (int half = 0; half < 2; half++) {
        __m256i data = _mm256_loadu_si256((const __m256i *)(input + 32 * half));
        __m256i keyed = _mm256_xor_si256(data, _mm256_loadu_si256((const __m256i *)(secret + 32 * half)));
        __m256i product = _mm256_mul_epu32(keyed, _mm256_srli_epi64(keyed, 32));
        __m256i swapped = _mm256_shuffle_epi32(data, _MM_SHUFFLE(1, 0, 3, 2));
        lanes[half] = _mm256_add_epi64(lanes[half], _mm256_add_epi64(swapped, product));
    }
}

// After each block: lane = (lane ^ lane >> 47 ^ secret) * PRIME32_1, the product in two halves.
__attribute__((target("avx2"))) static inline void scramble(__m256i lanes[2], const uint8_t *secret) {
    const __m256i prime = _mm256_set1_epi64x(0x9E3779B1);
    for (int half = 0; half < 2; half++) {
        __m256i value = _mm256_xor_si256(lanes[half], _mm256_srli_epi64(lanes[half], 47));
        value = _mm256_xor_si256(value, _mm256_loadu_si256((const __m256i *)(secret + 32 * half)));
        __m256i low = _mm256_mul_epu32(value, prime);
        __m256i high = _mm256_mul_epu32(_mm256_srli_epi64(value, 32), prime);
        lanes[half] = _mm256_add_epi64(low, _mm256_slli_epi64(high, 32));
    }
}

__attribute__((target("avx2")))
void arbor_page_hash_accumulate_avx2(uint64_t accumulators[8], const uint8_t *input, size_t length, const uint8_t *secret) {
    if (length <= 240) return;
    __m256i lanes[2] = {_mm256_loadu_si256((const __m256i *)accumulators), _mm256_loadu_si256((const __m256i *)(accumulators + 4))};
    const size_t blockLength = (size_t)stripeLength * stripesPerBlock;
    const size_t blocks = (length - 1) / blockLength;
    for (size_t block = 0; block < blocks; block++) {
        for (size_t n = 0; n < stripesPerBlock; n++) stripe(lanes, input + block * blockLength + n * stripeLength, secret + n * 8);
        scramble(lanes, secret + secretSize - stripeLength);
    }
    const size_t lastStripes = ((length - 1) - blockLength * blocks) / stripeLength;
    for (size_t n = 0; n < lastStripes; n++) stripe(lanes, input + blocks * blockLength + n * stripeLength, secret + n * 8);
    stripe(lanes, input + length - stripeLength, secret + secretSize - stripeLength - 7);
    _mm256_storeu_si256((__m256i *)accumulators, lanes[0]);
    _mm256_storeu_si256((__m256i *)(accumulators + 4), lanes[1]);
}

#else

void arbor_page_hash_accumulate_avx2(uint64_t accumulators[8], const uint8_t *input, size_t length, const uint8_t *secret) {
    (void)accumulators, (void)input, (void)length, (void)secret;
}

#endif
