// Transient attributes (`AttributeDescription.isTransient`): their unsaved values live in
// `changes` like every other property's (so undo, Observation, `hasChanges` and rollback treat
// them alike); a save or a child's push keeps them in `transientValues` instead of writing them.
extension ManagedObject {
    /// The saved value of the transient attribute `attribute`: what a save kept, or its default.
    func committedTransientValue(_ attribute: EntityInfo.Attribute) -> AttributeValue {
        let index = attribute.slot - info.transientBase
        if index >= 0, index < transientValues.count, let value = transientValues[index] { return value }
        return attribute.description.defaultValue ?? .null
    }

    /// Keeps the unsaved values of transient attributes as their saved values and takes them out
    /// of `changes`: what a save does with what it does not write.
    func commitTransientChanges() {
        let transients = info.transientAttributes
        guard !transients.isEmpty, !changes.isEmpty else { return }
        for attribute in transients {
            guard case .value(let value)? = changes[attribute.slot] else { continue }
            let index = attribute.slot - info.transientBase
            setTransientValue(value, at: index)
            changes[attribute.slot] = nil
        }
    }

    /// Whether `changes` holds a change a store writes (a column), not only transient ones.
    var hasStoredChanges: Bool {
        guard !changes.isEmpty else { return false }
        if info.transientAttributes.isEmpty { return true }
        return changes.slots.contains { $0 < info.columnCount }
    }
}
