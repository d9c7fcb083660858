// swift-tools-version:6.0
// arbor-bench: ArborEngine (and later Arbor) against SQLite through GRDB, on the same data in one run.
// A separate package so that only the benchmarks depend on GRDB. Run: swift run -c release arbor-bench engine
import PackageDescription

let package = Package(
    name: "ArborBenchmarks",
    dependencies: [
        .package(name: "Arbor", path: ".."),
        .package(url: "https://github.com/groue/GRDB.swift", exact: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
    ],
    targets: [
        .executableTarget(
            name: "arbor-bench",
            dependencies: [
                .product(name: "ArborEngine", package: "Arbor"),
                .product(name: "Arbor", package: "Arbor"),
                .product(name: "ArborTransit", package: "Arbor"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
