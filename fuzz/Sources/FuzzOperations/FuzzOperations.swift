import ArborEngineTestSupport

/// libFuzzer entry point: see FuzzBodies.operations. A finding traps so libFuzzer records the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOperations(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do { try FuzzBodies.operations(bytes) } catch { fatalError("fuzz finding: \(error)") }
    return 0
}
