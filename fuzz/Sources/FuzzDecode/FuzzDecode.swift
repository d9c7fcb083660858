import ArborEngineTestSupport

/// libFuzzer entry point: see FuzzBodies.decode. A finding traps so libFuzzer records the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecode(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do { try FuzzBodies.decode(bytes) } catch { fatalError("fuzz finding: \(error)") }
    return 0
}
