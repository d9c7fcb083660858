import ArborEngineTestSupport
@testable import ArborEngine
import Testing

/// The page cache against a model of what was inserted last: random inserts, removals, lookups
/// and clears, with pages of two sizes under a small capacity.
@Suite("Page cache: CLOCK eviction over an open-addressed table")
struct PageCacheTests {
    static func page(_ id: PageID, size: Int) -> Page {
        let image = [UInt8](repeating: UInt8(truncatingIfNeeded: id), count: size)
        return image.withUnsafeBytes { Page.copy(id: id, image: $0) }
    }

    @Test("never returns a stale or removed page, and stays within its capacity", arguments: 0..<6)
    func matchesTheModel(seed: UInt64) {
        var random = SplitMix64(seed: 0xCAC4E &+ seed)
        // Small and larger capacities: the table then runs at every load up to half full.
        let capacity = (seed < 3 ? 10 : 60) * 4096
        let cache = PageCache(capacityBytes: capacity)
        var latest: [PageID: Page] = [:]
        let ids = PageID(0)..<PageID(seed % 2 == 0 ? 40 : 400)
        for step in 0..<12_000 {
            let id = PageID(random.next() % UInt64(ids.count))
            switch random.next() % 10 {
            case 0..<4:
                let page = Self.page(id, size: random.next() % 3 == 0 ? 8192 : 4096)
                cache.insert(page)
                latest[id] = page
            case 4:
                cache.remove(id)
                latest[id] = nil
            case 5 where random.next() % 50 == 0:
                cache.removeAll()
                latest = [:]
            default:
                if let found = cache.page(id) { #expect(found === latest[id], "step \(step): page \(id)") }
            }
            if step % 97 == 0 {
                var pages = 0, bytes = 0
                for id in ids {
                    guard let found = cache.page(id) else { continue }
                    #expect(found === latest[id], "step \(step): page \(id)")
                    pages += 1
                    bytes += found.size
                }
                let statistics = cache.statistics
                #expect(statistics.pages == pages && statistics.bytes == bytes && bytes <= capacity, "step \(step)")
            }
        }
    }

    @Test("a page read again and again survives a stream of others (second chance)")
    func referencedPagesStay() {
        let cache = PageCache(capacityBytes: 8 * 4096)
        let hot = Self.page(1, size: 4096)
        cache.insert(hot)
        for id in PageID(2)..<PageID(500) {
            #expect(cache.page(1) === hot, "after \(id - 2) others")
            cache.insert(Self.page(id, size: 4096))
        }
        #expect(cache.statistics.pages == 8)
    }

    /// The sweep that makes room clears the bit of every page read since it last passed and
    /// comes round to the slot freed last, where a page inserted before eviction would sit.
    @Test("a page just inserted is there, even when every other page was read since the last sweep")
    func insertedPageStays() {
        let cache = PageCache(capacityBytes: 8 * 4096)
        for id in PageID(2)..<PageID(200) {
            for cached in PageID(max(2, Int(id) - 8))..<id { _ = cache.page(cached) }
            let page = Self.page(id, size: 4096)
            cache.insert(page)
            #expect(cache.page(id) === page, "page \(id)")
        }
        #expect(cache.statistics.pages == 8)
    }
}
