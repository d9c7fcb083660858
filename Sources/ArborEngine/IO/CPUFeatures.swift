import CPageKernels

/// What this CPU can run, asked once: the page loops of `CPageKernels` need AVX2.
enum CPUFeatures {
    /// Whether AVX2 instructions run here and the OS saves their registers (from glibc's record
    /// of CPUID where it has one, without executing CPUID again).
    static let hasAVX2 = arbor_cpu_has_avx2() != 0
}
