import Arbor
import Foundation

// A model with validation rules, validation methods, transient and derived attributes, declared
// with @Entity: stations and their departures.

@Entity("RuledStation")
final class RuledStation: ManagedObject {
    var name: String = ""
    @Attribute(.range(-90...90)) var latitude: Double = 0
    @Attribute(.length(1...8), .pattern("[A-Z0-9]+")) var code: String = "A"
    @Attribute(.minimum(Date(timeIntervalSince1970: 0)), .maximum(Date(timeIntervalSince1970: 4_000_000_000))) var opened: Date?
    @Attribute(.length(...4)) var photo: Data?
    @Attribute(.ephemeral) var isSelected: Bool = false
    @Attribute(.ephemeral) var label: String?
    @Attribute(.derived("departures.@count")) var departureCount: Int = 0
    @Attribute(.derived("departures.@sum.minutes")) var totalMinutes: Int = 0
    @Attribute(.derived("departures.@max.time")) var lastDeparture: Date?
    @Attribute(.derived("canonical:(name)")) var searchName: String?
    @Attribute(.derived("now()")) var modified: Date?
    @Relationship(deleteRule: .cascade) var departures: [RuledDeparture]

    /// What the validation methods were called for, when a test records it (`recording`):
    /// tests of other suites run in parallel and must not write to it.
    static let calls = CallLog()

    override func validateValue(_ value: Any?, forKey key: String) throws {
        Self.calls.note(key: key, of: self)
        try super.validateValue(value, forKey: key)
        if key == "code", let code = value as? String, code.hasPrefix("X9") {
            throw ValidationFailure(self, key: key, "codes starting with X9 are reserved")
        }
    }

    override func validateForInsert() throws {
        Self.calls.note(hook: "insert \(name)", of: self)
        try ValidationError.collect({ try super.validateForInsert() }, { try self.checkNameAndCode() })
    }

    override func validateForUpdate() throws {
        Self.calls.note(hook: "update \(name)", of: self)
        try ValidationError.collect({ try super.validateForUpdate() }, { try self.checkNameAndCode() })
    }

    override func validateForDelete() throws {
        Self.calls.note(hook: "delete \(name)", of: self)
        try super.validateForDelete()
        if name == "keep" { throw ValidationFailure(self, "this station is kept") }
    }

    private func checkNameAndCode() throws {
        if name == code { throw ValidationFailure(self, key: "name", "the name repeats the code") }
    }
}

@Entity("RuledDeparture")
final class RuledDeparture: ManagedObject {
    var time: Date = Date(timeIntervalSince1970: 0)
    var minutes: Int = 0
    var station: RuledStation?
    @Attribute(.derived("station.name")) var stationName: String?
    @Attribute(.derived("uppercase:(station.code)")) var stationCode: String?
}

/// The validation calls made on objects of one context, the one being recorded.
final class CallLog: @unchecked Sendable {
    private let lock = NSLock()
    private var context: ObjectIdentifier?
    private var keys: [String] = []
    private var hooks: [String] = []

    /// Starts recording the calls made on objects of `context`, forgetting earlier ones.
    func record(_ context: ManagedObjectContext) {
        lock.withLock { (self.context, keys, hooks) = (ObjectIdentifier(context), [], []) }
    }

    func note(key: String, of object: ManagedObject) {
        lock.withLock { if isRecorded(object) { keys.append(key) } }
    }

    func note(hook: String, of object: ManagedObject) {
        lock.withLock { if isRecorded(object) { hooks.append(hook) } }
    }

    private func isRecorded(_ object: ManagedObject) -> Bool {
        object.managedObjectContext.map(ObjectIdentifier.init) == context
    }

    var validatedKeys: [String] { lock.withLock { keys } }
    var hookCalls: [String] { lock.withLock { hooks } }
}

enum RuledModel {
    static func make() throws -> ManagedObjectModel {
        try ManagedObjectModel(types: [RuledStation.self, RuledDeparture.self])
    }
}
