/// Searches that start where a key's search prefix says it should be.
///
/// A leaf of a table holds a run of consecutive primary keys: their search prefixes
/// (`Page.searchPrefix`) grow linearly with the position, and the position of a key is
/// predicted from the prefixes of the first and last keys. A bisection of a leaf of 150 cells
/// reads eight keys scattered over the page, each a likely cache miss when the leaf was not
/// read recently (a semi-join's member lookups reach a different leaf each time); from a good
/// prediction, two keys decide. Where keys are spread unevenly (clustered integers), the
/// prediction is only a start: the search gallops from it and bisects, at most about twice
/// the steps of a bisection.
///
/// Not used for leaf directories: their boundaries drift from an even spacing over a large
/// table (rows grow longer as their keys and values grow), so a prediction from the ends missed
/// by hundreds of positions and cost more than the bisection it replaced.
enum InterpolationSearch {
    /// Where `target` falls between `first` (the prefix at position 0) and `last` (at position
    /// `count - 1`), assuming evenly spaced prefixes: in `0 ..< count - 1`. nil unless
    /// `first < target < last`.
    @inline(__always)
    static func guess(_ target: UInt64, first: UInt64, last: UInt64, count: Int) -> Int? {
        guard first < target, target < last, count >= 2 else { return nil }
        // (target - first) * (count - 1) / (last - first), exact in 128 bits; the quotient is
        // below count - 1 because target - first < last - first.
        let product = (target &- first).multipliedFullWidth(by: UInt64(count &- 1))
        return Int((last &- first).dividingFullWidth(product).quotient)
    }

    /// The first position in `low ... high` that is not before the target, given that it lies
    /// there (`isBefore` is true below it and false from it on), searched from `guess`: steps
    /// of 1, 2, 4, … away from the guess until the answer is bracketed, then a bisection.
    /// - Complexity: O(log d) calls of `isBefore` for an answer `d` positions from the guess.
    static func lowerBound(low: Int, high: Int, guess: Int, isBefore: (Int) -> Bool) -> Int {
        var low = low, high = high
        let start = min(max(guess, low), high)
        if start < high, isBefore(start) {
            low = start &+ 1
            var step = 1
            while low < high {
                let probe = min(low &+ step &- 1, high &- 1)
                if isBefore(probe) { low = probe &+ 1; step &<<= 1 } else { high = probe; break }
            }
        } else {
            high = start
            var step = 1
            while low < high {
                let probe = max(high &- step, low)
                if isBefore(probe) { low = probe &+ 1; break } else { high = probe; step &<<= 1 }
            }
        }
        while low < high {
            let mid = (low &+ high) &>> 1
            if isBefore(mid) { low = mid &+ 1 } else { high = mid }
        }
        return low
    }
}
