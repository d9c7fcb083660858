// What the CPU can run, asked once by the Swift side before it picks a loop.
#include "CPageKernels.h"

#if defined(__x86_64__)

#if defined(__GLIBC__) && __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>
#endif

#if defined(CPU_FEATURE_ACTIVE)
// glibc (2.33 and later) keeps what its loader learnt from CPUID at startup, "active" meaning
// that the OS saves the registers too. Asking it costs no CPUID of ours: in a virtual machine
// each CPUID exits to the hypervisor, microseconds apiece, and a store's open pays them.
int arbor_cpu_has_avx2(void) { return CPU_FEATURE_ACTIVE(AVX2) ? 1 : 0; }

#else
#include <cpuid.h>

int arbor_cpu_has_avx2(void) {
    unsigned int eax, ebx, ecx, edx;
    __cpuid(0, eax, ebx, ecx, edx);
    if (eax < 7) return 0;
    __cpuid(1, eax, ebx, ecx, edx);
    // OSXSAVE and AVX: the instructions exist and the OS can enable their state.
    if ((ecx & (1u << 27)) == 0 || (ecx & (1u << 28)) == 0) return 0;
    unsigned int low, high;
    __asm__ volatile("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
    (void)high;
    if ((low & 6) != 6) return 0;  // the OS saves the SSE and AVX registers
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    return (ebx & (1u << 5)) != 0;  // AVX2
}

#endif

#else

int arbor_cpu_has_avx2(void) { return 0; }

#endif
