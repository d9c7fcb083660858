import FuzzerDriver
import ArborEngineTestSupport

/// libFuzzer entry point: see FuzzBodies.operations. A finding traps so libFuzzer records the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOperations(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do { try FuzzBodies.operations(bytes) } catch { fatalError("fuzz finding: \(error)") }
    return 0
}

// The program's entry: libFuzzer's driver on this target (see fuzz/Package.swift).
arbor_fuzz_main(CommandLine.argc, CommandLine.unsafeArgv) { data, size in
    guard let data else { return 0 }
    return fuzzOperations(data, size)
}
