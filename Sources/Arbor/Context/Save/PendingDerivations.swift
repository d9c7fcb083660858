extension PersistentStoreCoordinator {
    /// Objects whose derived values are computed per save of the pass below: the context is
    /// reset after each, so memory stays bounded whatever the store's size.
    static let derivationBatchSize = 2_000

    /// Computes the derived attributes a migration added or changed in `store` (Spec/object-store.md
    /// §9, step 7): every object of their entities gets its value through a context, a batch of
    /// objects per save, then the store forgets they were pending. Computing again gives the
    /// same values, so a crash in between only makes the next opening do it again.
    /// - Throws: `ValidationError` for a value that does not fit its attribute; store errors.
    func computePendingDerivations(in store: PersistentStore) throws {
        let pending = try store.storage.pendingDerivations()
        guard !pending.isEmpty else { return }
        let table = managedObjectModel.derivations
        let context = ManagedObjectContext(concurrencyType: .privateQueue, coordinator: self)
        try context.performAndWait {
            for name in pending {
                let parts = name.split(separator: ".").map(String.init)
                guard parts.count == 2, let info = managedObjectModel.info(named: parts[0]), store.holds(info),
                      let derived = table.derived(of: info).first(where: { $0.key == parts[1] && $0.entity === info }) else { continue }
                var ids: [ObjectID] = []
                try store.storage.forEachKey(info, includesSubentities: true) { key, code in
                    if let entity = managedObjectModel.infosByCode[code] { ids.append(ObjectID(info: entity, store: store.identifier, key: key)) }
                }
                for start in stride(from: 0, to: ids.count, by: Self.derivationBatchSize) {
                    let objects = ids[start..<min(start + Self.derivationBatchSize, ids.count)].map { context.object(with: $0) }
                    let failures = DerivedValueUpdater(context: context, table: table).recompute(derived, on: objects)
                    guard failures.isEmpty else { throw ValidationError(failures: failures) }
                    try context.save()
                    context.reset()
                }
            }
        }
        try store.storage.clearPendingDerivations()
    }
}
