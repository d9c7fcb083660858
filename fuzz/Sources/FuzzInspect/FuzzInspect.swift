import FuzzerDriver
import ArborTestSupport

/// libFuzzer entry point: arbitrary bytes as a store file, read as `arbor info`, `pages`,
/// `check`, `schema`, `dump` and `query --properties` read it (see ToolFuzzBodies.inspect).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzInspect(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do { try ToolFuzzBodies.inspect(bytes) } catch { fatalError("fuzz finding: \(error)") }
    return 0
}

// The program's entry: libFuzzer's driver on this target (see fuzz/Package.swift).
arbor_fuzz_main(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    guard let data else { return 0 }
    return fuzzInspect(data, size)
}
