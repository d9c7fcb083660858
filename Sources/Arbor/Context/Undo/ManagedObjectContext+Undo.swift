extension ManagedObjectContext {
    /// The context's undo manager; nil (the default) records nothing. Setting one starts
    /// recording this context's changes (see `ContextUndoManager`).
    public var undoManager: ContextUndoManager? {
        get { undoRecorder }
        set {
            undoRecorder = newValue
            newValue?.context = self
        }
    }

    /// Undoes the last group of changes (`undoManager?.undo()`).
    public func undo() { undoRecorder?.undo() }

    /// Redoes the last group undone (`undoManager?.redo()`).
    public func redo() { undoRecorder?.redo() }

    /// Called before every edit of `object`: the undo manager records its state.
    @inline(__always)
    func willChange(_ object: ManagedObject) {
        undoRecorder?.willChange(object)
    }
}
