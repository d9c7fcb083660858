// swift-tools-version:6.0
// libFuzzer targets for ArborEngine and Arbor, built and run by `make fuzz` (see ../Makefile).
// A separate package so the main package's `swift build` never links a fuzzer entry point.
import CompilerPluginSupport
import PackageDescription

// The library's modules are compiled here again from the same sources (symbolic links to
// ../Sources/…), so that the instrumentation is a setting of those targets alone. Passed with
// -Xswiftc, it reached every module, swift-syntax and the @Entity macro plugin included, and an
// optimized, instrumented swift-syntax was most of the fuzz build's time. The package builds in
// the debug configuration (swift-syntax and the plugin as a plain debug build, as `make test`
// builds them), and the instrumented targets ask for optimization themselves: the last -O wins.
// Debug builds also run `Tree.checkInvariants()` after every change FuzzOperations makes.
let instrumented: [SwiftSetting] = [.unsafeFlags([
    "-O", "-sanitize=address",
    "-sanitize-coverage=edge,indirect-calls,trace-cmp,inline-8bit-counters,pc-table",
])]
// libFuzzer's runtime is linked into the fuzz targets only, each of which has a `main` that runs
// libFuzzer's driver (FuzzerDriver); -sanitize=fuzzer would link libFuzzer's own `main`.
let fuzzer: [LinkerSetting] = [.unsafeFlags(["-sanitize=fuzzer,address", "-use-ld=lld"])]
let asan: [LinkerSetting] = [.unsafeFlags(["-sanitize=address", "-use-ld=lld"])]

/// A fuzz target: its entry point, the driver, and the instrumented code it exercises.
func fuzzTarget(_ name: String, _ dependencies: [Target.Dependency]) -> Target {
    .executableTarget(name: name, dependencies: ["FuzzerDriver"] + dependencies,
                      swiftSettings: instrumented, linkerSettings: fuzzer)
}

let package = Package(
    name: "ArborFuzz",
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        .package(url: "https://github.com/swiftlang/swift-syntax", exact: "603.0.1"),
    ],
    targets: [
        // The library, as ../Package.swift declares it (the same names, sources and dependencies).
        .systemLibrary(name: "CLZ4", pkgConfig: "liblz4", providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]),
        .target(name: "CPageKernels"),
        .target(name: "ArborEngine", dependencies: ["CLZ4", "CPageKernels"], swiftSettings: instrumented),
        .target(name: "ArborMacroExpansions", dependencies: [
            .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            .product(name: "SwiftDiagnostics", package: "swift-syntax"),
        ]),
        .macro(name: "ArborMacros", dependencies: [
            "ArborMacroExpansions", .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
        ]),
        .target(name: "Arbor", dependencies: ["ArborEngine", "ArborMacros", .product(name: "Logging", package: "swift-log")],
                swiftSettings: instrumented),
        .target(name: "ArborTransit", dependencies: ["Arbor"], swiftSettings: instrumented),
        // The main package's test support (symbolic links to ../Tests/…): it is not a product of
        // the library, so a user's build never sees its fixture types.
        .target(name: "ArborEngineTestSupport", dependencies: ["ArborEngine"], swiftSettings: instrumented),
        .target(name: "ArborTestSupport", dependencies: ["ArborEngineTestSupport", "Arbor", "ArborEngine", "ArborTransit"],
                swiftSettings: instrumented),
        .target(name: "FuzzerDriver"),
        fuzzTarget("FuzzFileOpen", ["ArborEngineTestSupport"]),
        fuzzTarget("FuzzDecode", ["ArborEngineTestSupport"]),
        fuzzTarget("FuzzOperations", ["ArborEngineTestSupport"]),
        fuzzTarget("FuzzContext", ["ArborTestSupport"]),
        fuzzTarget("FuzzPredicate", ["Arbor", "ArborTestSupport"]),
        fuzzTarget("FuzzGTFS", ["ArborTestSupport"]),
        fuzzTarget("FuzzInspect", ["ArborTestSupport"]),
        // Writes the seed corpora (real store files, keys, operation sequences); run once, commit the output.
        .executableTarget(name: "MakeSeeds", dependencies: ["ArborEngine", "ArborEngineTestSupport", "Arbor", "ArborTransit"],
                          swiftSettings: instrumented, linkerSettings: asan),
    ],
    swiftLanguageModes: [.v6]
)
