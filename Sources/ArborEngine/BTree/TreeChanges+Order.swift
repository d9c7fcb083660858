/// Putting a tree's changes in key order before they are merged into its leaves.
///
/// A batch update of every row of a large table gives millions of index changes in no
/// particular order. A comparison sort of them spends most of its time in comparisons; here
/// they are sorted eight bytes of key at a time by radix (eight counting passes over a word,
/// skipping the passes where all words agree), and only keys equal in their first eight bytes
/// are sorted again, by their next eight. The sort is stable: of several changes to one key,
/// the last one given stays last and wins.
extension TreeChanges {
    /// Positions of the changes to apply, in ascending key order; of several changes to one
    /// key, only the last given.
    /// - Complexity: O(n) when they were given in key order; else O(n · w), w the number of
    ///   eight-byte words needed to tell the keys apart.
    func order() -> [Int] {
        let count = keys.count
        guard count > 1 else { return Array(0..<count) }
        var positions = Array(0..<Int32(count))
        // repeats[i]: the key at sorted place i equals the one before it.
        var repeats = [Bool](repeating: false, count: count)
        if !isInKeyOrder(repeats: &repeats) {
            for index in repeats.indices { repeats[index] = false }
            var words = [UInt64](repeating: 0, count: count)
            var scratchPositions = positions
            var scratchWords = words
            positions.withUnsafeMutableBufferPointer { positions in
                words.withUnsafeMutableBufferPointer { words in
                    scratchPositions.withUnsafeMutableBufferPointer { scratchPositions in
                        scratchWords.withUnsafeMutableBufferPointer { scratchWords in
                            repeats.withUnsafeMutableBufferPointer { repeats in
                                let run = SortRun(positions: positions, words: words, scratchPositions: scratchPositions,
                                                  scratchWords: scratchWords, repeats: repeats)
                                sort(run, 0..<count, depth: 0)
                            }
                        }
                    }
                }
            }
        }
        // The last change to each key wins.
        var result: [Int] = []
        result.reserveCapacity(count)
        for (place, position) in positions.enumerated() {
            if repeats[place] { result[result.count - 1] = Int(position) } else { result.append(Int(position)) }
        }
        return result
    }

    /// Key `a` against key `b`, in byte order.
    func compare(_ a: Int, _ b: Int) -> Int {
        keys.withBytes(a) { left in keys.withBytes(b) { right in compareBytes(left, right) } }
    }

    /// Whether the keys were given in ascending (or equal) order; if so, which equal the one
    /// before them.
    private func isInKeyOrder(repeats: inout [Bool]) -> Bool {
        for index in 1..<keys.count {
            let order = compare(index - 1, index)
            if order > 0 { return false }
            repeats[index] = order == 0
        }
        return true
    }

    /// The positions being sorted, the current word of each, and room for a counting pass.
    private struct SortRun {
        let positions: UnsafeMutableBufferPointer<Int32>
        let words: UnsafeMutableBufferPointer<UInt64>
        let scratchPositions: UnsafeMutableBufferPointer<Int32>
        let scratchWords: UnsafeMutableBufferPointer<UInt64>
        /// Set where a sorted key equals the one before it.
        let repeats: UnsafeMutableBufferPointer<Bool>
    }

    /// Sorts `run.positions[range]` stably by key bytes `depth...`: the keys in `range` are
    /// equal before `depth`, and their positions ascend.
    private func sort(_ run: SortRun, _ range: Range<Int>, depth: Int) {
        var longest = 0
        for index in range {
            let position = Int(run.positions[index])
            run.words[index] = word(position, at: depth)
            longest = max(longest, keys.length(position))
        }
        if range.count < 48 {
            insertionSort(run, range) { run.words[$0] }
        } else {
            radixSort(run, range)
        }
        let next = depth + 8
        var start = range.lowerBound
        while start < range.upperBound {
            var end = start + 1
            while end < range.upperBound && run.words[end] == run.words[start] { end += 1 }
            if end - start > 1 {
                if longest > next {
                    sort(run, start..<end, depth: next)
                } else {
                    // Equal words and no byte beyond them: the keys differ at most in their
                    // length (the words were padded with zeros), and the shorter sorts first.
                    insertionSort(run, start..<end) { UInt64(keys.length(Int(run.positions[$0]))) }
                    for index in (start + 1)..<end where keys.length(Int(run.positions[index])) == keys.length(Int(run.positions[index - 1])) {
                        run.repeats[index] = true
                    }
                }
            }
            start = end
        }
    }

    /// Key `position`'s bytes `depth ..< depth + 8`, big-endian, padded with zeros.
    @inline(__always)
    private func word(_ position: Int, at depth: Int) -> UInt64 {
        keys.withBytes(position) { key in
            if key.count >= depth + 8 {
                return UInt64(bigEndian: key.loadUnaligned(fromByteOffset: depth, as: UInt64.self))
            }
            var value: UInt64 = 0
            for offset in depth..<(depth + 8) { value = value << 8 | UInt64(offset < key.count ? key[offset] : 0) }
            return value
        }
    }

    /// Stable insertion sort of `range` by `rank` of an index (a short run).
    private func insertionSort(_ run: SortRun, _ range: Range<Int>, rank: (Int) -> UInt64) {
        guard range.count > 1 else { return }
        for index in (range.lowerBound + 1)..<range.upperBound {
            let position = run.positions[index], word = run.words[index], value = rank(index)
            var hole = index
            while hole > range.lowerBound && rank(hole - 1) > value {
                run.positions[hole] = run.positions[hole - 1]
                run.words[hole] = run.words[hole - 1]
                hole -= 1
            }
            run.positions[hole] = position
            run.words[hole] = word
        }
    }

    /// Stable least-significant-digit radix sort of `range` by word, a byte per pass; a pass
    /// where every word has the same byte is skipped (keys sharing a leading tag or tree
    /// prefix cost no pass for it).
    private func radixSort(_ run: SortRun, _ range: Range<Int>) {
        var counts = [Int](repeating: 0, count: 8 * 256)
        for index in range {
            let word = run.words[index]
            for pass in 0..<8 { counts[pass << 8 | Int((word >> (pass << 3)) & 0xFF)] += 1 }
        }
        var source = (positions: run.positions, words: run.words)
        var target = (positions: run.scratchPositions, words: run.scratchWords)
        for pass in 0..<8 {
            let base = pass << 8, shift = UInt64(pass << 3)
            if counts[base + Int((run.words[range.lowerBound] >> shift) & 0xFF)] == range.count { continue }
            var next = range.lowerBound
            for digit in 0..<256 {
                let count = counts[base + digit]
                counts[base + digit] = next
                next += count
            }
            for index in range {
                let word = source.words[index]
                let slot = base + Int((word >> shift) & 0xFF)
                let destination = counts[slot]
                counts[slot] = destination + 1
                target.words[destination] = word
                target.positions[destination] = source.positions[index]
            }
            swap(&source, &target)
        }
        if source.positions.baseAddress != run.positions.baseAddress {
            for index in range {
                run.positions[index] = source.positions[index]
                run.words[index] = source.words[index]
            }
        }
    }
}
