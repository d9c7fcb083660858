// swift-tools-version:6.0
import CompilerPluginSupport
import PackageDescription

let package = Package(
    name: "Arbor",
    products: [
        .library(name: "ArborEngine", targets: ["ArborEngine"]),
        .library(name: "Arbor", targets: ["Arbor"]),
        // The transit scenario on Arbor's public API: model, GTFS import, a feed generator.
        .library(name: "ArborTransit", targets: ["ArborTransit"]),
        .executable(name: "arbor", targets: ["ArborCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
        // Documentation only (`make docs`): adds the generate-documentation command, no code.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
        // The @Entity macro's implementation (ArborMacros), run by the compiler only.
        .package(url: "https://github.com/swiftlang/swift-syntax", exact: "603.0.1"),
    ],
    // fuzz/Package.swift declares the library's targets again (CLZ4 to ArborTransit, with
    // their dependencies), to instrument them alone: keep the two in step.
    targets: [
        .systemLibrary(
            name: "CLZ4", path: "Sources/CLZ4", pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]),
        // Loops over page bytes for AVX2: the checksum's and the compact-leaf cell check's (C: the
        // package builds for baseline x86-64, and only C can compile one function for AVX2 and
        // call it when the CPU has it).
        .target(name: "CPageKernels"),
        .target(name: "ArborEngine", dependencies: ["CLZ4", "CPageKernels"]),
        // The macros' expansions, a library so that their tests need not build as a host tool
        // (a test target depending on a macro target is built for the host, and then cannot
        // import the `arbor` executable's module).
        .target(name: "ArborMacroExpansions", dependencies: [
            .product(name: "SwiftSyntaxMacros", package: "swift-syntax"),
            .product(name: "SwiftDiagnostics", package: "swift-syntax"),
        ]),
        .macro(name: "ArborMacros", dependencies: [
            "ArborMacroExpansions",
            .product(name: "SwiftCompilerPlugin", package: "swift-syntax"),
        ]),
        .target(name: "Arbor", dependencies: ["ArborEngine", "ArborMacros", "CPageKernels", .product(name: "Logging", package: "swift-log")]),
        .target(name: "ArborTransit", dependencies: ["Arbor"]),
        .executableTarget(
            name: "ArborCLI",
            dependencies: ["ArborEngine", "Arbor", "ArborTransit", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        // Reference models, operation decoders and the fault-injecting file, shared by the tests
        // and (through symbolic links in fuzz/Sources) the fuzz targets. Not products: a user's
        // build never offers their fixture types.
        .target(
            name: "ArborEngineTestSupport", dependencies: ["ArborEngine"],
            path: "Tests/ArborEngineTestSupport"),
        // A store client the process tests run as separate processes (not a product).
        .executableTarget(name: "ArborProcessHarness", dependencies: ["ArborEngine"], path: "Tests/ArborProcessHarness"),
        .testTarget(
            name: "ArborEngineTests", dependencies: ["ArborEngine", "ArborEngineTestSupport", "ArborProcessHarness"],
            resources: [.copy("Regressions"), .copy("Fixtures")]),
        .target(
            name: "ArborTestSupport", dependencies: ["Arbor", "ArborEngine", "ArborEngineTestSupport", "ArborTransit"],
            path: "Tests/ArborTestSupport"),
        .testTarget(name: "ArborTests", dependencies: [
            "Arbor", "ArborEngine", "ArborTestSupport", "ArborEngineTestSupport", .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "ArborMacrosTests", dependencies: [
            "ArborMacroExpansions",
            .product(name: "SwiftSyntaxMacrosGenericTestSupport", package: "swift-syntax"),
            .product(name: "SwiftSyntaxMacroExpansion", package: "swift-syntax"),
        ]),
        .testTarget(name: "ArborTransitTests", dependencies: ["ArborTransit", "Arbor", "ArborTestSupport", "ArborEngineTestSupport"]),
        .testTarget(name: "ArborCLITests", dependencies: ["ArborCLI", "ArborEngine", "Arbor", "ArborTransit", "ArborEngineTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
