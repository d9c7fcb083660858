import CPageKernels

/// What this CPU can run, asked once: the page loops of `CPageKernels` (the checksum's
/// accumulation, the compact-leaf cell check) need AVX2. The package builds for baseline
/// x86-64, so those loops are C compiled for AVX2 alone, called only when this says they can run.
enum CPUFeatures {
    /// Whether AVX2 instructions run here and the OS saves their registers (from glibc's record
    /// of CPUID where it has one, without executing CPUID again).
    static let hasAVX2 = arbor_cpu_has_avx2() != 0
}
