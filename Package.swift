// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "Arbor",
    products: [
        .library(name: "ArborEngine", targets: ["ArborEngine"]),
        .library(name: "Arbor", targets: ["Arbor"]),
        .executable(name: "arbor", targets: ["ArborCLI"]),
        // Reference models, operation decoders and the fault-injecting file, shared by the
        // tests and the fuzz targets (as swift-collections shares `_CollectionsTestSupport`).
        .library(name: "ArborEngineTestSupport", targets: ["ArborEngineTestSupport"]),
        .library(name: "ArborTestSupport", targets: ["ArborTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLZ4", path: "Sources/CLZ4", pkgConfig: "liblz4",
            providers: [.apt(["liblz4-dev"]), .brew(["lz4"])]),
        .target(name: "ArborEngine", dependencies: ["CLZ4"]),
        .target(name: "Arbor", dependencies: ["ArborEngine", .product(name: "Logging", package: "swift-log")]),
        .executableTarget(
            name: "ArborCLI",
            dependencies: ["ArborEngine", .product(name: "ArgumentParser", package: "swift-argument-parser")]),
        .target(
            name: "ArborEngineTestSupport", dependencies: ["ArborEngine"],
            path: "Tests/ArborEngineTestSupport"),
        .testTarget(
            name: "ArborEngineTests", dependencies: ["ArborEngine", "ArborEngineTestSupport"],
            resources: [.copy("Regressions")]),
        .target(
            name: "ArborTestSupport", dependencies: ["Arbor", "ArborEngine", "ArborEngineTestSupport"],
            path: "Tests/ArborTestSupport"),
        .testTarget(name: "ArborTests", dependencies: [
            "Arbor", "ArborEngine", "ArborTestSupport", "ArborEngineTestSupport", .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "ArborCLITests", dependencies: ["ArborCLI", "ArborEngine"]),
    ],
    swiftLanguageModes: [.v6]
)
