import Arbor
import ArborEngine
import ArborEngineTestSupport
import ArborTestSupport
import Foundation
import Testing

@Suite("SUBQUERY(…).@count != 0 as a semi-join probe")
struct SemiJoinTests {
    /// Ten stops with 300 stop times each, one minute apart, starting at 06:00.
    static func seed(_ stack: TestStack) throws {
        let context = stack.context()
        try context.performAndWait {
            for number in 0..<10 {
                let stop = makeStop(context, Int64(number))
                for minute in 0..<300 { departure(context, stop, at: 21600 + minute * 60 + number) }
            }
            try context.save()
        }
    }

    /// A stack whose stop times have no index but the automatic foreign-key one, seeded.
    static func foreignKeyOnlyStack(cacheBytes: Int? = nil) throws -> TestStack {
        var entities = Fixtures.transitEntities()
        entities[1].indexes = []
        let stack = try TestStack(model: try ManagedObjectModel(entities: entities), cacheBytes: cacheBytes)
        try seed(stack)
        return stack
    }

    /// A stop time of `stop` arriving and departing `seconds` after 1970.
    static func departure(_ context: ManagedObjectContext, _ stop: Stop, at seconds: Int) {
        let time = StopTime(context: context)
        time.departureTime = Date(timeIntervalSince1970: Double(seconds))
        time.arrivalTime = time.departureTime
        time.stop = stop
    }

    static let format = "SUBQUERY(stopTimes, $x, $x.departureTime >= %@ AND $x.departureTime <= %@).@count != 0"

    func run(_ stack: TestStack, from: Double, to: Double) throws -> (names: [Int64], rowsRead: UInt64) {
        let context = stack.context()
        return try context.performAndWait {
            let request = FetchRequest(entityName: "Stop", predicate: try ObjectPredicate(
                format: Self.format, Date(timeIntervalSince1970: from), Date(timeIntervalSince1970: to)),
                sortDescriptors: [ObjectSortDescriptor("identifier")])
            stack.store.resetStatistics()
            let ids = try context.fetchObjectIDs(request)
            let read = stack.store.statistics.rowsRead
            let identifiers = try ids.compactMap { try (context.existingObject(with: $0) as? Stop)?.identifier }
            return (identifiers, read)
        }
    }

    @Test("with a (stop, departureTime) index each stop costs one probe and no member row")
    func compoundIndex() throws {
        let stack = try TestStack()
        try Self.seed(stack)
        // A 20-minute window around 08:00 matches every stop.
        let all = try run(stack, from: 28800, to: 28800 + 1200)
        #expect(all.names == Array(0..<10))
        // 10 stops; the window is answered exactly by the index keys, so no member row is read.
        #expect(all.rowsRead == 10)
        // A window after the last departure matches none, and reads no member row.
        let none = try run(stack, from: 21600 + 400 * 60, to: 21600 + 420 * 60)
        #expect(none.names.isEmpty)
        #expect(none.rowsRead == 10)
        // A window catching only stops 0…4 (their departures are 0…9 s after the minute).
        let some = try run(stack, from: 21600 + 299 * 60, to: 21600 + 299 * 60 + 4)
        #expect(some.names == [0, 1, 2, 3, 4])
    }

    @Test("with only the foreign-key index the answer is the same, found by reading members")
    func foreignKeyOnly() throws {
        let stack = try Self.foreignKeyOnlyStack()
        let all = try run(stack, from: 28800, to: 28800 + 1200)
        #expect(all.names == Array(0..<10))
        let none = try run(stack, from: 21600 + 400 * 60, to: 21600 + 420 * 60)
        #expect(none.names.isEmpty)
        #expect(none.rowsRead == 10 + 3000)  // every member read: why the compound index helps
    }

    /// A foreign-key entry whose member component is not an integer (a hostile file): the
    /// walk that reaches it (no member meets the window, so every entry is read) reports the
    /// index by name instead of crashing or skipping it, however many members are in memory.
    @Test("a malformed foreign-key entry gives a typed error naming the index", arguments: [4 * 4096, 64 << 20])
    func malformedForeignKeyEntry(cacheBytes: Int) throws {
        let stack = try Self.foreignKeyOnlyStack(cacheBytes: cacheBytes)
        // An entry of the first stop with its last component (the member) made a string; the
        // value is a real entry's, so the entity code is valid and only the member is wrong.
        let database = try Database.open(path: stack.url.path)
        try database.update { tx in
            let foreignKeys = try tx.tree("fk.StopTime.stop")
            let entries = try foreignKeys.entries(limit: 1)
            let first = try #require(entries.first)
            let components = try TupleKey.decode(first.key)
            try foreignKeys.put(TupleKey.encode(Array(components.dropLast()) + [.string("not a key")]), first.value)
        }
        try stack.reopen()
        let error = #expect(throws: StoreError.self) { try run(stack, from: 21600 + 400 * 60, to: 21600 + 420 * 60) }
        #expect(error?.description.contains("fk.StopTime.stop") == true, "\(String(describing: error))")
    }

    /// Members whose rows are in memory are tried first and the others read only when none of
    /// those meets the condition: the answer must not depend on what the page cache holds. A
    /// cache of four pages holds almost none of the members; a large one, all of them.
    @Test("with only the foreign-key index the answer does not depend on the pages in memory", arguments: [4 * 4096, 64 << 20])
    func answerIndependentOfCache(cacheBytes: Int) throws {
        let stack = try Self.foreignKeyOnlyStack(cacheBytes: cacheBytes)
        var random = SplitMix64(seed: UInt64(cacheBytes))
        for _ in 0..<40 {
            // Stop n departs at 06:00 + m minutes + n seconds, m in 0..<300.
            let from = 21600 + Double(random.next() % 320) * 60 - 30 + Double(random.next() % 20)
            let to = from + Double(random.next() % 3) * 10
            let expected = (0..<10).filter { number in
                (0..<300).contains { minute in (from...to).contains(Double(21600 + minute * 60 + number)) }
            }.map(Int64.init)
            #expect(try run(stack, from: from, to: to).names == expected, "window \(from)...\(to)")
        }
    }

    /// Members of a sub-entity have rows the byte filter cannot decide (another entity code):
    /// the whole predicate decides them, whether their rows are in memory (tried after the
    /// members the filter decides) or read from the file.
    @Test("with only the foreign-key index, members of a sub-entity are decided by the whole predicate",
          arguments: [4 * 4096, 64 << 20])
    func subentityMembers(cacheBytes: Int) throws {
        var entities = Fixtures.transitEntities()
        entities[1].indexes = []
        entities.append(EntityDescription("ExpressStopTime", superentity: "StopTime",
                                          attributes: [AttributeDescription("express", .bool, defaultValue: .bool(true))]))
        let stack = try TestStack(model: try ManagedObjectModel(entities: entities), cacheBytes: cacheBytes)
        let context = stack.context()
        try context.performAndWait {
            // Stop 0 departs in the window only with express services, stop 1 only with
            // regular ones, stop 2 never; every stop has 200 regular departures outside it.
            for number in 0..<3 {
                let stop = makeStop(context, Int64(number))
                for minute in 0..<200 { Self.departure(context, stop, at: 21600 + minute * 60) }
                if number == 0 {
                    let express = try context.insertNewObject(forEntityName: "ExpressStopTime")
                    let inWindow = Date(timeIntervalSince1970: 40_000)
                    express.setValue(inWindow, forKey: "departureTime")
                    express.setValue(inWindow, forKey: "arrivalTime")
                    express.setValue(stop, forKey: "stop")
                } else if number == 1 {
                    Self.departure(context, stop, at: 40_000)
                }
            }
            try context.save()
        }
        #expect(try run(stack, from: 39_990, to: 40_010).names == [0, 1])
        #expect(try run(stack, from: 50_000, to: 50_010).names.isEmpty)
    }
}
