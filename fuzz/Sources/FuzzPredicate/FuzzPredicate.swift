import FuzzerDriver
import Arbor
import ArborTestSupport
import Foundation

/// libFuzzer entry point: the input is a predicate format string. Parsing must end in a
/// predicate or an `ObjectPredicateError` (never a crash); a parsed predicate must print and
/// re-parse to itself, and evaluate on a small object graph without crashing.
let harness: FuzzPredicateHarness? = try? FuzzPredicateHarness()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPredicate(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let format = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let harness else { fatalError("the fuzz harness could not build its object graph") }
    do {
        try harness.run(format)
    } catch {
        fatalError("fuzz finding: \(error)")
    }
    return 0
}

// The program's entry: libFuzzer's driver on this target (see fuzz/Package.swift).
arbor_fuzz_main(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    guard let data else { return 0 }
    return fuzzPredicate(data, size)
}
