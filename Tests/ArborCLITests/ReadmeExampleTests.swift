import Foundation
import Testing

/// The README and the DocC articles promise that their Swift examples compile as written: each
/// document's ```swift blocks, read in order as one program (each import once, at the top, and
/// only those the document writes), are type-checked by `swiftc` against the modules this test
/// run was built with. A block that starts with `// Package.swift` is a manifest excerpt and is
/// left out.
@Suite("README and documentation examples")
struct ReadmeExampleTests {
    /// The package's root (this file is Tests/ArborCLITests/ReadmeExampleTests.swift).
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A document's Swift blocks as one program.
    static func program(_ document: String) -> (source: String, blocks: Int) {
        var imports: [String] = [], body: [String] = []
        var inBlock = false, startsBlock = false, skipping = false, blocks = 0
        for line in document.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if !inBlock, line == "```swift" {
                inBlock = true
                startsBlock = true
                skipping = false
            } else if inBlock, line.hasPrefix("```") {
                inBlock = false
            } else if inBlock {
                if startsBlock {
                    startsBlock = false
                    skipping = line == "// Package.swift"
                    if !skipping { blocks += 1 }
                }
                if skipping { continue }
                if line.hasPrefix("import ") {
                    if !imports.contains(line) { imports.append(line) }
                } else {
                    body.append(line)
                }
            }
        }
        return ((imports + body).joined(separator: "\n") + "\n", blocks)
    }

    /// The directory of the built modules (`Arbor.swiftmodule`), beside this test bundle.
    static func modulesDirectory() throws -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("Modules")
            if FileManager.default.fileExists(atPath: candidate.appendingPathComponent("Arbor.swiftmodule").path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "Modules/Arbor.swiftmodule next to \(CommandLine.arguments[0])"])
    }

    /// The `@Entity` macros' compiler plugin the build made, beside the modules directory.
    static func macroPlugin(besides modules: URL) throws -> URL {
        let directory = modules.deletingLastPathComponent()
        for name in ["ArborMacros-tool", "ArborMacros"] {
            let candidate = directory.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "ArborMacros-tool in \(directory.path)"])
    }

    @Test("every Swift block of a document type-checks, in order, as one program",
          arguments: [("README.md", 5), ("Sources/Arbor/Arbor.docc/GettingStarted.md", 4)])
    func examplesCompile(document: String, minimumBlocks: Int) throws {
        let text = try String(contentsOf: Self.root.appendingPathComponent(document), encoding: .utf8)
        let (source, blocks) = Self.program(text)
        #expect(blocks >= minimumBlocks)
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("arbor-readme-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let main = scratch.appendingPathComponent("main.swift")
        try source.write(to: main, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let modules = try Self.modulesDirectory()
        process.arguments = ["swiftc", "-typecheck", "-swift-version", "6", "-I", modules.path,
                             "-load-plugin-executable", try Self.macroPlugin(besides: modules).path + "#ArborMacros",
                             "-Xcc", "-fmodule-map-file=" + Self.root.appendingPathComponent("Sources/CLZ4/module.modulemap").path,
                             "-Xcc", "-fmodule-map-file=" + Self.root.appendingPathComponent("Sources/CPageKernels/include/module.modulemap").path,
                             main.path]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let diagnostics = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "swiftc:\n\(diagnostics)")
        #expect(!diagnostics.contains("warning:"), "swiftc:\n\(diagnostics)")
    }
}
