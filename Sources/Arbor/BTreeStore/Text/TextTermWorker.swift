import Dispatch
import ArborEngine

/// The text index terms of a batch insert's new rows, made on a second thread while the writer
/// goes on reading and writing rows.
///
/// Splitting and folding a name into words costs about as much as writing its row. The writer
/// hands each new row's text here (`add`); every `jobSize` texts become a job on a serial queue,
/// which adds their terms to one `PostingChanges` per index, kept on that side. The writer takes
/// those (`takeAll`, which waits for the jobs) before it applies text changes, and before any
/// change it makes itself to a text index (an upsert's update of a row inserted earlier in the
/// request): the changes to one key then stay in the order they were made, the last one winning.
final class TextTermWorker {
    /// Texts per job: small enough that an import of a few thousand rows overlaps too, large
    /// enough that the queue's hand-over is a small part of a job.
    static let jobSize = 1_024

    private struct Job: Sendable {
        var kinds: [IndexDescription.Kind]
        var texts: [[(text: String, key: Int64)]]
    }

    /// What the jobs made: per index (by position in `indexes`), the changes since the last take.
    private struct Made: Sendable {
        var changes: [PostingChanges] = []
        var count = 0
        var byteCount = 0
    }

    private let queue = DispatchQueue(label: "Arbor.TextTermWorker", qos: .userInitiated)
    private let made = Locked(Made())
    /// The text indexes met so far, in order: a job's texts and the changes made are by position.
    private var indexes: [EntityInfo.Index] = []
    /// Texts gathered for the next job, per index.
    private var gathering: [[(text: String, key: Int64)]] = []
    private var gatheredCount = 0
    /// Texts were added since the last `takeAll`.
    private(set) var hasPending = false

    /// Whether texts of an index `accepts` were added since the last `takeAll`.
    func hasPending(for accepts: (EntityInfo.Index) -> Bool) -> Bool {
        hasPending && indexes.contains(where: accepts)
    }

    /// Changes the jobs have made and not handed over yet, and their bytes, roughly (for the
    /// writer's budget of changes held: see `SaveWriter.indexChangesAreDue`).
    var madeSize: (count: Int, bytes: Int) { made.withLock { ($0.count, $0.byteCount) } }

    /// Gathers the text of new row `key` for `index`.
    func add(_ text: String, key: Int64, of index: EntityInfo.Index) {
        let position: Int
        if let known = indexes.firstIndex(where: { $0 === index }) {
            position = known
        } else {
            position = indexes.count
            indexes.append(index)
            gathering.append([])
        }
        gathering[position].append((text, key))
        gatheredCount += 1
        hasPending = true
        if gatheredCount >= Self.jobSize { submit() }
    }

    /// Starts a job for the texts gathered.
    private func submit() {
        guard gatheredCount > 0 else { return }
        let job = Job(kinds: indexes.map(\.kind), texts: gathering)
        gathering = Array(repeating: [], count: indexes.count)
        gatheredCount = 0
        queue.async { [made] in
            // Jobs run one at a time and the writer takes only after waiting for them: the
            // changes are taken out of the lock while terms are added, with no copy.
            var changes = made.withLock { made -> [PostingChanges] in
                defer { made.changes = [] }
                return made.changes
            }
            while changes.count < job.kinds.count { changes.append(PostingChanges()) }
            for (position, texts) in job.texts.enumerated() {
                for (text, key) in texts { changes[position].add(text, kind: job.kinds[position], key: key) }
            }
            made.withLock {
                $0.count = changes.reduce(0) { $0 + $1.count }
                $0.byteCount = changes.reduce(0) { $0 + $1.byteCount }
                $0.changes = changes
            }
        }
    }

    /// Every change made for the texts added since the last take, per index: waits for the jobs
    /// under way and makes the terms of the texts gathered for none.
    func takeAll() -> [(index: EntityInfo.Index, changes: PostingChanges)] {
        submit()
        queue.sync {}
        hasPending = false
        let changes = made.withLock { made -> [PostingChanges] in
            defer { made = Made() }
            return made.changes
        }
        return zip(indexes, changes).filter { !$0.1.isEmpty }.map { ($0.0, $0.1) }
    }
}
