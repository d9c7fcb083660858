@testable import Arbor
import Testing

@Suite("ValueList: the value fetches' unspecialized append")
struct ValueListTests {
    /// Counts the instances alive, so that a leak or a double release shows.
    final class Census { var alive = 0 }
    final class Tracked {
        let value: Int
        let census: Census
        init(_ value: Int, _ census: Census) { self.value = value; self.census = census; census.alive += 1 }
        deinit { census.alive -= 1 }
    }

    /// Appends `count` values through a list made with `capacity`, reserving `reserve` halfway.
    func collect<T>(_ count: Int, capacity: Int, reserve: Int, _ make: (Int) -> T) -> [T] {
        let list = ValueList<T>(capacity: capacity)
        for index in 0..<count {
            if index == count / 2 { list.reserveCapacity(reserve) }
            list.append(make(index))
        }
        #expect(list.count == count)
        let array = list.takeArray()
        #expect(list.count == 0)
        #expect(list.takeArray().isEmpty)
        return array
    }

    @Test("the same values in the same order as an array, for every capacity and reservation")
    func sameAsArray() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<200 {
            let count = Int.random(in: 0...300, using: &generator)
            let capacity = Int.random(in: 0...40, using: &generator)
            let reserve = Int.random(in: 0...400, using: &generator)
            let strings = collect(count, capacity: capacity, reserve: reserve) { "value \($0) " + String(repeating: "x", count: $0 % 40) }
            #expect(strings == (0..<count).map { "value \($0) " + String(repeating: "x", count: $0 % 40) })
            let pairs = collect(count, capacity: capacity, reserve: reserve) { (Int64($0), Double($0) / 3) }
            #expect(pairs.map(\.0) == (0..<count).map(Int64.init))
        }
    }

    @Test("every value is released once: after the array goes, and when the list goes unread")
    func releasesEachValueOnce() {
        let census = Census()
        do {
            let values = collect(1000, capacity: 1, reserve: 0) { Tracked($0, census) }
            #expect(values.map(\.value) == Array(0..<1000))
            #expect(census.alive == 1000)
        }
        #expect(census.alive == 0)
        do {
            let list = ValueList<Tracked>()
            for index in 0..<77 { list.append(Tracked(index, census)) }  // as when a row's decoding throws
            #expect(census.alive == 77)
        }
        #expect(census.alive == 0)
    }
}
