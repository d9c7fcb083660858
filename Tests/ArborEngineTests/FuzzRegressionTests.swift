import ArborEngineTestSupport
import Foundation
import Testing

/// Replays every input under Regressions/<target>/ (crash inputs the fuzzers found, plus the
/// seed corpora) through the same bodies the libFuzzer targets run.
@Suite("Fuzzer regressions and seeds")
struct FuzzRegressionTests {
    static func inputs(_ target: String) -> [URL] {
        var urls: [URL] = []
        for base in [Bundle.module.resourceURL?.appendingPathComponent("Regressions/\(target)"),
                     URL(fileURLWithPath: #filePath).deletingLastPathComponent()
                        .appendingPathComponent("../../fuzz/corpus/\(target)").standardized] {
            guard let base, let names = try? FileManager.default.contentsOfDirectory(atPath: base.path) else { continue }
            urls += names.filter { !$0.hasPrefix(".") && $0 != "README.md" }.sorted().map { base.appendingPathComponent($0) }
        }
        return urls
    }

    @Test("inputs replay without findings", arguments: ["FuzzFileOpen", "FuzzDecode", "FuzzOperations"])
    func replay(target: String) throws {
        let inputs = Self.inputs(target)
        #expect(!inputs.isEmpty, "no inputs for \(target)")
        for url in inputs {
            let bytes = Array(try Data(contentsOf: url))
            switch target {
            case "FuzzFileOpen": try FuzzBodies.fileOpen(bytes)
            case "FuzzDecode": try FuzzBodies.decode(bytes)
            default: try FuzzBodies.operations(bytes)
            }
        }
        print("fuzz regressions \(target): \(inputs.count) inputs replayed")
    }
}
