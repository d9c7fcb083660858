import Dispatch
import ArborEngine

/// The text index terms of a batch insert's new rows, made on a second thread while the writer
/// goes on with the next chunk.
///
/// Splitting and folding a name into words costs about as much as writing its row. A batch
/// insert hands each chunk's new texts here (`add`, then `submit`); one job per chunk makes
/// their `PostingChanges` on a serial queue, so results come back in the order submitted. The
/// writer takes them (`takeFinished`) before it applies text changes, and before any change it
/// makes itself to a text index (an upsert's update of a row an earlier chunk inserted): changes
/// to one key then stay in the order they were made, and the last one wins.
final class TextTermWorker {
    private struct Job: Sendable {
        var texts: [(text: String, key: Int64)]
        var kind: IndexDescription.Kind
    }

    private let queue = DispatchQueue(label: "Arbor.TextTermWorker", qos: .userInitiated)
    /// The texts gathered for the chunk under way, per text index.
    private var gathering: [ObjectIdentifier: (index: EntityInfo.Index, texts: [(text: String, key: Int64)])] = [:]
    /// The indexes of each submitted job not taken yet, in submission order.
    private var submitted: [[EntityInfo.Index]] = []
    /// Finished jobs' changes (one per index of the job), in submission order.
    private let finished = Locked<[[PostingChanges]]>([])

    /// Whether jobs are submitted and not taken yet.
    var hasPending: Bool { !submitted.isEmpty || !gathering.isEmpty }

    /// Whether any index `accepts` has texts here not taken yet.
    func hasPending(for accepts: (EntityInfo.Index) -> Bool) -> Bool {
        gathering.values.contains { accepts($0.index) } || submitted.contains { $0.contains(where: accepts) }
    }

    /// Gathers the text of new row `key` for `index`.
    func add(_ text: String, key: Int64, of index: EntityInfo.Index) {
        gathering[ObjectIdentifier(index), default: (index, [])].texts.append((text, key))
    }

    /// Starts making the terms of the texts gathered since the last submission.
    func submit() {
        guard !gathering.isEmpty else { return }
        let entries = Array(gathering.values)
        gathering = [:]
        submitted.append(entries.map(\.index))
        let jobs = entries.map { Job(texts: $0.texts, kind: $0.index.kind) }
        queue.async { [finished] in
            let made = jobs.map { job in
                var changes = PostingChanges()
                for (text, key) in job.texts { changes.add(text, kind: job.kind, key: key) }
                return changes
            }
            finished.withLock { $0.append(made) }
        }
    }

    /// The changes of every submitted job, in submission order, with their indexes; the texts
    /// gathered and not submitted are submitted first. With `waiting`, waits for every job;
    /// without, returns those finished so far.
    func takeFinished(waiting: Bool) -> [(index: EntityInfo.Index, changes: PostingChanges)] {
        if waiting {
            submit()
            queue.sync {}
        }
        let done = finished.withLock { results -> [[PostingChanges]] in
            defer { results.removeAll() }
            return results
        }
        var taken: [(index: EntityInfo.Index, changes: PostingChanges)] = []
        for made in done {
            let indexes = submitted.removeFirst()
            for (index, changes) in zip(indexes, made) { taken.append((index, changes)) }
        }
        return taken
    }
}
