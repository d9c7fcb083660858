import FuzzerDriver
import ArborTestSupport

/// libFuzzer entry point: random context operations (insert, relate, reorder, delete, save,
/// rollback, refresh, reset) decoded from the input, checked against the reference object graph
/// after every step and against a reopened store after every save. A divergence traps so
/// libFuzzer records the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzContext(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    var source = ByteSource(bytes: Array(UnsafeBufferPointer(start: data, count: size)))
    do {
        let runner = try GraphDifferential()
        try runner.run(&source, steps: 256)
    } catch {
        fatalError("fuzz finding: \(error)")
    }
    return 0
}

// The program's entry: libFuzzer's driver on this target (see fuzz/Package.swift).
arbor_fuzz_main(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    guard let data else { return 0 }
    return fuzzContext(data, size)
}
