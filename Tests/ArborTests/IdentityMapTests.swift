@testable import Arbor
import ArborEngineTestSupport
import Foundation
import Testing

/// The identity map's own table against a dictionary: the same object (or none) for every ID
/// after every step of random registrations (some at a slot looked up before), removals,
/// releases (told at once, or noted as a deinitializer notes them), reservations and resets.
@Suite("Identity map: one object per ID, as a dictionary would keep them")
struct IdentityMapTests {
    @Test("random steps over colliding IDs of two entities and two stores agree with a dictionary", arguments: [1, 2, 3] as [UInt64])
    func againstDictionary(seed: UInt64) throws {
        let stack = try TestStack()
        let context = stack.context()
        let model = try #require(context.model)
        let entities = [try #require(model.info(named: "Stop")), try #require(model.info(named: "StopTime"))]
        let stores: [ObjectID.StoreBits?] = [ObjectID.StoreBits(UUID()), ObjectID.StoreBits(UUID()), nil]
        var random = SplitMix64(seed: seed)
        // Small tables keep a list of departures too, as tables larger than the caches do.
        var map = IdentityMap(cachedSlots: seed == 1 ? IdentityMap.cachedSlots : 0)
        // What the map must answer, and the objects the test keeps alive (the map retains none:
        // an object leaves `alive` only after the map was told, as its deinit would tell it).
        var expected: [ObjectID: ManagedObject] = [:]
        var alive: [ManagedObject] = []
        var lookupMismatches = 0
        // Few keys, so that IDs meet again: replacements, re-registrations, probes past emptied entries.
        func randomID() -> ObjectID {
            ObjectID(info: entities[Int.random(in: 0..<2, using: &random)], storeBits: stores[Int.random(in: 0..<3, using: &random)],
                     key: Int64.random(in: 0..<400, using: &random))
        }
        context.performAndWait {
            for step in 0..<6_000 {
                switch Int.random(in: 0..<100, using: &random) {
                case 0..<15:
                    // Looked up first, then registered at the slot the lookup gave, as
                    // `object(with:)` does; sometimes after another registration (a subclass's
                    // initializer may register objects), which makes the slot stale.
                    let id = randomID()
                    let (found, slot) = map.lookup(id)
                    if found !== expected[id] { lookupMismatches += 1 }
                    if Bool.random(using: &random) {
                        let otherID = randomID()
                        let other = ManagedObject(ObjectConstruction(id: otherID, context: context))
                        map.register(other)
                        expected[otherID] = other
                        alive.append(other)
                    }
                    let object = ManagedObject(ObjectConstruction(id: id, context: context))
                    map.register(object, at: slot)
                    expected[id] = object
                    alive.append(object)
                case 15..<45:
                    let id = randomID()
                    let object = ManagedObject(ObjectConstruction(id: id, context: context))
                    map.register(object)
                    expected[id] = object
                    alive.append(object)
                case 45..<55 where !alive.isEmpty:
                    // Registered again (as a save does after changing nothing).
                    let object = alive[Int.random(in: 0..<alive.count, using: &random)]
                    map.register(object)
                    expected[object.objectID] = object
                case 55..<70 where !alive.isEmpty:
                    let object = alive[Int.random(in: 0..<alive.count, using: &random)]
                    map.remove(object)
                    if expected[object.objectID] === object { expected[object.objectID] = nil }
                case 70..<97 where !alive.isEmpty:
                    // Released: told at once, or noted as a deinitializer notes it and settled
                    // by whatever comes next (its address may by then be a newer object's).
                    let object = alive.remove(at: Int.random(in: 0..<alive.count, using: &random))
                    if Bool.random(using: &random) { map.remove(object) } else { map.noteDeparture(object) }
                    if expected[object.objectID] === object { expected[object.objectID] = nil }
                case 97:
                    map.reserveCapacity(forMore: Int.random(in: 0..<500, using: &random))
                case 98 where step % 7 == 0:
                    map.removeAll()
                    expected = [:]
                default:
                    break
                }
                if step % 50 == 0 {
                    #expect(map.checkInvariants())
                    // Every ID of the key space, counted (one expectation per round keeps the test quick).
                    var wrong = 0
                    for entity in entities {
                        for store in stores {
                            for key in 0..<400 as Range<Int64> {
                                let id = ObjectID(info: entity, storeBits: store, key: key)
                                if map[id] !== expected[id] { wrong += 1 }
                            }
                        }
                    }
                    #expect(wrong == 0, "step \(step)")
                    let live = Set(map.liveObjects.map(ObjectIdentifier.init))
                    #expect(live == Set(expected.values.map(ObjectIdentifier.init)))
                }
            }
            #expect(lookupMismatches == 0)
            for object in alive { map.remove(object) }
            #expect(map.liveObjects.isEmpty)
            #expect(map.checkInvariants())
        }
    }

    @Test("an object released after a newer one took its ID, or after a reset and a rebuild, leaves the newer one alone")
    func staleSlots() throws {
        let stack = try TestStack()
        let context = stack.context()
        let info = try #require(context.model?.info(named: "Stop"))
        context.performAndWait {
            var map = IdentityMap()
            let id = ObjectID(info: info, storeBits: nil, key: 7)
            let first = ManagedObject(ObjectConstruction(id: id, context: context))
            map.register(first)
            let second = ManagedObject(ObjectConstruction(id: id, context: context))
            map.register(second)
            map.remove(first)
            #expect(map[id] === second)
            // After a reset the old slot may hold another object once the table is rebuilt.
            map.removeAll()
            var others: [ManagedObject] = []
            for key in 0..<100 as Range<Int64> {
                let object = ManagedObject(ObjectConstruction(id: ObjectID(info: info, storeBits: nil, key: key), context: context))
                map.register(object)
                others.append(object)
            }
            map.remove(second)
            map.remove(first)
            for object in others { #expect(map[object.objectID] === object) }
            #expect(map.checkInvariants())
            for object in others { map.remove(object) }
        }
    }

    @Test("IDs of one entity from two instances of the model are equal: one object for both, whichever registered it")
    func entityOfAnotherModelInstance() throws {
        let stack = try TestStack(), other = try TestStack()
        let context = stack.context()
        let info = try #require(stack.model.info(named: "Stop"))
        let twin = try #require(other.model.info(named: "Stop"))
        #expect(info !== twin)
        context.performAndWait {
            var map = IdentityMap()
            let id = ObjectID(info: info, storeBits: nil, key: 3), twinID = ObjectID(info: twin, storeBits: nil, key: 3)
            #expect(id == twinID)
            let first = ManagedObject(ObjectConstruction(id: id, context: context))
            map.register(first)
            #expect(map[twinID] === first)
            map.remove(first)
            #expect(map[twinID] == nil && map[id] == nil)
            // The emptied entry is taken again, through the other instance's ID.
            let second = ManagedObject(ObjectConstruction(id: twinID, context: context))
            map.register(second)
            #expect(map[id] === second)
            // Registering an equal ID replaces the object: still one per ID.
            let third = ManagedObject(ObjectConstruction(id: id, context: context))
            map.register(third)
            #expect(map[twinID] === third)
            map.remove(second)
            #expect(map[id] === third)
            #expect(map.checkInvariants())
            map.remove(third)
            #expect(map.liveObjects.isEmpty)
        }
    }

    @Test("objects released together leave the map, their entries taken again by the next objects, past the list's bound")
    func departuresPastTheBound() throws {
        let stack = try TestStack()
        let context = stack.context()
        let info = try #require(context.model?.info(named: "Stop"))
        context.performAndWait {
            var map = IdentityMap()
            // A table larger than the caches (which keeps a list), the list past its bound.
            let count = IdentityMap.cachedSlots + 17
            #expect(count > IdentityMap.departuresKept * 2)
            for round in 0..<3 {
                var objects: [ManagedObject] = []
                for key in 0..<Int64(count) {
                    let object = ManagedObject(ObjectConstruction(id: ObjectID(info: info, storeBits: nil, key: key), context: context))
                    map.register(object)
                    objects.append(object)
                }
                #expect(map.liveObjects.count == count, "round \(round)")
                // Half released (the list settles itself at its bound), every other key kept.
                var kept: [ManagedObject] = []
                for (index, object) in objects.enumerated() {
                    if index % 2 == 0 { kept.append(object) } else { map.noteDeparture(object) }
                }
                objects = []
                for key in 0..<Int64(count) {
                    let found = map[ObjectID(info: info, storeBits: nil, key: key)]
                    #expect((found != nil) == (key % 2 == 0), "round \(round), key \(key)")
                }
                #expect(map.checkInvariants())
                for object in kept { map.noteDeparture(object) }
                kept = []
                #expect(map.liveObjects.isEmpty)
            }
        }
    }
}
