// swift-tools-version:6.0
// libFuzzer targets for ArborEngine and Arbor. Built and run by `make fuzz` (see ../Makefile):
//   swift build -c release --sanitize=fuzzer -Xswiftc -sanitize=fuzzer,address ...
// A separate package so the main package's `swift build` never links a fuzzer entry point.
import PackageDescription

let package = Package(
    name: "ArborFuzz",
    dependencies: [.package(name: "Arbor", path: "..")],
    targets: [
        .executableTarget(name: "FuzzFileOpen", dependencies: [.product(name: "ArborEngineTestSupport", package: "Arbor")]),
        .executableTarget(name: "FuzzDecode", dependencies: [.product(name: "ArborEngineTestSupport", package: "Arbor")]),
        .executableTarget(name: "FuzzOperations", dependencies: [.product(name: "ArborEngineTestSupport", package: "Arbor")]),
        .executableTarget(name: "FuzzContext", dependencies: [.product(name: "ArborTestSupport", package: "Arbor")]),
        .executableTarget(name: "FuzzPredicate", dependencies: [
            .product(name: "Arbor", package: "Arbor"), .product(name: "ArborTestSupport", package: "Arbor"),
        ]),
        .executableTarget(name: "FuzzGTFS", dependencies: [.product(name: "ArborTestSupport", package: "Arbor")]),
        .executableTarget(name: "FuzzInspect", dependencies: [.product(name: "ArborTestSupport", package: "Arbor")]),
        // Writes the seed corpora (real store files, keys, operation sequences); run once, commit the output.
        .executableTarget(name: "MakeSeeds", dependencies: [
            .product(name: "ArborEngine", package: "Arbor"), .product(name: "ArborEngineTestSupport", package: "Arbor"),
            .product(name: "Arbor", package: "Arbor"), .product(name: "ArborTransit", package: "Arbor"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
