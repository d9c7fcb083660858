import Arbor

// Undo in the differential run: the reference keeps the graph before each group (each
// operation is one explicit group), undo goes back to it and redo forward again, across saves.
// Rollback and reset forget every group, as Core Data's do.
extension GraphDifferential {
    func applyWithUndo(_ source: inout ByteSource) throws {
        guard let undoManager = context.undoManager else { return }
        switch source.below(5) {
        case 0:
            guard let previous = undoable?.popLast() else { return }
            context.undo()
            redoable.append(current)
            current = previous
            log.append("undo")
        case 1:
            guard let next = redoable.popLast() else { return }
            context.redo()
            undoable?.append(current)
            current = next
            log.append("redo")
        default:
            let before = current
            undoManager.beginUndoGrouping()
            try applyEdit(&source)
            undoManager.endUndoGrouping()
            // A save, refresh, rollback or reset is no group (and the last two forgot them all).
            if current != before, undoable != nil, !isHistoryless(log.last) {
                undoable?.append(before)
                redoable = []
            }
        }
    }

    /// Whether the operation logged as `entry` records no undo group.
    private func isHistoryless(_ entry: String?) -> Bool {
        guard let entry else { return true }
        return entry == "rollback" || entry == "reset" || entry == "save" || entry.hasPrefix("refresh")
    }

    func forgetHistory() {
        undoable = []
        redoable = []
    }
}
