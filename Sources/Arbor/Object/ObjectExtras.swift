/// The state of a managed object that few objects have: an object keeps it behind one
/// reference (`ManagedObject.extras`), made when a part is first set. Most fetched objects
/// have none: they are smaller, and their creation and release skip each part.
/// Read and written only on the object's context's queue.
final class ObjectExtras {
    /// Made on the first read registered with Observation (see `ManagedObject+Observation`).
    var observation: ObjectObservation?
    /// Set by a save's validation while it calls `validateValue(_:forKey:)` for an attribute.
    var pendingRuleCheck: PendingRuleCheck?
    /// Transient attributes' values as of the last save (see `ManagedObject.transientValues`).
    var transientValues: [AttributeValue?] = []
    /// Related objects loaded by prefetching (see `ManagedObject.prefetched`).
    var prefetched: [ManagedObject] = []
    /// The row-cache entry the object keeps alive, released in the object's `deinit`.
    var cacheRetention: (cache: RowCache, key: RowKey)?
}

// The parts, each read as nil or empty while the object has no extras, and setting a part to
// nil or empty makes none.
extension ManagedObject {
    /// `extras`, made if there are none yet.
    var madeExtras: ObjectExtras {
        if let extras { return extras }
        let made = ObjectExtras()
        extras = made
        return made
    }
    /// Made on the first read registered with Observation (see `ManagedObject+Observation`).
    var observation: ObjectObservation? {
        get { extras?.observation }
        set { if newValue != nil || extras != nil { madeExtras.observation = newValue } }
    }
    /// Set by a save's validation while it calls `validateValue(_:forKey:)` for an attribute.
    var pendingRuleCheck: PendingRuleCheck? {
        get { extras?.pendingRuleCheck }
        set { if newValue != nil || extras != nil { madeExtras.pendingRuleCheck = newValue } }
    }
    /// Transient attributes' values as of the last save (by `slot - info.transientBase`; a
    /// value not here is the attribute's default). Unsaved values are in `changes`.
    var transientValues: [AttributeValue?] {
        get { extras?.transientValues ?? [] }
        set { if !newValue.isEmpty || extras != nil { madeExtras.transientValues = newValue } }
    }
    /// Keeps `value` as the saved value of the transient attribute at `index` (see `transientValues`).
    func setTransientValue(_ value: AttributeValue, at index: Int) {
        let extras = madeExtras
        if extras.transientValues.count <= index {
            extras.transientValues.append(contentsOf: repeatElement(nil, count: index + 1 - extras.transientValues.count))
        }
        extras.transientValues[index] = value
    }
    /// Related objects loaded by prefetching, kept alive with this object (as Core Data's fired
    /// relationships are) until `refresh(_:mergeChanges: false)` or `reset()` lets them go.
    var prefetched: [ManagedObject] {
        get { extras?.prefetched ?? [] }
        set { if !newValue.isEmpty || extras != nil { madeExtras.prefetched = newValue } }
    }
    /// Keeps `objects` alive with this one (see `prefetched`).
    func keepPrefetched(_ objects: [ManagedObject]) {
        guard !objects.isEmpty else { return }
        madeExtras.prefetched.append(contentsOf: objects)
    }
    /// The row-cache entry this object keeps alive, released in `deinit`.
    var cacheRetention: (cache: RowCache, key: RowKey)? {
        get { extras?.cacheRetention }
        set { if newValue != nil || extras != nil { madeExtras.cacheRetention = newValue } }
    }
}
