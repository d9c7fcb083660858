extension Array {
    /// Sorts the elements by `areInIncreasingOrder` and keeps one of each run that orders
    /// neither way (equal by that order, which for strings compared by bytes is byte equality,
    /// not `String`'s canonical equivalence).
    /// - Complexity: O(n log n).
    mutating func sortUnique(by areInIncreasingOrder: (Element, Element) -> Bool) {
        sort(by: areInIncreasingOrder)
        var kept = 0
        for position in indices where kept == 0 || areInIncreasingOrder(self[kept - 1], self[position]) {
            swapAt(kept, position)
            kept += 1
        }
        removeLast(count - kept)
    }
}
