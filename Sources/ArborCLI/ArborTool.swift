import Arbor
import ArborEngine
import ArgumentParser

/// `arbor`: look into, check and compact Arbor store files — the `sqlite3_analyzer`,
/// `PRAGMA integrity_check` and `VACUUM INTO` of Arbor.
@main
struct ArborTool: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "arbor",
        abstract: "Inspect, query, check, compact and import Arbor store files.",
        discussion: """
            Exit codes: 0 success; 1 the integrity check found problems; 2 the file could not be \
            opened or read (missing, truncated, not an Arbor file, corrupt); 3 the GTFS feed has a bad \
            row (file and line named); 64 invalid arguments (an unknown entity, a malformed predicate).
            Every command takes --json for machine-readable output.
            """,
        subcommands: [InfoCommand.self, PagesCommand.self, PageCommand.self, TreeCommand.self, CheckCommand.self,
                      SchemaCommand.self, DumpCommand.self, QueryCommand.self, CompactCommand.self, ImportCommand.self,
                      DemoCommand.self])
}

/// The arguments every inspection command shares.
struct StoreOptions: ParsableArguments {
    @Argument(help: "The store file.") var file: String
    @Flag(help: "Print JSON instead of text.") var json = false

    /// Opens the store read-only, turning any failure into one line on standard error and exit 2.
    func open() throws -> Database {
        var options = Database.Options()
        options.readOnly = true
        options.create = false
        do {
            return try Database.open(path: file, options: options)
        } catch {
            throw fail(error)
        }
    }

    /// Opens the store, builds a report and prints it as JSON or text; any failure becomes one
    /// line on standard error and exit 2.
    func present<Report: Encodable>(_ build: (Database) throws -> Report, render: (Report) -> String) throws {
        let db = try open()
        do {
            let report = try build(db)
            print(json ? try jsonText(report) : render(report))
        } catch {
            throw fail(error)
        }
    }

    /// Reports `error` as `arbor: FILE: message` and returns the exit code for it.
    func fail(_ error: Error) -> ExitCode {
        if let code = error as? ExitCode { return code }
        let message: String
        switch error {
        case ArborError.notAnArborFile: message = "not an Arbor store file"
        case let error as ArborError: message = error.description
        // Store errors name the file themselves.
        case StoreError.engine(let inner): message = inner.description
        case let error as StoreError:
            printError("arbor: \(error.description)")
            return ExitCode(2)
        default: message = "\(error)"
        }
        printError("arbor: \(file): \(message)")
        return ExitCode(2)
    }
}

/// Reports a usage problem found after parsing (an unknown entity, a malformed predicate) as
/// one line on standard error; exit 64.
func usageError(_ message: String) -> ExitCode {
    printError("arbor: \(message)")
    return ExitCode(64)
}
