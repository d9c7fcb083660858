import ArborTestSupport

/// libFuzzer entry point: arbitrary bytes as a GTFS file (see ToolFuzzBodies.gtfs).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzGTFS(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do { try ToolFuzzBodies.gtfs(bytes) } catch { fatalError("fuzz finding: \(error)") }
    return 0
}
