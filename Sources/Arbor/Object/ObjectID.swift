import ArborEngine
import Foundation

/// The identity of a managed object: its entity, its store and its primary key.
///
/// Sendable and hashable: pass IDs, never objects, between contexts. An object inserted and not
/// yet saved has a temporary ID (`isTemporaryID`); saving replaces it with a permanent one, after
/// which the URI form (`arbor://<store UUID>/<Entity>/p<key>`) names the row across launches.
public struct ObjectID: Hashable, Sendable, CustomStringConvertible {
    let info: EntityInfo
    /// The store's UUID as two words; nil for a temporary ID. Not a `UUID`: Foundation's is a
    /// resilient type, so copying, comparing or hashing an ID holding one went through its
    /// value witnesses at run time (the copies alone cost about 80 instructions each).
    let storeBits: StoreBits?
    /// The row's primary key (unique within the entity's inheritance hierarchy), or the
    /// temporary serial number.
    public let primaryKey: Int64

    /// A store's UUID as two words (see `storeBits`).
    struct StoreBits: Hashable, Sendable {
        let high: UInt64, low: UInt64

        init(_ uuid: UUID) {
            (high, low) = withUnsafeBytes(of: uuid.uuid) { ($0.loadUnaligned(as: UInt64.self), $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) }
        }

        var uuid: UUID {
            var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &bytes) { buffer in
                buffer.storeBytes(of: high, as: UInt64.self)
                buffer.storeBytes(of: low, toByteOffset: 8, as: UInt64.self)
            }
            return UUID(uuid: bytes)
        }
    }

    init(info: EntityInfo, store: UUID?, key: Int64) {
        self.init(info: info, storeBits: store.map(StoreBits.init), key: key)
    }

    init(info: EntityInfo, storeBits: StoreBits?, key: Int64) {
        self.info = info
        self.storeBits = storeBits
        self.primaryKey = key
    }

    /// The store's UUID; nil for a temporary ID.
    public var storeIdentifier: UUID? { storeBits?.uuid }

    public var isTemporaryID: Bool { storeBits == nil }

    /// The concrete entity's name.
    public var entityName: String { info.name }

    /// `arbor://<store UUID>/<Entity>/p<key>`, or `arbor://temporary/<Entity>/t<serial>`.
    public var uriRepresentation: URL {
        let host = storeIdentifier?.uuidString ?? "temporary"
        let prefix = isTemporaryID ? "t" : "p"
        // Entity names are validated identifiers and the host is a UUID: always a valid URL.
        return URL(string: "arbor://\(host)/\(info.name)/\(prefix)\(primaryKey)") ?? URL(fileURLWithPath: "/")
    }

    public var description: String { uriRepresentation.absoluteString }

    public static func == (a: ObjectID, b: ObjectID) -> Bool {
        a.primaryKey == b.primaryKey && a.storeBits == b.storeBits
            && (a.info === b.info || a.info.name == b.info.name)
    }

    public func hash(into hasher: inout Hasher) {
        // One combine (a round of hashing, not two): the key mixed with its hierarchy's hash.
        hasher.combine(hashBits)
    }

    /// The key mixed with its hierarchy's hash: equal IDs have equal bits.
    var hashBits: UInt64 { UInt64(bitPattern: primaryKey) ^ UInt64(UInt(bitPattern: info.rootHash)) }

    /// What dictionaries and sets hash with (see `mixedHash`): identity maps, row caches and
    /// change sets hash every object's ID several times over its life.
    public func _rawHashValue(seed: Int) -> Int { mixedHash(hashBits, seed: seed) }

    static let temporarySerial = Locked<Int64>(0)

    static func makeTemporary(_ info: EntityInfo) -> ObjectID {
        let serial = temporarySerial.withLock { value -> Int64 in
            value += 1
            return value
        }
        return ObjectID(info: info, store: nil, key: serial)
    }
}
