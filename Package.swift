// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Arbor",
    products: [
        .library(name: "ArborEngine", targets: ["ArborEngine"]),
        // Reference models, operation decoders and the fault-injecting file, shared by the
        // tests and the fuzz targets (as swift-collections shares `_CollectionsTestSupport`).
        .library(name: "ArborEngineTestSupport", targets: ["ArborEngineTestSupport"]),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4", path: "Sources/CLZ4", pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]),
        .target(name: "ArborEngine", dependencies: ["CLZ4"]),
        .target(
            name: "ArborEngineTestSupport", dependencies: ["ArborEngine"],
            path: "Tests/ArborEngineTestSupport"),
        .testTarget(
            name: "ArborEngineTests", dependencies: ["ArborEngine", "ArborEngineTestSupport"],
            resources: [.copy("Regressions")]),
    ],
    swiftLanguageModes: [.v6]
)
