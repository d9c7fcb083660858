import ArborEngineTestSupport

/// libFuzzer entry point: see FuzzBodies.fileOpen. A finding traps so libFuzzer records the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzFileOpen(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do { try FuzzBodies.fileOpen(bytes) } catch { fatalError("fuzz finding: \(error)") }
    return 0
}
