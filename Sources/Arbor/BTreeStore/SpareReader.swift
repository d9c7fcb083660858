import ArborEngine

/// The read transaction a store's last read closed, kept for the next read of the same
/// snapshot (`Database.beginRead(reusing:)`): a fetch, a fault or a relationship's members
/// each read in a transaction of their own, and one kept between them finds its trees and
/// branch pages again instead of asking the catalog records and the page cache.
///
/// Kept by the store, not by `Database`: a transaction holds its database, and a database
/// holding its own spare would never be released (nor its file synced and closed).
///
/// One is kept, taken out while used: reads on other threads at the same time open their own.
/// A transaction is kept only if nothing else still refers to it (no tree or cursor of it
/// outlived its read), and only a closed one: it holds no snapshot while kept, so it never
/// stops a writer from reusing pages. What it keeps in memory is what its reads gathered: up to
/// 64 branch pages and its trees' leaf directories, until a read of a newer snapshot replaces it.
final class SpareReader: Sendable {
    // Unchecked: a kept transaction is closed and referred to by this box alone; it is handed
    // to one reader at a time, under the lock.
    private struct Kept: @unchecked Sendable {
        var transaction: Transaction?
    }

    private let kept = Locked(Kept())

    /// Runs `body` in a read transaction of `database`'s newest snapshot: the kept one when it
    /// still shows that snapshot, else a new one, which is kept afterwards.
    /// - Throws: what `Database.beginRead(reusing:)` and `body` throw.
    func read<R>(_ database: Database, _ body: (Transaction) throws -> R) throws -> R {
        // The spare is taken out of the box and passed on, not held here: a second reference
        // to it would make the transaction look shared when the read ends, and it would not
        // be kept for the next read.
        var transaction = try database.beginRead(reusing: kept.withLock { kept in
            defer { kept.transaction = nil }
            return kept.transaction
        })
        defer {
            transaction.close()
            if isKnownUniquelyReferenced(&transaction) {
                let closed = transaction
                kept.withLock { $0.transaction = closed }
            }
        }
        return try body(transaction)
    }
}

extension BTreeStore {
    /// Runs `body` in a read transaction of the newest snapshot (see `SpareReader`).
    func reading<R>(_ body: (Transaction) throws -> R) throws -> R {
        try spareReader.read(database, body)
    }
}
