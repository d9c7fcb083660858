import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing
@testable import Arbor

/// The stored model's bytes, and so every store's model hash, come from `CanonicalModelJSON`
/// unless a model holds a value it leaves to `JSONEncoder`: the two must agree byte for byte.
@Suite("canonical model JSON")
struct CanonicalModelJSONTests {
    @Test("random models: the direct writer gives JSONEncoder's bytes, or leaves the model to it")
    func matchesJSONEncoder() throws {
        var random = SplitMix64(seed: 0xC0DE)
        var written = 0, declined = 0
        for _ in 0..<400 {
            let schema = Self.randomSchema(&random)
            let expected = try ManagedObjectModel.encodedByFoundation(schema)
            if let direct = CanonicalModelJSON.encode(schema) {
                #expect(direct == expected, "\(String(decoding: direct, as: UTF8.self))\n\(String(decoding: expected, as: UTF8.self))")
                written += 1
            } else {
                declined += 1
            }
            #expect(try ManagedObjectModel.canonicalJSON(schema) == expected)
        }
        // Both paths were taken, the direct one mostly.
        #expect(written > 200 && declined > 10)
    }

    @Test("every ASCII and some other characters in names, strings and derivations are escaped as JSONEncoder escapes them")
    func escaping() throws {
        let texts = (0..<128).map { String(UnicodeScalar(UInt8($0))) } + ["é", "😀", "\u{2028}", "a/b\\c\"d", ""]
        for text in texts {
            let schema = ModelSchema(entities: [EntitySchema(name: text, superentity: text, isAbstract: false,
                                                             attributes: [AttributeDescription(text, .string, defaultValue: .string(text), derivedFrom: text)],
                                                             relationships: [], indexes: [], renamingIdentifier: text)],
                                     configurations: [:])
            #expect(CanonicalModelJSON.encode(schema) == (try ManagedObjectModel.encodedByFoundation(schema)), "\(Array(text.utf8))")
        }
    }

    @Test("the transit model's hash is unchanged")
    func knownHash() throws {
        let model = try ManagedObjectModel(entities: Fixtures.transitEntities())
        #expect(CanonicalModelJSON.encode(model.schema) != nil)
        #expect(model.versionHash == ManagedObjectModel.hash(of: model.schema))
        #expect(try ManagedObjectModel.canonicalJSON(model.schema) == ManagedObjectModel.encodedByFoundation(model.schema))
    }

    static func randomSchema(_ random: inout SplitMix64) -> ModelSchema {
        func pick<T>(_ items: [T]) -> T { items[Int(random.next() % UInt64(items.count))] }
        func chance(_ percent: UInt64) -> Bool { random.next() % 100 < percent }
        func name() -> String {
            let pieces = ["a", "Z", "_", "9", "stop", "Time", "é", "/", "\"", "\\", "\n", "\u{1}", " ", "😀"]
            return (0..<(1 + Int(random.next() % 4))).map { _ in pick(pieces) }.joined()
        }
        func value() -> AttributeValue {
            switch random.next() % 11 {
            case 0: return .null
            case 1: return .int(Int64(bitPattern: random.next()) >> Int64(random.next() % 64))
            case 2: return .bool(chance(50))
            case 3: return .string(name())
            case 4: return .data(Data((0..<Int(random.next() % 9)).map { _ in UInt8(truncatingIfNeeded: random.next()) }))
            case 5: return .uuid(UUID())
            case 6: return .decimal(Decimal(Int(random.next() % 100_000)) / Decimal(pick([1, 10, 1000])))
            case 7: return .double(Double(Int(random.next() % 1000)) / 8)
            case 8: return .float(Float(random.next() % 100) / 4)
            case 9: return .date(Date(timeIntervalSince1970: Double(random.next() % 1_000_000)))
            default: return .url(URL(string: "https://example.org/" + String(random.next() % 100)) ?? URL(fileURLWithPath: "/"))
            }
        }
        func attribute() -> AttributeDescription {
            AttributeDescription(name(), pick(AttributeType.allCases), optional: chance(50),
                                 defaultValue: chance(40) ? value() : nil, indexed: chance(30),
                                 renamingIdentifier: chance(20) ? name() : nil, derivedFrom: chance(15) ? name() : nil)
        }
        func relationship() -> RelationshipDescription {
            RelationshipDescription(name: name(), destination: name(), inverse: name(), isToMany: chance(50), isOrdered: chance(30),
                                    deleteRule: pick(DeleteRule.allCases), isOptional: chance(50), minCount: Int(random.next() % 5),
                                    maxCount: chance(30) ? Int(random.next() % 50) : nil, renamingIdentifier: chance(20) ? name() : nil)
        }
        func index() -> IndexDescription {
            IndexDescription(name: chance(50) ? name() : nil, (0..<(1 + Int(random.next() % 3))).map { _ in name() },
                             unique: chance(30), normalized: chance(30), kind: pick(IndexDescription.Kind.allCases))
        }
        let entities = (0..<Int(random.next() % 4)).map { _ in
            EntitySchema(name: name(), superentity: chance(30) ? name() : nil, isAbstract: chance(20),
                         attributes: (0..<Int(random.next() % 4)).map { _ in attribute() },
                         relationships: (0..<Int(random.next() % 3)).map { _ in relationship() },
                         indexes: (0..<Int(random.next() % 3)).map { _ in index() }, renamingIdentifier: chance(20) ? name() : nil)
        }
        var configurations: [String: [String]] = [:]
        for _ in 0..<Int(random.next() % 4) {
            configurations[chance(90) ? pick(["Main", "cache", "Cloud9", "a10", "a9", "B", "_x"]) : name()] = entities.map(\.name)
        }
        return ModelSchema(entities: entities, configurations: configurations)
    }
}
