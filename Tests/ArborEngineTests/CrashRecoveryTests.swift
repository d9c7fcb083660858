import ArborEngine
import ArborEngineTestSupport
import Testing

/// Crashes a workload of many transactions at every write and sync point, reconstructs the disk
/// three ways (unsynced writes lost, last write torn, unsynced writes reordered and partly lost),
/// and requires the reopened file to show exactly a committed state and pass the integrity check.
@Suite("Crash recovery at every write and sync point")
struct CrashRecoveryTests {
    typealias State = [String: [[UInt8]: [UInt8]]]

    /// A deterministic workload; returns the committed states in order (index 0 = initial).
    /// `onCommitStart` receives the index of the commit about to run.
    static func runWorkload(_ db: Database, seed: UInt64, transactions: Int,
                            onCommitStart: (Int) -> Void = { _ in }, onCommitted: (Int) -> Void = { _ in }) throws -> [State] {
        var generator = SplitMix64(seed: seed)
        var state: State = [:]
        var states: [State] = [state]
        for number in 1...transactions {
            let tx = try db.beginWrite()
            for _ in 0..<(1 + Int(generator.next() % 40)) {
                let name = ["a", "b"][Int(generator.next() % 2)]
                let tree = try tx.createTreeIfMissing(name)
                let key = TupleKey.encode([.int64(Int64(generator.next() % 300))])
                if generator.next() % 4 == 0 {
                    try tree.delete(key)
                    state[name, default: [:]][key] = nil
                } else {
                    let length = generator.next() % 20 == 0 ? 3000 + Int(generator.next() % 5000) : Int(generator.next() % 150)
                    let value = (0..<length).map { UInt8(truncatingIfNeeded: $0 &+ number) }
                    try tree.put(key, value)
                    state[name, default: [:]][key] = value
                }
            }
            if generator.next() % 7 == 0 {
                tx.abort()
                state = states[states.count - 1]
                continue
            }
            onCommitStart(states.count)
            try tx.commit()
            onCommitted(states.count)
            states.append(state)
        }
        return states
    }

    static func read(_ db: Database) throws -> State {
        try db.view { tx in
            var state: State = [:]
            for name in try tx.treeNames() {
                for (key, value) in try tx.tree(name).entries() { state[name, default: [:]][key] = value }
            }
            return state
        }
    }

    static func normalized(_ state: State) -> State { state.filter { !$0.value.isEmpty } }

    @Test("every crash point, three crash models",
          arguments: [(UInt64(11), Database.Durability.full), (UInt64(12), .full), (UInt64(13), .deferredMetaSync),
                      (UInt64(14), .normal(Database.SyncSchedule(commits: 3, interval: nil))),
                      (UInt64(15), .normal(Database.SyncSchedule(commits: 1000, interval: nil)))])
    func crashAtEveryPoint(seed: UInt64, durability: Database.Durability) throws {
        var options = Database.Options()
        options.durability = durability
        // The initialized empty file is the starting image of every run.
        let initial = SimulatedFile()
        _ = try Database.open(file: initial)
        let startImage = initial.currentBytes

        let reference = SimulatedFile(bytes: startImage)
        let referenceDatabase = try Database.open(file: reference, options: options)
        let states = try Self.runWorkload(referenceDatabase, seed: seed, transactions: 30)
        // Counted while the database is open: closing it adds a final sync in deferred mode.
        let totalPoints = reference.operationCount
        withExtendedLifetime(referenceDatabase) {}
        #expect(states.count > 15)

        var tried = 0
        for crashPoint in 0..<totalPoints {
            let file = SimulatedFile(bytes: startImage, crashAfter: crashPoint)
            var acknowledged = 0
            var inCommit: Int?
            var writesAtCommitStart = 0
            var syncsAtCommitStart = 0
            // The newest state a sync has made durable (a power cut may fall back that far).
            var durableFloor = 0
            do {
                let database = try Database.open(file: file, options: options)
                _ = try Self.runWorkload(
                    database, seed: seed, transactions: 30,
                    onCommitStart: { index in
                        inCommit = index
                        writesAtCommitStart = file.writeCount
                        syncsAtCommitStart = file.syncCount
                    },
                    onCommitted: { index in
                        if file.syncCount > syncsAtCommitStart {
                            // A sync after the meta page write makes this commit durable; one
                            // before it, the previous one.
                            durableFloor = file.writesAtLastSync == file.writeCount ? index : index - 1
                        }
                        acknowledged = index
                        inCommit = nil
                    })
                withExtendedLifetime(database) {}
                Issue.record("crash point \(crashPoint) was never reached")
                continue
            } catch is SimulatedCrash {
            }
            // The new state may survive only if the crash came during its commit, after its meta
            // page was written.
            let newStateAllowed = inCommit != nil && file.writeCount > writesAtCommitStart
            if inCommit != nil, file.syncCount > syncsAtCommitStart { durableFloor = acknowledged }
            // The oldest state a power cut may leave: with deferred meta sync, the commit before
            // the last acknowledged one; with `.normal`, the newest synced one.
            let oldestAllowed = switch durability {
            case .full: acknowledged
            case .deferredMetaSync: max(0, acknowledged - 1)
            case .normal: durableFloor
            }
            // A process crash loses nothing acknowledged in any mode: the OS keeps every write.
            let processCrash = Self.normalized(try Self.read(try Database.open(file: SimulatedFile(bytes: file.currentBytes))))
            #expect(processCrash == Self.normalized(states[acknowledged])
                    || (newStateAllowed && acknowledged + 1 < states.count && processCrash == Self.normalized(states[acknowledged + 1])),
                    "crash point \(crashPoint) (process crash): an acknowledged commit was lost")
            for (modeIndex, mode) in CrashMode.allCases.enumerated() {
                let image = file.crashImage(mode: mode, seed: UInt64(crashPoint * 3 + modeIndex))
                let reopened = try Database.open(file: SimulatedFile(bytes: image))
                let found = Self.normalized(try Self.read(reopened))
                let newest = newStateAllowed ? min(acknowledged + 1, states.count - 1) : acknowledged
                let matches = (oldestAllowed...newest).contains { found == Self.normalized(states[$0]) }
                #expect(matches, "crash point \(crashPoint) (\(mode)): state is not a committed one in \(oldestAllowed)...\(newest)")
                let report = reopened.checkIntegrity()
                #expect(report.isSound, "crash point \(crashPoint) (\(mode)): \(report)")
                // The reopened file must accept new commits.
                try reopened.update { tx in try tx.createTreeIfMissing("after").put([1], [2]) }
                tried += 1
            }
        }
        print("crash recovery seed \(seed) (\(durability)): \(totalPoints) crash points x 3 models = \(tried) reopened images verified")
        #expect(tried >= 200)
    }
}
