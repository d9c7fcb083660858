// swift-tools-version:6.0
// libFuzzer targets for ArborEngine and Arbor. Built and run by `make fuzz` (see ../Makefile):
//   swift build -c release -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=... ...
// A separate package so the main package's `swift build` never links a fuzzer entry point.
import PackageDescription

// libFuzzer's runtime is linked into the fuzz targets only, each of which has a `main` that runs
// libFuzzer's driver (FuzzerDriver). The Makefile's instrumentation flags reach every module,
// the @Entity macro plugin too, an executable that must keep its own `main`, so SwiftPM's
// --sanitize=fuzzer (which links libFuzzer's `main` into every executable) cannot be used.
let fuzzer: [LinkerSetting] = [.unsafeFlags(["-sanitize=fuzzer"])]

let package = Package(
    name: "ArborFuzz",
    dependencies: [.package(name: "Arbor", path: "..")],
    targets: [
        // The main package's test support, compiled here too (symbolic links to ../Tests/…):
        // it is not a product of the library, so a user's build never sees its fixture types.
        .target(name: "ArborEngineTestSupport", dependencies: [.product(name: "ArborEngine", package: "Arbor")]),
        .target(name: "ArborTestSupport", dependencies: [
            "ArborEngineTestSupport", .product(name: "Arbor", package: "Arbor"), .product(name: "ArborEngine", package: "Arbor"),
            .product(name: "ArborTransit", package: "Arbor"),
        ]),
        .target(name: "FuzzerDriver"),
        .executableTarget(name: "FuzzFileOpen", dependencies: ["FuzzerDriver", "ArborEngineTestSupport"], linkerSettings: fuzzer),
        .executableTarget(name: "FuzzDecode", dependencies: ["FuzzerDriver", "ArborEngineTestSupport"], linkerSettings: fuzzer),
        .executableTarget(name: "FuzzOperations", dependencies: ["FuzzerDriver", "ArborEngineTestSupport"], linkerSettings: fuzzer),
        .executableTarget(name: "FuzzContext", dependencies: ["FuzzerDriver", "ArborTestSupport"], linkerSettings: fuzzer),
        .executableTarget(name: "FuzzPredicate", dependencies: [
            "FuzzerDriver", .product(name: "Arbor", package: "Arbor"), "ArborTestSupport",
        ], linkerSettings: fuzzer),
        .executableTarget(name: "FuzzGTFS", dependencies: ["FuzzerDriver", "ArborTestSupport"], linkerSettings: fuzzer),
        .executableTarget(name: "FuzzInspect", dependencies: ["FuzzerDriver", "ArborTestSupport"], linkerSettings: fuzzer),
        // Writes the seed corpora (real store files, keys, operation sequences); run once, commit the output.
        .executableTarget(name: "MakeSeeds", dependencies: [
            .product(name: "ArborEngine", package: "Arbor"), "ArborEngineTestSupport",
            .product(name: "Arbor", package: "Arbor"), .product(name: "ArborTransit", package: "Arbor"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
