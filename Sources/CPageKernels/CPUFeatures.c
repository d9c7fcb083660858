// What the CPU can run, asked once by the Swift side before it picks a loop.
#include "CPageKernels.h"

#if defined(__x86_64__)
#include <cpuid.h>

int arbor_cpu_has_avx2(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    // OSXSAVE and AVX: the instructions exist and the OS can enable their state.
    if ((ecx & (1u << 27)) == 0 || (ecx & (1u << 28)) == 0) return 0;
    unsigned int low, high;
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    (void)high;
    if ((low & 6) != 6) return 0;  // the OS saves the SSE and AVX registers
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    return (ebx & (1u << 5)) != 0;  // AVX2
}

#else

int arbor_cpu_has_avx2(void) { return 0; }

#endif
