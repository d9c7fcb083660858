// swift-tools-version:6.0
// libFuzzer targets for ArborEngine and Arbor. Built and run by `make fuzz` (see ../Makefile):
//   swift build -c release --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address ...
// A separate package so the main package's `swift build` never links a fuzzer entry point.
import PackageDescription

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
        .executableTarget(name: "FuzzFileOpen", dependencies: ["ArborEngineTestSupport"]),
        .executableTarget(name: "FuzzDecode", dependencies: ["ArborEngineTestSupport"]),
        .executableTarget(name: "FuzzOperations", dependencies: ["ArborEngineTestSupport"]),
        .executableTarget(name: "FuzzContext", dependencies: ["ArborTestSupport"]),
        .executableTarget(name: "FuzzPredicate", dependencies: [
            .product(name: "Arbor", package: "Arbor"), "ArborTestSupport",
        ]),
        .executableTarget(name: "FuzzGTFS", dependencies: ["ArborTestSupport"]),
        .executableTarget(name: "FuzzInspect", dependencies: ["ArborTestSupport"]),
        // Writes the seed corpora (real store files, keys, operation sequences); run once, commit the output.
        .executableTarget(name: "MakeSeeds", dependencies: [
            .product(name: "ArborEngine", package: "Arbor"), "ArborEngineTestSupport",
            .product(name: "Arbor", package: "Arbor"), .product(name: "ArborTransit", package: "Arbor"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
